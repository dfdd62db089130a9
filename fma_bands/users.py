"""Accounts (DESIGN 2.6): enrolment with a one-time code, activation where the person chooses
their own passphrase and (a rater) gets a new Ed25519 key, passphrase changes, resets, and a
sign-in that is throttled and says the same thing whatever went wrong.

The coordinator never sees or sets another person's passphrase; only `fma-bands demo` and tests
make ready accounts with a known passphrase, and those are marked as demo accounts.
"""

import base64
import functools
import hashlib
import hmac
import re
import secrets
from datetime import datetime, timedelta
from pathlib import Path
from typing import Literal

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from sqlmodel import Session, col, func, select

from fma_bands import audit, throttle
from fma_bands.errors import FmaBandsError
from fma_bands.keys import reseal_private_key, unseal_private_key
from fma_bands.records import current_keys, new_key, sign_record
from fma_bands.store.models import SigningKey, User, utcnow
from fma_bands.study import authorize

SIGN_IN_FAILED = "Sign-in failed: check your name and passphrase."
ACTIVATION_FAILED = (
    "Activation failed: check your name and enrolment code. A code works once, within "
    "14 days of being issued; ask the study coordinator for a new one if yours has expired."
)
MIN_PASSPHRASE, MAX_PASSPHRASE = 12, 1024
CODE_BYTES = 20  # 160 random bits
CODE_LIFETIME = timedelta(days=14)
_hasher = PasswordHasher()


@functools.cache
def _dummy_hash() -> str:
    # Verified against when the name is unknown, so a failed sign-in takes the same time either
    # way. Made on first use: an Argon2 hash costs every process that imports this module.
    return _hasher.hash("fma-bands: no such user")


def _refused(problems: dict[str, str]) -> FmaBandsError:
    return FmaBandsError(_summary(problems), fields=problems)


class UserPublic(BaseModel):
    """What pages and the CLI may hold about a user: never hashes, keys or private identity."""

    model_config = ConfigDict(frozen=True)

    id: int
    pseudonym: str
    role: Literal["coordinator", "rater"]
    specialty: str | None = None
    jurisdiction: str | None = None
    years_post_registration: int | None = None
    keyid: str | None = None
    public_key: str | None = None
    active: bool = True  # False until activated with an enrolment code (and after a reset)
    demo: bool = False
    code_expires_at: datetime | None = None

    @property
    def is_coordinator(self) -> bool:
        return self.role == "coordinator"


class Enrolment(BaseModel):
    """A new account's public part, validated before any row is written."""

    pseudonym: str = Field(min_length=3, max_length=40)
    role: Literal["coordinator", "rater"] = "rater"
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


def passphrase_problem(passphrase: str | None) -> str | None:
    """Why a passphrase cannot be chosen, or None: 12 to 1024 characters (DESIGN 2.6)."""
    value = passphrase or ""
    if len(value.strip()) < MIN_PASSPHRASE:
        return f"choose a passphrase of at least {MIN_PASSPHRASE} characters"
    if len(value) > MAX_PASSPHRASE:
        return f"a passphrase has at most {MAX_PASSPHRASE} characters"
    return None


# Reading accounts -------------------------------------------------------------------------------


def public(user: User, key: SigningKey | None = None) -> UserPublic:
    assert user.id is not None
    return UserPublic(
        id=user.id,
        pseudonym=user.pseudonym,
        role=user.role,  # type: ignore[arg-type]
        specialty=user.specialty,
        jurisdiction=user.jurisdiction,
        years_post_registration=user.years_post_registration,
        keyid=key.keyid if key else None,
        public_key=key.public_key if key else None,
        active=user.passphrase_hash is not None,
        demo=user.demo,
        code_expires_at=user.enrolment_code_expires_at if user.enrolment_code_hash else None,
    )


def _public(session: Session, user: User) -> UserPublic:
    assert user.id is not None
    return public(user, current_keys(session, [user.id]).get(user.id))


def has_users(session: Session) -> bool:
    return session.exec(select(func.count()).select_from(User)).one() > 0


def has_coordinator(session: Session) -> bool:
    query = select(func.count()).select_from(User).where(User.role == "coordinator")
    return session.exec(query).one() > 0


def _row(session: Session, pseudonym: str) -> User | None:
    return session.exec(select(User).where(User.pseudonym == (pseudonym or "").strip())).first()


def get_user(session: Session, pseudonym: str) -> UserPublic | None:
    user = _row(session, pseudonym)
    return _public(session, user) if user else None


def require_user(session: Session, pseudonym: str) -> UserPublic:
    found = get_user(session, pseudonym)
    if found is None:
        raise FmaBandsError(f"no user named {pseudonym!r} is enrolled", field="pseudonym")
    return found


def pseudonyms(session: Session) -> dict[int, str]:
    """Every user's pseudonym by id, in one query (pages and reports never query per row)."""
    return {uid: name for uid, name in session.exec(select(User.id, User.pseudonym)) if uid}


def list_users(session: Session, role: str | None = None) -> list[UserPublic]:
    query = select(User).order_by(col(User.role), col(User.pseudonym))
    if role:
        query = query.where(User.role == role)
    users = list(session.exec(query))
    keys = current_keys(session, [u.id for u in users if u.id is not None])
    return [public(u, keys.get(u.id)) for u in users if u.id is not None]


def roster(users: list[UserPublic]) -> list[dict[str, object]]:
    """Users as the Raters page lists them: their public record and the state of their account."""
    return [
        {
            "pseudonym": u.pseudonym,
            "specialty": u.specialty,
            "jurisdiction": u.jurisdiction,
            "years since registration": u.years_post_registration,
            "account": ("active" if u.active else "awaiting activation")
            + (" (demo)" if u.demo else ""),
            "signing key": u.keyid,
        }
        for u in users
    ]


# Enrolment and activation -------------------------------------------------------------------


def _check_enrolment(fields: dict) -> Enrolment:
    try:
        enrolment = Enrolment(**fields)
    except ValidationError as exc:
        problems = {str(e["loc"][0]): e["msg"].removeprefix("Value error, ") for e in exc.errors()}
        raise _refused(problems) from None
    if enrolment.role == "rater":
        missing = {
            name: "required for a rater"
            for name in ("specialty", "jurisdiction", "years_post_registration")
            if getattr(enrolment, name) is None
        }
        if missing:
            raise _refused(missing)
    return enrolment


def _new_user(session: Session, enrolment: Enrolment, **extra) -> User:
    if _row(session, enrolment.pseudonym):
        raise _refused({"pseudonym": f"{enrolment.pseudonym} is already enrolled"})
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


def enrol(
    session: Session, *, actor: UserPublic, now: datetime | None = None, **fields
) -> tuple[UserPublic, str]:
    """Enrol a person's public record and return it with their one-time enrolment code, to be
    shown once: the person activates the account with it and chooses their own passphrase."""
    authorize(session, actor, "enrol")
    enrolment = _check_enrolment(fields)
    user = _new_user(session, enrolment)
    code = _issue_code(user, now or utcnow())
    _audit_enrolled(session, user, actor.pseudonym, None)
    return _public(session, user), code


def reset(
    session: Session, *, actor: UserPublic, pseudonym: str, now: datetime | None = None
) -> str:
    """A new enrolment code for someone who lost their passphrase (audited). Their passphrase
    stops working at once; their next activation makes a new key and retires the old one."""
    authorize(session, actor, "reset")
    user = _row(session, pseudonym)
    if user is None:
        raise FmaBandsError(f"no user named {pseudonym!r} is enrolled", field="pseudonym")
    user.passphrase_hash = None
    code = _issue_code(user, now or utcnow())
    audit.record(
        session, kind="account_reset", actor=actor.pseudonym, payload={"pseudonym": pseudonym}
    )
    return code


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
        raise _refused({"passphrase": problem})
    user = _row(session, pseudonym)
    held = throttle.rows(session, [throttle.account_key(session, pseudonym)])
    valid = (
        user is not None
        and user.enrolment_code_hash is not None
        and user.enrolment_code_expires_at is not None
        and user.enrolment_code_expires_at > now
        and hmac.compare_digest(user.enrolment_code_hash, _code_digest(user.pseudonym, code))
    )
    too_soon = throttle.blocked(held, now)
    if too_soon or not valid or user is None:
        if not too_soon:  # an attempt refused unchecked does not lengthen the wait
            throttle.fail(held, now)
        audit.record(
            session,
            kind="activation_failed",
            actor=None,
            payload=_who_failed(session, user, pseudonym),
        )
        return None
    throttle.clear(held)
    user.passphrase_hash = _hasher.hash(passphrase)
    user.enrolment_code_hash = user.enrolment_code_expires_at = None
    user.activated_at = now
    user.demo = False
    key = None
    if user.role == "rater":
        key, private_key = new_key(session, user, passphrase, now)
    audit.record(
        session,
        kind="account_activated",
        actor=user.pseudonym,
        payload={"pseudonym": user.pseudonym, "keyid": key.keyid if key else None},
    )
    if key is not None:
        sign_record(
            session,
            user=user,
            key=key,
            private_key=private_key,
            folder=folder,
            event="activation",
            now=now,
        )
    return _public(session, user)


def create_first_coordinator(session: Session, *, pseudonym: str, passphrase: str) -> UserPublic:
    """The first-run account; refused once a coordinator exists, so it cannot be used to take
    over. The coordinator chooses their own passphrase here."""
    if has_coordinator(session):
        raise FmaBandsError("the study already has a coordinator; sign in instead")
    if problem := passphrase_problem(passphrase):
        raise _refused({"passphrase": problem})
    enrolment = _check_enrolment({"pseudonym": pseudonym, "role": "coordinator"})
    now = utcnow()
    user = _new_user(session, enrolment, passphrase_hash=_hasher.hash(passphrase), activated_at=now)
    _audit_enrolled(session, user, None, None)
    return _public(session, user)


def create_user(
    session: Session,
    *,
    actor: str | None,
    passphrase: str,
    folder: Path | None = None,
    **fields,
) -> UserPublic:
    """A ready account with a passphrase chosen by whoever calls this: `fma-bands demo` and
    tests only, never a page or a coordinator's command. It is marked as a demo account, and a
    rater's public record (signed into `folder` when given, else at their first signature)
    says so, because someone other than the rater knew the passphrase."""
    if problem := passphrase_problem(passphrase):
        raise _refused({"passphrase": problem})
    enrolment = _check_enrolment(fields)
    now = utcnow()
    user = _new_user(
        session, enrolment, passphrase_hash=_hasher.hash(passphrase), activated_at=now, demo=True
    )
    key = None
    if user.role == "rater":
        key, private_key = new_key(session, user, passphrase, now)
    _audit_enrolled(session, user, actor, key.keyid if key else None)
    if key is not None and folder is not None:
        sign_record(
            session,
            user=user,
            key=key,
            private_key=private_key,
            folder=folder,
            event="activation",
            now=now,
        )
    return _public(session, user)


# Signing in ---------------------------------------------------------------------------------


def _who_failed(session: Session, user: User | None, typed: str) -> dict[str, str]:
    if user is not None:
        return {"pseudonym": user.pseudonym}
    return {"unknown_name_hmac": throttle.name_hash(session, typed or "")}


def sign_in(
    session: Session,
    pseudonym: str,
    passphrase: str,
    *,
    client: str | None = None,
    now: datetime | None = None,
) -> UserPublic | None:
    """The user, or None with nothing said about why (the caller shows SIGN_IN_FAILED).

    Failures are throttled per account and per client (a browser session): after a few, each
    attempt must wait longer, and one made too soon fails whatever passphrase it carries."""
    now = now or utcnow()
    keys = [throttle.account_key(session, pseudonym)] + ([f"client:{client}"] if client else [])
    held = throttle.rows(session, keys)
    user = _row(session, pseudonym)
    too_soon = throttle.blocked(held, now)
    stored = user.passphrase_hash if user is not None else None
    ok = _verify(stored or _dummy_hash(), passphrase or "") and stored is not None
    if too_soon or not ok or user is None:
        if not too_soon:  # an attempt refused unchecked does not lengthen the wait
            throttle.fail(held, now)
        payload: dict = _who_failed(session, user, pseudonym)
        audit.record(
            session,
            kind="sign_in_failed",
            actor=None,
            payload={**payload, "throttled": too_soon, "via": "browser" if client else "cli"},
        )
        return None
    throttle.clear(held)
    if stored is not None and _hasher.check_needs_rehash(stored):
        user.passphrase_hash = _hasher.hash(passphrase)
    audit.record(session, kind="sign_in", actor=user.pseudonym, payload={})
    return _public(session, user)


def change_passphrase(session: Session, user_id: int, old: str, new: str) -> None:
    """The person's own passphrase, changed; a rater's key stays the same, resealed (audited)."""
    user = session.get(User, user_id)
    if user is None or not _verify(user.passphrase_hash or "", old or ""):
        raise _refused({"old": "the current passphrase is not right"})
    if problem := passphrase_problem(new):
        raise _refused({"new": problem})
    user.passphrase_hash = _hasher.hash(new)
    for key in current_keys(session, [user_id]).values():
        key.encrypted_private_key = reseal_private_key(key.encrypted_private_key, old, new)
    audit.record(session, kind="passphrase_changed", actor=user.pseudonym, payload={})


def unlock_signing_key(
    session: Session, user_id: int, passphrase: str
) -> tuple[SigningKey, Ed25519PrivateKey]:
    """The rater's key in use and its private half, for signing; raises WrongPassphrase."""
    key = current_keys(session, [user_id]).get(user_id)
    if key is None:
        raise FmaBandsError("this account has no signing key: activate it first")
    return key, unseal_private_key(key.encrypted_private_key, passphrase)


def _verify(stored_hash: str, passphrase: str) -> bool:
    try:
        return _hasher.verify(stored_hash, passphrase)
    except (VerificationError, InvalidHashError):
        return False


def _summary(problems: dict[str, str]) -> str:
    return "; ".join(f"{field}: {message}" for field, message in problems.items())
