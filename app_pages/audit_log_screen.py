"""The audit log as the coordinator reads it: events filtered by kind, by who and by date, a
page at a time, their details in words, and all of a search as CSV."""

import json
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from sqlalchemy import ColumnElement, func, select
from sqlmodel import Session, col

from fma_bands.core.actions import SUB_ACTIONS
from fma_bands.core.people import UserPublic
from fma_bands.core.spreadsheet import csv_text
from fma_bands.store.models import AuditEvent
from fma_bands.study import audit
from fma_bands.study.audit_hash import stored_columns
from fma_bands.study.state import authorize
from fma_bands.study.users import pseudonyms

COLUMNS = ("seq", "when (UTC)", "who", "what", "details")


@dataclass(frozen=True)
class Search:
    kinds: tuple[str, ...] = ()
    actor: str | None = None
    since: date | None = None  # from the start of this day, UTC
    until: date | None = None  # to the end of this day, UTC
    seq: int | None = None  # this event alone


@dataclass(frozen=True)
class Check:
    """A check of the whole hash chain, as the page last made it in this session."""

    report: audit.AuditReport
    head: tuple[int, str] | None  # the newest event when it was made
    at: datetime


def check_chain(session: Session, viewer: UserPublic, kept: object, *, opened: bool) -> Check:
    """The chain checked now when the page is `opened`, when an event was added since `kept`
    (the session's last check) or without one; else `kept`."""
    authorize(session, viewer, "read_audit")
    head = audit.head(session)
    if opened or not isinstance(kept, Check) or kept.head != head:
        return Check(audit.verify(session), head, datetime.now(UTC))
    return kept


def choices(session: Session, viewer: UserPublic) -> tuple[list[str], list[str]]:
    """Every kind of event in the log, and everyone who acted in it."""
    authorize(session, viewer, "read_audit")
    kinds = session.execute(select(col(AuditEvent.kind)).distinct().order_by(AuditEvent.kind))
    actors = session.execute(
        select(col(AuditEvent.actor))
        .where(col(AuditEvent.actor).is_not(None))
        .distinct()
        .order_by(AuditEvent.actor)
    )
    return list(kinds.scalars()), list(actors.scalars())


def _where(search: Search) -> list[ColumnElement[bool]]:
    conditions: list[ColumnElement[bool]] = []
    if search.kinds:
        conditions.append(col(AuditEvent.kind).in_(list(search.kinds)))
    if search.actor:
        conditions.append(col(AuditEvent.actor) == search.actor)
    if search.since:
        conditions.append(col(AuditEvent.at) >= datetime.combine(search.since, time(), UTC))
    if search.until:
        end = datetime.combine(search.until + timedelta(days=1), time(), UTC)
        conditions.append(col(AuditEvent.at) < end)
    if search.seq is not None:
        conditions.append(col(AuditEvent.seq) == search.seq)
    return conditions


def count(session: Session, viewer: UserPublic, search: Search) -> int:
    """How many events match."""
    authorize(session, viewer, "read_audit")
    query = select(func.count()).select_from(AuditEvent).where(*_where(search))
    return int(session.execute(query).scalar_one())


def search(
    session: Session,
    viewer: UserPublic,
    search: Search,
    *,
    limit: int | None = None,
    offset: int = 0,
    whole: bool = False,
) -> list[dict[str, Any]]:
    """The matching events newest first, as table rows; `whole`: every member of a long list
    in the details (a grid's cell lists eight)."""
    authorize(session, viewer, "read_audit")
    conditions = _where(search)
    people = accounts(session)
    at, payload = stored_columns(session)
    query = (
        select(col(AuditEvent.seq), at, col(AuditEvent.actor), col(AuditEvent.kind), payload)
        .where(*conditions)
        .order_by(col(AuditEvent.seq).desc())
        .offset(offset)
    )
    if limit is not None:
        query = query.limit(limit)
    rows = [
        {
            "seq": seq,
            "when (UTC)": _when(at),
            "who": who_words(actor, people, kind),
            "what": kind.replace("_", " "),
            "details": _details_of_stored(payload, whole),
        }
        for seq, at, actor, kind, payload in session.execute(query)
    ]
    return rows


# Actors that are no person: fma-bands itself, at work for a command or the demo (a person's
# name never takes these forms: a pseudonym is checked when enrolled).
NOT_PEOPLE = {
    None: "(the system, or no one signed in)",
    "cli": "(the command line)",
    "demo": "(fma-bands demo)",
}
# A refused passphrase is no proven person's act, whether typed at sign-in or by someone signed
# in (to sign, to change it): the name is not trusted as the actor, and the event's details say
# which account it named.
UNPROVEN = "no one's proven act: the details name the account"
ATTEMPTS = {
    "passphrase_failed": f"(a refused passphrase, {UNPROVEN})",
    "activation_failed": f"(a refused activation, {UNPROVEN})",
}
SYSTEM = "(the system)"


def accounts(session: Session) -> set[str]:
    """Every account's pseudonym: who_words tells people from what else acted by them."""
    return set(pseudonyms(session).values())


def who_words(actor: str | None, people: Collection[str], kind: str | None = None) -> str:
    """Who acted, as the log's reader reads it: a person's pseudonym (one of `people`, the
    study's accounts), or what else acted; with the event's kind, which of the two no actor
    stands for."""
    if actor is not None and actor in people:
        return actor
    if actor is None and kind is not None:
        return ATTEMPTS.get(kind, SYSTEM)
    return NOT_PEOPLE.get(actor) or str(actor)


# Read from what the database holds, so that an event edited into something fma-bands never
# writes (text that is not JSON, a day that does not exist) is listed as such, not a crash;
# the chain check on the same page names it as edited.
UNREADABLE = "(unreadable: not as fma-bands writes it; the chain check reports it as edited)"


def _when(at: Any) -> str:
    try:
        moment = datetime.fromisoformat(at) if isinstance(at, str) else at
        return f"{moment:%Y-%m-%d %H:%M:%S}"
    except (TypeError, ValueError):
        return UNREADABLE


def _details_of_stored(text: Any, whole: bool) -> str:
    try:
        payload = json.loads(text)
    except (TypeError, ValueError):
        return UNREADABLE
    return details(payload, whole=whole) if isinstance(payload, dict) else UNREADABLE


def details(payload: dict[str, Any], *, whole: bool = False) -> str:
    """`{"vignette_id": "x", "sub_action": "admit"}` as "vignette id: x; sub-action: Admit to
    hospital": names in words, sub-actions by their labels (the key beside, as the filters and
    exports name them), nested records in brackets."""
    parts = []
    for name, value in payload.items():
        if value is None or value == [] or value == {}:
            continue
        parts.append(f"{_name(name)}: {_shown(name, value, whole)}")
    return "; ".join(parts)


# Keys whose words would read as a developer's: a name nobody enrolled is kept only as a keyed
# hash, so that repeated attempts at one name can be told apart without the name itself.
NAMES = {"sub_action": "sub-action", "unknown_name_hmac": "unknown name (keyed hash)"}


def _name(name: str) -> str:
    return NAMES.get(name) or name.replace("_", " ")


def _shown(name: str, value: Any, whole: bool) -> str:
    if isinstance(value, list):
        # A grid's cell lists eight; the event chosen and the CSV list every one.
        kept = value if whole else value[:8]
        shown = [_shown(name, v, whole) for v in kept]
        return ", ".join(shown) + (" …" if len(kept) < len(value) else "")
    if isinstance(value, dict):
        return f"({details(value, whole=whole)})"
    if isinstance(value, bool):  # never Python's True and False
        return "yes" if value else "no"
    text = str(value)
    if name == "sub_action" and text in SUB_ACTIONS:
        return f"{SUB_ACTIONS[text].label} ({text})"
    # A band named "vignette/sub-action", as some events record it.
    vid, _, action = text.rpartition("/")
    if vid and action in SUB_ACTIONS:
        return f"{vid} · {SUB_ACTIONS[action].label}"
    return text


def to_csv(session: Session, viewer: UserPublic, wanted: Search) -> str:
    return csv_text(COLUMNS, search(session, viewer, wanted, whole=True))
