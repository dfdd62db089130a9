"""Signed attestations (DESIGN 2.6, 4): a rater's submitted reviews as an in-toto statement in
a DSSE envelope, revocations, and the public adjudicator records published beside them.

Everything an editor needs to check a claim lives in files (read back by envelopes.py); the
database only helps write them.
"""

import base64
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml
from sqlmodel import Session, select

from fma_bands import audit
from fma_bands.bands import to_file
from fma_bands.canonical import canonical_json
from fma_bands.dsse import IN_TOTO_PAYLOAD_TYPE, STATEMENT_TYPE, sign_envelope
from fma_bands.envelopes import (
    ADJUDICATION_TYPE,
    ADJUDICATORS_FILE,
    ADJUDICATORS_FORMAT,
    ENVELOPE_SUFFIX,
    REVOCATION_TYPE,
    read_adjudicators,
    read_envelope,
    subject_name,
)
from fma_bands.errors import AccessDenied, FmaBandsError
from fma_bands.files import write_atomically, write_json_atomically
from fma_bands.keys import keyid_for
from fma_bands.protocol import DECLARATIONS, MEANINGS, STATEMENT_TEXT
from fma_bands.reviews import attested_band, my_latest_submitted
from fma_bands.store.models import User, utcnow
from fma_bands.study import study
from fma_bands.users import UserPublic, check_passphrase, unlock_signing_key
from fma_bands.vignettes import Library

# Public records -----------------------------------------------------------------------------


def public_record(user: User) -> dict[str, Any]:
    """The harness's Adjudicator fields plus the key and the identity commitment."""
    raw = base64.b64decode(user.public_key)
    return {
        "pseudonym": user.pseudonym,
        "specialty": user.specialty,
        "jurisdiction": user.jurisdiction,
        "years_post_registration": user.years_post_registration,
        "anonymous_to_readers": True,
        "keyid": user.keyid,
        "public_key": user.public_key,
        "public_key_sha256": keyid_for(user.public_key).removeprefix("sha256:"),
        "public_key_bytes": len(raw),
        "identity_commitment": user.identity_commitment,
    }


def publish_adjudicators(session: Session, folder: Path) -> Path:
    """Write attestations/adjudicators.yaml: every enrolled rater's public half."""
    query = select(User).where(User.role == "rater").order_by(User.pseudonym)  # type: ignore[arg-type]
    raters = session.exec(query)
    document = {
        "format": ADJUDICATORS_FORMAT,
        "adjudicators": [public_record(u) for u in raters if u.public_key],
    }
    header = "# Public records of the enrolled adjudicators; no private identity is kept here.\n"
    return write_atomically(
        Path(folder) / ADJUDICATORS_FILE,
        header + yaml.safe_dump(document, sort_keys=False, allow_unicode=True),
    )


# Statements and signing --------------------------------------------------------------------------


@dataclass
class SigningPlan:
    """What a signature would cover, shown to the rater before they sign."""

    reviews: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def plan(session: Session, library: Library, rater: UserPublic) -> SigningPlan:
    """Every current submitted review of the rater, as it would be signed; stale ones skipped."""
    result = SigningPlan()
    latest = my_latest_submitted(session, library, rater)
    for vignette in library:
        for proposal in vignette.proposals:
            review = latest.get((vignette.id, proposal.sub_action))
            if review is None:
                continue
            label = subject_name(vignette.id, proposal.sub_action)
            if review.stale:
                result.skipped.append(f"{label}: the vignette changed after you submitted")
                continue
            band = attested_band(review, library)
            result.reviews.append(
                {
                    "vignette_id": vignette.id,
                    "sub_action": proposal.sub_action,
                    "revision": review.revision,
                    "mode": review.mode,
                    "verdict": review.verdict,
                    "proposed_band": to_file(proposal.acceptable),
                    "band_digest": proposal.acceptable.digest(),
                    "attested_band": to_file(band) if band is not None else None,
                    "answers": review.answers,
                    "reason": review.reason,
                    "context_digest": review.context_digest,
                    "origin": review.origin,
                }
            )
    return result


def attest(
    session: Session,
    library: Library,
    *,
    rater: UserPublic,
    passphrase: str,
    meaning: str,
    declarations: list[str],
    folder: Path,
    now: datetime | None = None,
) -> Path:
    """Sign every current submitted review of the rater into one DSSE envelope (audited)."""
    if rater.role != "rater":
        raise AccessDenied("only enrolled raters sign attestations")
    missing = [d for d in DECLARATIONS if d not in declarations]
    unknown = [d for d in declarations if d not in DECLARATIONS]
    if unknown:
        raise FmaBandsError(f"unknown declaration(s): {', '.join(unknown)}")
    if missing:
        raise FmaBandsError(f"every declaration is required; missing: {', '.join(missing)}")
    if meaning not in MEANINGS:
        raise FmaBandsError(f"meaning must be one of {', '.join(MEANINGS)}")
    user = session.get(User, rater.id)
    assert user is not None, "a signed-in rater is in the store"
    if not user.identity_commitment:
        raise FmaBandsError(
            "your private identity is not recorded yet: the coordinator records it "
            "(fma-bands identity set) before you can sign"
        )
    if not check_passphrase(session, rater.id, passphrase):
        raise FmaBandsError("that passphrase is not right; nothing was signed")
    signing = plan(session, library, rater)
    if not signing.reviews:
        raise FmaBandsError("you have no current submitted review to sign")
    key = unlock_signing_key(session, rater.id, passphrase)
    when = (now or utcnow()).astimezone(UTC)
    seq, head_hash = audit.head(session) or (0, audit.GENESIS)
    statement = {
        "_type": STATEMENT_TYPE,
        "subject": [
            {
                "name": subject_name(r["vignette_id"], r["sub_action"]),
                "digest": {"sha256": r["band_digest"].removeprefix("sha256:")},
            }
            for r in signing.reviews
        ],
        "predicateType": ADJUDICATION_TYPE,
        "predicate": {
            "adjudicator": public_record(user),
            "identity_commitment": user.identity_commitment,
            "signature_manifestation": {
                "printed_name": user.pseudonym,
                "signed_at": when.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                "meaning": meaning,
            },
            "declarations": {
                "statement": STATEMENT_TEXT,
                "made": {d: DECLARATIONS[d] for d in DECLARATIONS},
            },
            "study_mode": study(session).mode,
            "reviews": signing.reviews,
            "audit_head": {"seq": seq, "hash": head_hash},
        },
    }
    payload = canonical_json(statement)
    envelope = sign_envelope(payload, IN_TOTO_PAYLOAD_TYPE, key, user.keyid)
    path = Path(folder) / f"{user.pseudonym}-{when.strftime('%Y%m%dT%H%M%S%fZ')}{ENVELOPE_SUFFIX}"
    publish_adjudicators(session, folder)
    write_json_atomically(path, envelope)
    audit.record(
        session,
        kind="attestation_signed",
        actor=user.pseudonym,
        payload={
            "file": path.name,
            "bands": [s["name"] for s in statement["subject"]],
            "meaning": meaning,
        },
    )
    return path


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
    if not reason.strip():
        raise FmaBandsError("say why the attestation is revoked")
    if not check_passphrase(session, rater.id, passphrase):
        raise FmaBandsError("that passphrase is not right; nothing was signed")
    checked = read_envelope(attestation, read_adjudicators(folder))
    if checked.error or checked.pseudonym != rater.pseudonym:
        raise FmaBandsError(f"{attestation.name} is not a valid attestation of yours")
    user = session.get(User, rater.id)
    assert user is not None, "a signed-in rater is in the store"
    key = unlock_signing_key(session, rater.id, passphrase)
    when = utcnow()
    statement = {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": attestation.name, "digest": {"sha256": checked.payload_sha256}}],
        "predicateType": REVOCATION_TYPE,
        "predicate": {
            "adjudicator": {"pseudonym": user.pseudonym, "keyid": user.keyid},
            "revokes": attestation.name,
            "reason": reason.strip(),
            "revoked_at": when.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        },
    }
    envelope = sign_envelope(canonical_json(statement), IN_TOTO_PAYLOAD_TYPE, key, user.keyid)
    path = Path(folder) / (
        f"{user.pseudonym}-{when.strftime('%Y%m%dT%H%M%S%fZ')}-revocation{ENVELOPE_SUFFIX}"
    )
    write_json_atomically(path, envelope)
    audit.record(
        session,
        kind="attestation_revoked",
        actor=user.pseudonym,
        payload={"file": path.name, "revokes": attestation.name},
    )
    return path
