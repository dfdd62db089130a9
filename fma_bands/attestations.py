"""Signed attestations (DESIGN 2.6, 4): in-toto statements in DSSE envelopes, revocations, the
public adjudicator records and policy in `attestations/`, and the private identity behind them.

Everything an editor needs to check a claim lives in files; the database only helps write them.
"""

import base64
import hashlib
import json
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from sqlmodel import Session, select

from fma_bands import audit
from fma_bands.bands import to_file
from fma_bands.canonical import canonical_json
from fma_bands.dsse import (
    IN_TOTO_PAYLOAD_TYPE,
    STATEMENT_TYPE,
    EnvelopeError,
    check_identity_commitment,
    identity_commitment,
    keyid_for,
    sign_envelope,
    verify_envelope,
    write_json_atomically,
)
from fma_bands.export import Policy
from fma_bands.files import write_atomically
from fma_bands.models import User, utcnow
from fma_bands.reviews import attested_band, my_reviews, study
from fma_bands.users import UserPublic, check_passphrase, unlock_signing_key
from fma_bands.vignettes import Library

ADJUDICATION_TYPE = "https://fma-bands.org/attestation/adjudication/v1"
REVOCATION_TYPE = "https://fma-bands.org/attestation/revocation/v1"
ADJUDICATORS_FILE = "adjudicators.yaml"
POLICY_FILE = "policy.yaml"
ENVELOPE_SUFFIX = ".dsse.json"
IDENTITY_FIELDS = (
    "full_name",
    "primary_qualification",
    "postgraduate_qualification",
    "registration_number",
    "registering_body",
    "institution",
    "email",
)
DECLARATIONS = {
    "not-an-author": "I am not an author of the study whose bands I adjudicated.",
    "no-financial-interest": "I have no financial interest in the study or in its outcome.",
    "consent-editor-disclosure": (
        "I consent to my identity being disclosed to the editor of the journal that "
        "considers the study, on request."
    ),
}
MEANINGS = ("adjudication", "review", "approval")
STATEMENT_TEXT = (
    "I adjudicated the acceptable-action bands listed in this statement, given only the facts "
    "available to the agent at each step. Each verdict, band and answer recorded here is my "
    "own clinical judgement, made without seeing any other rater's work."
)


class AttestationError(ValueError):
    """A signing request that cannot go ahead; the message says why in plain words."""


# Policy and public records ------------------------------------------------------------------


def check_policy(quorum: Any, scope: Any) -> Policy:
    if isinstance(quorum, bool) or not isinstance(quorum, int) or quorum < 1:
        raise AttestationError(f"quorum must be a whole number of at least 1, not {quorum!r}")
    if scope not in ("warn", "require"):
        raise AttestationError(f"scope must be warn or require, not {scope!r}")
    return Policy(quorum, scope)


def read_policy(folder: Path) -> Policy:
    path = Path(folder) / POLICY_FILE
    if not path.exists():
        return Policy()
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        return check_policy(data.get("quorum", 1), data.get("scope", "warn"))
    except (yaml.YAMLError, AttributeError, AttestationError) as exc:
        raise AttestationError(f"{path}: {exc}") from None


def write_policy(
    session: Session, folder: Path, *, actor: UserPublic, quorum: int, scope: str
) -> Policy:
    if not actor.is_coordinator:
        raise PermissionError("only the study coordinator sets the policy")
    policy = check_policy(quorum, scope)
    before = read_policy(folder)
    header = "# fma-bands registry policy: the registry reads it, so its decisions can be redone.\n"
    write_atomically(Path(folder) / POLICY_FILE, header + yaml.safe_dump(policy.as_dict()))
    audit.record(
        session,
        kind="policy_set",
        actor=actor.pseudonym,
        payload={"from": before.as_dict(), "to": policy.as_dict()},
    )
    return policy


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
    raters = session.exec(select(User).where(User.role == "rater").order_by(User.pseudonym))
    document = {
        "format": "fma-bands/adjudicators/v1",
        "adjudicators": [public_record(u) for u in raters if u.public_key],
    }
    header = "# Public records of the enrolled adjudicators; no private identity is kept here.\n"
    return write_atomically(
        Path(folder) / ADJUDICATORS_FILE,
        header + yaml.safe_dump(document, sort_keys=False, allow_unicode=True),
    )


def read_adjudicators(folder: Path) -> dict[str, dict[str, Any]]:
    """pseudonym -> public record, from the published file alone."""
    path = Path(folder) / ADJUDICATORS_FILE
    if not path.exists():
        return {}
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        records = data["adjudicators"]
        return {r["pseudonym"]: r for r in records}
    except (yaml.YAMLError, KeyError, TypeError) as exc:
        raise AttestationError(f"{path}: not a readable adjudicators file ({exc})") from None


def trusted_keys(adjudicators: dict[str, dict[str, Any]]) -> dict[str, str]:
    return {r["keyid"]: r["public_key"] for r in adjudicators.values() if r.get("keyid")}


# Private identity ------------------------------------------------------------------------------


def _identity_key(path: Path, *, create: bool) -> bytes:
    """The coordinator's key that seals private identities at rest; made only when recording."""
    path = Path(path)
    if not path.exists():
        if not create:
            raise AttestationError(f"no identity key at {path}: it is needed to open identities")
        key = AESGCM.generate_key(bit_length=256)
        write_atomically(path, base64.b64encode(key).decode() + "\n", overwrite=False)
        path.chmod(0o600)
        return key
    try:
        key = base64.b64decode(path.read_text().strip(), validate=True)
    except (OSError, ValueError):
        key = b""
    if len(key) != 32:
        raise AttestationError(f"{path} is not an fma-bands identity key")
    return key


def check_identity(data: Any, source: str) -> dict[str, str]:
    if not isinstance(data, dict):
        raise AttestationError(f"{source}: expected a mapping of {', '.join(IDENTITY_FIELDS)}")
    missing = [k for k in IDENTITY_FIELDS if not str(data.get(k) or "").strip()]
    unknown = sorted(map(str, set(data) - set(IDENTITY_FIELDS)))
    problems = []
    if missing:
        problems.append(f"missing {', '.join(missing)}")
    if unknown:
        problems.append(f"unknown key(s) {', '.join(unknown)}")
    if problems:
        raise AttestationError(f"{source}: {'; '.join(problems)}")
    return {k: str(data[k]).strip() for k in IDENTITY_FIELDS}


def set_identity(
    session: Session,
    *,
    actor: UserPublic,
    pseudonym: str,
    record: dict[str, str],
    key_path: Path,
    source: str = "identity",
) -> str:
    """Seal the private identity and store its salted commitment; returns the commitment."""
    if not (actor.is_coordinator or actor.pseudonym == pseudonym):
        raise PermissionError("only the coordinator or the rater may record a rater's identity")
    record = check_identity(record, source)
    user = session.exec(select(User).where(User.pseudonym == pseudonym)).first()
    if user is None or user.role != "rater":
        raise AttestationError(f"{pseudonym!r} is not an enrolled rater")
    commitment, salt = identity_commitment(record)
    plain = canonical_json({"record": record, "salt": salt})
    nonce = secrets.token_bytes(12)
    sealed = AESGCM(_identity_key(key_path, create=True)).encrypt(nonce, plain, pseudonym.encode())
    user.identity_sealed = base64.b64encode(nonce + sealed).decode()
    user.identity_commitment = commitment
    audit.record(
        session,
        kind="identity_recorded",
        actor=actor.pseudonym,
        payload={"pseudonym": pseudonym, "identity_commitment": commitment},
    )
    return commitment


def reveal_identity(
    session: Session, *, actor: UserPublic, pseudonym: str, key_path: Path
) -> dict[str, Any]:
    """The private record with its salt and commitment, for an editor who asks (audited)."""
    if not (actor.is_coordinator or actor.pseudonym == pseudonym):
        raise PermissionError("only the coordinator or the rater may see a rater's identity")
    user = session.exec(select(User).where(User.pseudonym == pseudonym)).first()
    if user is None or not user.identity_sealed:
        raise AttestationError(f"no identity is recorded for {pseudonym!r}")
    blob = base64.b64decode(user.identity_sealed)
    try:
        plain = AESGCM(_identity_key(key_path, create=False)).decrypt(
            blob[:12], blob[12:], pseudonym.encode()
        )
    except InvalidTag:
        raise AttestationError(
            f"the identity key at {key_path} does not open {pseudonym}'s identity"
        ) from None
    opened = json.loads(plain)
    audit.record(
        session, kind="identity_revealed", actor=actor.pseudonym, payload={"pseudonym": pseudonym}
    )
    return {
        "pseudonym": pseudonym,
        "identity_commitment": user.identity_commitment,
        "salt": opened["salt"],
        "record": opened["record"],
    }


def check_revealed(revealed: Any, adjudicators: dict[str, dict[str, Any]]) -> tuple[bool, str]:
    """Does a revealed record match the commitment published for that pseudonym?"""
    try:
        pseudonym, salt = revealed["pseudonym"], revealed["salt"]
        record = check_identity(revealed["record"], "record")
    except (KeyError, TypeError, AttestationError) as exc:
        return False, f"not a revealed identity record: {exc}"
    published = adjudicators.get(pseudonym, {}).get("identity_commitment")
    if not published:
        return False, f"no identity commitment is published for {pseudonym}"
    if check_identity_commitment(record, salt, published):
        return True, f"matches the identity commitment published for {pseudonym}"
    return False, f"does NOT match the identity commitment published for {pseudonym}"


# Statements and signing --------------------------------------------------------------------------


def subject_name(vignette_id: str, sub_action: str) -> str:
    return f"{vignette_id}/{sub_action}"


@dataclass
class SigningPlan:
    """What a signature would cover, shown to the rater before they sign."""

    reviews: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def plan(session: Session, library: Library, rater: UserPublic) -> SigningPlan:
    """Every current submitted review of the rater, as it would be signed; stale ones skipped."""
    result = SigningPlan()
    for vignette in library:
        for proposal in vignette.proposals:
            history = my_reviews(session, library, rater, vignette.id, proposal.sub_action)
            submitted = [r for r in history if r.status == "submitted"]
            if not submitted:
                continue
            review = submitted[-1]
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
        raise AttestationError("only enrolled raters sign attestations")
    missing = [d for d in DECLARATIONS if d not in declarations]
    unknown = [d for d in declarations if d not in DECLARATIONS]
    if unknown:
        raise AttestationError(f"unknown declaration(s): {', '.join(unknown)}")
    if missing:
        raise AttestationError(f"every declaration is required; missing: {', '.join(missing)}")
    if meaning not in MEANINGS:
        raise AttestationError(f"meaning must be one of {', '.join(MEANINGS)}")
    user = session.get(User, rater.id)
    if not user.identity_commitment:
        raise AttestationError(
            "your private identity is not recorded yet: the coordinator records it "
            "(fma-bands identity set) before you can sign"
        )
    if not check_passphrase(session, rater.id, passphrase):
        raise AttestationError("that passphrase is not right; nothing was signed")
    signing = plan(session, library, rater)
    if not signing.reviews:
        raise AttestationError("you have no current submitted review to sign")
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
        raise AttestationError("say why the attestation is revoked")
    if not check_passphrase(session, rater.id, passphrase):
        raise AttestationError("that passphrase is not right; nothing was signed")
    checked = read_envelope(attestation, read_adjudicators(folder))
    if checked.error or checked.pseudonym != rater.pseudonym:
        raise AttestationError(f"{attestation.name} is not a valid attestation of yours")
    user = session.get(User, rater.id)
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


# Reading envelopes back, from files alone -------------------------------------------------------


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

    @property
    def kind(self) -> str | None:
        found = self.statement or self.claimed or {}
        return {ADJUDICATION_TYPE: "adjudication", REVOCATION_TYPE: "revocation"}.get(
            found.get("predicateType")
        )


def read_envelope(path: Path, adjudicators: dict[str, dict[str, Any]]) -> CheckedEnvelope:
    checked = CheckedEnvelope(Path(path))
    try:
        envelope = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        checked.error = ("malformed", f"not a readable JSON envelope: {exc}")
        return checked
    try:
        payload = base64.b64decode(envelope["payload"], validate=True)
        checked.claimed = json.loads(payload)
        checked.payload_sha256 = hashlib.sha256(payload).hexdigest()
    except (KeyError, TypeError, ValueError):
        checked.claimed = None
    try:
        verified = verify_envelope(envelope, trusted_keys(adjudicators))
    except EnvelopeError as exc:
        checked.error = (exc.code, exc.message)
        return checked
    if verified.payload_type != IN_TOTO_PAYLOAD_TYPE:
        checked.error = ("malformed", f"payloadType is {verified.payload_type}, not in-toto")
        return checked
    statement = checked.claimed
    if not _well_formed(statement):
        checked.error = ("malformed", "the payload is not an fma-bands in-toto statement")
        return checked
    claimed_by = statement["predicate"]["adjudicator"]["pseudonym"]
    enrolled = adjudicators.get(claimed_by)
    if enrolled is None or enrolled.get("keyid") not in verified.keyids:
        checked.error = (
            "wrong_signer",
            f"signed by {', '.join(verified.keyids)}, which is not the key enrolled for "
            f"{claimed_by}",
        )
        return checked
    checked.statement = statement
    checked.pseudonym = claimed_by
    checked.keyid = enrolled["keyid"]
    return checked


def _well_formed(statement: Any) -> bool:
    """The shape the registry relies on; a signed statement of any other shape is refused."""
    try:
        predicate = statement["predicate"]
        ok = (
            statement["_type"] == STATEMENT_TYPE
            and isinstance(predicate["adjudicator"]["pseudonym"], str)
            and all(
                isinstance(s["name"], str) and isinstance(s["digest"]["sha256"], str)
                for s in statement["subject"]
            )
        )
        if statement["predicateType"] == REVOCATION_TYPE:
            return ok and isinstance(predicate["revokes"], str) and len(statement["subject"]) == 1
        if statement["predicateType"] != ADJUDICATION_TYPE:
            return False
        return (
            ok
            and isinstance(predicate["signature_manifestation"]["signed_at"], str)
            and all(
                isinstance(r["vignette_id"], str) and isinstance(r["sub_action"], str)
                for r in predicate["reviews"]
            )
        )
    except (KeyError, TypeError, IndexError):
        return False


def signed_revisions(folder: Path, pseudonym: str) -> dict[tuple[str, str], int]:
    """For each band, the review revision the rater's latest valid attestation covers."""
    _, checked = read_folder(folder)
    covered: dict[tuple[str, str], tuple[str, int]] = {}
    for env in checked:
        if env.error or env.kind != "adjudication" or env.pseudonym != pseudonym:
            continue
        signed_at = env.statement["predicate"]["signature_manifestation"]["signed_at"]
        for review in env.statement["predicate"]["reviews"]:
            band = (review["vignette_id"], review["sub_action"])
            if band not in covered or covered[band][0] < signed_at:
                covered[band] = (signed_at, review.get("revision"))
    return {band: revision for band, (_, revision) in covered.items()}


def read_folder(
    folder: Path, paths: list[Path] | None = None
) -> tuple[dict[str, dict[str, Any]], list[CheckedEnvelope]]:
    """The published adjudicators and every envelope in the folder (or the given paths), checked."""
    adjudicators = read_adjudicators(folder)
    files = paths if paths else sorted(Path(folder).glob(f"*{ENVELOPE_SUFFIX}"))
    return adjudicators, [read_envelope(p, adjudicators) for p in files]
