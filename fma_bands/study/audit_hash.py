"""How an audit event is hashed: `event_hash` defines it; `content_digests` hashes a stored log.

`verify` hashes every event of the log each time it runs, from the text the database holds:
the payload's JSON text and, on SQLite, `at`'s text. fma-bands writes each column in one form
only, so content in any other form (another spelling of `at`, a value of another type, a float,
text that is not JSON) was written by someone else, and is reported as edited.
"""

import re
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import Any, NamedTuple

from sqlalchemy import DateTime, Text, cast, select, type_coerce
from sqlmodel import Session, col

from fma_bands.core.canonical import (
    canonical_text_float_free,
    canonical_text_of_string,
    loads_float_free,
    sha256_digest,
    sha256_of_canonical,
)
from fma_bands.store.models import AuditEvent


def event_hash(*, at: datetime, actor: str | None, kind: str, payload: dict, prev_hash: str) -> str:
    """The hash an event with this content must carry (seq is position, not content)."""
    return sha256_digest(
        {
            "at": _iso(at),
            "actor": actor,
            "kind": kind,
            "payload": payload,
            "prev_hash": prev_hash,
        }
    )


def columns():
    return (
        AuditEvent.seq,
        AuditEvent.at,
        AuditEvent.actor,
        AuditEvent.kind,
        AuditEvent.payload,
        AuditEvent.prev_hash,
        AuditEvent.hash,
    )


class StoredEvent(NamedTuple):
    """An event as stored: `payload` is its JSON text, and on SQLite `at` is its text as well."""

    seq: int
    at: Any
    actor: Any
    kind: Any
    payload: Any
    prev_hash: Any
    hash: Any


def stored_columns(session: Session) -> tuple[Any, Any]:
    """`at` and `payload` as the database holds them: the payload's JSON text (and on SQLite,
    `at`'s text), which reading through the model would decode and could fail on."""
    if session.connection().dialect.name == "sqlite":
        # type_coerce changes no SQL, so a value SQLite holds as another type arrives as that type.
        return type_coerce(AuditEvent.at, Text), type_coerce(AuditEvent.payload, Text)
    # psycopg would decode json itself; the cast hands over the very text it would decode.
    # `at` as psycopg reads it, not through the model's type: a column SQL changed to another
    # type (text, say) arrives as that type, which no hash vouches for, rather than fail to read.
    return type_coerce(AuditEvent.at, DateTime(timezone=True)), cast(AuditEvent.payload, Text)


def stored_events(session: Session) -> list[StoredEvent]:
    """The whole log in seq order, as stored."""
    return list(each_stored_event(session))


def each_stored_event(session: Session, batch: int = 5000) -> Iterator[StoredEvent]:
    """stored_events one at a time, read from the database `batch` at a time: a large study's
    log is hundreds of thousands of events, never held at once."""
    at, payload = stored_columns(session)
    query = select(
        col(AuditEvent.seq),
        at,
        col(AuditEvent.actor),
        col(AuditEvent.kind),
        payload,
        col(AuditEvent.prev_hash),
        col(AuditEvent.hash),
    ).order_by(col(AuditEvent.seq))
    # Named tuples, as a row's attributes are slow to read. Through the session's connection
    # (Core): the session's execute would make the rows through the ORM's loading. Flushed
    # first, as the session's execute would, so that what the session holds is read too.
    session.flush()
    rows_read = session.connection().execute(query.execution_options(yield_per=batch))
    for rows in rows_read.partitions():
        yield from (StoredEvent(*row) for row in rows)


def content_digests(events: Iterable[StoredEvent]) -> Iterator[str | None]:
    """event_hash of each stored event, in order; None for content fma-bands does not write,
    which no hash can vouch for (verify reports it as edited)."""
    # Payload text -> its canonical JSON. Raters reviewing the same proposal record the same
    # payload, so a study's log holds about one distinct payload in four.
    payloads: dict[str, str] = {}
    for event in events:
        yield _digest_of_stored_text(event, payloads)


# The one form SQLAlchemy writes `at` in on SQLite; `_iso` of the datetime read back from it is the
# same text with a T and +00:00. Any other spelling, even of the same instant, is an edit.
_SQLITE_AT = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}")


def _digest_of_stored_text(event: StoredEvent, payloads: dict[str, str]) -> str | None:
    """event_hash of a stored event, or None for content fma-bands does not write.

    `loads_float_free` parses the payload text as json.loads does but refuses floats, NaN and
    Infinity (which hash unstably, so no hash vouches for one), and what it returns needs no scan
    before it is encoded. Anything unusual (a value of another type, a float, text that is not
    JSON, a date that does not exist, nesting deeper than Python parses) returns None.
    """
    at, actor, payload = event.at, event.actor, event.payload
    texts = type(event.kind) is str and type(event.prev_hash) is str and type(payload) is str
    if not texts or not (actor is None or type(actor) is str):
        return None
    try:
        if type(at) is str:
            if not _SQLITE_AT.fullmatch(at):
                return None
            datetime.fromisoformat(at)  # refuses what does not exist, such as month 13
            at_text = f"{at[:10]}T{at[11:]}+00:00"
        elif isinstance(at, datetime):
            at_text = _iso(at)  # PostgreSQL's timestamp with time zone
        else:
            return None
        payload_json = payloads.get(payload)
        if payload_json is None:
            payload_json = canonical_text_float_free(loads_float_free(payload))
            payloads[payload] = payload_json
        document = _document_json(at_text, actor, event.kind, payload_json, event.prev_hash)
        return sha256_of_canonical(document.encode())
    except (ValueError, TypeError, RecursionError):  # a lone surrogate is a UnicodeEncodeError
        return None


def _document_json(
    at_text: str, actor: str | None, kind: str, payload_json: str, prev_hash: str
) -> str:
    """canonical_json's text of event_hash's document, given the payload's own canonical JSON:
    encoding the document as a whole would encode the same payload again for every rater."""
    encode = canonical_text_of_string  # each of them is a string (actor may be None)
    # The keys in sorted order, as canonical_json writes them.
    return (
        f'{{"actor":{encode(actor)},"at":{encode(at_text)},"kind":{encode(kind)},'
        f'"payload":{payload_json},"prev_hash":{encode(prev_hash)}}}'
    )


def _iso(at: datetime) -> str:
    if at.tzinfo is None:
        raise ValueError("audit timestamps must be timezone-aware")
    return at.astimezone(UTC).isoformat(timespec="microseconds")
