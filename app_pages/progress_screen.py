"""The coordinator's view of the raters' work: each rater's progress, pace and share of
ACCEPT, and every submitted review as CSV. Coordinator only: during the review phase even how
far another rater has got is none of a rater's business.

A rater who accepts nearly everything is a weak signal (docs/design.md, The review task): the
page may say so, and nothing here ever penalises it.
"""

import itertools
import json
import statistics
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlmodel import Session, col

from fma_bands.core.labels import case_numbers
from fma_bands.core.people import UserPublic
from fma_bands.core.protocol import QUESTION_KEYS
from fma_bands.core.spreadsheet import csv_text
from fma_bands.core.vignettes import Library
from fma_bands.store.models import BandMark, Review, ScreenDraft, User
from fma_bands.study.assignment import load as load_assignments
from fma_bands.study.case_keys import case_key
from fma_bands.study.state import authorize
from fma_bands.study.submissions import submitted_reviews

# A gap longer than this between two submissions is a pause, not time spent on a band.
PAUSE = timedelta(minutes=30)
WEAK_SIGNAL_SHARE = 0.9
WEAK_SIGNAL_MIN_BANDS = 10


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
    session: Session, library: Library, *, viewer: UserPublic
) -> list[RaterSummary]:
    """One summary per enrolled rater, in six queries whatever the study's size."""
    authorize(session, viewer, "see_progress")
    raters = session.execute(
        select(col(User.id), col(User.pseudonym), col(User.specialty))
        .where(col(User.role) == "rater")
        .order_by(col(User.pseudonym))
    ).all()
    latest = _latest_by_rater(session)
    kept = _drafts_by_rater(session)
    marks = _marks_by_rater(session)
    assignments = load_assignments(session)
    summaries = []
    for rater_id, pseudonym, specialty in raters:
        mine = latest.get(rater_id, {})
        theirs = assignments.bands_of(library, pseudonym)
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
        summaries.append(
            RaterSummary(
                pseudonym=pseudonym,
                specialty=specialty,
                submitted=len(current),
                assigned=len(theirs),
                in_progress=kept.get(rater_id, 0) + sum(r[0] == "draft" for r in mine.values()),
                skipped=marks[rater_id]["skip"],
                open_flags=marks[rater_id]["flag"],
                pace_minutes=pace,
                paced_bands=paced,
                accepts=sum(r[1] == "ACCEPT" for r in judged),
                judged=len(judged),
                last_submitted=times[-1] if times else None,
            )
        )
    return summaries


def _pace(times: list[datetime]) -> tuple[float | None, int]:
    gaps = [(b - a) for a, b in itertools.pairwise(times)]
    working = [g.total_seconds() / 60 for g in gaps if g <= PAUSE]
    return (round(statistics.median(working), 1) if working else None, len(working))


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


def _latest_by_rater(session: Session) -> dict[int, dict[tuple[str, str], tuple]]:
    """Each rater's latest revision of each band, as `_SUMMARY` tuples: columns only, since
    building 27,000 ORM rows would cost more than the whole page."""
    names = ("rater_id", "vignette_id", "sub_action", "revision", *_SUMMARY)
    query = select(*(col(getattr(Review, n)) for n in names))
    latest: dict[int, dict[tuple[str, str], tuple]] = defaultdict(dict)
    revisions: dict[tuple[int, str, str], int] = {}
    # Core, not the ORM: its row loading doubles the cost of 27,000 rows.
    for rater_id, vid, name, revision, *summary in session.connection().execute(query):
        key = (rater_id, vid, name)
        if revisions.get(key, 0) < revision:
            revisions[key] = revision
            latest[rater_id][(vid, name)] = tuple(summary)
    return latest


def _drafts_by_rater(session: Session) -> dict[int, int]:
    counts: dict[int, int] = defaultdict(int)
    for (rater_id,) in session.execute(select(col(ScreenDraft.rater_id))):
        counts[rater_id] += 1
    return counts


def _marks_by_rater(session: Session) -> dict[int, dict[str, int]]:
    counts: dict[int, dict[str, int]] = defaultdict(lambda: {"skip": 0, "flag": 0})
    query = select(col(BandMark.rater_id), col(BandMark.kind)).where(
        col(BandMark.cleared_at).is_(None)
    )
    for rater_id, kind in session.execute(query):
        counts[rater_id][kind] += 1
    return counts


# Every submitted review as CSV --------------------------------------------------------------

REVIEW_COLUMNS = (
    "vignette_id",
    "case",
    "sub_action",
    "rater",
    "revision",
    "mode",
    "verdict",
    "band",
    "reason",
    "confidence",
    "corrections",
    *(f"{q}_{part}" for q in QUESTION_KEYS for part in ("choice", "note")),
    "origin",
    "submitted_at",
    "stale",
)


def reviews_csv(session: Session, library: Library, *, viewer: UserPublic) -> str:
    """Each rater's latest submitted review of each band, stale ones included and marked."""
    authorize(session, viewer, "export_reviews")
    numbers = case_numbers(library, case_key(session))
    rows = []
    for review in submitted_reviews(session, library, viewer=viewer, include_stale=True):
        row: dict[str, Any] = {
            "vignette_id": review.vignette_id,
            "case": numbers.get(review.vignette_id),
            "sub_action": review.sub_action,
            "rater": review.rater,
            "revision": review.revision,
            "round": review.round,
            "mode": review.mode,
            "verdict": review.verdict,
            "band": json.dumps(review.band) if review.band is not None else None,
            "reason": review.reason,
            "confidence": review.confidence,
            # An AMEND's corrected clause, source, reasoning or disputed span, as JSON.
            "corrections": json.dumps(review.corrections) if review.corrections else None,
            "origin": review.origin,
            "submitted_at": review.submitted_at.isoformat() if review.submitted_at else None,
            "stale": review.stale,
        }
        for q in QUESTION_KEYS:
            answer = review.answers.get(q) or {}
            row[f"{q}_choice"], row[f"{q}_note"] = answer.get("choice"), answer.get("note")
        rows.append(row)
    return csv_text(REVIEW_COLUMNS, rows)


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
