"""Accounts (docs/design.md, Identity, keys and attestation): reading users and their public part, a
sign-in that says the same thing whatever went wrong, passphrase changes, and unlocking a rater's
key; each passphrase check throttled and audited (fma_bands.study.throttle). How an account is
made (enrolment codes, activation, resets) is fma_bands.study.enrolment.

The coordinator never sees or sets another person's passphrase.
"""

import functools
from datetime import datetime

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sqlmodel import Session, col, func, select

from fma_bands.core.errors import FmaBandsError, WrongPassphrase
from fma_bands.core.people import UserPublic
from fma_bands.evidence.keys import reseal_private_key, unseal_private_key
from fma_bands.store.models import SigningKey, User
from fma_bands.study import audit, throttle
from fma_bands.study.rater_keys import current_keys

SIGN_IN_FAILED = "Sign-in failed: check your name and passphrase."
MIN_PASSPHRASE, MAX_PASSPHRASE = 12, 1024
_hasher = PasswordHasher()


@functools.cache
def _dummy_hash() -> str:
    # Verified against when the name is unknown, so a failed sign-in takes the same time either
    # way. Made on first use: an Argon2 hash costs every process that imports this module.
    return _hasher.hash("fma-bands: no such user")


def refused(problems: dict[str, str]) -> FmaBandsError:
    """The one error for a form's problems: each field's message, and all of them in one line."""
    return FmaBandsError(_summary(problems), fields=problems)


def passphrase_problem(passphrase: str | None) -> str | None:
    """Why a passphrase cannot be chosen, or None: 12 to 1024 characters."""
    value = passphrase or ""
    if len(value.strip()) < MIN_PASSPHRASE:
        return f"choose a passphrase of at least {MIN_PASSPHRASE} characters"
    if len(value) > MAX_PASSPHRASE:
        return f"a passphrase has at most {MAX_PASSPHRASE} characters"
    return None


def new_passphrase_problem(passphrase: str | None, again: str | None) -> str | None:
    """Why a new passphrase typed twice cannot be chosen, or None: the one check behind every
    form and command that sets a passphrase."""
    if (passphrase or "") != (again or ""):
        return "the two passphrases differ"
    return passphrase_problem(passphrase)


def hash_passphrase(passphrase: str) -> str:
    """The Argon2 hash that is all the store keeps of a passphrase."""
    return _hasher.hash(passphrase)


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


def public_of(session: Session, user: User) -> UserPublic:
    """The user's public part, with their key in use."""
    assert user.id is not None
    return public(user, current_keys(session, [user.id]).get(user.id))


def has_users(session: Session) -> bool:
    return session.exec(select(func.count()).select_from(User)).one() > 0


def has_coordinator(session: Session) -> bool:
    query = select(func.count()).select_from(User).where(User.role == "coordinator")
    return session.exec(query).one() > 0


def user_row(session: Session, pseudonym: str) -> User | None:
    """The user's row (never handed to pages or the CLI), or None."""
    return session.exec(select(User).where(User.pseudonym == (pseudonym or "").strip())).first()


def get_user(session: Session, pseudonym: str) -> UserPublic | None:
    user = user_row(session, pseudonym)
    return public_of(session, user) if user else None


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
            "signing key": u.keyid or "none yet (made when they activate)",
        }
        for u in users
    ]


# Signing in ---------------------------------------------------------------------------------


def who_failed(session: Session, user: User | None, typed: str) -> dict[str, str]:
    """Whose sign-in or activation failed, for the audit: an unknown name only as a keyed hash."""
    if user is not None:
        return {"pseudonym": user.pseudonym}
    return {"unknown_name_hmac": throttle.name_hash(session, typed or "")}


def sign_in(
    session: Session,
    pseudonym: str,
    passphrase: str,
    *,
    client: str | None = None,
    where: str = "sign-in",
    now: datetime | None = None,
) -> UserPublic | None:
    """The user, or None with nothing said about why (the caller shows SIGN_IN_FAILED).

    Failures are throttled per account and per client (a browser session) and audited
    (throttle.check_passphrase): after a few, each attempt must wait longer, and one made too
    soon is refused (AccessDenied, saying how long to wait) whatever passphrase it carries."""
    user = user_row(session, pseudonym)
    stored = user.passphrase_hash if user is not None else None

    def check() -> None:
        # An unknown name is checked against a dummy hash, so it takes as long as a known one.
        if not _verify(stored or _dummy_hash(), passphrase or "") or stored is None:
            raise WrongPassphrase(SIGN_IN_FAILED)

    try:
        throttle.check_passphrase(
            session,
            account=pseudonym or "",
            known=user is not None,
            where=where,
            check=check,
            client=client,
            now=now,
        )
    except WrongPassphrase:
        return None
    assert user is not None and stored is not None
    if _hasher.check_needs_rehash(stored):
        user.passphrase_hash = hash_passphrase(passphrase)
    # Where: a browser's sign-in, or a command's --as (each command signs in once).
    audit.record(session, kind="sign_in", actor=user.pseudonym, payload={"where": where})
    return public_of(session, user)


def change_passphrase(
    session: Session, user_id: int, old: str, new: str, *, now: datetime | None = None
) -> None:
    """The person's own passphrase, changed; a rater's key stays the same, resealed (audited).
    The current passphrase is checked like any other (throttled, a failure audited)."""
    user = session.get(User, user_id)
    if user is None:
        raise refused({"old": "the current passphrase is not right"})
    if problem := passphrase_problem(new):
        raise refused({"new": problem})
    stored = user.passphrase_hash or ""

    def check() -> None:
        if not _verify(stored, old or ""):
            raise WrongPassphrase("the current passphrase is not right")

    try:
        throttle.check_passphrase(
            session,
            account=user.pseudonym,
            known=True,
            where="passphrase change",
            check=check,
            now=now,
        )
    except WrongPassphrase as exc:
        raise refused({"old": exc.message}) from None
    user.passphrase_hash = hash_passphrase(new)
    for key in current_keys(session, [user_id]).values():
        key.encrypted_private_key = reseal_private_key(key.encrypted_private_key, old, new)
    audit.record(session, kind="passphrase_changed", actor=user.pseudonym, payload={})


def unlock_signing_key(
    session: Session, user_id: int, passphrase: str, *, now: datetime | None = None
) -> tuple[SigningKey, Ed25519PrivateKey]:
    """The rater's key in use and its private half, for signing; raises WrongPassphrase, or
    AccessDenied while the account must wait after failed passphrases (throttled and audited
    like a sign-in)."""
    user = session.get(User, user_id)
    key = current_keys(session, [user_id]).get(user_id)
    if user is None or key is None:
        raise FmaBandsError("this account has no signing key: activate it first")
    sealed = key.encrypted_private_key
    private = throttle.check_passphrase(
        session,
        account=user.pseudonym,
        known=True,
        where="signing",
        check=lambda: unseal_private_key(sealed, passphrase),
        now=now,
    )
    return key, private


def _verify(stored_hash: str, passphrase: str) -> bool:
    try:
        return _hasher.verify(stored_hash, passphrase)
    except (VerificationError, InvalidHashError):
        return False


def _summary(problems: dict[str, str]) -> str:
    return "; ".join(f"{field}: {message}" for field, message in problems.items())
