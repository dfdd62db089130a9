"""Reading attestations/ from files alone: the self-signed public records of the adjudicators and
every signed envelope, checked offline, with the hash links between them. No database here (a
test keeps sqlmodel out of this import), so `fma-bands verify`, the registry and an editor's own
check need nothing but the folder.
"""

import base64
import hashlib
import json
import os
import stat
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fma_bands.dsse import IN_TOTO_PAYLOAD_TYPE, STATEMENT_TYPE, verify_envelope
from fma_bands.errors import FmaBandsError
from fma_bands.files import decode_text, load_json, read_bounded, read_yaml
from fma_bands.keys import keyid_for
from fma_bands.vignettes import Proposal

ADJUDICATION_TYPE = "https://fma-bands.org/attestation/adjudication/v1"
REVOCATION_TYPE = "https://fma-bands.org/attestation/revocation/v1"
RECORD_TYPE = "https://fma-bands.org/attestation/adjudicator-record/v1"
KINDS = {ADJUDICATION_TYPE: "adjudication", REVOCATION_TYPE: "revocation", RECORD_TYPE: "record"}
ADJUDICATORS_FILE = "adjudicators.yaml"
ADJUDICATORS_FORMAT = "fma-bands/adjudicators/v2"
ENVELOPE_SUFFIX = ".dsse.json"
STAMP = "%Y-%m-%dT%H:%M:%S.%fZ"
# What a public record says, in the order adjudicators.yaml lists it.
RECORD_FIELDS = (
    "pseudonym",
    "specialty",
    "jurisdiction",
    "years_post_registration",
    "anonymous_to_readers",
    "identity_commitment",
    "keyid",
    "public_key",
    "demo",
)
MAX_ENVELOPE_BYTES = 4 * 1024 * 1024
MAX_FOLDER_FILE_BYTES = 64 * 1024 * 1024  # above every limit a reader of the folder applies


def subject_name(vignette_id: str, sub_action: str) -> str:
    return f"{vignette_id}/{sub_action}"


def proposal_digest(proposal: Proposal) -> str:
    """The digest of the whole proposal a rater judged: values, disputed span, threshold, source,
    clause, reasoning, notes and provenance. A change to any of them after signing shows."""
    return proposal.proposal_digest


# One envelope ---------------------------------------------------------------------------------


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
_parsed: OrderedDict[str, tuple[Any, str | None, Any, bool]] = OrderedDict()


@dataclass(frozen=True)
class _Outcome:
    """What verifying one envelope under one key set said: refused with (code, message), or
    the payload type and the keyids whose signatures verify."""

    error: tuple[str, str] | None
    payload_type: str
    keyids: tuple[str, ...]


_verified: OrderedDict[tuple[str, frozenset[tuple[str, str]]], _Outcome] = OrderedDict()
# (file digest, test) -> payload digest, for files a reader's test turned down (see _load).
_passed_over: OrderedDict[tuple[str, str], str] = OrderedDict()


def clear_cache() -> None:
    """Forget every parsed and verified envelope (tests and benchmarks start cold with it)."""
    with _lock:
        _parsed.clear()
        _verified.clear()
        _passed_over.clear()


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


def _load(path: Path, *, wanted: Wanted | None = None) -> CheckedEnvelope:
    """One envelope file, parsed (the verdict on its signature is _verify's). With `wanted`,
    a statement whose payload its test turns down is left unparsed (`claimed` None), and the
    same bytes are turned down again without decoding them: see _may_be_a_record, _may_name."""
    checked = CheckedEnvelope(Path(path))
    try:
        # Regular files only, of bounded size and depth: a link to /dev/zero, a FIFO or a
        # 20,000-deep nesting is refused by name, never read forever or recursed into.
        text = read_bounded(path, limit=MAX_ENVELOPE_BYTES, what="envelope")
        checked.file_sha256 = hashlib.sha256(text.encode("utf-8")).hexdigest()
        if (known := _recall(_parsed, checked.file_sha256)) is not None:
            checked.envelope, checked.payload_sha256, checked.claimed, checked.well_formed = known
            return checked
        turned_down = wanted and _recall(_passed_over, (checked.file_sha256, wanted[0]))
        if turned_down:
            checked.payload_sha256 = turned_down
            return checked
        checked.envelope = load_json(text, source=str(path))
    except FmaBandsError as exc:
        return checked.fail("malformed", f"not a readable JSON envelope: {exc.message}")
    try:
        payload = base64.b64decode(checked.envelope["payload"], validate=True)
        checked.payload_sha256 = hashlib.sha256(payload).hexdigest()
        if wanted is not None and not wanted[1](payload):
            # Not parsed, so not remembered as parsed: only as turned down by this test.
            _remember(_passed_over, (checked.file_sha256, wanted[0]), checked.payload_sha256)
            return checked
        claimed = decode_text(payload, what="signed statement")
        checked.claimed = load_json(claimed, source=f"{path} (payload)")
    except (KeyError, TypeError, ValueError, FmaBandsError):
        checked.claimed = None
    checked.well_formed = _well_formed(checked.claimed)
    known = (checked.envelope, checked.payload_sha256, checked.claimed, checked.well_formed)
    _remember(_parsed, checked.file_sha256, known)
    return checked


def _may_be_a_record(payload: bytes) -> bool:
    """False only when no JSON reading of `payload` has the record's predicateType: its URL is
    not in the bytes as written, and no escape (\\/ or \\u) could spell it otherwise. An
    attestation of 2,700 reviews need not be parsed to know it is no public record."""
    return RECORD_TYPE.encode() in payload or b"\\/" in payload or b"\\u" in payload


def _may_name(pseudonym: str) -> Callable[[bytes], bool]:
    """Whether a payload may be a record, or hold `pseudonym` as a whole JSON string (quotes
    and all, as written or through a \\u escape; file names that start with it do not count):
    a statement by anyone else cannot name them as its adjudicator."""
    name = json.dumps(pseudonym, ensure_ascii=False).encode()
    return lambda payload: _may_be_a_record(payload) or name in payload or b"\\u" in payload


def _verified_envelope(checked: CheckedEnvelope, trusted: dict[str, str]) -> _Outcome:
    """verify_envelope's outcome for these bytes under exactly these keys, worked out once per
    (file digest, key set)."""
    assert checked.file_sha256 is not None
    key = (checked.file_sha256, frozenset(trusted.items()))
    if (known := _recall(_verified, key)) is not None:
        return known
    try:
        verified = verify_envelope(checked.envelope, trusted)
        outcome = _Outcome(None, verified.payload_type, tuple(verified.keyids))
    except FmaBandsError as exc:
        outcome = _Outcome((exc.code or "malformed", exc.message), "", ())
    _remember(_verified, key, outcome)
    return outcome


def _verify(checked: CheckedEnvelope, trusted: dict[str, str]) -> list[str] | None:
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


def _claimed_pseudonym(checked: CheckedEnvelope) -> str | None:
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


# The adjudicators' self-signed public records ---------------------------------------------------


@dataclass
class KeyUse:
    """One key of one adjudicator: from its first self-signed record until the next key's."""

    keyid: str
    public_key: str
    since: str
    until: str | None = None  # retired when the adjudicator activated a later key


@dataclass
class Adjudicator:
    """What the self-signed records of one pseudonym establish."""

    pseudonym: str
    record: dict[str, Any]  # the latest signed public record
    keys: list[KeyUse]
    files: list[str]
    duplicate_keys: set[str] = field(default_factory=set)

    def key(self, keyid: str) -> KeyUse | None:
        return next((k for k in self.keys if k.keyid == keyid), None)

    def as_published(self) -> dict[str, Any]:
        """The entry adjudicators.yaml carries for this adjudicator."""
        entry: dict[str, Any] = {k: self.record.get(k) for k in RECORD_FIELDS}
        entry["keys"] = [
            {"keyid": k.keyid, "public_key": k.public_key, "since": k.since, "retired": k.until}
            for k in self.keys
        ]
        entry["record_files"] = list(self.files)
        return entry


def _check_record(checked: CheckedEnvelope) -> None:
    """A public record counts only if the key it names signed it (proof the key holder claims
    it); anything else is an unsigned record."""
    try:
        record = checked.claimed["predicate"]["record"]  # type: ignore[index]
        keyid, public_key = record["keyid"], record["public_key"]
        honest = isinstance(keyid, str) and keyid == keyid_for(public_key)
    except (KeyError, TypeError, FmaBandsError):
        honest = False
    if not honest:
        checked.fail("unsigned_record", "the record's key id is not the hash of its public key")
        return
    keyids = _verify(checked, {keyid: public_key})
    if keyids is None:
        code, message = checked.error or ("unsigned_record", "")
        checked.fail("unsigned_record", f"not signed by the key it names ({code}: {message})")
        return
    checked.statement = checked.claimed
    checked.pseudonym = record["pseudonym"]
    checked.keyid = keyid


def _adjudicators(records: list[CheckedEnvelope]) -> dict[str, Adjudicator]:
    by_name: dict[str, list[CheckedEnvelope]] = {}
    for env in records:
        if env.error is None and env.pseudonym:
            by_name.setdefault(env.pseudonym, []).append(env)
    found: dict[str, Adjudicator] = {}
    for name, group in by_name.items():
        group.sort(key=lambda e: e.signed_at)
        keys: list[KeyUse] = []
        for env in group:
            record = env.predicate["record"]
            if not any(k.keyid == record["keyid"] for k in keys):
                if keys:
                    keys[-1].until = env.signed_at
                keys.append(KeyUse(record["keyid"], record["public_key"], env.signed_at))
        latest = group[-1].predicate["record"]
        found[name] = Adjudicator(name, dict(latest), keys, [e.path.name for e in group])
    owners: dict[str, set[str]] = {}
    for adjudicator in found.values():
        for key in adjudicator.keys:
            owners.setdefault(key.keyid, set()).add(adjudicator.pseudonym)
    for keyid, names in owners.items():
        if len(names) > 1:
            for name in names:
                found[name].duplicate_keys.add(keyid)
    return found


# Attestations and revocations -------------------------------------------------------------------


def _check_signed(checked: CheckedEnvelope, adjudicators: dict[str, Adjudicator]) -> None:
    claimed_by = _claimed_pseudonym(checked)
    trusted = {k.keyid: k.public_key for a in adjudicators.values() for k in a.keys}
    if checked.error:
        return
    if claimed_by is not None and claimed_by not in adjudicators:
        checked.fail(
            "unsigned_record",
            f"no public record of {claimed_by} signed by their own key is in the folder",
        )
        return
    keyids = _verify(checked, trusted)
    if keyids is None:
        return
    if claimed_by is None:
        checked.fail("malformed", "the statement does not name its adjudicator")
        return
    adjudicator = adjudicators[claimed_by]
    own = [k for k in keyids if adjudicator.key(k)]
    if not own:
        checked.fail(
            "wrong_signer",
            f"signed by {', '.join(keyids)}, which is not a key of {claimed_by}'s public record",
        )
        return
    keyid = own[0]
    checked.statement, checked.pseudonym, checked.keyid = checked.claimed, claimed_by, keyid
    if keyid in adjudicator.duplicate_keys:
        checked.fail(
            "duplicate_key",
            f"the key {keyid} is in the self-signed records of more than one pseudonym, so it "
            "counts for none of them",
        )
        return
    use = adjudicator.key(keyid)
    assert use is not None
    if use.until is not None and checked.signed_at >= use.until:
        checked.fail(
            "unknown_key",
            f"signed with a key {claimed_by} retired on {use.until[:10]}, when a new key was "
            "activated",
        )


# The folder --------------------------------------------------------------------------------------


@dataclass
class Evidence:
    """Everything attestations/ establishes, read from its files alone."""

    adjudicators: dict[str, Adjudicator]
    envelopes: list[CheckedEnvelope]  # every envelope asked about, records included, checked
    problems: list[tuple[str, str]]  # (code, message) of the folder as a whole
    head: tuple[int, str]

    @property
    def missing(self) -> list[tuple[str, str]]:
        return [p for p in self.problems if p[0] == "missing_record"]

    def records(self) -> dict[str, dict[str, Any]]:
        """pseudonym -> the latest self-signed public record."""
        return {name: a.as_published() for name, a in sorted(self.adjudicators.items())}


def envelope_files(folder: Path) -> list[Path]:
    folder = Path(folder)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob(f"*{ENVELOPE_SUFFIX}") if p.is_file())


def _not_files(folder: Path) -> list[Path]:
    folder = Path(folder)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob(f"*{ENVELOPE_SUFFIX}") if not p.is_file())


def read_evidence(folder: Path, paths: Iterable[Path] | None = None) -> Evidence:
    """The records and every envelope in the folder (or only `paths`, checked against the
    folder's records), the hash links between them, and the folder's head."""
    loaded = [_load(p) for p in envelope_files(folder)]
    records = [e for e in loaded if _kind_claimed(e) == "record"]
    for env in records:
        _check_record(env)
    adjudicators = _adjudicators(records)
    for env in loaded:
        if _kind_claimed(env) != "record":
            _check_signed(env, adjudicators)
    problems = _missing_links(loaded) + _published_mismatches(folder, adjudicators)
    problems += [
        ("malformed", f"{p.name} is not a regular file (a link to a device, a FIFO?): ignored")
        for p in _not_files(folder)
    ]
    asked = loaded
    if paths is not None:
        by_path = {e.path.resolve(): e for e in loaded}
        asked = []
        for path in paths:
            found = by_path.get(Path(path).resolve())
            if found is None:
                found = _load(Path(path))
                if _kind_claimed(found) == "record":
                    _check_record(found)
                else:
                    _check_signed(found, adjudicators)
            asked.append(found)
    return Evidence(adjudicators, asked, problems, _head(loaded))


def _kind_claimed(env: CheckedEnvelope) -> str | None:
    claimed = env.claimed if isinstance(env.claimed, dict) else {}
    return KINDS.get(claimed.get("predicateType"))  # type: ignore[arg-type]


def _missing_links(loaded: list[CheckedEnvelope]) -> list[tuple[str, str]]:
    """A record that a signed record names, gone from the folder (or changed, so its digest
    is no longer there): a deleted revocation cannot silently restore an attestation."""
    present = {e.payload_sha256 for e in loaded if e.payload_sha256}
    problems = []
    for env in loaded:
        if env.error or env.statement is None:
            continue
        for link in env.predicate.get("records", []):
            if link["sha256"] not in present:
                name = link.get("file") if isinstance(link.get("file"), str) else "a record"
                problems.append(
                    (
                        "missing_record",
                        f"{env.path.name} was signed with {name} ({link['sha256'][:12]}) in the "
                        "folder, and it is no longer there unchanged",
                    )
                )
    return problems


def _head(loaded: list[CheckedEnvelope]) -> tuple[int, str]:
    """The SHA-256 of the records' own SHA-256 hex digests, sorted, one per line: an editor redoes
    it with `sha256sum *.dsse.json | cut -d' ' -f1 | sort | sha256sum`."""
    digests = sorted(e.file_sha256 or hashlib.sha256(b"").hexdigest() for e in loaded)
    lines = "".join(f"{d}\n" for d in digests).encode()
    return len(digests), "sha256:" + hashlib.sha256(lines).hexdigest()


def folder_digests(folder: Path) -> tuple[tuple[str, str], ...]:
    """Every entry of the folder by name, with the SHA-256 of its bytes for a regular file:
    what a decision read from the folder alone may be cached under, since a byte changed in any
    file (an envelope, policy.yaml, adjudicators.yaml) makes another key."""
    folder = Path(folder)
    if not folder.is_dir():
        return ()
    return tuple((p.name, _digest_of(p)) for p in sorted(folder.iterdir()))


def _digest_of(path: Path) -> str:
    try:
        # O_NONBLOCK: a FIFO must not wait for a writer; only a regular file is read.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        return f"unreadable: {exc.strerror}"
    with os.fdopen(fd, "rb") as handle:
        found = os.fstat(handle.fileno())
        if not stat.S_ISREG(found.st_mode):
            return "not a regular file"
        if found.st_size > MAX_FOLDER_FILE_BYTES:  # refused by every reader: never read
            return f"too large: {found.st_size} bytes"
        return hashlib.file_digest(handle, "sha256").hexdigest()


def records_head(folder: Path) -> tuple[int, str]:
    """The head of attestations/: how many signed records it holds and one digest of them all,
    so an export can say exactly what it was decided from."""
    return _head([_load(p) for p in envelope_files(folder)])


def record_links(folder: Path, pending: Iterable[tuple[Path, Path]] = ()) -> list[dict[str, str]]:
    """What a new signed record names: every record present in the folder, by payload digest,
    and the records written earlier in the same transaction (final path, where it waits)."""
    links = []
    for env in (_load(p) for p in envelope_files(folder)):
        if env.payload_sha256:
            links.append({"file": env.path.name, "sha256": env.payload_sha256})
    for final, waiting in pending:
        env = _load(waiting)
        if env.payload_sha256 and Path(final).parent.resolve() == Path(folder).resolve():
            links.append({"file": Path(final).name, "sha256": env.payload_sha256})
    return sorted(links, key=lambda link: link["file"])


def _published_mismatches(
    folder: Path, adjudicators: dict[str, Adjudicator]
) -> list[tuple[str, str]]:
    """adjudicators.yaml is generated from the signed records; where it says anything else,
    somebody edited it, and only the signed record counts."""
    path = Path(folder) / ADJUDICATORS_FILE
    if not path.is_file():
        return []
    try:
        data = read_yaml(path, limit=MAX_ENVELOPE_BYTES, what="adjudicators file") or {}
        entries = data["adjudicators"]
        published = {e["pseudonym"]: e for e in entries}
    except FmaBandsError as exc:
        return [("unsigned_record", f"{ADJUDICATORS_FILE} is not readable ({exc.message})")]
    except (KeyError, TypeError) as exc:
        return [("unsigned_record", f"{ADJUDICATORS_FILE} is not readable ({exc})")]
    problems = []
    for name, entry in published.items():
        signed = adjudicators.get(name)
        if signed is None:
            problems.append(
                (
                    "unsigned_record",
                    f"{ADJUDICATORS_FILE} lists {name}, who has no self-signed record: ignored",
                )
            )
            continue
        expected = signed.as_published()
        for key in (*RECORD_FIELDS, "keys"):
            if entry.get(key) != expected.get(key):
                problems.append(
                    (
                        "unsigned_record",
                        f"{ADJUDICATORS_FILE} gives {name}'s {key} as {entry.get(key)!r}, not as "
                        f"their signed record does ({expected.get(key)!r}): the signed record "
                        "counts",
                    )
                )
    return problems


def read_folder(
    folder: Path, paths: list[Path] | None = None
) -> tuple[dict[str, dict[str, Any]], list[CheckedEnvelope]]:
    """The adjudicators' signed records and every envelope (or the given paths), checked."""
    evidence = read_evidence(folder, paths)
    return evidence.records(), evidence.envelopes


def read_adjudicators(folder: Path) -> dict[str, dict[str, Any]]:
    """pseudonym -> the latest public record that the adjudicator's own key signed: what
    read_evidence(folder).records() gives, reading in full only the envelopes that can be
    public records (every start of the app and of a command that opens the store asks)."""
    loaded = [_load(p, wanted=("records", _may_be_a_record)) for p in envelope_files(folder)]
    records = [e for e in loaded if _kind_claimed(e) == "record"]
    for env in records:
        _check_record(env)
    adjudicators = _adjudicators(records)
    return {name: a.as_published() for name, a in sorted(adjudicators.items())}


def latest_signed_reviews(
    evidence: Evidence, pseudonym: str
) -> dict[tuple[str, str], dict[str, Any]]:
    """For each band, the review exactly as the rater's latest valid attestation covering it
    signed it (revoked attestations aside)."""
    revoked = revoked_digests(evidence)
    covered: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {}
    for env in evidence.envelopes:
        if env.error or env.kind != "adjudication" or env.pseudonym != pseudonym:
            continue
        if (env.pseudonym, env.payload_sha256) in revoked:
            continue
        for review in env.predicate["reviews"]:
            band = (review["vignette_id"], review["sub_action"])
            if band not in covered or covered[band][0] < env.signed_at:
                covered[band] = (env.signed_at, review)
    return {band: review for band, (_, review) in covered.items()}


def revoked_digests(evidence: Evidence) -> set[tuple[str | None, str]]:
    """(pseudonym, payload digest) of every attestation revoked by a valid revocation."""
    return {
        (env.pseudonym, env.statement["subject"][0]["digest"]["sha256"])
        for env in evidence.envelopes
        if env.error is None and env.kind == "revocation" and env.statement is not None
    }


def evidence_of(folder: Path, pseudonym: str) -> Evidence:
    """read_evidence as far as one rater's own signed records go: every public record and each
    envelope that can be the rater's, checked as read_evidence checks them; the others are left
    unparsed, so `problems` (links between all the records) is not worked out. For the rater's
    pages: what they signed, and what they revoked."""
    wanted = (f"records and {pseudonym!r}", _may_name(pseudonym))
    loaded = [_load(p, wanted=wanted) for p in envelope_files(folder)]
    records = [e for e in loaded if _kind_claimed(e) == "record"]
    for env in records:
        _check_record(env)
    adjudicators = _adjudicators(records)
    mine = [e for e in loaded if e.claimed is not None and _kind_claimed(e) != "record"]
    for env in mine:
        _check_signed(env, adjudicators)
    return Evidence(adjudicators, records + mine, [], _head(loaded))


def signed_revisions(folder: Path, pseudonym: str) -> dict[tuple[str, str], int]:
    """For each band, the review revision the rater's latest valid attestation covers."""
    reviews = latest_signed_reviews(evidence_of(folder, pseudonym), pseudonym)
    return {band: review.get("revision") for band, review in reviews.items()}  # type: ignore[misc]
