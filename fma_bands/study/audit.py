"""The audit log: an append-only, hash-chained record of what happened in the study.

Each event is chained to the one before, so a later edit, deletion or reordering of rows shows.
"""

import itertools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select, text
from sqlmodel import Session, col

from fma_bands.core.canonical import sha256_digest
from fma_bands.store.models import AuditEvent
from fma_bands.study.audit_hash import columns, content_digests, each_stored_event, event_hash

GENESIS = "sha256:" + "0" * 64
"""The prev_hash of the first event: there is nothing before it."""

# Any constant would do, as long as every writer uses the same one: it is b"fma-audt" as a
# signed 64-bit integer, which is unlikely to collide with another application's advisory lock.
AUDIT_LOCK_KEY = int.from_bytes(b"fma-audt", "big", signed=True)

# Matched against keys lower-cased with everything but letters and digits removed, so that
# `new_passphrase`, `privateKey` and `e-mail` are caught as well as the plain names.
_SECRET_KEY_PARTS = (
    "passphrase",
    "password",
    "passwd",
    "privatekey",
    "registrationnumber",
    "fullname",
    "email",
)

PROBLEM_KINDS = ("edited", "deleted", "reordered", "truncated")


@dataclass(frozen=True)
class AuditProblem:
    seq: int | None
    kind: str  # one of PROBLEM_KINDS
    message: str


@dataclass
class AuditReport:
    ok: bool
    n_events: int
    # The newest event's (seq, hash); its hash None when what is stored in its place is not text
    # (the event is then reported as edited).
    head: tuple[int, str | None] | None
    problems: list[AuditProblem] = field(default_factory=list)

    def __str__(self) -> str:
        if self.head is None:
            where = "empty"
        else:
            where = f"head is event {self.head[0]} ({_short(self.head[1])})"
        noun = "event" if self.n_events == 1 else "events"
        first = f"audit log: {self.n_events} {noun}, {where}"
        if self.ok:
            return f"{first}: chain intact"
        count = len(self.problems)
        lines = [f"{first}: {count} problem{'s' if count != 1 else ''}"]
        width = max(len(p.kind) for p in self.problems)
        for problem in self.problems:
            lines.append(f"  {problem.kind:<{width}}  {problem.message}")
        return "\n".join(lines)


def record(
    session: Session,
    *,
    kind: str,
    actor: str | None = None,
    payload: dict | None = None,
) -> AuditEvent:
    """Append the next event inside the caller's transaction; the caller commits.

    Never put secrets in a payload: no passphrases, private keys, or any part of a rater's
    private identity (full name, qualification, registration number, registering body,
    institution, email). The log is shown on the audit page and its head is cited in
    attestations. Keys named like those are refused here as a second line of defence only.
    Payloads must be plain JSON without floats (they do not hash stably); anything else raises
    ValueError before anything is written.

    If the caller's transaction rolls back, the event goes with it: an audited action and its
    event are stored together or not at all. Holding the append lock until the caller commits is
    the price of that, so commit promptly after recording.
    """
    if not isinstance(kind, str) or not kind.strip():
        raise ValueError("an audit event needs a kind (a non-empty string)")
    if actor is not None and not isinstance(actor, str):
        raise ValueError(f"the audit actor must be a string or None, not {type(actor).__name__}")
    payload = _clean_payload({} if payload is None else payload)

    lock_for_append(session)
    last = head(session)
    seq, prev_hash = (1, GENESIS) if last is None else (last[0] + 1, last[1])
    at = datetime.now(UTC)
    event = AuditEvent(
        seq=seq,
        at=at,
        actor=actor,
        kind=kind,
        payload=payload,
        prev_hash=prev_hash,
        hash=event_hash(at=at, actor=actor, kind=kind, payload=payload, prev_hash=prev_hash),
    )
    session.add(event)
    # Flush now so a duplicate seq or hash fails here, at the call that caused it.
    session.flush()
    return event


def head(session: Session) -> tuple[int, str] | None:
    """(seq, hash) of the newest event, or None for an empty log."""
    row = session.execute(
        select(col(AuditEvent.seq), col(AuditEvent.hash))
        .order_by(col(AuditEvent.seq).desc())
        .limit(1)
    ).first()
    return None if row is None else (row.seq, row.hash)


# Events that record an act which changes nothing else the store holds: a sign-in (every
# command a coordinator runs signs in), a refused passphrase or activation, an identity read.
READINGS = frozenset({"sign_in", "passphrase_failed", "activation_failed", "identity_revealed"})


@dataclass(frozen=True)
class Change:
    """An event that records a change, as a reader following the store reads it."""

    kind: str
    actor: str | None
    payload: dict


def changes_since(
    session: Session, since: tuple[int, str], until: tuple[int, str], *, most: int
) -> list[Change] | None:
    """The changes recorded after the state head `since` up to `until`, oldest first; None
    when `since` is not in the log as it was (another store under the same address) or more
    than `most` came between."""
    then = session.execute(select(col(AuditEvent.hash)).where(col(AuditEvent.seq) == since[0]))
    if then.scalar() != since[1]:
        return None
    rows = session.execute(
        select(col(AuditEvent.kind), col(AuditEvent.actor), col(AuditEvent.payload))
        .where(
            col(AuditEvent.seq) > since[0],
            col(AuditEvent.seq) <= until[0],
            col(AuditEvent.kind).not_in(READINGS),
        )
        .order_by(col(AuditEvent.seq))
        .limit(most + 1)
    ).all()
    if len(rows) > most:
        return None
    return [Change(kind, actor, payload) for kind, actor, payload in rows]


def state_head(session: Session) -> tuple[int, str] | None:
    """(seq, hash) of the newest event that records a change (any kind but READINGS, so a kind
    added later counts as a change), or None if there is none: the state of what the store
    holds besides the log, as store_state and the kept reports key what they keep."""
    row = session.execute(
        select(col(AuditEvent.seq), col(AuditEvent.hash))
        .where(col(AuditEvent.kind).not_in(READINGS))
        .order_by(col(AuditEvent.seq).desc())
        .limit(1)
    ).first()
    return None if row is None else (row.seq, row.hash)


def events(
    session: Session, *, limit: int | None = None, kinds: list[str] | None = None
) -> list[dict]:
    """Events newest first as plain dicts (safe to keep after the session closes)."""
    query = select(*columns()).order_by(col(AuditEvent.seq).desc())
    if kinds is not None:
        query = query.where(col(AuditEvent.kind).in_(list(kinds)))
    if limit is not None:
        query = query.limit(limit)
    return [dict(row._mapping) for row in session.execute(query)]


def verify(
    session: Session,
    *,
    expected_head: tuple[int, str] | None = None,
    anchors: Sequence[tuple[int, str, str]] = (),
) -> AuditReport:
    """Walk the log in seq order and report every sign of tampering.

    An event's `hash` is `sha256_digest({at, actor, kind, payload, prev_hash})` (canonical JSON,
    `at` as ISO 8601 UTC with microseconds). `seq` is deliberately not hashed: it is only the
    position, and the chain (each `prev_hash` naming the hash of the event before) already fixes
    the order. That keeps the kinds of tampering apart:

    - `edited`: the event's content no longer matches its stored hash, or is stored in a form
      fma-bands never writes (audit_hash). The next event still links to the stored hash, so
      one edit is one report, not a cascade.
    - `reordered`: the content is intact but `prev_hash` is the hash of an event other than the
      one numbered before it (rows were renumbered into another order).
    - `deleted`: `prev_hash` names a hash no event has, or the numbers skip; the message names
      the missing numbers where it can.
    - `truncated`: deleting the newest events leaves a valid chain, so only a head recorded
      elsewhere reveals it: every signed record of the study's log carries the head at its
      signing. Pass them as `anchors` (seq, hash, which record carries it), or one as
      `expected_head`, and a missing or different event at that seq is reported: a log
      rewritten and re-chained from there on, or cut.
    """
    # Every event's place first (small), then the events themselves a batch at a time: an event
    # may be chained after one that comes later in the log.
    places = select(col(AuditEvent.seq), col(AuditEvent.hash)).order_by(col(AuditEvent.seq))
    hash_of_seq = {seq: digest for seq, digest in session.execute(places)}
    seq_of_hash = {digest: seq for seq, digest in hash_of_seq.items()}
    problems: list[AuditProblem] = []
    previous = None
    expected_seq, expected_prev = 1, GENESIS
    rows, hashed = itertools.tee(each_stored_event(session))
    for row, digest in zip(rows, content_digests(hashed), strict=True):
        content_ok = digest == row.hash
        # An intact event in its place, as nearly all are, skips _check: it would find nothing.
        if not (content_ok and row.seq == expected_seq and row.prev_hash == expected_prev):
            problems.extend(_check(row, previous, seq_of_hash, content_ok))
        previous = row
        expected_seq, expected_prev = row.seq + 1, row.hash
    last = None if previous is None else (previous.seq, previous.hash)
    if expected_head is not None:
        problems.extend(_check_head(expected_head, hash_of_seq, seq_of_hash, last))
    for seq, digest, source in anchors:
        for problem in _check_head((seq, digest), hash_of_seq, seq_of_hash, last):
            problems.append(
                AuditProblem(problem.seq, problem.kind, f"{source} carries it: {problem.message}")
            )
    shown = None if last is None else (last[0], last[1] if isinstance(last[1], str) else None)
    return AuditReport(ok=not problems, n_events=len(hash_of_seq), head=shown, problems=problems)


def _check(row, previous, seq_of_hash: dict[str, int], content_ok: bool) -> list[AuditProblem]:
    problems = []
    seq = row.seq
    if not content_ok:
        problems.append(
            AuditProblem(
                seq,
                "edited",
                f"event {seq} ({row.kind}) was edited: its content no longer matches its hash",
            )
        )
    expected_seq = 1 if previous is None else previous.seq + 1
    expected_prev = GENESIS if previous is None else previous.hash
    linked = row.prev_hash == expected_prev
    if seq < expected_seq:
        # Only possible for the first row (numbers are unique and sorted): seq 0 or negative.
        problems.append(
            AuditProblem(seq, "reordered", f"event {seq} is numbered below 1, where none can be")
        )
    elif seq > expected_seq:
        missing = _span(expected_seq, seq - 1)
        where = f"before {seq}" if previous is None else f"between {previous.seq} and {seq}"
        note = ""
        if linked and previous is not None:
            note = f", yet event {seq} is chained directly to event {previous.seq}: renumbered?"
        problems.append(AuditProblem(seq, "deleted", f"{missing} ({where}){note}"))
    elif not linked and content_ok:
        # A link is evidence only when the event's own content, prev_hash included, is intact;
        # an edited prev_hash has already been reported as an edit.
        if row.prev_hash == GENESIS or row.prev_hash in seq_of_hash:
            after = (
                "the start of the log"
                if row.prev_hash == GENESIS
                else f"event {seq_of_hash[row.prev_hash]}"
            )
            before = "the start of the log" if previous is None else f"event {previous.seq}"
            problems.append(
                AuditProblem(
                    seq,
                    "reordered",
                    f"event {seq} is chained after {after}, not after {before}: "
                    "events were reordered",
                )
            )
        else:
            before = "the start of the log" if previous is None else f"event {previous.seq}"
            problems.append(
                AuditProblem(
                    seq,
                    "deleted",
                    f"event {seq} follows an event no longer in the log (its prev_hash "
                    f"{_short(row.prev_hash)} matches no event): an event between {before} "
                    f"and event {seq} was deleted and the rest renumbered, or {before} "
                    "was replaced",
                )
            )
    return problems


def _check_head(
    expected: tuple[int, str],
    hash_of_seq: dict[int, str],
    seq_of_hash: dict[str, int],
    last: tuple[int, str] | None,
) -> list[AuditProblem]:
    seq, digest = expected
    now = "the log is empty" if last is None else f"the log now ends at event {last[0]}"
    if seq_of_hash.get(digest) == seq:
        return []
    if digest in seq_of_hash:
        message = (
            f"the recorded head, event {seq} ({_short(digest)}), is now numbered "
            f"{seq_of_hash[digest]}"
        )
    elif seq in hash_of_seq:
        found = hash_of_seq[seq]
        message = (
            f"event {seq} has hash {_short(found)}, not the recorded head {_short(digest)}: "
            f"the log was cut and rewritten from event {seq} on ({now})"
        )
    elif last is not None and last[0] > seq:
        message = (
            f"the recorded head, event {seq} ({_short(digest)}), is missing: it was deleted ({now})"
        )
    else:
        message = (
            f"the recorded head, event {seq} ({_short(digest)}), is missing: {now}, "
            "so the newest events were deleted"
        )
    return [AuditProblem(seq, "truncated", message)]


def lock_for_append(session: Session) -> None:
    """Serialise appenders to the audit log and the signed log, so two never read the same
    head (which would fork a chain)."""
    connection = session.connection()
    if connection.dialect.name == "postgresql":
        # Released at commit or rollback; under READ COMMITTED the head read after it sees the
        # previous holder's committed event.
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": AUDIT_LOCK_KEY})
    elif connection.dialect.name == "sqlite":
        # SQLite's write lock is taken by the first write of a transaction, not by a read, so a
        # write that changes nothing comes first. Reading the head before holding the lock would
        # let two writers pick the same seq; a deferred read-then-write could also fail at once
        # (SQLITE_BUSY_SNAPSHOT) instead of waiting out busy_timeout.
        connection.execute(text("UPDATE audit_event SET seq = seq WHERE 1 = 0"))
    else:
        raise NotImplementedError(f"no append lock for {connection.dialect.name}")


def _clean_payload(payload: Any) -> dict:
    if not isinstance(payload, dict):
        raise ValueError(f"an audit payload must be a dict, not {type(payload).__name__}")
    _refuse_secrets(payload, "payload")
    try:
        text_form = json.dumps(payload, sort_keys=True, ensure_ascii=False, allow_nan=False)
        sha256_digest(payload)  # refuses floats and non-string keys
    except (TypeError, ValueError) as exc:
        raise ValueError(f"audit payload is not plain JSON without floats: {exc}") from exc
    # Store exactly what was hashed (tuples become lists, and so on).
    return json.loads(text_form)


def _refuse_secrets(obj: Any, path: str) -> None:
    if isinstance(obj, dict):
        for key, value in obj.items():
            squashed = re.sub(r"[^a-z0-9]", "", str(key).lower())
            if any(part in squashed for part in _SECRET_KEY_PARTS):
                raise ValueError(
                    f"audit payload key {path}.{key} looks like a secret or private identity "
                    "field; the audit log must never hold those"
                )
            _refuse_secrets(value, f"{path}.{key}")
    elif isinstance(obj, list | tuple):
        for i, value in enumerate(obj):
            _refuse_secrets(value, f"{path}[{i}]")


def _span(first: int, last: int) -> str:
    if first == last:
        return f"event {first} is missing"
    return f"events {first}-{last} are missing"


def _short(digest: object) -> str:
    """A stored hash as messages show it: its first hex digits. What is stored in a hash's place
    that is not text (a value of another type, written by SQL) is said to be so."""
    if not isinstance(digest, str):
        return "not a hash: no text is stored there"
    return digest.removeprefix("sha256:")[:12]
