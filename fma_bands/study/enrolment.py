"""Enrolment (docs/design.md, Identity, keys and attestation): how an account comes to be. The
coordinator enrols a person's public record with a one-time code (and issues a new one on a reset);
the person activates with it, choosing their own passphrase, and a rater gets a new Ed25519 key that
signs their public record.

Only the first-run coordinator, `fma-bands demo` and tests make an account with a passphrase
given here; the demo and test ones are marked as demo accounts.
"""

import base64
import hashlib
import hmac
import re
import secrets
from datetime import datetime, timedelta
from pathlib import Path
from typing import Literal

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from pydantic import BaseModel, Field, ValidationError, field_validator
from sqlmodel import Session, col, select

from fma_bands.core.errors import FmaBandsError, WrongPassphrase
from fma_bands.core.people import UserPublic
from fma_bands.evidence.envelope import ENVELOPE_SUFFIX
from fma_bands.evidence.log import activation_check
from fma_bands.store.models import LogRecord, SigningKey, SignInThrottle, User, utcnow
from fma_bands.study import audit, ledger, throttle
from fma_bands.study.ledger import Signer
from fma_bands.study.rater_keys import new_key, signer_for
from fma_bands.study.state import authorize, study
from fma_bands.study.users import (
    has_coordinator,
    hash_passphrase,
    passphrase_problem,
    public_of,
    refused,
    user_row,
    who_failed,
)

ACTIVATION_FAILED = (
    "Activation failed: check your name and enrolment code. A code works once, within "
    "14 days of being issued; ask the study coordinator for a new one if yours has expired."
)
CODE_BYTES = 20  # 160 random bits
CODE_LIFETIME = timedelta(days=14)
KeyPair = tuple[SigningKey, Ed25519PrivateKey]


class Enrolment(BaseModel):
    """A new account's public part, validated before any row is written."""

    pseudonym: str = Field(min_length=3, max_length=40)
    role: Literal["coordinator", "rater", "steward"] = "rater"
    specialty: str | None = None
    jurisdiction: str | None = None
    years_post_registration: int | None = Field(default=None, ge=0, le=70)

    @field_validator("pseudonym")
    @classmethod
    def _pseudonym(cls, value: str) -> str:
        if not re.fullmatch(r"[a-z0-9][a-z0-9_-]*", value):
            raise ValueError(
                "use lower-case letters, digits, '-' and '_', starting with a letter or digit "
                "(e.g. adjudicator-01); never a real name"
            )
        return value

    @field_validator("specialty", "jurisdiction")
    @classmethod
    def _text(cls, value: str | None) -> str | None:
        return value.strip() or None if value is not None else None


def _check_enrolment(fields: dict) -> Enrolment:
    try:
        enrolment = Enrolment(**fields)
    except ValidationError as exc:
        problems = {str(e["loc"][0]): e["msg"].removeprefix("Value error, ") for e in exc.errors()}
        raise refused(problems) from None
    if enrolment.role == "rater":
        missing = {
            name: "required for a rater"
            for name in ("specialty", "jurisdiction", "years_post_registration")
            if getattr(enrolment, name) is None
        }
        if missing:
            raise refused(missing)
    return enrolment


def _new_user(session: Session, enrolment: Enrolment, **extra) -> User:
    if user_row(session, enrolment.pseudonym):
        raise refused({"pseudonym": f"{enrolment.pseudonym} is already enrolled"})
    user = User(**enrolment.model_dump(), **extra)
    session.add(user)
    session.flush()
    return user


def _audit_enrolled(session: Session, user: User, actor: str | None, key: str | None) -> None:
    audit.record(
        session,
        kind="user_enrolled",
        actor=actor or user.pseudonym,
        payload={
            "pseudonym": user.pseudonym,
            "role": user.role,
            "specialty": user.specialty,
            "jurisdiction": user.jurisdiction,
            "years_post_registration": user.years_post_registration,
            "keyid": key,
            "demo": user.demo,
        },
    )


def _new_signing_key(
    session: Session, user: User, passphrase: str, now: datetime
) -> KeyPair | None:
    """A rater's or steward's new key pair, sealed under their passphrase (a coordinator's is
    made once, as the study's root key)."""
    return new_key(session, user, passphrase, now) if user.role in SIGNERS else None


SIGNERS = ("rater", "steward")
STEWARD_THRESHOLD = 2


def _activation_record(
    session: Session,
    user: User,
    pair: KeyPair,
    proof: str,
    folder: Path | None,
    now: datetime,
) -> None:
    """The new key's first signature: that it is the key of the person the root enrolled, with
    the proof only the holder of their enrolment code can give."""
    key, private_key = pair
    enrolment = _latest_enrolment(session, user.pseudonym)
    ledger.append(
        session,
        "activation",
        signer=Signer(user.pseudonym, key.keyid, private_key),
        subject=[
            {
                "name": f"key/{user.pseudonym}",
                "digest": {"sha256": key.keyid.removeprefix("sha256:")},
            }
        ],
        body={
            "activation": {
                "pseudonym": user.pseudonym,
                "enrolment": enrolment,
                "proof": proof,
                "keyid": key.keyid,
                "public_key": key.public_key,
                "demo": user.demo,
            }
        },
        about=user.pseudonym,
        folder=folder,
        now=now,
    )


def _latest_enrolment(session: Session, pseudonym: str) -> str:
    query = (
        select(LogRecord.digest)
        .where(LogRecord.kind == "enrolment", LogRecord.about == pseudonym)
        .order_by(col(LogRecord.sequence).desc())
        .limit(1)
    )
    found = session.exec(query).first()
    if found is None:
        raise FmaBandsError(f"{pseudonym} has no root-signed enrolment in the study's log")
    return found


def root_signer(session: Session, actor: UserPublic, passphrase: str) -> Signer:
    """The actor's root key, unsealed with their passphrase: the study's first coordinator's, or
    an activated steward's. Every change to the roster and the policy is signed with one."""
    user = session.get(User, actor.id)
    assert user is not None
    holders = root_holders(session)
    if user.pseudonym not in holders:
        named = ", ".join(holders) or "nobody yet"
        raise FmaBandsError(
            f"{user.pseudonym} holds no root key of the study (held by {named}): the roster "
            "and the policy are signed with one"
        )
    try:
        return signer_for(session, user, passphrase)
    except WrongPassphrase:
        raise WrongPassphrase("that passphrase is not right; nothing was signed") from None


def root_holders(session: Session) -> list[str]:
    """The pseudonyms whose keys are root keys now: the first coordinator and each activated
    steward."""
    query = select(User).where(col(User.role).in_(["coordinator", "steward"]))
    holders = []
    for user in session.exec(query):
        assert user.id is not None
        if (
            user.role == "coordinator"
            and not session.exec(select(SigningKey.id).where(SigningKey.user_id == user.id)).first()
        ):
            continue
        if user.role == "steward" and user.activated_at is None:
            continue
        holders.append(user.pseudonym)
    return sorted(holders)


def _enrolment_record(
    session: Session,
    user: User,
    root: Signer,
    proof: str,
    folder: Path | None,
    now: datetime,
    reset: bool = False,
) -> None:
    """The root-signed enrolment of `user` (a reset is a new one): their public record, and
    the hash of the proof their activation must give."""
    enrolment: dict[str, object] = {
        "pseudonym": user.pseudonym,
        "role": user.role,
        "specialty": user.specialty,
        "jurisdiction": user.jurisdiction,
        "years_post_registration": user.years_post_registration,
        "anonymous_to_readers": True,
        "activation_check": activation_check(proof),
    }
    if user.role == "steward":
        enrolment["threshold"] = STEWARD_THRESHOLD
    ledger.append(
        session,
        "enrolment",
        signer=root,
        subject=[
            {
                "name": f"roster/{user.pseudonym}",
                "digest": {"sha256": activation_check(proof).removeprefix("sha256:")},
            }
        ],
        body={"enrolment": enrolment, "reset": reset},
        about=user.pseudonym,
        folder=folder,
        now=now,
    )


# Enrolment codes ----------------------------------------------------------------------------


def _code_digest(pseudonym: str, code: str) -> str:
    normalised = re.sub(r"[^A-Z2-7]", "", code.upper())
    return hashlib.sha256(
        f"fma-bands enrolment code\0{pseudonym}\0{normalised}".encode()
    ).hexdigest()


def _issue_code(user: User, now: datetime) -> str:
    raw = base64.b32encode(secrets.token_bytes(CODE_BYTES)).decode()
    code = "-".join(raw[i : i + 4] for i in range(0, len(raw), 4))
    user.enrolment_code_hash = _code_digest(user.pseudonym, code)
    user.enrolment_code_expires_at = now + CODE_LIFETIME
    return code


def _proof(session: Session, pseudonym: str, code: str) -> str:
    """What an activation reveals: derived from the enrolment code, so only its holder can
    give it, and unlike the code's own hash (kept in the store) it is published."""
    normalised = re.sub(r"[^A-Z2-7]", "", code.upper())
    study_id = study(session).study_id
    text = f"fma-bands activation proof\0{study_id}\0{pseudonym}\0{normalised}"
    return hashlib.sha256(text.encode()).hexdigest()


def _code_holds(user: User, code: str, now: datetime) -> bool:
    """Whether `code` is the user's enrolment code and has not expired."""
    return (
        user.enrolment_code_hash is not None
        and user.enrolment_code_expires_at is not None
        and user.enrolment_code_expires_at > now
        and hmac.compare_digest(user.enrolment_code_hash, _code_digest(user.pseudonym, code))
    )


def enrol(
    session: Session,
    *,
    actor: UserPublic,
    passphrase: str,
    folder: Path | None = None,
    now: datetime | None = None,
    **fields,
) -> tuple[UserPublic, str]:
    """Enrol a person's public record and return it with their one-time enrolment code, to be
    shown once: the person activates the account with it and chooses their own passphrase. A
    rater's or steward's enrolment is a record of the log signed with the actor's root key
    (unsealed with `passphrase`)."""
    authorize(session, actor, "enrol")
    enrolment = _check_enrolment(fields)
    now = now or utcnow()
    root = root_signer(session, actor, passphrase) if enrolment.role in SIGNERS else None
    user = _new_user(session, enrolment)
    code = _issue_code(user, now)
    _audit_enrolled(session, user, actor.pseudonym, None)
    if root is not None:
        _enrolment_record(session, user, root, _proof(session, user.pseudonym, code), folder, now)
    return public_of(session, user), code


def reset(
    session: Session,
    *,
    actor: UserPublic,
    pseudonym: str,
    passphrase: str,
    folder: Path | None = None,
    now: datetime | None = None,
) -> str:
    """A new enrolment code for someone who lost their passphrase (audited, and for a rater or
    steward a new root-signed enrolment). Their passphrase stops working at once; their next
    activation makes a new key, and the old one stops counting where the new enrolment takes
    effect."""
    authorize(session, actor, "reset")
    user = user_row(session, pseudonym)
    if user is None:
        raise FmaBandsError(f"no user named {pseudonym!r} is enrolled", field="pseudonym")
    now = now or utcnow()
    root = root_signer(session, actor, passphrase) if user.role in SIGNERS else None
    if user.role == "coordinator" and user.pseudonym in root_holders(session):
        raise FmaBandsError(
            f"{pseudonym} holds the study's root key, which no reset replaces: they change "
            "their passphrase instead (the key stays, resealed)"
        )
    user.passphrase_hash = None
    code = _issue_code(user, now)
    audit.record(
        session, kind="account_reset", actor=actor.pseudonym, payload={"pseudonym": pseudonym}
    )
    if root is not None:
        proof = _proof(session, pseudonym, code)
        _enrolment_record(session, user, root, proof, folder, now, reset=True)
    return code


# Activation ---------------------------------------------------------------------------------


def activate(
    session: Session,
    *,
    pseudonym: str,
    code: str,
    passphrase: str,
    folder: Path,
    now: datetime | None = None,
) -> UserPublic | None:
    """The person's first sign-in: the enrolment code, then the passphrase they choose. A rater
    gets a new key pair here, and the new key signs their public record into `folder`.

    None when the name or code is not right (the caller shows ACTIVATION_FAILED and commits, so
    the failure is counted and audited); throttled like a sign-in."""
    now = now or utcnow()
    if problem := passphrase_problem(passphrase):
        raise refused({"passphrase": problem})
    user = user_row(session, pseudonym)
    held = throttle.rows(session, [throttle.account_key(session, pseudonym)])
    valid = user is not None and _code_holds(user, code, now)
    too_soon = throttle.blocked(held, now)
    if too_soon or not valid or user is None:
        _fail_activation(session, held, too_soon, user, pseudonym, now)
        return None
    throttle.clear(held)
    _choose_passphrase(user, passphrase, now)
    pair = _new_signing_key(session, user, passphrase, now)
    audit.record(
        session,
        kind="account_activated",
        actor=user.pseudonym,
        payload={"pseudonym": user.pseudonym, "keyid": pair[0].keyid if pair else None},
    )
    if pair is not None:
        proof = _proof(session, user.pseudonym, code)
        _activation_record(session, user, pair, proof, folder, now)
    return public_of(session, user)


def _fail_activation(
    session: Session,
    held: list[SignInThrottle],
    too_soon: bool,
    user: User | None,
    pseudonym: str,
    now: datetime,
) -> None:
    if not too_soon:  # an attempt refused unchecked does not lengthen the wait
        throttle.fail(held, now)
    audit.record(
        session,
        kind="activation_failed",
        actor=None,
        payload=who_failed(session, user, pseudonym),
    )


def _choose_passphrase(user: User, passphrase: str, now: datetime) -> None:
    """The account is the person's own from now: their passphrase, no code, no demo mark."""
    user.passphrase_hash = hash_passphrase(passphrase)
    user.enrolment_code_hash = user.enrolment_code_expires_at = None
    user.activated_at = now
    user.demo = False


# Accounts made with a known passphrase ------------------------------------------------------


def create_first_coordinator(
    session: Session,
    *,
    pseudonym: str,
    passphrase: str,
    folder: Path | None = None,
    demo: bool = False,
) -> UserPublic:
    """The first-run account; refused once a coordinator exists, so it cannot be used to take
    over. The coordinator chooses their own passphrase here, and it seals the study's root key,
    whose first signature is the root record: the study's id, its root key and threshold."""
    if has_coordinator(session):
        raise FmaBandsError("the study already has a coordinator; sign in instead")
    if problem := passphrase_problem(passphrase):
        raise refused({"passphrase": problem})
    if folder is not None and any(Path(folder).glob(f"*{ENVELOPE_SUFFIX}")):
        raise FmaBandsError(
            f"the attestations folder {folder} already holds another study's signed records: "
            "a new study needs a folder of its own"
        )
    enrolment = _check_enrolment({"pseudonym": pseudonym, "role": "coordinator"})
    now = utcnow()
    user = _new_user(
        session,
        enrolment,
        passphrase_hash=hash_passphrase(passphrase),
        activated_at=now,
        demo=demo,
    )
    key, private_key = new_key(session, user, passphrase, now)
    _audit_enrolled(session, user, None, key.keyid)
    study_id = ledger.new_study_id(session, key.keyid)
    ledger.append(
        session,
        "root",
        signer=Signer(user.pseudonym, key.keyid, private_key),
        subject=[{"name": f"study/{study_id}", "digest": {"sha256": key.keyid[7:]}}],
        body={
            "root": {
                "keys": [
                    {"keyid": key.keyid, "public_key": key.public_key, "holder": user.pseudonym}
                ],
                "threshold": 1,
            }
        },
        about=user.pseudonym,
        folder=folder,
        now=now,
    )
    return public_of(session, user)


def create_user(
    session: Session,
    *,
    actor: str | None,
    passphrase: str,
    folder: Path | None = None,
    root_passphrase: str | None = None,
    **fields,
) -> UserPublic:
    """A ready account with a passphrase chosen by whoever calls this: `fma-bands demo` and
    tests only, never a page or a coordinator's command. It is marked as a demo account, and a
    rater's activation record says so, because someone other than the rater knew the
    passphrase. The study's first coordinator is made as create_first_coordinator makes them;
    a rater or steward is enrolled with the root key, unsealed with `root_passphrase`."""
    if problem := passphrase_problem(passphrase):
        raise refused({"passphrase": problem})
    enrolment = _check_enrolment(fields)
    if enrolment.role == "coordinator" and not has_coordinator(session):
        return create_first_coordinator(
            session, pseudonym=enrolment.pseudonym, passphrase=passphrase, folder=folder, demo=True
        )
    root = None
    if enrolment.role in SIGNERS:
        if root_passphrase is None:
            raise FmaBandsError(
                "a rater's enrolment is signed with the root key: give its passphrase"
            )
        holder = user_row(session, root_holders(session)[0])
        assert holder is not None
        root = root_signer(session, public_of(session, holder), root_passphrase)
    now = utcnow()
    user = _new_user(
        session, enrolment, passphrase_hash=hash_passphrase(passphrase), activated_at=now, demo=True
    )
    code = _issue_code(user, now)
    user.enrolment_code_hash = user.enrolment_code_expires_at = None
    pair = _new_signing_key(session, user, passphrase, now)
    _audit_enrolled(session, user, actor, pair[0].keyid if pair else None)
    if root is not None and pair is not None:
        proof = _proof(session, user.pseudonym, code)
        _enrolment_record(session, user, root, proof, folder, now)
        _activation_record(session, user, pair, proof, folder, now)
    return public_of(session, user)
