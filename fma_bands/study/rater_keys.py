"""The keys people sign with (docs/trust.md): a rater's or steward's key is made when they
activate their account (the one in use retired, its private half erased), the first coordinator's
when they choose their passphrase (the study's root key). Each private half is sealed under its
holder's passphrase and unsealed only for one signature, each time through the throttled,
audited passphrase check (fma_bands.study.throttle).
"""

from datetime import datetime
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sqlmodel import Session, col, select

from fma_bands.core.errors import FmaBandsError
from fma_bands.evidence.keys import generate_keypair, unseal_private_key
from fma_bands.store.models import SigningKey, User
from fma_bands.study import throttle
from fma_bands.study.ledger import Signer


def public_record(user: User, key: SigningKey) -> dict[str, Any]:
    """The harness's Adjudicator fields plus the key, the identity commitment, and whether the
    passphrase was chosen by someone other than the rater (a demo account)."""
    return {
        "pseudonym": user.pseudonym,
        "specialty": user.specialty,
        "jurisdiction": user.jurisdiction,
        "years_post_registration": user.years_post_registration,
        "anonymous_to_readers": True,
        "identity_commitment": user.identity_commitment,
        "keyid": key.keyid,
        "public_key": key.public_key,
        "demo": user.demo,
    }


def current_keys(session: Session, user_ids: list[int]) -> dict[int, SigningKey]:
    """The key in use of each of these users (one query)."""
    query = select(SigningKey).where(
        col(SigningKey.user_id).in_(user_ids), col(SigningKey.retired_at).is_(None)
    )
    return {key.user_id: key for key in session.exec(query)}


def new_key(
    session: Session, user: User, passphrase: str, now: datetime
) -> tuple[SigningKey, Ed25519PrivateKey]:
    """A new key pair for the user; the one in use (if any) is retired and its private half
    erased, so it can never sign again, while its public half stays for older signatures."""
    assert user.id is not None
    for old in current_keys(session, [user.id]).values():
        old.retired_at = now
        old.encrypted_private_key = ""
    session.flush()
    pair = generate_keypair(passphrase)
    key = SigningKey(
        user_id=user.id,
        keyid=pair.keyid,
        public_key=pair.public_key_b64,
        encrypted_private_key=pair.sealed_private_key,
        created_at=now,
    )
    session.add(key)
    session.flush()
    return key, unseal_private_key(pair.sealed_private_key, passphrase)


def signer_for(
    session: Session, user: User, passphrase: str, *, where: str = "root signing"
) -> Signer:
    """The user's key in use, unsealed with their passphrase for one signature: raises
    WrongPassphrase, or AccessDenied while the account must wait after failed passphrases
    (throttled and audited like a sign-in, as `where`)."""
    assert user.id is not None
    key = current_keys(session, [user.id]).get(user.id)
    if key is None:
        raise FmaBandsError(f"{user.pseudonym} has no signing key: activate the account first")
    pseudonym, keyid, sealed = user.pseudonym, key.keyid, key.encrypted_private_key
    private = throttle.check_passphrase(
        session,
        account=pseudonym,
        known=True,
        where=where,
        check=lambda: unseal_private_key(sealed, passphrase),
    )
    return Signer(pseudonym, keyid, private)
