"""Raters' private identities (docs/design.md, Identity, keys and attestation): sealed at rest under
the coordinator's key file, published only as a salted SHA-256 commitment that an editor shown the
record can check.
"""

import base64
import binascii
import hashlib
import hmac
import json
import secrets
from pathlib import Path
from typing import Any

import yaml
from cryptography.exceptions import InvalidTag
from sqlmodel import Session, select

from fma_bands.core.canonical import canonical_json
from fma_bands.core.errors import FmaBandsError
from fma_bands.core.files import control_character, read_bounded, write_atomically
from fma_bands.core.people import UserPublic
from fma_bands.core.protocol import IDENTITY_FIELDS
from fma_bands.evidence.keys import new_seal_key, seal, unseal
from fma_bands.store.models import User
from fma_bands.study import audit, ledger
from fma_bands.study.enrolment import root_signer
from fma_bands.study.state import authorize


def identity_commitment(private_record: dict, salt: bytes | None = None) -> tuple[str, str]:
    """('sha256:...', salt hex) of the record: binding, and hiding thanks to the 32-byte salt."""
    salt = secrets.token_bytes(32) if salt is None else salt
    digest = hashlib.sha256(salt + canonical_json(private_record)).hexdigest()
    return f"sha256:{digest}", salt.hex()


def check_identity_commitment(private_record: dict, salt_hex: str, commitment: str) -> bool:
    try:
        salt = bytes.fromhex(salt_hex)
    except (ValueError, TypeError):
        raise FmaBandsError("the identity commitment's salt is not hexadecimal") from None
    expected, _ = identity_commitment(private_record, salt)
    return hmac.compare_digest(expected.encode(), str(commitment).encode())


def check_identity(data: Any, source: str) -> dict[str, str]:
    """The record's fields as text, each given, none unknown; a value that is not text (a
    mapping, a list, a number that would lose its leading zeros) or that holds a control
    character is refused under its field."""
    if not isinstance(data, dict):
        raise FmaBandsError(f"expected a mapping of {', '.join(IDENTITY_FIELDS)}", file=source)
    missing = [k for k in IDENTITY_FIELDS if not str(data.get(k) or "").strip()]
    unknown = sorted(map(str, set(data) - set(IDENTITY_FIELDS)))
    wrong = {}
    for key in set(IDENTITY_FIELDS) - set(missing):
        if not isinstance(data[key], str):
            wrong[key] = f"must be text (in quotes if need be), not {type(data[key]).__name__}"
        elif (found := control_character(data[key])) is not None:
            wrong[key] = f"holds {found}: remove it"
    problems = {k: "required" for k in missing} | {k: "not an identity field" for k in unknown}
    problems |= wrong
    if problems:
        parts = []
        if missing:
            parts.append(f"missing {', '.join(missing)}")
        if unknown:
            parts.append(f"unknown key(s) {', '.join(unknown)}")
        parts += [f"{key}: {wrong[key]}" for key in IDENTITY_FIELDS if key in wrong]
        raise FmaBandsError("; ".join(parts), file=source, fields=problems)
    return {k: data[k].strip() for k in IDENTITY_FIELDS}


def _rater(session: Session, pseudonym: str) -> User:
    user = session.exec(select(User).where(User.pseudonym == pseudonym)).first()
    if user is None or user.role != "rater":
        raise FmaBandsError(f"{pseudonym!r} is not an enrolled rater", field="pseudonym")
    return user


def is_recorded(session: Session, pseudonyms: list[str]) -> dict[str, bool]:
    """Which of these raters have a private identity on record (one query)."""
    rows = session.exec(
        select(User.pseudonym, User.identity_commitment).where(
            User.pseudonym.in_(pseudonyms)  # type: ignore[attr-defined]
        )
    )
    found = {name: bool(commitment) for name, commitment in rows}
    return {name: found.get(name, False) for name in pseudonyms}


def set_identity(
    session: Session,
    *,
    actor: UserPublic,
    pseudonym: str,
    record: Any,
    key_path: Path,
    passphrase: str,
    folder: Path | None,
    source: str = "identity",
) -> str:
    """Seal the private identity, store its salted commitment and sign it into the roster with
    the actor's root key (unsealed with `passphrase`): the commitment an editor checks is the
    one the study's root published, never one a rater states of themselves. Returns it."""
    authorize(session, actor, "record_identity", about=pseudonym)
    checked = check_identity(record, source)
    user = _rater(session, pseudonym)
    root = root_signer(session, actor, passphrase)
    commitment, salt = identity_commitment(checked)
    plain = canonical_json({"record": checked, "salt": salt})
    sealed = seal(plain, _identity_key(key_path, create=True), pseudonym.encode())
    user.identity_sealed = base64.b64encode(sealed).decode()
    user.identity_commitment = commitment
    audit.record(
        session,
        kind="identity_recorded",
        actor=actor.pseudonym,
        payload={"pseudonym": pseudonym, "identity_commitment": commitment},
    )
    ledger.append(
        session,
        "identity",
        signer=root,
        subject=[
            {"name": f"identity/{pseudonym}", "digest": {"sha256": commitment[len("sha256:") :]}}
        ],
        body={"identity": {"pseudonym": pseudonym, "identity_commitment": commitment}},
        about=pseudonym,
        folder=folder,
    )
    return commitment


def reveal_identity(
    session: Session, *, actor: UserPublic, pseudonym: str, key_path: Path
) -> dict[str, Any]:
    """The private record with its salt and commitment, for an editor who asks (audited)."""
    authorize(session, actor, "reveal_identity", about=pseudonym)
    user = _rater(session, pseudonym)
    if not user.identity_sealed:
        raise FmaBandsError(f"no identity is recorded for {pseudonym!r}")
    try:
        plain = unseal(
            base64.b64decode(user.identity_sealed),
            _identity_key(key_path, create=False),
            pseudonym.encode(),
        )
    except (InvalidTag, binascii.Error, ValueError):
        raise FmaBandsError(
            f"the identity key does not open {pseudonym}'s identity", file=str(key_path)
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


def revealed_text(revealed: dict[str, Any]) -> str:
    """A revealed record as the editor receives it: YAML that `fma-bands identity check` reads."""
    header = (
        "# Private identity record: for the editor only; check with `fma-bands identity check`.\n"
    )
    return header + yaml.safe_dump(revealed, sort_keys=False, allow_unicode=True)


def check_revealed(revealed: Any, adjudicators: dict[str, dict[str, Any]]) -> tuple[bool, str]:
    """Does a revealed record match the commitment published for that pseudonym?"""
    if not isinstance(revealed, dict):
        return False, "not a revealed identity record: expected a mapping"
    missing = [k for k in ("pseudonym", "salt", "record") if k not in revealed]
    if missing:
        return False, f"not a revealed identity record: missing {', '.join(missing)}"
    pseudonym, salt = revealed["pseudonym"], revealed["salt"]
    for field, value in (("pseudonym", pseudonym), ("salt", salt)):
        if not isinstance(value, str):
            return False, f"not a revealed identity record: {field}: expected text"
    try:
        record = check_identity(revealed["record"], "record")
    except FmaBandsError as exc:
        return False, f"not a revealed identity record: {exc}"
    published = adjudicators.get(pseudonym, {}).get("identity_commitment")
    if not published:
        return False, f"no identity commitment is published for {pseudonym}"
    try:
        matches = check_identity_commitment(record, salt, published)
    except FmaBandsError as exc:
        return False, f"not a revealed identity record: {exc}"
    if matches:
        return True, f"matches the identity commitment published for {pseudonym}"
    return False, f"does NOT match the identity commitment published for {pseudonym}"


def _identity_key(path: Path, *, create: bool) -> bytes:
    """The coordinator's key that seals private identities at rest; made only when recording."""
    path = Path(path)
    if not path.exists():
        if not create:
            raise FmaBandsError(
                "no identity key here: it is needed to open identities", file=str(path)
            )
        key = new_seal_key()
        write_atomically(path, base64.b64encode(key).decode() + "\n", overwrite=False)
        path.chmod(0o600)
        return key
    text = read_bounded(path, limit=4 * 1024, what="identity key")
    try:
        key = base64.b64decode(text.strip(), validate=True)
    except ValueError:
        key = b""
    if len(key) != 32:
        raise FmaBandsError("not an fma-bands identity key", file=str(path))
    return key
