"""Signed attestations (docs/design.md, Identity, keys and attestation; Attestations): a rater's
reviews as an in-toto statement in a DSSE envelope, and revocations. Only the rater can sign: the
key is sealed under the passphrase the rater chose at activation. What a signature covers is
signing_plan's to decide.
"""

from collections.abc import Collection
from datetime import datetime
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sqlmodel import Session, col, select

from fma_bands.core.canonical import canonical_json
from fma_bands.core.errors import FmaBandsError, WrongPassphrase
from fma_bands.core.files import json_text
from fma_bands.core.people import UserPublic
from fma_bands.core.protocol import DECLARATIONS, MEANINGS, STATEMENT_TEXT
from fma_bands.core.vignettes import Library
from fma_bands.evidence.dsse import IN_TOTO_PAYLOAD_TYPE, STATEMENT_TYPE, sign_envelope
from fma_bands.evidence.envelope import (
    ADJUDICATION_TYPE,
    ENVELOPE_SUFFIX,
    REVOCATION_TYPE,
    STAMP,
    stamp,
)
from fma_bands.evidence.log import evidence_of, read_evidence, record_links, subject_name
from fma_bands.store.db import pending_files, write_on_commit
from fma_bands.store.models import Review, SigningKey, User, utcnow
from fma_bands.study import audit
from fma_bands.study.rater_keys import ensure_record, public_record
from fma_bands.study.signing_plan import Band, SigningPlan, plan
from fma_bands.study.state import authorize, study
from fma_bands.study.users import unlock_signing_key

NOT_SIGNED = "that passphrase is not right; nothing was signed"


def shown_time(stamp: str) -> str:
    """'2026-11-29T19:30:07.378140Z' as '29 Nov 2026, 19:30:07 UTC'."""
    return datetime.strptime(stamp, STAMP).strftime("%d %b %Y, %H:%M:%S UTC")


def manifestation(folder: Path, path: Path) -> dict[str, list[str]]:
    """The signature manifestation of one signed attestation, as a one-row table."""
    [checked] = read_evidence(folder, [path]).envelopes
    signed = checked.predicate["signature_manifestation"]
    return {
        "Printed name": [signed["printed_name"]],
        "Signed at": [shown_time(signed["signed_at"])],
        "Meaning": [signed["meaning"]],
        "File": [Path(path).name],
    }


def on_file(folder: Path, pseudonym: str) -> list[str]:
    """One line for each valid attestation of the rater in the folder."""
    return [
        f"{c.path.name}: signed {shown_time(c.signed_at)} "
        f"({c.predicate['signature_manifestation']['meaning']}), "
        f"{len(c.predicate['reviews'])} bands"
        for c in evidence_of(folder, pseudonym).envelopes
        if c.pseudonym == pseudonym and not c.error and c.kind == "adjudication"
    ]


def _check_request(meaning: str, declarations: list[str]) -> None:
    missing = [d for d in DECLARATIONS if d not in declarations]
    unknown = [d for d in declarations if d not in DECLARATIONS]
    if unknown:
        raise FmaBandsError(f"unknown declaration(s): {', '.join(unknown)}")
    if missing:
        raise FmaBandsError(f"every declaration is required; missing: {', '.join(missing)}")
    if meaning not in MEANINGS:
        raise FmaBandsError(f"meaning must be one of {', '.join(MEANINGS)}")


def attest(
    session: Session,
    library: Library,
    *,
    rater: UserPublic,
    passphrase: str,
    meaning: str,
    declarations: list[str],
    folder: Path,
    confirm_imported: bool = False,
    only: Collection[Band] | None = None,
    now: datetime | None = None,
) -> Path:
    """Sign what `plan` says into one DSSE envelope (audited). The passphrase is the rater's:
    it unseals the key they made at activation, and nothing else can."""
    authorize(session, rater, "sign")
    _check_request(meaning, declarations)
    user = _identified_signer(session, rater)
    signing = plan(session, library, rater, folder, confirm_imported=confirm_imported, only=only)
    _require_fresh(signing, confirm_imported)
    key, private_key = _unlock(session, rater, passphrase)
    when = now or utcnow()
    # The public record the statement names is the one the rater signs now, with this key.
    ensure_record(session, user=user, key=key, private_key=private_key, folder=folder, now=when)
    statement = _adjudication(session, user, key, signing, meaning, folder, when)
    path = _envelope_path(folder, user.pseudonym, when)
    _write_signed(session, statement, private_key, key.keyid, path)
    confirmed = _confirm_imports(session, rater, signing, when)
    audit.record(
        session,
        kind="attestation_signed",
        actor=user.pseudonym,
        payload={
            "file": path.name,
            "bands": [s["name"] for s in statement["subject"]],
            "signed_as_before": signing.carried,
            "confirmed_imports": confirmed,
            "meaning": meaning,
        },
    )
    return path


def _identified_signer(session: Session, rater: UserPublic) -> User:
    """The rater's row in the store, refused until the coordinator has recorded their private
    identity (the statement carries its commitment)."""
    user = session.get(User, rater.id)
    assert user is not None, "a signed-in rater is in the store"
    if not user.identity_commitment:
        raise FmaBandsError(
            "your private identity is not recorded yet: the coordinator records it "
            "(fma-bands identity set) before you can sign"
        )
    return user


def _require_fresh(signing: SigningPlan, confirm_imported: bool) -> None:
    """Refuse a signature that would cover nothing new, saying when hand-backs wait for the
    rater's confirmation."""
    if signing.fresh:
        return
    waiting = (
        f" ({len(signing.imported)} imported from your paper hand-back wait for you to "
        "confirm them)"
        if signing.imported and not confirm_imported
        else ""
    )
    raise FmaBandsError(f"you have no current submitted review to sign{waiting}")


def _unlock(
    session: Session, rater: UserPublic, passphrase: str
) -> tuple[SigningKey, Ed25519PrivateKey]:
    """The rater's key and its private half; a wrong passphrase says that nothing was signed."""
    try:
        return unlock_signing_key(session, rater.id, passphrase)
    except WrongPassphrase:
        raise WrongPassphrase(NOT_SIGNED) from None


def _adjudication(
    session: Session,
    user: User,
    key: SigningKey,
    signing: SigningPlan,
    meaning: str,
    folder: Path,
    when: datetime,
) -> dict[str, Any]:
    """The in-toto statement of the reviews `signing` covers, naming the rater's public record,
    the records in the folder and the audit log's head as they are now."""
    seq, head_hash = audit.head(session) or (0, audit.GENESIS)
    subjects = [
        {
            "name": subject_name(r["vignette_id"], r["sub_action"]),
            "digest": {"sha256": str(r.get("band_digest") or "").removeprefix("sha256:")},
        }
        for r in signing.reviews
    ]
    return {
        "_type": STATEMENT_TYPE,
        "subject": subjects,
        "predicateType": ADJUDICATION_TYPE,
        "predicate": {
            "adjudicator": public_record(user, key),
            "identity_commitment": user.identity_commitment,
            "signature_manifestation": {
                "printed_name": user.pseudonym,
                "signed_at": stamp(when),
                "meaning": meaning,
            },
            "declarations": {
                "statement": STATEMENT_TEXT,
                "made": {d: DECLARATIONS[d] for d in DECLARATIONS},
            },
            "study_mode": study(session).mode,
            "reviews": signing.reviews,
            "records": record_links(folder, pending_files(session)),
            "audit_head": {"seq": seq, "hash": head_hash},
        },
    }


def _envelope_path(folder: Path, pseudonym: str, when: datetime, tail: str = "") -> Path:
    """Where a statement the rater signs at `when` is written: their pseudonym and the instant."""
    compact = stamp(when).replace("-", "").replace(":", "").replace(".", "")
    return Path(folder) / f"{pseudonym}-{compact}{tail}{ENVELOPE_SUFFIX}"


def _write_signed(
    session: Session,
    statement: dict[str, Any],
    private_key: Ed25519PrivateKey,
    keyid: str,
    path: Path,
) -> None:
    envelope = sign_envelope(canonical_json(statement), IN_TOTO_PAYLOAD_TYPE, private_key, keyid)
    # On disk exactly when the audit event that follows is committed (store/db.py
    # write_on_commit).
    write_on_commit(session, path, json_text(envelope))


def _confirm_imports(
    session: Session, rater: UserPublic, signing: SigningPlan, when: datetime
) -> list[str]:
    """Mark the hand-back reviews this signature covers as confirmed by the rater."""
    wanted = {
        (r["vignette_id"], r["sub_action"], r["revision"])
        for r in signing.fresh
        if r.get("origin") == "handback"
    }
    if not wanted:
        return []
    query = select(Review).where(
        Review.rater_id == rater.id,
        Review.origin == "handback",
        col(Review.confirmed_at).is_(None),
    )
    done = []
    for row in session.exec(query):
        if (row.vignette_id, row.sub_action, row.revision) in wanted:
            row.confirmed_at = when
            done.append(subject_name(row.vignette_id, row.sub_action))
    return sorted(done)


def resign(
    session: Session,
    library: Library,
    *,
    rater: UserPublic,
    passphrase: str,
    bands: Collection[Band],
    folder: Path,
) -> Path:
    """Sign again after the rater changed these bands in the app: what they signed before, with
    the change, under the declarations every attestation makes. No import is covered."""
    return attest(
        session,
        library,
        rater=rater,
        passphrase=passphrase,
        meaning="adjudication",
        declarations=list(DECLARATIONS),
        folder=folder,
        only=bands,
    )


def revoke(
    session: Session,
    *,
    rater: UserPublic,
    passphrase: str,
    attestation: Path,
    reason: str,
    folder: Path,
) -> Path:
    """A signed revocation of one of the rater's own attestations (audited)."""
    authorize(session, rater, "sign")
    if not reason.strip():
        raise FmaBandsError("say why the attestation is revoked")
    [checked] = read_evidence(folder, [Path(attestation)]).envelopes
    if checked.error or checked.kind != "adjudication" or checked.pseudonym != rater.pseudonym:
        raise FmaBandsError(f"{Path(attestation).name} is not a valid attestation of yours")
    key, private_key = _unlock(session, rater, passphrase)
    when = utcnow()
    statement = {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": Path(attestation).name, "digest": {"sha256": checked.payload_sha256}}],
        "predicateType": REVOCATION_TYPE,
        "predicate": {
            "adjudicator": {"pseudonym": rater.pseudonym, "keyid": key.keyid},
            "revokes": Path(attestation).name,
            "reason": reason.strip(),
            "revoked_at": stamp(when),
            "records": record_links(folder, pending_files(session)),
        },
    }
    path = _envelope_path(folder, rater.pseudonym, when, "-revocation")
    _write_signed(session, statement, private_key, key.keyid, path)
    audit.record(
        session,
        kind="attestation_revoked",
        actor=rater.pseudonym,
        payload={"file": path.name, "revokes": Path(attestation).name},
    )
    return path
