"""The coordinator's view of the raters' work: each rater's progress, pace and share of
ACCEPT, and every submitted review as CSV. Coordinator only: during the review phase even how
far another rater has got is none of a rater's business.

A rater who accepts nearly everything is a weak signal (docs/design.md, The review task): the
page may say so, and nothing here ever penalises it.
"""

import dataclasses
import itertools
import json
import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlmodel import Session, col

from fma_bands.core.actions import SUB_ACTIONS, sub_action
from fma_bands.core.band_text import DECLINED_BAND
from fma_bands.core.bands import parse_band
from fma_bands.core.errors import FmaBandsError
from fma_bands.core.labels import (
    CONFIDENCE_WORDS,
    READING_WORDS,
    case_numbers,
    describe_band,
    tool_names,
)
from fma_bands.core.people import UserPublic
from fma_bands.core.protocol import CORRECTION_LABELS, QUESTION_KEYS
from fma_bands.core.spreadsheet import csv_text
from fma_bands.core.vignettes import Library
from fma_bands.evidence.policy import Policy
from fma_bands.evidence.yaml_writer import flow, harness_line
from fma_bands.store.models import BandMark, Review, RoundBand, ScreenDraft, User
from fma_bands.study.assignment import load as load_assignments
from fma_bands.study.assignment import study_bands
from fma_bands.study.case_keys import case_key
from fma_bands.study.coverage import BandProgress, band_progress
from fma_bands.study.governance import policy_in_force
from fma_bands.study.reviews import ReviewData
from fma_bands.study.state import authorize, study
from fma_bands.study.store_state import per_state
from fma_bands.study.submissions import (
    attested_band,
    submitted_bands,
    submitted_reviews,
    submitted_rows,
)
from fma_bands.study.users import pseudonyms

# A gap longer than this between two submissions is a pause, not time spent on a band.
PAUSE = timedelta(minutes=30)
WEAK_SIGNAL_SHARE = 0.9
WEAK_SIGNAL_MIN_BANDS = 10

Band = tuple[str, str]
Bands = dict[int, set[Band]]


def unfinished_words(number: int, summaries: Sequence["RaterSummary"]) -> str | None:
    """Who has bands of round `number` still to submit, said before the round is closed (a
    closed round is never reopened), or None when everyone is done."""
    left = [r for r in summaries if r.submitted < r.assigned]
    if not left:
        return None
    each = "; ".join(
        f"{r.pseudonym}, {r.assigned - r.submitted} of {r.assigned} "
        f"band{'' if r.assigned == 1 else 's'}"
        for r in left
    )
    return (
        f"Not every rater is done: bands not yet submitted (or changed since submitted) in "
        f"round {number}: {each}. Closing the round now leaves them without those reviews, for "
        "good: a closed round is never reopened."
    )


@dataclass(frozen=True)
class RaterSummary:
    pseudonym: str
    specialty: str | None
    submitted: int  # bands submitted and current (not made stale by a changed vignette)
    assigned: int
    in_progress: int
    skipped: int
    open_flags: int
    pace_minutes: float | None  # median minutes per band between submissions, pauses left out
    paced_bands: int  # how many submissions that median is over
    accepts: int
    judged: int  # current reviews given in review mode, where ACCEPT is a choice
    last_submitted: datetime | None

    @property
    def accept_share(self) -> float | None:
        return self.accepts / self.judged if self.judged else None

    @property
    def weak_signal(self) -> bool:
        share = self.accept_share
        return (
            share is not None
            and self.judged >= WEAK_SIGNAL_MIN_BANDS
            and (share >= WEAK_SIGNAL_SHARE)
        )


def rater_summaries(
    session: Session, library: Library, *, viewer: UserPublic, round: int = 1
) -> list[RaterSummary]:
    """One summary per enrolled rater of round `round`'s work: its bands (every band assigned
    to them in round 1; from round 2 the bands the round re-reviews with them) and the reviews
    made in it, so that round 2's figures never count round 1's work. What is recorded (reviews,
    enrolments, assignments, rounds, flags) is read once per state of the store (store_state);
    the screens' unsaved drafts and the skips, which are not recorded, on every call."""
    authorize(session, viewer, "see_progress")
    later = _round_bands_by_rater(session, round) if round > 1 else None
    work = per_state(
        session,
        ("rater work", round, library.digests),
        lambda: _rater_work(session, library, round),
    )
    # Which bands each rater has a review of is recorded: read once per state of the store.
    reviewed = per_state(session, ("reviewed bands", round), lambda: _reviewed(session, round))
    kept = _drafts_by_rater(session, later, reviewed)
    skips, flags = _marks_by_rater(session, later)
    # As the rater's queue says it: a band skipped for now is "skipped", whatever draft of it
    # is kept, so that in progress, skipped and submitted never count one band twice.
    return [
        dataclasses.replace(
            summary,
            in_progress=len((drafts | kept[rater_id]) - skips[rater_id]),
            skipped=len(skips[rater_id]),
            open_flags=flags[rater_id],
        )
        for rater_id, summary, drafts in work
    ]


def _rater_work(
    session: Session, library: Library, round: int
) -> list[tuple[int, RaterSummary, frozenset[Band]]]:
    """Each rater's summary from what is recorded, with the bands of their saved drafts: no
    band in progress, skip or flag yet (rater_summaries counts them with the screens' drafts
    and the skips). Everything read here is read after the state it is kept under, the round's
    bands too."""
    later = _round_bands_by_rater(session, round) if round > 1 else None
    raters = session.execute(
        select(col(User.id), col(User.pseudonym), col(User.specialty))
        .where(col(User.role) == "rater")
        .order_by(col(User.pseudonym))
    ).all()
    latest = _latest_by_rater(session, round)
    assignments = load_assignments(session)
    work = []
    for rater_id, pseudonym, specialty in raters:
        mine = latest.get(rater_id, {})
        theirs = assignments.bands_of(library, pseudonym) if later is None else later[rater_id]
        # Submitted of the bands assigned to them (a hand-back may hold others).
        current = [
            r
            for (vid, name), r in mine.items()
            if r[0] == "submitted"
            and (vid, name) in theirs
            and library.is_current(
                vid,
                name,
                context_digest=r[3],
                band_digest=r[6],
                proposal_digest=r[4],
                mode=r[2],
            )
        ]
        judged = [r for r in current if r[2] == "review"]
        times = sorted(r[5] for r in mine.values() if r[5])
        pace, paced = _pace(times)
        summary = RaterSummary(
            pseudonym=pseudonym,
            specialty=specialty,
            submitted=len(current),
            assigned=len(theirs),
            in_progress=0,
            skipped=0,
            open_flags=0,
            pace_minutes=pace,
            paced_bands=paced,
            accepts=sum(r[1] == "ACCEPT" for r in judged),
            judged=len(judged),
            last_submitted=times[-1] if times else None,
        )
        drafts = frozenset(band for band, r in mine.items() if r[0] == "draft")
        work.append((rater_id, summary, drafts))
    return work


def _pace(times: list[datetime]) -> tuple[float | None, int]:
    gaps = [(b - a) for a, b in itertools.pairwise(times)]
    working = [g.total_seconds() / 60 for g in gaps if g <= PAUSE]
    return (round(statistics.median(working), 1) if working else None, len(working))


def round_band_progress(
    session: Session, library: Library, *, viewer: UserPublic, quorum: int | None, round: int
) -> list[BandProgress]:
    """Each band of round `round` against the quorum: in round 1 every band of the study
    (coverage.band_progress); from round 2 the bands it re-reviews, counting its raters and its
    own current reviews only, never an earlier round's."""
    if round == 1:
        return band_progress(session, library, viewer=viewer, quorum=quorum)
    authorize(session, viewer, "see_progress")
    names = pseudonyms(session)
    policy = policy_in_force(session) or Policy()
    specialty = {r.pseudonym: r.specialty for r in load_assignments(session).raters}
    raters: dict[tuple[str, str], set[str]] = defaultdict(set)
    query = select(col(RoundBand.vignette_id), col(RoundBand.sub_action), col(RoundBand.rater_id))
    for vid, name, rater_id in session.execute(query.where(col(RoundBand.round) == round)):
        raters[(vid, name)].add(names[rater_id])
    verdicts: dict[tuple[str, str], dict[str, str | None]] = defaultdict(dict)
    for review in submitted_bands(submitted_rows(session, viewer=viewer, round=round), library):
        verdicts[(review.vignette_id, review.sub_action)][review.rater] = review.verdict
    rows = []
    for band in (b for b in study_bands(library) if b in raters):
        given = verdicts[band]
        declined = sum(v == "DECLINE" for v in given.values())
        # As the registry counts (Policy.counts): a rater outside a required scope never does.
        aside = sum(
            v != "DECLINE" and not policy.counts(band[1], specialty.get(r))
            for r, v in given.items()
        )
        to_come = sum(
            r not in given and policy.counts(band[1], specialty.get(r)) for r in raters[band]
        )
        rows.append(
            BandProgress(*band, len(raters[band]), len(given), declined, quorum, to_come, aside)
        )
    return rows


# (status, verdict, mode, context digest, proposal digest, submitted at, band digest).
_SUMMARY = (
    "status",
    "verdict",
    "mode",
    "context_digest",
    "proposal_digest",
    "submitted_at",
    "band_digest",
)


def _latest_by_rater(session: Session, number: int) -> dict[int, dict[tuple[str, str], tuple]]:
    """Each rater's latest revision of each band in round `number`, as `_SUMMARY` tuples:
    columns only, since building 27,000 ORM rows would cost more than the whole page."""
    names = ("rater_id", "vignette_id", "sub_action", "revision", *_SUMMARY)
    query = select(*(col(getattr(Review, n)) for n in names)).where(col(Review.round) == number)
    latest: dict[int, dict[tuple[str, str], tuple]] = defaultdict(dict)
    revisions: dict[tuple[int, str, str], int] = {}
    # Core, not the ORM: its row loading doubles the cost of 27,000 rows.
    for rater_id, vid, name, revision, *summary in session.connection().execute(query):
        key = (rater_id, vid, name)
        if revisions.get(key, 0) < revision:
            revisions[key] = revision
            latest[rater_id][(vid, name)] = tuple(summary)
    return latest


def _round_bands_by_rater(session: Session, number: int) -> Bands:
    """The bands round `number` (2 or later) re-reviews with each rater."""
    bands: Bands = defaultdict(set)
    query = select(col(RoundBand.rater_id), col(RoundBand.vignette_id), col(RoundBand.sub_action))
    for rater_id, vid, name in session.execute(query.where(col(RoundBand.round) == number)):
        bands[rater_id].add((vid, name))
    return bands


def _reviewed(session: Session, round: int) -> frozenset[tuple[int, str, str]]:
    """(rater id, vignette, sub-action) of every band with a review saved in the round."""
    query = (
        select(col(Review.rater_id), col(Review.vignette_id), col(Review.sub_action))
        .where(col(Review.round) == round)
        .distinct()
    )
    return frozenset((rater, vid, name) for rater, vid, name in session.execute(query))


def _drafts_by_rater(
    session: Session, only: Bands | None, reviewed: frozenset[tuple[int, str, str]]
) -> Bands:
    """Each rater's screens kept as typed (of `only` their bands of a later round), of bands
    with no review of theirs in the round (`reviewed`): as the rater's queue says, a review
    saved is counted by what it is (a saved draft is in progress already), and a revision
    begun on a submitted band and left unsent leaves it submitted."""
    found: Bands = defaultdict(set)
    query = select(
        col(ScreenDraft.rater_id), col(ScreenDraft.vignette_id), col(ScreenDraft.sub_action)
    )
    for rater_id, vid, name in session.execute(query):
        if (rater_id, vid, name) in reviewed:
            continue
        if only is None or (vid, name) in only[rater_id]:
            found[rater_id].add((vid, name))
    return found


def _marks_by_rater(session: Session, only: Bands | None) -> tuple[Bands, dict[int, int]]:
    """Each rater's bands skipped for now and number of open flags (of `only` their bands of
    a later round)."""
    skips: Bands = defaultdict(set)
    flags: dict[int, int] = defaultdict(int)
    query = select(
        col(BandMark.rater_id),
        col(BandMark.kind),
        col(BandMark.vignette_id),
        col(BandMark.sub_action),
    ).where(col(BandMark.cleared_at).is_(None))
    for rater_id, kind, vid, name in session.execute(query):
        if only is None or (vid, name) in only[rater_id]:
            if kind == "skip":
                skips[rater_id].add((vid, name))
            else:
                flags[rater_id] += 1
    return skips, flags


# Every submitted review as CSV --------------------------------------------------------------

REVIEW_COLUMNS = (
    "round",
    "case",
    "vignette_id",
    "sub_action",
    "sub_action_name",
    "rater",
    "revision",
    "mode",
    "verdict",
    "band",
    "band_harness",
    "reason",
    "confidence",
    "confidence_words",
    "corrections",
    "corrections_words",
    *(f"{q}_{part}" for q in QUESTION_KEYS for part in ("choice", "note")),
    "q5_reading_words",
    "origin",
    "submitted_at",
    "stale",
)


def reviews_csv(session: Session, library: Library, *, viewer: UserPublic) -> str:
    """Each rater's latest submitted review of each band in each round so far, stale ones
    included and marked; in case order, then the protocol's order of sub-actions. Every row
    with a band says it twice: in words, as the app shows it, and as the harness values
    bands.yaml would write (`acceptable`, with `x_required` for orders), ACCEPT included."""
    authorize(session, viewer, "export_reviews")
    numbers = case_numbers(library, case_key(session))
    order = {name: i for i, name in enumerate(SUB_ACTIONS)}
    reviews = [
        review
        for number in range(1, study(session).round + 1)
        for review in submitted_reviews(
            session, library, viewer=viewer, include_stale=True, round=number
        )
    ]
    reviews.sort(
        key=lambda r: (
            r.round,
            numbers.get(r.vignette_id, len(numbers) + 1),
            r.vignette_id,
            order.get(r.sub_action, len(order)),
            r.rater,
        )
    )
    rows = []
    for review in reviews:
        words, harness = band_cells(review, library)
        row: dict[str, Any] = {
            "round": review.round,
            "case": numbers.get(review.vignette_id),
            "vignette_id": review.vignette_id,
            "sub_action": review.sub_action,
            "sub_action_name": _sub_action_name(review.sub_action),
            "rater": review.rater,
            "revision": review.revision,
            "mode": review.mode,
            "verdict": review.verdict,
            "band": words,
            "band_harness": harness,
            "reason": review.reason,
            "confidence": review.confidence,
            "confidence_words": CONFIDENCE_WORDS.get(review.confidence or ""),
            # An AMEND's corrected clause, source, reasoning or disputed span, as JSON.
            "corrections": json.dumps(review.corrections) if review.corrections else None,
            "corrections_words": corrections_words(review, library),
            "origin": review.origin,
            "submitted_at": review.submitted_at.isoformat() if review.submitted_at else None,
            "stale": review.stale,
        }
        for q in QUESTION_KEYS:
            answer = review.answers.get(q) or {}
            row[f"{q}_choice"], row[f"{q}_note"] = answer.get("choice"), answer.get("note")
        # Question 5's choice is a code ("band"); the screen says "the band's reading".
        row["q5_reading_words"] = READING_WORDS.get(str(row["q5_choice"]))
        rows.append(row)
    return csv_text(REVIEW_COLUMNS, rows)


# A stale ACCEPT accepted a proposal that has changed since: the one it accepted is not kept.
CHANGED_PROPOSAL = "the proposal as it was then (changed since)"


def band_cells(review: ReviewData, library: Library) -> tuple[str, str]:
    """The band a review vouches for, in words (as the app shows it, tests by their names in
    the vignette) and as bands.yaml's harness values: the proposal's band for an ACCEPT."""
    if review.verdict == "DECLINE" or review.verdict is None:
        return DECLINED_BAND if review.verdict == "DECLINE" else "", ""
    vignette = library.vignettes.get(review.vignette_id)
    proposal = vignette.proposal(review.sub_action) if vignette is not None else None
    if review.verdict == "ACCEPT" and (
        proposal is None or review.band_digest not in (None, proposal.band_digest)
    ):
        return CHANGED_PROPOSAL, ""
    try:
        band = attested_band(review, library)
    except (FmaBandsError, KeyError, ValueError):
        # A stale AMEND written against a vignette that has changed past reading it.
        return "as submitted, unreadable against the changed vignette", flow(review.band)
    if band is None:
        return "", ""
    names = tool_names(vignette) if vignette is not None else {}
    return describe_band(band, names), harness_line(band)


def corrections_words(review: ReviewData, library: Library) -> str | None:
    """An AMEND's corrections as the review page says them: each corrected text by its
    label, and the disputed span in words (tests by their names), or "none" where cleared."""
    found = review.corrections or {}
    said = [
        f"Corrected {label.lower()}: {found[key]}"
        for key, label in CORRECTION_LABELS.items()
        if key in found
    ]
    if "disputed_span" in found:
        raw = found["disputed_span"]
        vignette = library.vignettes.get(review.vignette_id)
        try:
            span = None if raw is None else parse_band(review.sub_action, raw, span=True)
        except (FmaBandsError, KeyError, ValueError, TypeError):
            said.append("Disputed span: as submitted, unreadable (see corrections)")
        else:
            names = tool_names(vignette) if vignette is not None else {}
            words = "none" if span is None else describe_band(span, names)
            said.append(f"Disputed span: {words}")
    return " · ".join(said) or None


def _sub_action_name(name: str) -> str:
    try:
        return sub_action(name).label
    except (FmaBandsError, KeyError):
        return name


def progress_table(summaries: list[RaterSummary]) -> list[dict[str, Any]]:
    """The summaries as the Raters page's table rows, each column saying what it counts."""
    return [
        {
            "rater": r.pseudonym,
            "specialty": r.specialty,
            "submitted": f"{r.submitted} of {r.assigned}",
            "in progress": r.in_progress,
            "skipped": r.skipped,
            "minutes per band": "not yet" if r.pace_minutes is None else f"{r.pace_minutes:.1f}",
            "ACCEPT": "not yet"
            if r.accept_share is None
            else f"{r.accept_share:.0%} of {r.judged}",
            "last submission (UTC)": f"{r.last_submitted:%Y-%m-%d %H:%M}"
            if r.last_submitted
            else "not yet",
        }
        for r in summaries
    ]
