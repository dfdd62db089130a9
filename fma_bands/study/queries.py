"""Queries: a thread between the coordinator and one rater about one band, as in REDCap's data
queries. A rater asks about a band of their own queue, or replies; the coordinator asks any
rater about any band, replies, and closes a thread.

A rater reads only their own threads, never another rater's: a question or an answer could
carry a judgement, and during an open round no rater may see another's. A thread holds only
what its two sides wrote, never a review. The audit log records each message by its id, its
band, whose thread it is and its length, never its words (as it records a flag without its
note).
"""

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from sqlmodel import Session, col, select

from fma_bands.core.errors import AccessDenied, FmaBandsError
from fma_bands.core.people import UserPublic
from fma_bands.core.vignettes import Library
from fma_bands.store.models import QueryMessage, User
from fma_bands.study import audit
from fma_bands.study.assignment import assigned_bands
from fma_bands.study.state import authorize, current_round_bands

MAX_BODY = 2000
FIELD = "message"

Band = tuple[str, str]


@dataclass(frozen=True)
class Message:
    id: int
    author: str  # the pseudonym of whoever wrote it
    by_rater: bool  # written by the rater whose thread it is (else by a coordinator)
    body: str
    closes: bool
    created_at: datetime


@dataclass(frozen=True)
class Thread:
    """Every message between the coordinator and one rater about one band, oldest first."""

    vignette_id: str
    sub_action: str
    rater_id: int
    rater: str  # the rater's pseudonym
    messages: tuple[Message, ...]

    @property
    def band(self) -> Band:
        return (self.vignette_id, self.sub_action)

    @property
    def is_open(self) -> bool:
        return not self.messages[-1].closes

    @property
    def awaits(self) -> str | None:
        """Whose reply the thread waits for ("rater" or "coordinator"); None once closed."""
        if not self.is_open:
            return None
        return "coordinator" if self.messages[-1].by_rater else "rater"

    @property
    def last_at(self) -> datetime:
        return self.messages[-1].created_at


def ask(session: Session, library: Library, rater: UserPublic, band: Band, body: str) -> Message:
    """A rater's question or reply to the coordinator about a band of their own: one of their
    queue, or one they already have a thread on (a band can leave a rater's queue when a later
    round opens, and the conversation about it goes on)."""
    authorize(session, rater, "ask_coordinator")
    text = _body(body)
    if not _has_thread(session, rater.id, band) and band not in _queue(session, library, rater):
        message = "you can ask only about a band of your own queue"
        raise FmaBandsError(message, field="band", fields={"band": message})
    return _add(session, actor=rater, rater=rater, band=band, body=text, closes=False)


def write(
    session: Session,
    library: Library,
    coordinator: UserPublic,
    rater_name: str,
    band: Band,
    body: str,
) -> Message:
    """The coordinator's message to one rater about any band of the study: a new thread, or a
    reply in theirs (which opens it again if it was closed)."""
    authorize(session, coordinator, "answer_queries")
    text = _body(body)
    if library.band(*band) is None:
        message = "choose a band of the study"
        raise FmaBandsError(message, field="band", fields={"band": message})
    rater = _rater(session, rater_name)
    return _add(session, actor=coordinator, rater=rater, band=band, body=text, closes=False)


def close(
    session: Session, coordinator: UserPublic, rater_name: str, band: Band, note: str = ""
) -> Message:
    """The coordinator closes an open thread, with a last word if they wish (the rater sees
    it was closed and by whom)."""
    authorize(session, coordinator, "answer_queries")
    text = note.strip()
    if len(text) > MAX_BODY:
        raise _too_long()
    rater = _rater(session, rater_name)
    found = _threads(session, col(QueryMessage.rater_id) == rater.id, band=band)
    if not found or not found[0].is_open:
        raise FmaBandsError("this query is not open: there is nothing to close")
    return _add(session, actor=coordinator, rater=rater, band=band, body=text, closes=True)


def threads(session: Session, viewer: UserPublic) -> list[Thread]:
    """The threads this person may read, those awaiting their reply first, then the other open
    ones, then the closed ones, newest first within each: a rater their own only, the
    coordinator every rater's."""
    if viewer.role == "rater":
        authorize(session, viewer, "ask_coordinator")
        found = _threads(session, col(QueryMessage.rater_id) == viewer.id)
    else:
        authorize(session, viewer, "answer_queries")
        found = _threads(session)
    mine = "rater" if viewer.role == "rater" else "coordinator"
    order = sorted(found, key=lambda t: t.last_at, reverse=True)
    return sorted(order, key=lambda t: 0 if t.awaits == mine else 1 if t.is_open else 2)


def awaiting(session: Session, viewer: UserPublic) -> int:
    """How many open threads wait for this person's reply: for a rater, their own threads
    the coordinator wrote in last; for the coordinator, threads a rater wrote in last."""
    mine = "rater" if viewer.role == "rater" else "coordinator"
    return sum(t.awaits == mine for t in threads(session, viewer))


def _body(body: str) -> str:
    text = (body or "").strip()
    if not text:
        message = "write the message first: one sentence is enough"
        raise FmaBandsError(message, field=FIELD, fields={FIELD: message})
    if len(text) > MAX_BODY:
        raise _too_long()
    return text


def _too_long() -> FmaBandsError:
    message = f"keep the message under {MAX_BODY} characters"
    return FmaBandsError(message, field=FIELD, fields={FIELD: message})


def _rater(session: Session, name: str) -> UserPublic:
    row = session.exec(select(User).where(User.pseudonym == name)).first()
    if row is None or row.id is None or row.role != "rater":
        message = f"{name} is not a rater of this study"
        raise FmaBandsError(message, field="rater", fields={"rater": message})
    return UserPublic(id=row.id, pseudonym=row.pseudonym, role="rater")


def _queue(session: Session, library: Library, rater: UserPublic) -> set[Band]:
    """The bands of the rater's queue in the current round (as their queue lists them)."""
    _, chosen = current_round_bands(session, rater.id)
    return assigned_bands(session, library, rater) if chosen is None else chosen


def _has_thread(session: Session, rater_id: int, band: Band) -> bool:
    query = select(QueryMessage.id).where(
        QueryMessage.rater_id == rater_id,
        QueryMessage.vignette_id == band[0],
        QueryMessage.sub_action == band[1],
    )
    return session.exec(query.limit(1)).first() is not None


def _add(
    session: Session,
    *,
    actor: UserPublic,
    rater: UserPublic,
    band: Band,
    body: str,
    closes: bool,
) -> Message:
    if actor.role == "rater" and actor.id != rater.id:
        raise AccessDenied("a rater writes only in their own queries")
    row = QueryMessage(
        vignette_id=band[0],
        sub_action=band[1],
        rater_id=rater.id,
        author=actor.pseudonym,
        body=body,
        closes=closes,
    )
    session.add(row)
    session.flush()
    assert row.id is not None  # given by the flush
    audit.record(
        session,
        kind="query_closed" if closes else "query_message",
        actor=actor.pseudonym,
        payload={
            "vignette_id": band[0],
            "sub_action": band[1],
            "rater": rater.pseudonym,
            "message": row.id,
            "length": len(body),
        },
    )
    return Message(row.id, actor.pseudonym, actor.id == rater.id, body, closes, row.created_at)


def _threads(session: Session, *conditions, band: Band | None = None) -> list[Thread]:
    if band is not None:
        conditions = (
            *conditions,
            col(QueryMessage.vignette_id) == band[0],
            col(QueryMessage.sub_action) == band[1],
        )
    query = (
        select(QueryMessage, User.pseudonym)
        .join(User, col(User.id) == col(QueryMessage.rater_id))
        .where(*conditions)
        .order_by(col(QueryMessage.created_at), col(QueryMessage.id))
    )
    grouped: dict[tuple[str, str, int], tuple[str, list[Message]]] = {}
    for row, rater in session.exec(query):
        key = (row.vignette_id, row.sub_action, row.rater_id)
        message = Message(
            row.id or 0, row.author, row.author == rater, row.body, row.closes, row.created_at
        )
        grouped.setdefault(key, (rater, []))[1].append(message)
    return [
        Thread(vid, name, rater_id, rater, tuple(messages))
        for (vid, name, rater_id), (rater, messages) in grouped.items()
    ]


def open_threads(found: Iterable[Thread]) -> list[Thread]:
    return [t for t in found if t.is_open]


def awaiting_words(count: int, role: str) -> str:
    """How many open queries the other side wrote in last, in the same words on the queue and
    the queries page, and as true once read as before: for the coordinator a question to
    answer ("1 query waits for your answer"), for a rater the coordinator's last message, an
    answer or a question of their own, in a thread not yet closed ("1 open query ends with a
    message from the coordinator")."""
    if role == "coordinator":
        return f"{count} quer{'y waits' if count == 1 else 'ies wait'} for your answer"
    ends = "y ends" if count == 1 else "ies end"
    return f"{count} open quer{ends} with a message from the coordinator"
