"""A rater's marks on bands: skipped for now (back at the end of their queue), or flagged for
the coordinator with a note (a problem with the vignette, the proposal, or the rater's scope).

A rater sees their own marks; the coordinator sees every flag, never another rater's skips
(skips are the rater's own planning). Flags are audited; skips are not.
"""

from dataclasses import dataclass
from datetime import datetime

from sqlmodel import Session, col, select, update

from fma_bands.core.errors import AccessDenied, FmaBandsError
from fma_bands.core.people import UserPublic
from fma_bands.core.vignettes import Library
from fma_bands.store.models import BandMark, User, utcnow
from fma_bands.study import audit, queries
from fma_bands.study.reviews import current_review
from fma_bands.study.state import authorize, study

SKIP, FLAG = "skip", "flag"
MAX_NOTE = 2000


@dataclass(frozen=True)
class Flag:
    id: int
    rater: str
    vignette_id: str
    sub_action: str
    note: str
    created_at: datetime
    cleared_at: datetime | None
    cleared_by: str | None


def _rater(user: UserPublic) -> None:
    if user.role != "rater":
        raise AccessDenied("only raters mark bands in their queue")


def _band(library: Library, vid: str, name: str) -> None:
    if library.band(vid, name) is None:
        raise FmaBandsError("this band is not in the study", field="band")


def skip(session: Session, library: Library, rater: UserPublic, vid: str, name: str) -> None:
    """Put the band aside for now: the queue comes back to it once the others are done. A band
    whose review is submitted in this round is not to do, so it cannot be put aside: a
    revision of it begun and left is a draft, and the submitted review stands."""
    _rater(rater)
    _band(library, vid, name)
    current = current_review(session, library, rater, vid, name)
    submitted = current is not None and current.status == "submitted"
    if submitted and current.round == study(session).round:  # type: ignore[union-attr]
        raise FmaBandsError(
            "your review of this band is submitted, so it is not skipped: it stands until you "
            "submit a revision",
            field="band",
        )
    if (vid, name) in open_marks(session, rater).get(SKIP, set()):
        return
    session.add(BandMark(rater_id=rater.id, vignette_id=vid, sub_action=name, kind=SKIP))
    session.flush()


def clear_skip(session: Session, rater: UserPublic, vid: str, name: str) -> None:
    """The band is no longer put aside (it was submitted)."""
    session.exec(
        update(BandMark)
        .where(
            col(BandMark.rater_id) == rater.id,
            col(BandMark.vignette_id) == vid,
            col(BandMark.sub_action) == name,
            col(BandMark.kind) == SKIP,
            col(BandMark.cleared_at).is_(None),
        )
        .values(cleared_at=utcnow(), cleared_by=rater.pseudonym)
    )


def flag(
    session: Session, library: Library, rater: UserPublic, vid: str, name: str, note: str
) -> None:
    """Flag the band for the coordinator; the note says what they should look at."""
    _rater(rater)
    _band(library, vid, name)
    note = (note or "").strip()
    if not note:
        message = "say what the coordinator should look at: one sentence is enough"
        raise FmaBandsError(message, fields={"flag": message})
    if len(note) > MAX_NOTE:
        message = f"keep the note under {MAX_NOTE} characters"
        raise FmaBandsError(message, fields={"flag": message})
    row = BandMark(rater_id=rater.id, vignette_id=vid, sub_action=name, kind=FLAG, note=note)
    session.add(row)
    session.flush()
    audit.record(
        session,
        kind="band_flagged",
        actor=rater.pseudonym,
        payload={"vignette_id": vid, "sub_action": name, "flag": row.id},
    )


def open_marks(session: Session, rater: UserPublic) -> dict[str, set[tuple[str, str]]]:
    """The rater's own open marks, by kind: {"skip": {(vid, name), ...}, "flag": {...}}."""
    query = select(BandMark.kind, BandMark.vignette_id, BandMark.sub_action).where(
        BandMark.rater_id == rater.id, col(BandMark.cleared_at).is_(None)
    )
    marks: dict[str, set[tuple[str, str]]] = {SKIP: set(), FLAG: set()}
    for kind, vid, name in session.exec(query):
        marks[kind].add((vid, name))
    return marks


def my_flags(session: Session, rater: UserPublic, vid: str, name: str) -> list[Flag]:
    """The rater's own flags on one band, open or dealt with, oldest first."""
    _rater(rater)
    return _flags(
        session,
        col(BandMark.rater_id) == rater.id,
        col(BandMark.vignette_id) == vid,
        col(BandMark.sub_action) == name,
    )


def all_flags(session: Session, viewer: UserPublic, *, open_only: bool = True) -> list[Flag]:
    authorize(session, viewer, "see_flags")
    conditions = [col(BandMark.cleared_at).is_(None)] if open_only else []
    return _flags(session, *conditions)


def resolve(session: Session, viewer: UserPublic, flag_id: int) -> None:
    """The coordinator has dealt with a flag (audited)."""
    authorize(session, viewer, "see_flags")
    row = session.get(BandMark, flag_id)
    if row is None or row.kind != FLAG:
        raise FmaBandsError("no such flag")
    if row.cleared_at is None:
        row.cleared_at, row.cleared_by = utcnow(), viewer.pseudonym
        session.add(row)
        audit.record(
            session, kind="flag_resolved", actor=viewer.pseudonym, payload={"flag": flag_id}
        )
        session.flush()


def reply(session: Session, library: Library, viewer: UserPublic, flag_id: int, body: str) -> None:
    """The coordinator answers a flag: the reply goes to its rater as a query on the flagged
    band (Queries: a thread only the two of them read, where the rater can answer back), and
    the flag is dealt with, in one transaction."""
    authorize(session, viewer, "see_flags")
    row = session.get(BandMark, flag_id)
    if row is None or row.kind != FLAG:
        raise FmaBandsError("no such flag")
    rater = session.get(User, row.rater_id)
    assert rater is not None, "a flag's rater is a user of the study"
    text = (body or "").strip()
    if text:  # else queries.write says what is missing, beside the box
        # The flag itself is not in the thread: quote it, so both sides read what is answered.
        note = " ".join((row.note or "").split())
        quoted = note if len(note) <= FLAG_QUOTED else note[: FLAG_QUOTED - 1].rstrip() + "…"
        text = f'{FLAG_REPLY} {row.created_at:%Y-%m-%d %H:%M} UTC, "{quoted}": {text}'
    band = (row.vignette_id, row.sub_action)
    queries.write(session, library, viewer, rater.pseudonym, band, text)
    resolve(session, viewer, flag_id)


# How a reply to a flag starts in the rater's query thread, so they know what it answers: the
# flag's time and its note, quoted up to FLAG_QUOTED characters.
FLAG_REPLY, FLAG_QUOTED = "About your flag of", 200
REPLY_CHARS = queries.MAX_BODY - len(f'{FLAG_REPLY} 2026-01-01 00:00 UTC, "": ') - FLAG_QUOTED


def _flags(session: Session, *conditions) -> list[Flag]:
    query = (
        select(BandMark, User.pseudonym)
        .join(User, col(User.id) == col(BandMark.rater_id))
        .where(BandMark.kind == FLAG, *conditions)
        .order_by(col(BandMark.created_at))
    )
    return [
        Flag(
            id=row.id or 0,
            rater=pseudonym,
            vignette_id=row.vignette_id,
            sub_action=row.sub_action,
            note=row.note or "",
            created_at=row.created_at,
            cleared_at=row.cleared_at,
            cleared_by=row.cleared_by,
        )
        for row, pseudonym in session.exec(query)
    ]
