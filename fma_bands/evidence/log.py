"""Reading attestations/ from files alone, as evidence: every signed envelope checked offline
(envelope.py) against the adjudicators' self-signed public records (roster.py),
with the hash links between the records. No database here (a test keeps sqlmodel out of this
import), so `fma-bands verify`, the registry and an editor's own
check need nothing but the folder.
"""

import hashlib
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fma_bands.evidence.envelope import (
    ENVELOPE_SUFFIX,
    CheckedEnvelope,
    claimed_kind,
    claimed_pseudonym,
    envelope_files,
    load_envelope,
    may_name,
    verify_signers,
)
from fma_bands.evidence.roster import Adjudicator, check_record, check_records, published_mismatches

if TYPE_CHECKING:
    # Only a type here: `fma-bands verify` reads envelopes, never vignettes, and the vignettes'
    # band models are slow to import.
    from fma_bands.core.vignettes import Proposal

MAX_FOLDER_FILE_BYTES = 64 * 1024 * 1024  # above every limit a reader of the folder applies


def subject_name(vignette_id: str, sub_action: str) -> str:
    return f"{vignette_id}/{sub_action}"


def proposal_digest(proposal: "Proposal") -> str:
    """The digest of the whole proposal a rater judged: values, disputed span, threshold, source,
    clause, reasoning, notes and provenance. A change to any of them after signing shows."""
    return proposal.proposal_digest


# Attestations and revocations -------------------------------------------------------------------


def _check_signed(checked: CheckedEnvelope, adjudicators: dict[str, Adjudicator]) -> None:
    claimed_by = claimed_pseudonym(checked)
    trusted = {k.keyid: k.public_key for a in adjudicators.values() for k in a.keys}
    if checked.error:
        return
    if claimed_by is not None and claimed_by not in adjudicators:
        checked.fail(
            "unsigned_record",
            f"no public record of {claimed_by} signed by their own key is in the folder",
        )
        return
    keyids = verify_signers(checked, trusted)
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


def _not_files(folder: Path) -> list[Path]:
    folder = Path(folder)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob(f"*{ENVELOPE_SUFFIX}") if not p.is_file())


def read_evidence(folder: Path, paths: Iterable[Path] | None = None) -> Evidence:
    """The records and every envelope in the folder (or only `paths`, checked against the
    folder's records), the hash links between them, and the folder's head."""
    loaded = [load_envelope(p) for p in envelope_files(folder)]
    _, adjudicators = check_records(loaded)
    for env in loaded:
        if claimed_kind(env) != "record":
            _check_signed(env, adjudicators)
    problems = _missing_links(loaded) + published_mismatches(folder, adjudicators)
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
                found = load_envelope(Path(path))
                if claimed_kind(found) == "record":
                    check_record(found)
                else:
                    _check_signed(found, adjudicators)
            asked.append(found)
    return Evidence(adjudicators, asked, problems, _head(loaded))


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
    return _head([load_envelope(p) for p in envelope_files(folder)])


def record_links(folder: Path, pending: Iterable[tuple[Path, Path]] = ()) -> list[dict[str, str]]:
    """What a new signed record names: every record present in the folder, by payload digest,
    and the records written earlier in the same transaction (final path, where it waits)."""
    links = []
    for env in (load_envelope(p) for p in envelope_files(folder)):
        if env.payload_sha256:
            links.append({"file": env.path.name, "sha256": env.payload_sha256})
    for final, waiting in pending:
        env = load_envelope(waiting)
        if env.payload_sha256 and Path(final).parent.resolve() == Path(folder).resolve():
            links.append({"file": Path(final).name, "sha256": env.payload_sha256})
    return sorted(links, key=lambda link: link["file"])


def read_folder(
    folder: Path, paths: list[Path] | None = None
) -> tuple[dict[str, dict[str, Any]], list[CheckedEnvelope]]:
    """The adjudicators' signed records and every envelope (or the given paths), checked."""
    evidence = read_evidence(folder, paths)
    return evidence.records(), evidence.envelopes


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
    wanted = (f"records and {pseudonym!r}", may_name(pseudonym))
    loaded = [load_envelope(p, wanted=wanted) for p in envelope_files(folder)]
    records, adjudicators = check_records(loaded)
    mine = [e for e in loaded if e.claimed is not None and claimed_kind(e) != "record"]
    for env in mine:
        _check_signed(env, adjudicators)
    return Evidence(adjudicators, records + mine, [], _head(loaded))


def signed_revisions(folder: Path, pseudonym: str) -> dict[tuple[str, str], int]:
    """For each band, the review revision the rater's latest valid attestation covers."""
    reviews = latest_signed_reviews(evidence_of(folder, pseudonym), pseudonym)
    return {band: review.get("revision") for band, review in reviews.items()}  # type: ignore[misc]
