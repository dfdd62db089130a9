"""A rater's queue as their screens show it: every band assigned to them in neutral case
order (from round 2, only the bands they re-review in it), its status in the current round (to
do, in progress, skipped, submitted, or changed since submitted), their own flags, where to go
next, and pages of it.

Read in a handful of queries whatever the study's size (no query per band), and with only the
rater's own reviews, drafts and marks.
"""

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from sqlalchemy import select
from sqlmodel import Session, col

from fma_bands.core.actions import SUB_ACTIONS
from fma_bands.core.labels import case_numbers
from fma_bands.core.people import UserPublic
from fma_bands.core.vignettes import Library
from fma_bands.store.models import Review
from fma_bands.study import drafts, marks
from fma_bands.study.assignment import assigned_bands
from fma_bands.study.case_keys import case_key
from fma_bands.study.state import current_round_bands

Status = Literal["to do", "in progress", "skipped", "submitted", "changed since submitted"]
STATUSES: tuple[Status, ...] = (
    "to do",
    "in progress",
    "skipped",
    "submitted",
    "changed since submitted",
)
PAGE_SIZE = 20


@dataclass(frozen=True)
class QueueRow:
    vignette_id: str
    sub_action: str
    case: int
    status: Status
    flagged: bool
    revision: int | None  # of the rater's latest submitted or draft review

    @property
    def done(self) -> bool:
        return self.status == "submitted"

    @property
    def band(self) -> tuple[str, str]:
        return (self.vignette_id, self.sub_action)


def rater_queue(session: Session, library: Library, rater: UserPublic) -> list[QueueRow]:
    """Every band assigned to this rater (from round 2, the bands they re-review in it), by
    case number, then by step."""
    number, chosen = current_round_bands(session, rater.id)
    # Round 2's bands and raters are fixed when it opens; round 1 follows the assignment.
    mine = assigned_bands(session, library, rater) if chosen is None else chosen
    latest = _latest(session, rater, number)
    kept = drafts.in_progress(session, rater)
    marked = marks.open_marks(session, rater)
    numbers = case_numbers(library, case_key(session))
    order = {name: i for i, name in enumerate(SUB_ACTIONS)}
    rows = []
    for vignette in library:
        for proposal in vignette.proposals:
            band = (vignette.id, proposal.sub_action)
            if band not in mine:
                continue
            review = latest.get(band)
            rows.append(
                QueueRow(
                    vignette.id,
                    proposal.sub_action,
                    numbers[vignette.id],
                    _status(library, band, review, band in kept, band in marked[marks.SKIP]),
                    band in marked[marks.FLAG],
                    review[1] if review else None,
                )
            )
    return sorted(rows, key=lambda r: (r.case, order[r.sub_action]))


def _latest(session: Session, rater: UserPublic, number: int) -> dict[tuple[str, str], tuple]:
    """(status, revision, context digest, proposal digest) of the rater's latest revision of
    each band in round `number`: columns only, since building ORM rows costs more than the
    whole screen."""
    columns = ("vignette_id", "sub_action", "status", "revision", "context_digest")
    digests = ("band_digest", "proposal_digest", "mode")
    query = select(*(col(getattr(Review, c)) for c in (*columns, *digests))).where(
        col(Review.rater_id) == rater.id, col(Review.round) == number
    )
    latest: dict[tuple[str, str], tuple] = {}
    for vid, name, status, revision, context, band, proposal, mode in session.execute(query):
        if (vid, name) not in latest or revision > latest[(vid, name)][1]:
            latest[(vid, name)] = (status, revision, context, band, proposal, mode)
    return latest


def _status(
    library: Library, band: tuple[str, str], review: tuple | None, kept: bool, skipped: bool
) -> Status:
    if review is not None and review[0] == "submitted":
        current = library.is_current(
            *band,
            context_digest=review[2],
            band_digest=review[3],
            proposal_digest=review[4],
            mode=review[5],
        )
        return "submitted" if current else "changed since submitted"
    if skipped:
        return "skipped"
    if kept or review is not None:
        return "in progress"
    return "to do"


def progress(rows: Sequence[QueueRow]) -> tuple[int, int]:
    """(submitted, assigned)."""
    return sum(r.done for r in rows), len(rows)


def counts(rows: Iterable[QueueRow]) -> dict[Status, int]:
    found = Counter(r.status for r in rows)
    return {status: found[status] for status in STATUSES}


def resume(rows: Sequence[QueueRow]) -> QueueRow | None:
    """Where the rater left off: a band in progress, else the first to do or to revise, else
    one they skipped; None once everything is submitted."""
    for wanted in (("in progress",), ("to do", "changed since submitted"), ("skipped",)):
        found = next((r for r in rows if r.status in wanted), None)
        if found is not None:
            return found
    return None


def next_after(rows: Sequence[QueueRow], band: tuple[str, str]) -> QueueRow | None:
    """The band to go to after `band`: the next one not yet done (skipped ones last), going
    round to the start of the queue; None once nothing else is left."""
    at = next((i for i, r in enumerate(rows) if r.band == band), -1)
    ahead = [*rows[at + 1 :], *rows[: max(at, 0)]]
    waiting = [r for r in ahead if not r.done and r.band != band]
    return next((r for r in waiting if r.status != "skipped"), waiting[0] if waiting else None)


def select_rows(
    rows: Sequence[QueueRow], *, status: str | None = None, sub_action: str | None = None
) -> list[QueueRow]:
    return [
        r
        for r in rows
        if (status is None or r.status == status)
        and (sub_action is None or r.sub_action == sub_action)
    ]


def page(rows: Sequence[QueueRow], number: int, size: int = PAGE_SIZE) -> list[QueueRow]:
    """Page `number` (from 1) of `rows`; a number past the end gives the last page."""
    pages = max(1, -(-len(rows) // size))
    number = min(max(1, number), pages)
    return list(rows[(number - 1) * size : number * size])


def pages(rows: Sequence[QueueRow], size: int = PAGE_SIZE) -> int:
    return max(1, -(-len(rows) // size))
