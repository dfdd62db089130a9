"""One envelope file of attestations/ read and checked offline: parsed, its signatures verified
against the keys a caller trusts, its statement's place in the study's log read. What one process
has worked out about each file is cached by the SHA-256 of its bytes, so nothing is verified
twice.
"""

import base64
import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fma_bands.core.errors import FmaBandsError
from fma_bands.core.files import decode_text, load_json, read_bounded_bytes
from fma_bands.evidence.dsse import (
    IN_TOTO_PAYLOAD_TYPE,
    STATEMENT_TYPE,
    Parsed,
    parse_envelope,
    verify_parsed,
)

# Every record of the log has a kind; its predicateType names it.
KINDS = (
    "root",
    "enrolment",
    "identity",
    "activation",
    "adjudication",
    "revocation",
    "policy",
    "approval",
    "chair_decision",
)
PREDICATE_TYPES = {f"https://fma-bands.org/log/{kind}/v2": kind for kind in KINDS}
TYPE_OF = {kind: uri for uri, kind in PREDICATE_TYPES.items()}
ENVELOPE_SUFFIX = ".dsse.json"
STAMP = "%Y-%m-%dT%H:%M:%S.%fZ"
# An attestation of 250 bands is about 0.6 MB: signing splits larger ones (study/signing.py).
MAX_ENVELOPE_BYTES = 4 * 1024 * 1024


@dataclass
class CheckedEnvelope:
    """One envelope file as read; `error` holds (code, message) when it fails a check."""

    path: Path
    error: tuple[str, str] | None = None
    claimed: dict[str, Any] | None = None  # the statement, before any signature is checked
    payload_sha256: str | None = None  # the record's digest: what the next record links to
    file_sha256: str | None = None
    parsed: Parsed | None = field(default=None, repr=False)
    statement: dict[str, Any] | None = None  # set once the signature and place are verified
    keyid: str | None = None
    pseudonym: str | None = None

    @property
    def kind(self) -> str | None:
        claimed = self.claimed if isinstance(self.claimed, dict) else {}
        return PREDICATE_TYPES.get(claimed.get("predicateType"))  # type: ignore[arg-type]

    @property
    def predicate(self) -> dict[str, Any]:
        """The statement's predicate (the caller checked it is a mapping)."""
        assert isinstance(self.claimed, dict)
        return self.claimed["predicate"]

    @property
    def position(self) -> tuple[str, int, str | None] | None:
        """(study id, sequence, previous record's digest) as the statement claims them, or None
        when it claims no well-formed place in a log."""
        try:
            log = self.predicate["log"]
            study, sequence, previous = log["study"], log["sequence"], log["previous"]
        except (AssertionError, KeyError, TypeError):
            return None
        if not isinstance(study, str) or not isinstance(sequence, int):
            return None
        if isinstance(sequence, bool) or sequence < 0:
            return None
        if previous is not None and not isinstance(previous, str):
            return None
        return study, sequence, previous

    @property
    def signed_at(self) -> str:
        """When the signer says they signed: shown to people, never used to order anything."""
        found = self.predicate.get("signed_at")
        return found if isinstance(found, str) else ""

    @property
    def digest(self) -> str:
        return f"sha256:{self.payload_sha256}"

    def fail(self, code: str, message: str) -> "CheckedEnvelope":
        self.error, self.statement = (code, message), None
        return self


# What one process has already worked out about envelope files, keyed by the SHA-256 of the
# exact bytes read (never by name, size or time): the parse, and each verification's outcome
# under the exact set of keys it was checked against. A file changed by one byte has another
# digest and is parsed and verified afresh. Statements held here are shared: never change them.
_CACHE_ENTRIES = 4096
_parsed: OrderedDict[str, tuple[Parsed | None, str | None, Any, tuple[str, str] | None]] = (
    OrderedDict()
)
_verified: OrderedDict[tuple[str, frozenset[tuple[str, str]]], "_Outcome"] = OrderedDict()
_lock = threading.Lock()  # pages run in several threads of one server


@dataclass(frozen=True)
class _Outcome:
    error: tuple[str, str] | None
    keyids: tuple[str, ...]


def clear_cache() -> None:
    """Forget every parsed and verified envelope (tests and benchmarks start cold with it)."""
    with _lock:
        _parsed.clear()
        _verified.clear()


def _recall(cache: OrderedDict, key: Any) -> Any:
    with _lock:
        found = cache.get(key)
        if found is not None:
            cache.move_to_end(key)
        return found


def _remember(cache: OrderedDict, key: Any, value: Any) -> None:
    with _lock:
        cache[key] = value
        cache.move_to_end(key)
        while len(cache) > _CACHE_ENTRIES:
            cache.popitem(last=False)


def load_envelope(path: Path) -> CheckedEnvelope:
    """One envelope file, parsed; whether its signature holds is verify_signers' to say."""
    try:
        # Regular files only, of bounded size and depth: a link to /dev/zero, a FIFO or a
        # nesting thousands deep is refused by name, never read forever or recursed into.
        data = read_bounded_bytes(path, limit=MAX_ENVELOPE_BYTES, what="envelope")
    except FmaBandsError as exc:
        return CheckedEnvelope(Path(path)).fail(
            "malformed", f"not a readable envelope: {exc.message}"
        )
    return envelope_from_bytes(Path(path), data)


def envelope_from_bytes(path: Path, data: bytes) -> CheckedEnvelope:
    """An envelope held in memory (the store's copy of a record), parsed as load_envelope
    parses a file; `path` only names it."""
    checked = CheckedEnvelope(Path(path))
    checked.file_sha256 = hashlib.sha256(data).hexdigest()
    known = _recall(_parsed, checked.file_sha256)
    if known is None:
        known = _parse(data, str(path))
        _remember(_parsed, checked.file_sha256, known)
    checked.parsed, checked.payload_sha256, checked.claimed, error = known
    if error is not None:
        checked.fail(*error)
    return checked


def _parse(
    data: bytes, source: str
) -> tuple[Parsed | None, str | None, Any, tuple[str, str] | None]:
    """The envelope's parse, its payload's digest, the statement it claims, and what is wrong
    with it as an fma-bands record (None when nothing is, before any signature is checked)."""
    try:
        envelope = load_json(decode_text(data, what="envelope", file=source), source=source)
    except FmaBandsError as exc:
        return None, None, None, ("malformed", f"not a readable JSON envelope: {exc.message}")
    parsed: Parsed | None = None
    try:
        parsed = parse_envelope(envelope)
        payload = parsed[0]
    except FmaBandsError as exc:
        try:
            payload = base64.b64decode(envelope["payload"], validate=True)
        except (KeyError, TypeError, ValueError):
            return None, None, None, ("malformed", f"not a DSSE envelope: {exc.message}")
    digest = hashlib.sha256(payload).hexdigest()
    try:
        claimed = load_json(decode_text(payload, what="signed statement"), source=source)
    except FmaBandsError as exc:
        reason = f"the signed payload is not a JSON statement: {exc.message}"
        return parsed, digest, None, ("malformed", reason)
    if parsed is None:
        return parsed, digest, claimed, ("malformed", "not a well-formed DSSE envelope")
    if parsed[1] != IN_TOTO_PAYLOAD_TYPE:
        return parsed, digest, claimed, ("malformed", f"payloadType is {parsed[1]}, not in-toto")
    if not _well_formed(claimed):
        problem = ("malformed", "the payload is not an fma-bands in-toto statement")
        return parsed, digest, claimed, problem
    return parsed, digest, claimed, None


def _well_formed(statement: Any) -> bool:
    """The shape every record shares; what each kind holds is checked where it is read."""
    try:
        return (
            statement["_type"] == STATEMENT_TYPE
            and statement["predicateType"] in PREDICATE_TYPES
            and isinstance(statement["predicate"], dict)
            and isinstance(statement["predicate"]["log"], dict)
            and isinstance(statement["subject"], list)
            and all(
                isinstance(s["name"], str) and isinstance(s["digest"]["sha256"], str)
                for s in statement["subject"]
            )
        )
    except (KeyError, TypeError):
        return False


def verify_signers(checked: CheckedEnvelope, trusted: dict[str, str]) -> list[str] | None:
    """The keyids among `trusted` whose signatures verify, or None with checked.error set."""
    if checked.error or checked.parsed is None or checked.file_sha256 is None:
        if not checked.error:
            checked.fail("malformed", "not a well-formed DSSE envelope")
        return None
    key = (checked.file_sha256, frozenset(trusted.items()))
    outcome = _recall(_verified, key)
    if outcome is None:
        try:
            verified = verify_parsed(checked.parsed, trusted)
            outcome = _Outcome(None, tuple(verified.keyids))
        except FmaBandsError as exc:
            outcome = _Outcome((exc.code or "malformed", exc.message), ())
        _remember(_verified, key, outcome)
    if outcome.error is not None:
        checked.fail(*outcome.error)
        return None
    return list(outcome.keyids)


def envelope_files(folder: Path) -> list[Path]:
    folder = Path(folder)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob(f"*{ENVELOPE_SUFFIX}"))


def stamp(when: datetime) -> str:
    """A signing time as every signed record writes it: UTC, microseconds, a Z."""
    return when.astimezone(UTC).strftime(STAMP)
