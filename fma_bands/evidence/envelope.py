"""One envelope file of attestations/ read and checked offline: parsed, its signatures verified
against the keys a caller trusts, its statement's shape checked. What one process has worked out
about each file is cached by the SHA-256 of its bytes, so nothing is verified twice.
"""

import base64
import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable
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
    verify_envelope,
    verify_parsed,
)

ADJUDICATION_TYPE = "https://fma-bands.org/attestation/adjudication/v1"
REVOCATION_TYPE = "https://fma-bands.org/attestation/revocation/v1"
RECORD_TYPE = "https://fma-bands.org/attestation/adjudicator-record/v1"
KINDS = {ADJUDICATION_TYPE: "adjudication", REVOCATION_TYPE: "revocation", RECORD_TYPE: "record"}
ENVELOPE_SUFFIX = ".dsse.json"
STAMP = "%Y-%m-%dT%H:%M:%S.%fZ"
MAX_ENVELOPE_BYTES = 4 * 1024 * 1024


@dataclass
class CheckedEnvelope:
    """One envelope file as checked offline; `error` holds (code, message) when it fails."""

    path: Path
    error: tuple[str, str] | None = None
    statement: dict[str, Any] | None = None
    claimed: dict[str, Any] | None = None  # the unverified statement, to say what it claimed
    pseudonym: str | None = None
    keyid: str | None = None
    payload_sha256: str | None = None
    file_sha256: str | None = None
    envelope: Any = field(default=None, repr=False)
    # The envelope as dsse.parse_envelope reads it, payload decoded; None if it cannot.
    parsed: Parsed | None = field(default=None, repr=False)
    well_formed: bool = False  # the claimed statement has the shape the registry relies on

    @property
    def kind(self) -> str | None:
        found = self.statement or self.claimed or {}
        if not isinstance(found, dict):
            return None
        return KINDS.get(found.get("predicateType"))  # type: ignore[arg-type]

    @property
    def predicate(self) -> dict[str, Any]:
        """The verified statement's predicate (only on an envelope without error)."""
        assert self.statement is not None, f"{self.path} did not verify"
        return self.statement["predicate"]

    @property
    def signed_at(self) -> str:
        """When the signer says they signed (a verified envelope only)."""
        predicate = self.predicate
        if self.kind == "adjudication":
            return predicate["signature_manifestation"]["signed_at"]
        if self.kind == "revocation":
            return predicate["revoked_at"]
        return predicate["signed_at"]

    def fail(self, code: str, message: str) -> "CheckedEnvelope":
        self.error, self.statement = (code, message), None
        return self


# What one process has already worked out about envelope files, keyed by the SHA-256 of the
# exact bytes read (never by name, size or time): the parsed envelope and statement, and each
# verification's outcome under the exact set of trusted keys it was checked against. The same
# bytes under the same keys give the same answer, so a page or command that reads the folder
# again verifies nothing twice; a file changed by one byte has another digest and is parsed
# and verified afresh. The files are still read and hashed on every call. Statements held here
# are shared by every reader: read them, never change them.
_CACHE_ENTRIES = 256
_parsed: OrderedDict[str, tuple[Any, Parsed | None, str | None, Any, bool]] = OrderedDict()


@dataclass(frozen=True)
class _Outcome:
    """What verifying one envelope under one key set said: refused with (code, message), or
    the payload type and the keyids whose signatures verify."""

    error: tuple[str, str] | None
    payload_type: str
    keyids: tuple[str, ...]


_verified: OrderedDict[tuple[str, frozenset[tuple[str, str]]], _Outcome] = OrderedDict()
# (file digest, test) -> payload digest, for files a reader's test turned down (see
# load_envelope).
_passed_over: OrderedDict[tuple[str, str], str] = OrderedDict()
# File digest -> the envelope and its parse, for files a test turned down: every command's start
# turns down each attestation (it is not a public record) and most then read it in full, which
# would decode its large payload a second time.
_decoded: OrderedDict[str, tuple[Any, Parsed | None]] = OrderedDict()


def clear_cache() -> None:
    """Forget every parsed and verified envelope (tests and benchmarks start cold with it)."""
    with _lock:
        _parsed.clear()
        _verified.clear()
        _passed_over.clear()
        _decoded.clear()


# Pages run in several threads of one server.
_lock = threading.Lock()


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


Wanted = tuple[str, Callable[[bytes], bool]]  # a name for the test, and the test of a payload


def load_envelope(path: Path, *, wanted: Wanted | None = None) -> CheckedEnvelope:
    """One envelope file, parsed (the verdict on its signature is verify_signers'). With `wanted`,
    a statement whose payload its test turns down is left unparsed (`claimed` None), and the
    same bytes are turned down again without decoding them: see may_be_a_record, may_name."""
    checked = CheckedEnvelope(Path(path))
    try:
        # Regular files only, of bounded size and depth: a link to /dev/zero, a FIFO or a
        # nesting thousands deep is refused by name, never read forever or recursed into.
        data = read_bounded_bytes(path, limit=MAX_ENVELOPE_BYTES, what="envelope")
        digest = hashlib.sha256(data).hexdigest()
        text = decode_text(data, what="envelope", file=str(path))
        checked.file_sha256 = digest
        if (known := _recall(_parsed, checked.file_sha256)) is not None:
            (
                checked.envelope,
                checked.parsed,
                checked.payload_sha256,
                checked.claimed,
                checked.well_formed,
            ) = known
            return checked
        turned_down = wanted and _recall(_passed_over, (checked.file_sha256, wanted[0]))
        if turned_down:
            checked.payload_sha256 = turned_down
            return checked
        if (decoded := _recall(_decoded, digest)) is not None:
            checked.envelope, checked.parsed = decoded
        else:
            checked.envelope = load_json(text, source=str(path))
    except FmaBandsError as exc:
        return checked.fail("malformed", f"not a readable JSON envelope: {exc.message}")
    try:
        payload = _payload(checked)
        checked.payload_sha256 = hashlib.sha256(payload).hexdigest()
        if wanted is not None and not wanted[1](payload):
            # Not parsed, so not remembered as parsed: only as turned down by this test.
            _remember(_passed_over, (checked.file_sha256, wanted[0]), checked.payload_sha256)
            _remember(_decoded, checked.file_sha256, (checked.envelope, checked.parsed))
            return checked
        claimed = decode_text(payload, what="signed statement")
        checked.claimed = load_json(claimed, source=f"{path} (payload)")
    except (KeyError, TypeError, ValueError, FmaBandsError):
        checked.claimed = None
    checked.well_formed = _well_formed(checked.claimed)
    known = (
        checked.envelope,
        checked.parsed,
        checked.payload_sha256,
        checked.claimed,
        checked.well_formed,
    )
    _remember(_parsed, checked.file_sha256, known)
    return checked


def _payload(checked: CheckedEnvelope) -> bytes:
    """The payload's bytes, decoded once for the statement and the signature alike. An envelope
    parse_envelope refuses (its verification will say why) may still say what it claimed."""
    try:
        if checked.parsed is None:
            checked.parsed = parse_envelope(checked.envelope)
        return checked.parsed[0]
    except FmaBandsError:
        return base64.b64decode(checked.envelope["payload"], validate=True)


def may_be_a_record(payload: bytes) -> bool:
    """False only when no JSON reading of `payload` has the record's predicateType: its URL is
    not in the bytes as written, and no escape (\\/ or \\u) could spell it otherwise. An
    attestation of a whole study need not be parsed to know it is no public record."""
    return RECORD_TYPE.encode() in payload or b"\\/" in payload or b"\\u" in payload


def may_name(pseudonym: str) -> Callable[[bytes], bool]:
    """Whether a payload may be a record, or hold `pseudonym` as a whole JSON string (quotes
    and all, as written or through a \\u escape; file names that start with it do not count):
    a statement by anyone else cannot name them as its adjudicator."""
    name = json.dumps(pseudonym, ensure_ascii=False).encode()
    return lambda payload: may_be_a_record(payload) or name in payload or b"\\u" in payload


def _verified_envelope(checked: CheckedEnvelope, trusted: dict[str, str]) -> _Outcome:
    """verify_envelope's outcome for these bytes under exactly these keys, worked out once per
    (file digest, key set)."""
    assert checked.file_sha256 is not None
    key = (checked.file_sha256, frozenset(trusted.items()))
    if (known := _recall(_verified, key)) is not None:
        return known
    try:
        if checked.parsed is not None:
            verified = verify_parsed(checked.parsed, trusted)
        else:
            verified = verify_envelope(checked.envelope, trusted)
        outcome = _Outcome(None, verified.payload_type, tuple(verified.keyids))
    except FmaBandsError as exc:
        outcome = _Outcome((exc.code or "malformed", exc.message), "", ())
    _remember(_verified, key, outcome)
    return outcome


def verify_signers(checked: CheckedEnvelope, trusted: dict[str, str]) -> list[str] | None:
    """The keyids whose signatures verify, or None with checked.error set."""
    if checked.error:
        return None
    verified = _verified_envelope(checked, trusted)
    if verified.error is not None:
        checked.fail(*verified.error)
        return None
    if verified.payload_type != IN_TOTO_PAYLOAD_TYPE:
        checked.fail("malformed", f"payloadType is {verified.payload_type}, not in-toto")
        return None
    if not checked.well_formed:
        checked.fail("malformed", "the payload is not an fma-bands in-toto statement")
        return None
    return list(verified.keyids)


def _links_ok(predicate: dict[str, Any]) -> bool:
    links = predicate.get("records", [])
    return isinstance(links, list) and all(
        isinstance(link, dict) and isinstance(link.get("sha256"), str) for link in links
    )


def _well_formed(statement: Any) -> bool:
    """The shape the registry relies on; a signed statement of any other shape is refused."""
    try:
        predicate = statement["predicate"]
        kind = statement["predicateType"]
        ok = (
            statement["_type"] == STATEMENT_TYPE
            and isinstance(predicate, dict)
            and _links_ok(predicate)
            and all(
                isinstance(s["name"], str) and isinstance(s["digest"]["sha256"], str)
                for s in statement["subject"]
            )
        )
        if kind == RECORD_TYPE:
            record = predicate["record"]
            return (
                ok
                and isinstance(predicate["signed_at"], str)
                and all(isinstance(record[k], str) for k in ("pseudonym", "keyid", "public_key"))
                and isinstance(predicate.get("keys", []), list)
            )
        if not (ok and isinstance(predicate["adjudicator"]["pseudonym"], str)):
            return False
        if kind == REVOCATION_TYPE:
            return (
                isinstance(predicate["revokes"], str)
                and isinstance(predicate["revoked_at"], str)
                and len(statement["subject"]) == 1
            )
        return (
            kind == ADJUDICATION_TYPE
            and isinstance(predicate["signature_manifestation"]["signed_at"], str)
            and all(
                isinstance(r["vignette_id"], str) and isinstance(r["sub_action"], str)
                for r in predicate["reviews"]
            )
        )
    except (KeyError, TypeError, IndexError):
        return False


def claimed_pseudonym(checked: CheckedEnvelope) -> str | None:
    try:
        claimed = checked.claimed
        assert claimed is not None
        if claimed.get("predicateType") == RECORD_TYPE:
            name = claimed["predicate"]["record"]["pseudonym"]
        else:
            name = claimed["predicate"]["adjudicator"]["pseudonym"]
    except (AssertionError, AttributeError, KeyError, TypeError):
        return None
    return name if isinstance(name, str) else None


def envelope_files(folder: Path) -> list[Path]:
    folder = Path(folder)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob(f"*{ENVELOPE_SUFFIX}") if p.is_file())


def claimed_kind(env: CheckedEnvelope) -> str | None:
    claimed = env.claimed if isinstance(env.claimed, dict) else {}
    return KINDS.get(claimed.get("predicateType"))  # type: ignore[arg-type]


def stamp(when: datetime) -> str:
    """A signing time as every signed record writes it: UTC, microseconds, a Z."""
    return when.astimezone(UTC).strftime(STAMP)
