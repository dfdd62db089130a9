"""One envelope file of attestations/ read and checked offline: parsed, its signatures verified
against the keys a caller trusts, its statement's place in the study's log read. What one process
has worked out about each file is cached by the SHA-256 of its bytes, so nothing is verified
twice. A study's signed payloads are a few hundred megabytes at a thousand vignettes: an
envelope holds its payload only until `release`, and reads it again from its file should a
signature need checking after that.
"""

import codecs
import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
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
    decode_base64,
    honest_keys,
    parse_envelope,
    verify_parsed,
)
from fma_bands.evidence.shapes import adjudication_lacks

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
# Signing splits an attestation into records of at most 200 bands and 1 MiB of reviews
# (study/signing.py), so every record the app signs is well inside this.
MAX_ENVELOPE_BYTES = 4 * 1024 * 1024
# Such a record holds about 2,500 JSON objects and lists; a statement of far more is no record
# of the app's, and is refused before it is built (a few bytes a list, twenty times that held).
MAX_STATEMENT_CONTAINERS = 50_000


@dataclass
class CheckedEnvelope:
    """One envelope file as read; `error` holds (code, message) when it fails a check."""

    path: Path
    error: tuple[str, str] | None = None
    claimed: dict[str, Any] | None = None  # the statement, before any signature is checked
    payload_sha256: str | None = None  # the record's digest: what the next record links to
    file_sha256: str | None = None
    payload_type: str | None = None
    signatures: tuple[tuple[str, bytes], ...] | None = field(default=None, repr=False)
    payload: bytes | None = field(default=None, repr=False)  # until release()
    raw: bytes | None = field(default=None, repr=False)  # its bytes: a file's until release()
    from_file: bool = False  # a file can be read again; bytes held in memory cannot
    statement: dict[str, Any] | None = None  # set once the signature and place are verified
    keyid: str | None = None
    pseudonym: str | None = None
    # What an adjudication's content lacks of the shape the registry reads, worked out with its
    # parse (shapes.py): refused for it only after its signer's key is checked.
    lacks: str | None = None
    # Where the payload's base64 lies in the bytes (start, end), found with the parse: a
    # signature checked after `release` decodes those bytes alone (_read_again).
    payload_span: tuple[int, int] | None = field(default=None, repr=False)

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

    def release(self) -> None:
        """Let the payload go: its statement is read, and a signature still to check reads the
        payload again from the file (or the bytes in memory), which must not have changed."""
        self.payload = None
        if self.from_file:
            self.raw = None


# What one process has already worked out about envelope files, keyed by the SHA-256 of the
# exact bytes read (never by name, size or time): the parse (without the payload), and whether
# each signature verifies under the public key it was checked against. A file changed by one
# byte has another digest and is parsed and verified afresh. Statements held here are shared:
# never change them.
_CACHE_ENTRIES = 4096
_parsed: OrderedDict[str, "Parse"] = OrderedDict()
# (file digest, keyid, public key) -> None when that key's signature verifies, else the refusal
_verified: OrderedDict[tuple[str, str, str], tuple[str, str] | None] = OrderedDict()
_lock = threading.Lock()  # pages run in several threads of one server


def take_parses(parses: Mapping[str, "Parse"]) -> None:
    """Take parses worked out before (evidence/kept_parses.py), by file digest, as this
    process's own: a file of one of these digests is not parsed again."""
    for digest, parse in parses.items():
        _remember(_parsed, digest, parse)


def parses_of(digests: Iterable[str]) -> dict[str, "Parse"]:
    """The parses this process holds of the files of these digests (those it still holds)."""
    with _lock:
        return {d: _parsed[d] for d in digests if d in _parsed}


def clear_cache() -> None:
    """Forget every parsed and verified envelope (tests and benchmarks start cold with it)."""
    with _lock:
        _parsed.clear()
        _verified.clear()


_MISSING = object()


def _recall(cache: OrderedDict, key: Any) -> Any:
    with _lock:
        found = cache.get(key, _MISSING)
        if found is not _MISSING:
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
    return _checked(Path(path), data, from_file=True)


def envelope_from_bytes(path: Path, data: bytes) -> CheckedEnvelope:
    """An envelope held in memory (the store's copy of a record), parsed as load_envelope
    parses a file; `path` only names it."""
    return _checked(Path(path), data, from_file=False)


def _checked(path: Path, data: bytes, from_file: bool) -> CheckedEnvelope:
    checked = CheckedEnvelope(path, raw=data, from_file=from_file)
    checked.file_sha256 = hashlib.sha256(data).hexdigest()
    known = _recall(_parsed, checked.file_sha256)
    if known is _MISSING:
        parsed, error, lacks, span = _parse(data, str(path))
        _remember(_parsed, checked.file_sha256, (_without_payload(parsed), error, lacks, span))
        checked.payload = parsed[0][0] if parsed[0] is not None else None
    else:
        parsed, error, lacks, span = known
    checked.lacks, checked.payload_span = lacks, span
    parse, checked.payload_sha256, checked.claimed = parsed[1:]
    if parse is not None:
        checked.payload_type, checked.signatures = parse
    if error is not None:
        checked.fail(*error)
    return checked


# The envelope's parse (payload, type, signatures) when well formed, its payload's digest and
# the statement it claims.
_Parsed = tuple[Parsed | None, tuple[str, tuple[tuple[str, bytes], ...]] | None, str | None, Any]
# What a file's bytes are as an envelope: its parse (without the payload), what is wrong with it
# as a record, if anything, before any signature is checked, what its content lacks, and where
# its payload's base64 lies in the bytes.
Parse = tuple[_Parsed, tuple[str, str] | None, str | None, tuple[int, int] | None]


def _without_payload(parsed: _Parsed) -> _Parsed:
    return (None, *parsed[1:])


def _parse(data: bytes, source: str) -> Parse:
    """The envelope's parse, what is wrong with it as an fma-bands record (None when nothing
    is, before any signature is checked), what its content lacks (shapes.py) and where its
    payload lies in `data`."""
    parsed, error, payload_text = _parse_record(data, source)
    claimed = parsed[3]
    lacks, span = None, None
    if error is None:
        if claimed["predicateType"] == TYPE_OF["adjudication"]:
            lacks = adjudication_lacks(claimed["predicate"])
        span = _payload_span(data, payload_text)
    return parsed, error, lacks, span


def _payload_span(data: bytes, payload_text: str | None) -> tuple[int, int] | None:
    """Where the envelope's payload lies in its bytes as base64 (start, end); None when JSON
    escapes spell some of it (the envelope is then parsed again to check a signature)."""
    if payload_text is None:
        return None
    # parse_envelope took it as base64, so it is ASCII; wherever the bytes hold it as written,
    # they decode to this payload. (bytes.find is linear in the bytes, whatever they hold.)
    text = payload_text.encode("ascii")
    start = data.find(text)
    return None if start < 0 else (start, start + len(text))


_Record = tuple[_Parsed, tuple[str, str] | None, str | None]


def _parse_record(data: bytes, source: str) -> _Record:
    """The envelope's parse and what is wrong with it as a record, with its payload's text
    when it is a well-formed DSSE envelope."""
    try:
        envelope = load_json(decode_text(data, what="envelope", file=source), source=source)
    except FmaBandsError as exc:
        return (
            (None, None, None, None),
            ("malformed", f"not a readable JSON envelope: {exc.message}"),
            None,
        )
    parsed: Parsed | None = None
    try:
        parsed = parse_envelope(envelope)
        payload = parsed[0]
    except FmaBandsError as exc:
        try:
            payload = decode_base64(envelope["payload"])
        except (KeyError, TypeError, ValueError):
            refusal = ("malformed", f"not a DSSE envelope: {exc.message}")
            return (None, None, None, None), refusal, None
    parse = (parsed[1], tuple(parsed[2])) if parsed is not None else None
    payload_text = envelope["payload"] if parsed is not None else None
    digest = hashlib.sha256(payload).hexdigest()
    try:
        text = decode_text(payload, what="signed statement")
        claimed = load_json(
            text, source=source, shared=True, max_containers=MAX_STATEMENT_CONTAINERS
        )
    except FmaBandsError as exc:
        reason = f"the signed payload is not a JSON statement: {exc.message}"
        return (parsed, parse, digest, None), ("malformed", reason), payload_text
    found: _Parsed = (parsed, parse, digest, claimed)
    if parsed is None:
        return found, ("malformed", "not a well-formed DSSE envelope"), None
    if parsed[1] != IN_TOTO_PAYLOAD_TYPE:
        return found, ("malformed", f"payloadType is {parsed[1]}, not in-toto"), payload_text
    if not _well_formed(claimed):
        # Nothing reads what is no statement: it is not kept (a folder of such files would
        # otherwise be held whole).
        reason = "the payload is not an fma-bands in-toto statement"
        return (parsed, parse, digest, None), ("malformed", reason), payload_text
    return found, None, payload_text


def _well_formed(statement: Any) -> bool:
    """The shape every record shares; what each kind holds is checked where it is read."""
    try:
        return (
            statement["_type"] == STATEMENT_TYPE
            and statement["predicateType"] in PREDICATE_TYPES
            and isinstance(statement["predicate"], dict)
            and isinstance(statement["predicate"]["log"], dict)
            and isinstance(statement["predicate"].get("signer", {}), dict)
            and isinstance(statement["subject"], list)
            and all(
                isinstance(s["name"], str) and isinstance(s["digest"]["sha256"], str)
                for s in statement["subject"]
            )
        )
    except (KeyError, TypeError):
        return False


def verify_signers(checked: CheckedEnvelope, trusted: dict[str, str]) -> list[str] | None:
    """The keyids among `trusted` whose signatures verify, or None with checked.error set: a
    signature by a trusted key that does not verify refuses the envelope (bad_signature), and
    so does an envelope with no signature by a trusted key (unknown_key)."""
    if checked.error or checked.signatures is None or checked.file_sha256 is None:
        if not checked.error:
            checked.fail("malformed", "not a well-formed DSSE envelope")
        return None
    # A key listed under an id that is not its own hash is no key: nobody can enrol a key under
    # someone else's keyid.
    keys = {keyid: trusted[keyid] for keyid in honest_keys(trusted)}
    verified = []
    for keyid, _ in checked.signatures:
        if keyid not in keys:
            continue
        refusal = check_signature(checked, keyid, keys[keyid])
        if refusal is not None:
            checked.fail(*refusal)
            return None
        verified.append(keyid)
    if not verified:
        checked.fail("unknown_key", "no signature is by an enrolled key")
        return None
    return verified


def check_signature(
    checked: CheckedEnvelope, keyid: str, public_key: str
) -> tuple[str, str] | None:
    """Whether the envelope's signature by `keyid` verifies under `public_key`: None when it
    does, else the refusal. Worked out once per file digest and key."""
    assert checked.file_sha256 is not None and checked.signatures is not None
    key = (checked.file_sha256, keyid, public_key)
    known = _recall(_verified, key)
    if known is not _MISSING:
        return known  # type: ignore[no-any-return]
    payload = checked.payload if checked.payload is not None else _read_again(checked)
    if payload is None:
        # Not remembered: it says nothing about these bytes and this key.
        return ("malformed", "the file changed while it was read: read the folder again")
    signature = [(k, s) for k, s in checked.signatures if k == keyid]
    try:
        verify_parsed((payload, checked.payload_type or "", signature), {keyid: public_key})
        outcome: tuple[str, str] | None = None
    except FmaBandsError as exc:
        outcome = (exc.code or "malformed", exc.message)
    _remember(_verified, key, outcome)
    return outcome


def _read_again(checked: CheckedEnvelope) -> bytes | None:
    """The payload of the exact bytes parsed before (still held, or read again from the file),
    or None when the file no longer holds them."""
    data = checked.raw
    if data is None:
        try:
            data = read_bounded_bytes(checked.path, limit=MAX_ENVELOPE_BYTES, what="envelope")
        except FmaBandsError:
            return None
        if hashlib.sha256(data).hexdigest() != checked.file_sha256:
            return None
    # The same bytes that parsed and passed every check before: only the payload is wanted,
    # decoded where the parse found it (rather than parse a few megabytes of JSON again).
    if checked.payload_span is not None:
        start, end = checked.payload_span
        try:
            return decode_base64(data[start:end])
        except ValueError:
            return None
    return parse_envelope(json.loads(data.removeprefix(codecs.BOM_UTF8)))[0]


def envelope_files(folder: Path) -> list[Path]:
    folder = Path(folder)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob(f"*{ENVELOPE_SUFFIX}"))


def stamp(when: datetime) -> str:
    """A signing time as every signed record writes it: UTC, microseconds, a Z."""
    return when.astimezone(UTC).strftime(STAMP)
