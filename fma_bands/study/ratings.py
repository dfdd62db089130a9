"""Submitted reviews as the ratings the agreement statistics take, and the study's report and
Agreement screen from them, one round at a time.

Blinding is checked where the reviews are read (submissions.submitted_rows), and before a kept
report is looked for without reading them (ratings_source); this module only turns them into
numbers.
"""

from dataclasses import dataclass
from functools import cache, partial
from typing import TYPE_CHECKING

from sqlalchemy import func
from sqlmodel import Session, select

from fma_bands.agreement import DEFAULT_B, DEFAULT_SEED, POOLED, Rating, Report
from fma_bands.agreement.diagnostics import Diagnostics
from fma_bands.agreement.metrics import report_key
from fma_bands.agreement.planning import DEFAULT_WIDTH
from fma_bands.agreement.views import Screen, screen
from fma_bands.core.bands import BandReader
from fma_bands.core.errors import AccessDenied, FmaBandsError
from fma_bands.core.labels import case_numbers, tool_names
from fma_bands.core.people import UserPublic
from fma_bands.core.vignettes import Library
from fma_bands.store.models import Review
from fma_bands.study import audit
from fma_bands.study.case_keys import case_key
from fma_bands.study.kept_diagnostics import kept_diagnostics
from fma_bands.study.kept_reports import (
    keep_source,
    kept_report,
    known_source,
    source_key,
    state_key,
)
from fma_bands.study.reviews import ReviewData
from fma_bands.study.state import authorize
from fma_bands.study.submissions import (
    Submitted,
    SubmittedBand,
    attested_band,
    submitted_bands,
    submitted_rows,
)

if TYPE_CHECKING:
    from functools import _lru_cache_wrapper

ROUND_LABELS = {1: "Round 1: independent", 2: "Round 2: consensus-building"}
ROUND_NOTES = {
    1: "Round 1, the independent round: raters reviewed blind to each other, so its alpha is the "
    "inter-rater reliability the study reports. A later round never changes it.",
    2: "Round 2, consensus-building: only the bands chosen for it, re-reviewed after the raters "
    "saw round 1's anonymised panel. Its agreement is not a reliability figure.",
}
PURPOSES = {1: "reliability", 2: "consensus-building"}


def rating(
    review: ReviewData | SubmittedBand, library: Library, read: BandReader | None = None
) -> Rating:
    """What one review vouches for: the proposal if ACCEPT, the rater's own band if AMEND."""
    proposed = library.vignettes[review.vignette_id].proposal(review.sub_action)
    return Rating(
        vignette_id=review.vignette_id,
        sub_action=review.sub_action,
        rater=review.rater,
        verdict=review.verdict or "",
        band=attested_band(review, library, read),
        mode=review.mode,
        proposal=None if proposed is None or review.mode != "review" else proposed.acceptable,
    )


def study_ratings(
    session: Session, library: Library, *, viewer: UserPublic, round: int = 1
) -> list[Rating]:
    """Every rater's current, non-stale submitted review of every band in one round (blinding
    enforced). Round 1 is the independent round, the reliability the paper reports; a later
    round only re-reviews some bands after the panel, so it is consensus-building, and never
    changes round 1's figures."""
    return ratings_of(submitted_rows(session, viewer=viewer, round=round), library)


def ratings_of(found: Submitted, library: Library) -> list[Rating]:
    """The ratings of the current reviews among submitted_rows."""
    read = BandReader()
    return [rating(r, library, read) for r in submitted_bands(found, library)]


def ratings_source(
    session: Session, library: Library, *, viewer: UserPublic, round: int, fresh: bool = False
) -> tuple[str, "_lru_cache_wrapper[Submitted]"]:
    """The source_key of one round's ratings, and the reviews it was taken from, read at most
    once and only when asked for (blinding enforced). The source_key is the one kept for the
    store's present state (kept_reports.state_key) unless `fresh`; else the reviews are read
    and the key taken from them is kept for that state."""
    authorize(session, viewer, "see_reviews")
    # The state first: a review saved after it makes a newer state, never an older one.
    state = state_key(audit.state_head(session), library, round)
    read = cache(partial(submitted_rows, session, viewer=viewer, round=round))
    if state is not None and not fresh and (source := known_source(session, state)):
        return source, read
    found = read()
    source = source_key(found.rows, found.names, library)
    if state is not None:
        keep_source(session, state, source, replace=fresh)
    return source, read


def study_report(
    session: Session,
    library: Library,
    *,
    viewer: UserPublic,
    bootstrap: int = DEFAULT_B,
    seed: int = DEFAULT_SEED,
    round: int = 1,
    fresh: bool = False,
) -> Report:
    """The agreement report of one round's ratings (verdicts compared in review mode only),
    kept once computed (kept_reports.py): the same ratings are not bootstrapped twice, unless
    `fresh` asks for it. A kept report is found by the state of the store (ratings_source),
    without reading the reviews while it stands: they are read for a new state, and made
    ratings only when the report is computed."""
    source, read = ratings_source(session, library, viewer=viewer, round=round, fresh=fresh)
    return kept_report(
        session,
        source,
        lambda: ratings_of(read(), library),
        library,
        bootstrap=bootstrap,
        seed=seed,
        fresh=fresh,
    )


def _ratings_once(read: "_lru_cache_wrapper[Submitted]", library: Library) -> list[Rating]:
    """The ratings of the reviews `read` gives, the reviews then let go: made into ratings,
    they are not read again, and at 1,000 x 20 they were a fifth of what the diagnostics held
    at their peak."""
    try:
        return ratings_of(read(), library)
    finally:
        read.cache_clear()


def study_ambiguity(library: Library) -> dict[str, str | None]:
    """Each vignette's ambiguity stratum (clear, intermediate, borderline, or None)."""
    return {vid: v.ambiguity for vid, v in library.vignettes.items()}


@dataclass(frozen=True)
class Findings:
    """One round's agreement report, and the coordinator's diagnostics."""

    report: Report
    diagnostics: Diagnostics


def study_findings(
    session: Session,
    library: Library,
    *,
    viewer: UserPublic,
    bootstrap: int = DEFAULT_B,
    seed: int = DEFAULT_SEED,
    round: int = 1,
    fresh: bool = False,
    width: float = DEFAULT_WIDTH,
) -> Findings:
    """study_report, with the per-rater diagnostics, the pooled band alpha by ambiguity stratum
    and the planning (agreement.diagnostics), kept as the report is (kept_diagnostics.py). The
    coordinator's only: the per-rater figures say how each pseudonym's bands compare, and the
    strata are never shown to raters."""
    authorize(session, viewer, "see_diagnostics")
    source, read = ratings_source(session, library, viewer=viewer, round=round, fresh=fresh)
    # Made once, and only if the report or the diagnostics are computed.
    ratings = cache(lambda: _ratings_once(read, library))

    report = kept_report(
        session, source, ratings, library, bootstrap=bootstrap, seed=seed, fresh=fresh
    )
    pooled = {
        mode: a
        for mode in report.modes
        if (a := report.metrics.get(report_key(mode, POOLED, report.modes), {}).get("band"))
    }
    kept = kept_diagnostics(
        session,
        source,
        ratings,
        study_ambiguity(library),
        pooled=pooled,
        width=width,
        bootstrap=bootstrap,
        seed=seed,
        fresh=fresh,
    )
    return Findings(report, kept)


def study_screen(
    session: Session,
    library: Library,
    *,
    viewer: UserPublic,
    bootstrap: int = DEFAULT_B,
    seed: int = DEFAULT_SEED,
    round: int = 1,
) -> Screen:
    """What the Agreement page shows of one round, as plain data."""
    try:
        report = study_report(
            session, library, viewer=viewer, bootstrap=bootstrap, seed=seed, round=round
        )
    except AccessDenied:
        raise
    except FmaBandsError:
        if viewer.is_coordinator:
            raise
        # A problem with the stored ratings names the rating, and so its rater.
        raise FmaBandsError(
            "the agreement figures cannot be computed from the stored reviews; the "
            "coordinator's Agreement page says why"
        ) from None
    orderables = {vid: tuple(v.orderables) for vid, v in library.vignettes.items()}
    names = {vid: tool_names(v) for vid, v in library.vignettes.items()}
    # Raters see the figures once the round closes, but never who wrote which band.
    reader = None if viewer.is_coordinator else viewer.pseudonym
    key = case_key(session)
    cases = case_numbers(library, key)
    return screen(report, orderables, names, reader=reader, cases=cases, case_key=key)


def reviews_fingerprint(session: Session) -> tuple:
    """Changes whenever any review is saved: the key under which pages cache the report."""
    count, last, top = session.exec(
        select(func.count(), func.max(Review.updated_at), func.max(Review.id))
    ).one()
    return count, str(last), top
