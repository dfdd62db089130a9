"""Raters' keys and their self-signed public records (docs/design.md, Identity, keys and
attestation): a key is made when the rater activates their account (the one in use retired, its
private half erased), the new key signs the rater's public record, and the record is signed again
whenever it changes. adjudicators.yaml is generated from those signed records and is only a
convenience for people.
"""

import os
from datetime import datetime
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sqlmodel import Session, col, select

from fma_bands.core.canonical import canonical_json
from fma_bands.core.files import json_text, write_atomically
from fma_bands.evidence.dsse import IN_TOTO_PAYLOAD_TYPE, STATEMENT_TYPE, sign_envelope
from fma_bands.evidence.envelope import ENVELOPE_SUFFIX, RECORD_TYPE, stamp
from fma_bands.evidence.keys import generate_keypair, unseal_private_key
from fma_bands.evidence.log import read_evidence, record_links
from fma_bands.evidence.roster import ADJUDICATORS_FILE, adjudicators_text, publish_adjudicators
from fma_bands.store.db import PENDING, on_commit, pending_files, write_on_commit
from fma_bands.store.models import SigningKey, User, utcnow
from fma_bands.study import audit


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


def key_history(session: Session, user_id: int) -> list[SigningKey]:
    query = (
        select(SigningKey)
        .where(SigningKey.user_id == user_id)
        .order_by(col(SigningKey.created_at), col(SigningKey.id))
    )
    return list(session.exec(query))


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


def sign_record(
    session: Session,
    *,
    user: User,
    key: SigningKey,
    private_key: Ed25519PrivateKey,
    folder: Path,
    event: str,
    now: datetime | None = None,
) -> Path:
    """Write the rater's public record signed by `key` (audited), and publish adjudicators.yaml."""
    assert user.id is not None
    when = stamp(now or utcnow())
    statement = {
        "_type": STATEMENT_TYPE,
        "subject": [
            {
                "name": f"adjudicator/{user.pseudonym}",
                "digest": {"sha256": key.keyid.removeprefix("sha256:")},
            }
        ],
        "predicateType": RECORD_TYPE,
        "predicate": {
            "record": public_record(user, key),
            "keys": [
                {
                    "keyid": k.keyid,
                    "public_key": k.public_key,
                    "created_at": stamp(k.created_at),
                    "retired_at": stamp(k.retired_at) if k.retired_at else None,
                }
                for k in key_history(session, user.id)
            ],
            "event": event,
            "signed_at": when,
            "records": record_links(folder, pending_files(session)),
        },
    }
    envelope = sign_envelope(
        canonical_json(statement), IN_TOTO_PAYLOAD_TYPE, private_key, key.keyid
    )
    name = f"{user.pseudonym}-{when.replace('-', '').replace(':', '').replace('.', '')}-record"
    path = write_on_commit(session, Path(folder) / f"{name}{ENVELOPE_SUFFIX}", json_text(envelope))
    # adjudicators.yaml follows the signed records, so it is made again once this one is there.
    on_commit(session, lambda: publish_adjudicators(folder))
    audit.record(
        session,
        kind="public_record_signed",
        actor=user.pseudonym,
        payload={"file": path.name, "keyid": key.keyid, "event": event},
    )
    return path


def ensure_record(
    session: Session,
    *,
    user: User,
    key: SigningKey,
    private_key: Ed25519PrivateKey,
    folder: Path,
    now: datetime | None = None,
) -> Path | None:
    """Sign the public record again if the folder's latest signed record is not what the store
    holds now (a commitment recorded since, a record signed before records were self-signed)."""
    signed = read_evidence(folder).adjudicators.get(user.pseudonym)
    if signed is not None and signed.record == public_record(user, key):
        return None
    return sign_record(
        session, user=user, key=key, private_key=private_key, folder=folder, event="update", now=now
    )


# The audit events that say a signed record was written, each naming its file.
SIGNED_EVENTS = ["attestation_signed", "attestation_revoked", "public_record_signed"]


def recover(session: Session, folder: Path) -> list[str]:
    """Finish what a killed process left half done, and say so in the audit log.

    A signed record waits beside its final name until its transaction commits (store/db.py
    write_on_commit). One still waiting at start was either committed (its audit event is in
    the store: the record is put in place) or not (it is removed: nothing was signed). Then
    adjudicators.yaml is made again if it no longer follows the signed records.
    """
    folder = Path(folder)
    if not folder.is_dir():
        return []
    waiting = sorted(folder.glob(f".*{ENVELOPE_SUFFIX}{PENDING}"))
    done: list[str] = []
    if waiting:
        committed = {
            str(e["payload"].get("file"))
            for e in audit.events(session, kinds=SIGNED_EVENTS)
            if isinstance(e["payload"], dict)
        }
        for path in waiting:
            final = path.with_name(path.name[1 : -len(PENDING)])
            if final.name in committed and not final.exists():
                os.replace(path, final)
                kind = "interrupted_write_completed"
            else:
                path.unlink()
                kind = "interrupted_write_discarded"
            audit.record(session, kind=kind, actor=None, payload={"file": final.name})
            done.append(f"{kind}: {final.name}")
    published = folder / ADJUDICATORS_FILE
    expected = adjudicators_text(folder)
    current = published.read_text(encoding="utf-8") if published.is_file() else None
    if current != expected and (
        current is not None or any(folder.glob(f"*-record{ENVELOPE_SUFFIX}"))
    ):
        write_atomically(published, expected)
        audit.record(
            session,
            kind="adjudicators_republished",
            actor=None,
            payload={"file": ADJUDICATORS_FILE},
        )
        done.append(f"adjudicators_republished: {ADJUDICATORS_FILE}")
    return done
