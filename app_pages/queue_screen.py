"""A rater's queue as their screens show it: every band assigned to them in neutral case
order (from round 2, only the bands they re-review in it), its status in the current round (to
do, in progress, skipped, submitted, or changed since submitted), when they last worked on it,
their own flags, where to resume and where to go next, and pages of it.

Read in a handful of queries whatever the study's size (no query per band), and with only the
rater's own reviews, drafts and marks.
"""

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from sqlalchemy import select
from sqlmodel import Session, col

from fma_bands.core.actions import SUB_ACTIONS, sub_action
from fma_bands.core.labels import case_numbers
from fma_bands.core.people import UserPublic
from fma_bands.core.vignettes import Library
from fma_bands.store.models import BandMark, Review, ScreenDraft
from fma_bands.study import audit, marks, reviews
from fma_bands.study.assignment import assigned_bands
from fma_bands.study.case_keys import case_key
from fma_bands.study.state import current_round_bands
from fma_bands.study.store_state import per_change

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
    # When the rater last kept a draft of it, saved or submitted its review, or skipped it, in
    # the current round; None if they never did.
    worked_at: datetime | None = None

    @property
    def done(self) -> bool:
        return self.status == "submitted"

    @property
    def band(self) -> tuple[str, str]:
        return (self.vignette_id, self.sub_action)


def rater_queue(session: Session, library: Library, rater: UserPublic) -> list[QueueRow]:
    """Every band assigned to this rater (from round 2, the bands they re-review in it), by
    case number, then by step. What is recorded (the assignment, the round, the rater's
    reviews) is read once and then follows the changes recorded (store_state.per_change): a
    review another rater saves changes nothing here, one of theirs one band. The screens'
    drafts and the rater's marks, which a skip changes without recording it, are read on every
    call."""
    recorded = per_change(
        session,
        ("rater queue", rater.id, library.digests),
        lambda: _recorded(session, library, rater),
        lambda before, changes: _updated(session, library, rater, before, changes),
    )
    kept = _kept(session, rater)
    skipped, flagged = _marks(session, rater)
    made = _made.get(rater.id)
    if made is not None and made[0] is recorded and made[1] == (kept, skipped, flagged):
        return list(made[2])
    rows = tuple(_rows(recorded.bands, kept, skipped, flagged))
    # One per rater: the recorded part's identity names its store and state (it is held here,
    # so no other can take its id).
    _made[rater.id] = (recorded, (kept, skipped, flagged), rows)
    return list(rows)


# The rows last made for each rater, from what: a run of the review page asks for the queue
# once or twice with nothing changed, and making 2,430 rows took a fifth of the page's run.
_made: dict[int, tuple["_Recorded", tuple[object, ...], tuple[QueueRow, ...]]] = {}


def _rows(
    recorded: tuple[tuple[str, str, int, "_Latest | None"], ...],
    kept: dict[tuple[str, str], datetime],
    skipped: dict[tuple[str, str], datetime],
    flagged: set[tuple[str, str]],
) -> Iterable[QueueRow]:
    for vid, name, case, review in recorded:
        band = (vid, name)
        if review is None and band not in kept and band not in skipped:
            yield QueueRow(vid, name, case, "to do", band in flagged, None, None)
            continue
        times = [t for t in (review and review.at, kept.get(band), skipped.get(band)) if t]
        if review is not None and review.submitted is not None:
            status: Status = review.submitted
        elif band in skipped:
            status = "skipped"
        else:
            status = "in progress"
        yield QueueRow(
            vid,
            name,
            case,
            status,
            band in flagged,
            review.revision if review else None,
            max(times, default=None),
        )


@dataclass(frozen=True)
class _Latest:
    """The rater's latest revision of a band in the current round, as the queue reads it."""

    revision: int
    at: datetime
    # "submitted" or "changed since submitted" once submitted; None for a saved review.
    submitted: Status | None


@dataclass(frozen=True)
class _Recorded:
    """What the store records of a rater's queue in round `round`: (vignette, sub-action, case
    number, their latest review) of each band, in the queue's order."""

    round: int
    bands: tuple[tuple[str, str, int, _Latest | None], ...]


def _recorded(session: Session, library: Library, rater: UserPublic) -> _Recorded:
    number, chosen = current_round_bands(session, rater.id)
    # Round 2's bands and raters are fixed when it opens; round 1 follows the assignment.
    mine = assigned_bands(session, library, rater) if chosen is None else chosen
    latest = _latest(session, rater, number)
    numbers = case_numbers(library, case_key(session))
    order = {name: i for i, name in enumerate(SUB_ACTIONS)}
    found = []
    for vignette in library:
        for proposal in vignette.proposals:
            band = (vignette.id, proposal.sub_action)
            if band not in mine:
                continue
            review = _mine(library, band, latest.get(band))
            found.append((vignette.id, proposal.sub_action, numbers[vignette.id], review))
    return _Recorded(number, tuple(sorted(found, key=lambda r: (r[2], order[r[1]]))))


def _updated(
    session: Session,
    library: Library,
    rater: UserPublic,
    before: _Recorded,
    changes: list[audit.Change],
) -> _Recorded | None:
    """The queue's recorded part after `changes`, when each is a review saved or submitted in
    its round (another rater's changes nothing here); None when any is another change."""
    saved: set[tuple[str, str]] = set()
    for change in changes:
        if change.kind not in (reviews.SAVED, reviews.SUBMITTED):
            return None
        if change.actor != rater.pseudonym:
            continue
        if change.payload.get("round") != before.round:
            return None
        saved.add((change.payload["vignette_id"], change.payload["sub_action"]))
    if not saved:
        return before
    latest = _latest(session, rater, before.round, only=saved)
    return _Recorded(
        before.round,
        tuple(
            (vid, name, case, _mine(library, (vid, name), latest.get((vid, name))))
            if (vid, name) in saved
            else (vid, name, case, review)
            for vid, name, case, review in before.bands
        ),
    )


def _mine(library: Library, band: tuple[str, str], review: tuple | None) -> _Latest | None:
    if review is None:
        return None
    return _Latest(review[1], review[6], _submitted(library, band, review))


def _latest(
    session: Session,
    rater: UserPublic,
    number: int,
    only: set[tuple[str, str]] | None = None,
) -> dict[tuple[str, str], tuple]:
    """(status, revision, context digest, band digest, proposal digest, mode, last change) of
    the rater's latest revision of each band in round `number` (`only` those bands): columns
    only, since building ORM rows costs more than the whole screen."""
    columns = ("vignette_id", "sub_action", "status", "revision", "context_digest")
    digests = ("band_digest", "proposal_digest", "mode", "updated_at")
    query = select(*(col(getattr(Review, c)) for c in (*columns, *digests))).where(
        col(Review.rater_id) == rater.id, col(Review.round) == number
    )
    if only is not None:
        query = query.where(col(Review.vignette_id).in_({vid for vid, _ in only}))
    latest: dict[tuple[str, str], tuple] = {}
    for vid, name, status, revision, context, band, proposal, mode, at in session.execute(query):
        if (vid, name) not in latest or revision > latest[(vid, name)][1]:
            latest[(vid, name)] = (status, revision, context, band, proposal, mode, at)
    return latest


def _kept(session: Session, rater: UserPublic) -> dict[tuple[str, str], datetime]:
    """The bands this rater has an automatic draft of (fma_bands.study.drafts), with when it was
    last kept: read here with its time, in the one query the queue spends on drafts."""
    query = select(
        col(ScreenDraft.vignette_id), col(ScreenDraft.sub_action), col(ScreenDraft.updated_at)
    ).where(col(ScreenDraft.rater_id) == rater.id)
    return {(vid, name): at for vid, name, at in session.execute(query)}


def _marks(
    session: Session, rater: UserPublic
) -> tuple[dict[tuple[str, str], datetime], set[tuple[str, str]]]:
    """The rater's own open marks (fma_bands.study.marks): the bands they skipped for now, with
    when, and the bands they flagged; in one query."""
    query = select(
        col(BandMark.kind),
        col(BandMark.vignette_id),
        col(BandMark.sub_action),
        col(BandMark.created_at),
    ).where(col(BandMark.rater_id) == rater.id, col(BandMark.cleared_at).is_(None))
    skipped: dict[tuple[str, str], datetime] = {}
    flagged: set[tuple[str, str]] = set()
    for kind, vid, name, at in session.execute(query):
        if kind == marks.SKIP:
            skipped[(vid, name)] = max(at, skipped.get((vid, name), at))
        elif kind == marks.FLAG:
            flagged.add((vid, name))
    return skipped, flagged


def _submitted(library: Library, band: tuple[str, str], review: tuple) -> Status | None:
    """A submitted review's status: "changed since submitted" once what it judged has changed
    (stale); None for a review only saved."""
    if review[0] != "submitted":
        return None
    current = library.is_current(
        *band,
        context_digest=review[2],
        band_digest=review[3],
        proposal_digest=review[4],
        mode=review[5],
    )
    return "submitted" if current else "changed since submitted"


def by_case(rows: Sequence[QueueRow]) -> dict[int, list[QueueRow]]:
    """The queue's bands by case number, in the queue's order."""
    found: dict[int, list[QueueRow]] = {}
    for row in rows:
        found.setdefault(row.case, []).append(row)
    return found


def case_choice(number: int, bands: Sequence[QueueRow]) -> str:
    """A case as the review page's case picker lists it: its number, how far along it is and
    whether the rater flagged any of its bands. No other digit: typing a case's number finds
    that case first (the picker keeps the options holding what is typed, in case order)."""
    if all(r.done for r in bands):
        status = "submitted"  # every band of it: "in progress" says when only some are
    elif all(r.status == "to do" for r in bands):
        status = "to do"
    else:
        status = "in progress"
    flagged = ", flagged" if any(r.flagged for r in bands) else ""
    return f"Case {number} ({status}{flagged})"


def band_choice(row: QueueRow) -> str:
    """A band as the picker of its case lists it: its sub-action and status, in words short
    enough that the longest sub-action's name and status fit its box ("changed" for changed
    since submitted, which the screen's own line says in full)."""
    flagged = ", flagged" if row.flagged else ""
    status = "changed" if row.status == "changed since submitted" else row.status
    return f"{sub_action(row.sub_action).label} ({status}{flagged})"


def chosen_band(chosen: object, bands: Sequence[QueueRow]) -> QueueRow | None:
    """The band a choice of the band picker names, if it names one. The browser may send the
    choice back as the words it showed when those have since changed (a band's status, just
    submitted or first answered): such a choice names no band, and the page's own move stands."""
    if isinstance(chosen, int) and not isinstance(chosen, bool) and 0 <= chosen < len(bands):
        return bands[chosen]
    return None


def opening(bands: Sequence[QueueRow]) -> QueueRow:
    """The band a case opens on: its first band not yet submitted, else its first."""
    return next((r for r in bands if not r.done), bands[0])


def progress(rows: Sequence[QueueRow]) -> tuple[int, int]:
    """(submitted, assigned)."""
    return sum(r.done for r in rows), len(rows)


def counts(rows: Iterable[QueueRow]) -> dict[Status, int]:
    found = Counter(r.status for r in rows)
    return {status: found[status] for status in STATUSES}


def resume(rows: Sequence[QueueRow]) -> QueueRow | None:
    """Where the rater left off: the band they last worked on (a draft kept, a review saved or
    submitted, a skip), while it is still to finish; once they submitted or skipped it, the
    next band not yet done after it (next_after). Before any work, the first band not yet done;
    None once everything is submitted."""
    worked = [r for r in rows if r.worked_at is not None]
    if not worked:
        return next((r for r in rows if not r.done), None)
    last = max(worked, key=lambda r: r.worked_at or datetime.min)
    if last.status in ("in progress", "changed since submitted"):
        return last
    following = next_after(rows, last.band)
    if following is not None:
        return following
    # Nothing else is left: the band itself, if it still waits (skipped, the last of the queue).
    return None if last.done else last


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
