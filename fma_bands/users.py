"""Accounts: a coordinator and enrolled raters, Argon2id passphrases, sign-in, signing keys.

Every failed sign-in gets the same message whatever went wrong, so the form does not reveal who
is enrolled. Raters get an Ed25519 key pair at enrolment, the private half sealed by their
passphrase (DESIGN 2.6).
"""

import functools
import re
from typing import Literal

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from sqlmodel import Session, func, select

from fma_bands import audit
from fma_bands.errors import FmaBandsError
from fma_bands.keys import generate_keypair, reseal_private_key, unseal_private_key
from fma_bands.store.models import User

SIGN_IN_FAILED = "Sign-in failed: check your name and passphrase."
MIN_PASSPHRASE = 10
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

    @property
    def is_coordinator(self) -> bool:
        return self.role == "coordinator"


class Enrolment(BaseModel):
    """A new account, validated before any row is written."""

    pseudonym: str = Field(min_length=3, max_length=40)
    role: Literal["coordinator", "rater"] = "rater"
    passphrase: str = Field(repr=False)
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

    @field_validator("passphrase")
    @classmethod
    def _passphrase(cls, value: str) -> str:
        if len(value.strip()) < MIN_PASSPHRASE:
            raise ValueError(f"choose a passphrase of at least {MIN_PASSPHRASE} characters")
        return value

    @field_validator("specialty", "jurisdiction")
    @classmethod
    def _text(cls, value: str | None) -> str | None:
        return value.strip() or None if value is not None else None


def public(user: User) -> UserPublic:
    return UserPublic.model_validate(user, from_attributes=True)


def has_users(session: Session) -> bool:
    return session.exec(select(func.count()).select_from(User)).one() > 0


def create_user(session: Session, *, actor: str | None, **fields) -> UserPublic:
    """Enrol a user; raters must give specialty, jurisdiction and years since registration."""
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
    if session.exec(select(User).where(User.pseudonym == enrolment.pseudonym)).first():
        problem = {"pseudonym": f"{enrolment.pseudonym} is already enrolled"}
        raise _refused(problem)
    keys = generate_keypair(enrolment.passphrase) if enrolment.role == "rater" else None
    user = User(
        pseudonym=enrolment.pseudonym,
        role=enrolment.role,
        passphrase_hash=_hasher.hash(enrolment.passphrase),
        specialty=enrolment.specialty,
        jurisdiction=enrolment.jurisdiction,
        years_post_registration=enrolment.years_post_registration,
        public_key=keys.public_key_b64 if keys else None,
        keyid=keys.keyid if keys else None,
        encrypted_private_key=keys.sealed_private_key if keys else None,
    )
    session.add(user)
    session.flush()
    audit.record(
        session,
        kind="user_enrolled",
        actor=actor or enrolment.pseudonym,
        payload={
            "pseudonym": user.pseudonym,
            "role": user.role,
            "specialty": user.specialty,
            "jurisdiction": user.jurisdiction,
            "years_post_registration": user.years_post_registration,
            "keyid": user.keyid,
        },
    )
    return public(user)


def create_first_coordinator(session: Session, *, pseudonym: str, passphrase: str) -> UserPublic:
    """The first-run account; refused once any user exists, so it cannot be used to take over."""
    if has_users(session):
        raise FmaBandsError("the study already has a coordinator; sign in instead")
    return create_user(
        session, actor=None, pseudonym=pseudonym, passphrase=passphrase, role="coordinator"
    )


def sign_in(session: Session, pseudonym: str, passphrase: str) -> UserPublic | None:
    """The user, or None with nothing said about why (the caller shows SIGN_IN_FAILED)."""
    user = session.exec(select(User).where(User.pseudonym == (pseudonym or "").strip())).first()
    ok = _verify(user.passphrase_hash if user else _dummy_hash(), passphrase or "")
    if user is None or not ok:
        audit.record(
            session,
            kind="sign_in_failed",
            actor=None,
            payload={"pseudonym": (pseudonym or "")[:80]},
        )
        return None
    if _hasher.check_needs_rehash(user.passphrase_hash):
        user.passphrase_hash = _hasher.hash(passphrase)
    audit.record(session, kind="sign_in", actor=user.pseudonym, payload={})
    return public(user)


def check_passphrase(session: Session, user_id: int, passphrase: str) -> bool:
    """Re-authentication before signing: the passphrase again, checked against the stored hash."""
    user = session.get(User, user_id)
    return user is not None and _verify(user.passphrase_hash, passphrase or "")


def change_passphrase(session: Session, user_id: int, old: str, new: str) -> None:
    user = session.get(User, user_id)
    if user is None or not _verify(user.passphrase_hash, old or ""):
        raise _refused({"old": "the current passphrase is not right"})
    try:
        Enrolment(pseudonym=user.pseudonym, passphrase=new, role="coordinator")
    except ValidationError:
        message = f"choose a passphrase of at least {MIN_PASSPHRASE} characters"
        raise _refused({"new": message}) from None
    user.passphrase_hash = _hasher.hash(new)
    if user.encrypted_private_key:
        user.encrypted_private_key = reseal_private_key(user.encrypted_private_key, old, new)
    audit.record(session, kind="passphrase_changed", actor=user.pseudonym, payload={})


def unlock_signing_key(session: Session, user_id: int, passphrase: str) -> Ed25519PrivateKey:
    """The rater's Ed25519 private key, for signing; raises WrongPassphrase."""
    user = session.get(User, user_id)
    if user is None or not user.encrypted_private_key:
        raise FmaBandsError("this account has no signing key")
    return unseal_private_key(user.encrypted_private_key, passphrase)


def get_user(session: Session, pseudonym: str) -> UserPublic | None:
    user = session.exec(select(User).where(User.pseudonym == pseudonym)).first()
    return public(user) if user else None


def pseudonyms(session: Session) -> dict[int, str]:
    """Every user's pseudonym by id, in one query (pages and reports never query per row)."""
    return {uid: name for uid, name in session.exec(select(User.id, User.pseudonym)) if uid}


def require_user(session: Session, pseudonym: str) -> UserPublic:
    found = get_user(session, pseudonym)
    if found is None:
        raise FmaBandsError(f"no user named {pseudonym!r} is enrolled", field="pseudonym")
    return found


def list_users(session: Session, role: str | None = None) -> list[UserPublic]:
    query = select(User).order_by(User.role, User.pseudonym)  # type: ignore[arg-type]
    if role:
        query = query.where(User.role == role)
    return [public(u) for u in session.exec(query)]


def _verify(stored_hash: str, passphrase: str) -> bool:
    try:
        return _hasher.verify(stored_hash, passphrase)
    except (VerificationError, InvalidHashError):
        return False


def _summary(problems: dict[str, str]) -> str:
    return "; ".join(f"{field}: {message}" for field, message in problems.items())
