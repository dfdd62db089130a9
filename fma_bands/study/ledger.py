"""The study's signed log as the store keeps it (docs/trust.md): every record appended at the
store's head under one lock, so concurrent signers make one chain; each published to attestations/
once it may be shown. An attestation or revocation signed while its round is open is sealed: it
waits in the store, with every record after it, until the round closes, so the folder never shows
one rater's work to another during a round. The rater's receipt is theirs at once.
"""

import hashlib
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sqlalchemy.orm import Session as OrmSession
from sqlmodel import Session, col, select

from fma_bands.core.canonical import canonical_json
from fma_bands.core.errors import FmaBandsError
from fma_bands.core.files import json_text, read_bounded_bytes, write_atomically
from fma_bands.evidence.dsse import IN_TOTO_PAYLOAD_TYPE, sign_envelope
from fma_bands.evidence.envelope import (
    ENVELOPE_SUFFIX,
    CheckedEnvelope,
    envelope_from_bytes,
    load_envelope,
    stamp,
)
from fma_bands.evidence.log import (
    Evidence,
    checked_early,
    file_name,
    read_evidence,
    record_statement,
    study_id_for,
    walk_log,
)
from fma_bands.evidence.policy import POLICY_FILE, policy_text
from fma_bands.evidence.roster import ADJUDICATORS_FILE, adjudicators_text
from fma_bands.store.db import on_commit
from fma_bands.store.models import LogRecord, StudySettings, utcnow
from fma_bands.study import audit
from fma_bands.study.state import StudyPublic, lock_study, study

SEALED_KINDS = ("adjudication", "revocation")


@dataclass(frozen=True)
class Signer:
    """A key unsealed for one signature: whose, its id, and its private half."""

    pseudonym: str
    keyid: str
    private_key: Ed25519PrivateKey


@dataclass(frozen=True)
class Receipt:
    """What a signer keeps: their key's fingerprint, the records they signed (place, digest,
    file) and the head of the log after them. `fma-bands verify --since SEQ:DIGEST` with the
    head checks, later, that the folder still holds what they signed."""

    pseudonym: str
    keyid: str
    records: tuple[tuple[int, str, str], ...]
    head: tuple[int, str]
    sealed_until_round: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "pseudonym": self.pseudonym,
            "key_fingerprint": self.keyid,
            "records": [{"sequence": s, "digest": d, "file": f} for s, d, f in self.records],
            "head": {"sequence": self.head[0], "digest": self.head[1]},
            "since": f"{self.head[0]}:{self.head[1]}",
            "in_folder": (
                "now"
                if self.sealed_until_round is None
                else f"when round {self.sealed_until_round} closes"
            ),
        }


def new_study_id(session: Session, root_keyid: str) -> str:
    """Give the study its id (once), made from its root key's id (log.study_id_for): every
    signed record names it."""
    row = session.get(StudySettings, 1)
    if row is None:
        study(session)
        row = session.get(StudySettings, 1)
    assert row is not None
    if row.study_id is None:
        row.study_id = study_id_for([root_keyid])
        session.flush()
    return row.study_id


def head(session: Session) -> tuple[int, str] | None:
    """(sequence, digest) of the newest record in the store, or None before the root."""
    row = session.execute(
        select(col(LogRecord.sequence), col(LogRecord.digest))
        .order_by(col(LogRecord.sequence).desc())
        .limit(1)
    ).first()
    return None if row is None else (row[0], row[1])


def append(
    session: Session,
    kind: str,
    *,
    signer: Signer,
    subject: list[dict[str, Any]],
    body: dict[str, Any],
    about: str | None = None,
    folder: Path | None = None,
    now: datetime | None = None,
) -> LogRecord:
    """Sign `body` as the next record of the log and keep it in the store; it reaches `folder`
    when the transaction commits (or, sealed, when its round closes)."""
    current = lock_study(session)  # the append lock, and the round read fresh under it
    if current.study_id is None:
        raise FmaBandsError("the study has no root record yet: its first coordinator makes it")
    last = head(session)
    sequence, previous = (0, None) if last is None else (last[0] + 1, last[1])
    audit_head = audit.head(session)
    statement = record_statement(
        kind,
        study=current.study_id,
        sequence=sequence,
        previous=previous,
        signer={"pseudonym": signer.pseudonym, "keyid": signer.keyid},
        signed_at=stamp(now or utcnow()),
        subject=subject,
        body=body,
        audit_head=None if audit_head is None else {"seq": audit_head[0], "hash": audit_head[1]},
    )
    if folder is not None:
        _refuse_a_newer_folder(session, folder, sequence)
    payload = canonical_json(statement)
    envelope = sign_envelope(payload, IN_TOTO_PAYLOAD_TYPE, signer.private_key, signer.keyid)
    digest = hashlib.sha256(payload).hexdigest()
    sealed = current.round if kind in SEALED_KINDS and current.phase == "open" else None
    row = LogRecord(
        sequence=sequence,
        digest=f"sha256:{digest}",
        kind=kind,
        signer=signer.pseudonym,
        about=about,
        file_name=file_name(sequence, kind, about or signer.pseudonym, digest),
        envelope=json_text(envelope),
        sealed_round=sealed,
        created_at=now or utcnow(),
    )
    session.add(row)
    session.flush()
    if folder is not None:
        publish_on_commit(session, folder)
    return row


def _refuse_a_newer_folder(session: Session, folder: Path, sequence: int) -> None:
    """Refuse to sign record `sequence` when the folder already holds one at that place that
    verifies under the store's own chain: the database is older than the folder (restored from
    a backup), and signing on it would fork the log. A file there that does not verify is
    someone's forgery: it cannot stop a signature, and becomes a stray once the real record
    takes the place."""
    taken = sorted(Path(folder).glob(f"{sequence:06d}-*{ENVELOPE_SUFFIX}"))
    if not taken:
        return
    rows = session.exec(select(LogRecord).order_by(col(LogRecord.sequence))).all()
    stored = [envelope_from_bytes(Path(r.file_name), r.envelope.encode()) for r in rows]
    for path in taken:
        evidence = walk_log([*stored, load_envelope(path)], Evidence(Path(folder)), study=None)
        if evidence.valid and len(evidence.chain) == sequence + 1:
            raise FmaBandsError(
                f"the attestations folder already holds record {sequence} ({path.name}), which "
                "this database does not: the database is older than the folder (restored from "
                "an older backup?). Nothing was signed; restore the newest backup",
                file=str(path),
            )


def receipt(rows: Iterable[LogRecord], signer: Signer) -> Receipt:
    found = list(rows)
    last = found[-1]
    return Receipt(
        signer.pseudonym,
        signer.keyid,
        tuple((r.sequence, r.digest, r.file_name) for r in found),
        (last.sequence, last.digest),
        last.sealed_round,
    )


def releasable(row_round: int | None, current: StudyPublic) -> bool:
    """May a record sealed until `row_round` be in the folder now (its round has closed)?"""
    if row_round is None:
        return True
    return row_round < current.round or current.phase == "closed"


def publish_on_commit(session: Session, folder: Path) -> None:
    """Publish what may be shown once this transaction has committed (in a session of its own:
    the committed one is done)."""
    bind = session.get_bind()
    on_commit(session, lambda: _publish_with(bind, folder))


def _publish_with(bind: Any, folder: Path) -> None:
    with OrmSession(bind) as session:
        publish(session, folder)  # type: ignore[arg-type]


def publish(session: Session, folder: Path) -> list[str]:
    """Write to `folder` every record of the store's chain it lacks, in order, up to the first
    one still sealed; then the readable copies (policy.yaml, adjudicators.yaml). Idempotent: a
    process killed halfway is finished by the next one (the app and every command call it)."""
    folder = Path(folder)
    current = study(session)
    if current.study_id is None:
        return []
    rows = session.execute(
        select(
            col(LogRecord.sequence), col(LogRecord.file_name), col(LogRecord.sealed_round)
        ).order_by(col(LogRecord.sequence))
    ).all()
    written = []
    for sequence, name, sealed in rows:
        if not releasable(sealed, current):
            break
        path = folder / name
        if path.exists() or path.is_symlink():
            continue
        row = session.get(LogRecord, sequence)
        assert row is not None
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise FmaBandsError(
                f"cannot make the attestations folder: {exc.strerror}",
                file=str(folder),
                field="attestations",
            ) from None
        try:
            write_atomically(path, row.envelope, overwrite=False, shared=True)
        except FmaBandsError:
            if not path.exists():
                raise
            continue  # another process published it at the same moment
        written.append(name)
    copies = [folder / ADJUDICATORS_FILE, folder / POLICY_FILE]
    if rows and (written or not all(p.exists() for p in copies)):
        # A copy edited by hand is left as it is: verify and the registry report it, and it is
        # written again once deleted.
        write_copies(folder, current.study_id)
    return written


def write_copies(folder: Path, study_id: str) -> None:
    """policy.yaml and adjudicators.yaml made again from the chain in the folder, when it
    verifies (an invalid folder's copies are left as they are, for verify to report)."""
    evidence = read_evidence(folder, study=study_id)
    if any(p.code != "copy_differs" for p in evidence.problems):
        return
    _write_if_changed(folder / ADJUDICATORS_FILE, adjudicators_text(evidence))
    if evidence.policy is not None:
        _write_if_changed(folder / POLICY_FILE, policy_text(evidence))


def _write_if_changed(path: Path, text: str) -> None:
    # Read no more than the copy to write could hold: whatever the folder holds in its place (a
    # huge or sparse file, a FIFO) is written over, never read whole.
    wanted = text.encode("utf-8")
    try:
        if read_bounded_bytes(path, limit=len(wanted), what="copy") == wanted:
            return
    except FmaBandsError:
        pass
    write_atomically(path, text, shared=True)


# The store's chain as last walked, per database, study and head: pages ask what is in force on
# every rerun, and the log changes only by a record appended (a new head). Shared: read only.
_walked: dict[tuple[str, str | None, tuple[int, str] | None], Evidence] = {}
_walked_lock = threading.Lock()


def store_evidence(session: Session) -> Evidence:
    """What the store's whole chain establishes, sealed records included: for the app's own
    questions (what a rater signed, what awaits a steward), never for the registry's grants,
    which come from the folder alone. Walked once per head; the caller must not change it."""
    current = study(session)
    key = (str(session.get_bind().engine.url), current.study_id, head(session))
    found = _walked.get(key)
    if found is not None:
        return found
    rows = session.exec(select(LogRecord).order_by(col(LogRecord.sequence))).all()
    loaded = checked_early(
        envelope_from_bytes(Path(r.file_name), r.envelope.encode()) for r in rows
    )
    found = walk_log(loaded, Evidence(Path(".")), study=current.study_id)
    with _walked_lock:
        if len(_walked) >= 8:
            _walked.clear()
        _walked[key] = found
    return found


def published_head(session: Session) -> tuple[int, str] | None:
    """The newest record the folder may hold now (the last before the first sealed one)."""
    current = study(session)
    found = None
    for sequence, digest, sealed in session.execute(
        select(
            col(LogRecord.sequence), col(LogRecord.digest), col(LogRecord.sealed_round)
        ).order_by(col(LogRecord.sequence))
    ):
        if not releasable(sealed, current):
            break
        found = (sequence, digest)
    return found


def audit_anchors(session: Session, folder: Path | None = None) -> list[tuple[int, str, str]]:
    """(seq, hash, record) of the audit head every signed record carries, from the store's log
    and from the folder (whose copies a database administrator cannot rewrite)."""
    from_store: dict[tuple[int, str], str] = {}
    from_folder: dict[tuple[int, str], str] = {}

    def anchor(env: CheckedEnvelope, found: dict[tuple[int, str], str]) -> None:
        try:
            head_of = env.predicate["audit_head"]
            seq, digest = head_of["seq"], head_of["hash"]
        except (AssertionError, KeyError, TypeError):
            return
        if isinstance(seq, int) and isinstance(digest, str):
            found.setdefault((seq, digest), env.path.name)

    # The folder first: its records are verified as they are read, and the store's copies of
    # the same bytes are then parsed already. A record at a time: a large study's records are
    # hundreds of megabytes, never held at once.
    if folder is not None:  # only records that verify in their place: a planted file is no anchor
        # Pinned to the store's study: a root record of another study planted beside ours would
        # otherwise leave two roots and no chain, and so no anchor from the folder at all.
        for env in read_evidence(folder, study=study(session).study_id).chain:
            anchor(env, from_folder)
    query = select(col(LogRecord.file_name), col(LogRecord.envelope))
    rows = session.execute(query.order_by(col(LogRecord.sequence)).execution_options(yield_per=50))
    for name, text in rows:
        anchor(envelope_from_bytes(Path(name), text.encode()), from_store)
    found = from_folder | from_store  # the store's name where both carry a head
    return [(seq, digest, name) for (seq, digest), name in sorted(found.items())]
