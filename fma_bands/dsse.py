"""Signing primitives: canonical JSON, Ed25519 keys under a passphrase, DSSE envelopes,
atomic JSON files and salted identity commitments (DESIGN 2.6, 4 "Attestation").
"""

import base64
import binascii
import hashlib
import hmac
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from argon2.low_level import Type, hash_secret_raw
from cryptography.exceptions import InvalidSignature, InvalidTag
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from fma_bands.canonical import canonical_json
from fma_bands.files import write_atomically

IN_TOTO_PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"


class WrongPassphrase(Exception):
    """The passphrase does not unlock the stored private key."""


class EnvelopeError(Exception):
    """An envelope failed verification; `code` is stable, `message` is for people."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class KeyPair:
    public_key_b64: str
    keyid: str
    encrypted_private_key: str


@dataclass(frozen=True)
class VerifiedEnvelope:
    payload: bytes
    payload_type: str
    keyids: list[str]


def pae(payload_type: str, payload: bytes) -> bytes:
    type_bytes = payload_type.encode()
    return b"DSSEv1 %d %b %d %b" % (len(type_bytes), type_bytes, len(payload), payload)


def require_passphrase(passphrase: str) -> None:
    if not passphrase or not passphrase.strip():
        raise ValueError("The passphrase must not be empty.")


def keyid_for(public_key_b64: str) -> str:
    return "sha256:" + hashlib.sha256(decode_public_key(public_key_b64)).hexdigest()


def decode_public_key(public_key_b64: str) -> bytes:
    try:
        raw = base64.b64decode(public_key_b64, validate=True)
    except binascii.Error:
        raise ValueError("The public key is not valid base64.") from None
    if len(raw) != 32:
        raise ValueError(f"An Ed25519 public key is 32 bytes, not {len(raw)}.")
    return raw


def public_key_b64_of(private_key: Ed25519PrivateKey) -> str:
    raw = private_key.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    return base64.b64encode(raw).decode()


# Argon2id costs for the key-encryption key: memory-hard, so a stolen database or key file does
# not make passphrases cheap to guess (PKCS8's PBKDF2 in cryptography uses 2048 iterations).
_KDF = {"kdf": "argon2id", "time_cost": 3, "memory_cost": 65536, "parallelism": 1}


def _kek(passphrase: str, salt: bytes, params: dict[str, Any]) -> bytes:
    return hash_secret_raw(
        passphrase.encode(),
        salt,
        time_cost=params["time_cost"],
        memory_cost=params["memory_cost"],
        parallelism=params["parallelism"],
        hash_len=32,
        type=Type.ID,
    )


def encrypt_private_key(private_key: Ed25519PrivateKey, passphrase: str) -> str:
    """The raw key sealed by AES-256-GCM under an Argon2id key; JSON text with every parameter."""
    require_passphrase(passphrase)
    raw = private_key.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )
    salt, nonce = secrets.token_bytes(16), secrets.token_bytes(12)
    sealed = AESGCM(_kek(passphrase, salt, _KDF)).encrypt(nonce, raw, b"fma-bands ed25519 key")
    return json.dumps(
        {
            **_KDF,
            "cipher": "aes-256-gcm",
            "salt": base64.b64encode(salt).decode(),
            "nonce": base64.b64encode(nonce).decode(),
            "ciphertext": base64.b64encode(sealed).decode(),
        },
        sort_keys=True,
    )


def generate_keypair(passphrase: str) -> KeyPair:
    require_passphrase(passphrase)
    private_key = Ed25519PrivateKey.generate()
    public_key_b64 = public_key_b64_of(private_key)
    return KeyPair(
        public_key_b64=public_key_b64,
        keyid=keyid_for(public_key_b64),
        encrypted_private_key=encrypt_private_key(private_key, passphrase),
    )


def load_private_key(encrypted_key: str, passphrase: str) -> Ed25519PrivateKey:
    require_passphrase(passphrase)
    try:
        sealed = json.loads(encrypted_key)
        salt = base64.b64decode(sealed["salt"], validate=True)
        nonce = base64.b64decode(sealed["nonce"], validate=True)
        ciphertext = base64.b64decode(sealed["ciphertext"], validate=True)
        if sealed.get("kdf") != "argon2id" or sealed.get("cipher") != "aes-256-gcm":
            raise ValueError
        kek = _kek(passphrase, salt, sealed)
    except (ValueError, KeyError, TypeError, binascii.Error):
        raise ValueError("The stored private key is not an fma-bands encrypted key.") from None
    try:
        raw = AESGCM(kek).decrypt(nonce, ciphertext, b"fma-bands ed25519 key")
    except InvalidTag:
        # `from None`: the chain must never carry secrets, and the library's message adds nothing.
        raise WrongPassphrase("That passphrase does not unlock this private key.") from None
    return Ed25519PrivateKey.from_private_bytes(raw)


def reencrypt_private_key(encrypted_pem: str, old_passphrase: str, new_passphrase: str) -> str:
    require_passphrase(new_passphrase)
    return encrypt_private_key(load_private_key(encrypted_pem, old_passphrase), new_passphrase)


def sign_envelope(
    payload: bytes, payload_type: str, private_key: Ed25519PrivateKey, keyid: str
) -> dict:
    if keyid != keyid_for(public_key_b64_of(private_key)):
        # An envelope signed under another key's id could never verify; fail at signing instead.
        raise ValueError(f"keyid {keyid} does not belong to this private key")
    sig = private_key.sign(pae(payload_type, payload))
    return {
        "payload": base64.b64encode(payload).decode(),
        "payloadType": payload_type,
        "signatures": [{"keyid": keyid, "sig": base64.b64encode(sig).decode()}],
    }


def malformed(message: str) -> EnvelopeError:
    return EnvelopeError("malformed", message)


def check_fields(obj: Any, expected: set[str], where: str) -> None:
    if not isinstance(obj, dict):
        raise malformed(f"{where} must be a JSON object")
    if missing := sorted(expected - obj.keys()):
        raise malformed(f"{where} is missing {', '.join(missing)}")
    if extra := sorted(set(obj) - expected, key=str):
        raise malformed(f"{where} has unexpected field(s) {', '.join(map(str, extra))}")


def decode_b64_field(value: Any, field: str) -> bytes:
    if not isinstance(value, str):
        raise malformed(f"{field} must be a base64 string")
    try:
        raw = base64.b64decode(value, validate=True)
    except binascii.Error:
        raise malformed(f"{field} is not valid base64") from None
    # One spelling only: decoders in other languages differ on stray padding bits, and every
    # verifier of a file must read the same bytes.
    if base64.b64encode(raw).decode() != value:
        raise malformed(f"{field} is not canonical padded base64")
    return raw


def parse_envelope(envelope: Any) -> tuple[bytes, str, list[tuple[str, bytes]]]:
    check_fields(envelope, {"payload", "payloadType", "signatures"}, "envelope")
    payload = decode_b64_field(envelope["payload"], "payload")
    if not isinstance(envelope["payloadType"], str):
        raise malformed("payloadType must be a string")
    signatures = envelope["signatures"]
    if not isinstance(signatures, list) or not signatures:
        raise malformed("signatures must be a non-empty list")
    parsed = []
    for index, signature in enumerate(signatures):
        where = f"signatures[{index}]"
        check_fields(signature, {"keyid", "sig"}, where)
        if not isinstance(signature["keyid"], str):
            raise malformed(f"{where}.keyid must be a string")
        parsed.append((signature["keyid"], decode_b64_field(signature["sig"], f"{where}.sig")))
    return payload, envelope["payloadType"], parsed


def honest_keys(trusted: dict[str, str]) -> dict[str, Ed25519PublicKey]:
    # A key listed under an id that is not its own hash is ignored, so nobody can enrol a key
    # under someone else's keyid.
    keys = {}
    for keyid, public_key_b64 in trusted.items():
        try:
            if keyid_for(public_key_b64) == keyid:
                keys[keyid] = Ed25519PublicKey.from_public_bytes(decode_public_key(public_key_b64))
        except (ValueError, TypeError):
            continue
    return keys


def verify_envelope(envelope: dict, trusted: dict[str, str]) -> VerifiedEnvelope:
    payload, payload_type, signatures = parse_envelope(envelope)
    keys = honest_keys(trusted)
    signed_bytes = pae(payload_type, payload)
    verified: list[str] = []
    for keyid, sig in signatures:
        if keyid not in keys:
            continue
        try:
            keys[keyid].verify(sig, signed_bytes)
        except InvalidSignature:
            raise EnvelopeError(
                "bad_signature", f"the signature by {keyid} does not match the signed content"
            ) from None
        if keyid not in verified:
            verified.append(keyid)
    if not verified:
        raise EnvelopeError("unknown_key", "no signature is by an enrolled key")
    return VerifiedEnvelope(payload=payload, payload_type=payload_type, keyids=verified)


def write_json_atomically(path: str | os.PathLike, obj: Any, *, overwrite: bool = False) -> Path:
    data = json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    return write_atomically(path, data, overwrite=overwrite)


def identity_commitment(private_record: dict, salt: bytes | None = None) -> tuple[str, str]:
    salt = secrets.token_bytes(32) if salt is None else salt
    digest = hashlib.sha256(salt + canonical_json(private_record)).hexdigest()
    return f"sha256:{digest}", salt.hex()


def check_identity_commitment(private_record: dict, salt_hex: str, commitment: str) -> bool:
    try:
        salt = bytes.fromhex(salt_hex)
    except ValueError:
        raise ValueError("The identity commitment's salt is not hexadecimal.") from None
    expected, _ = identity_commitment(private_record, salt)
    return hmac.compare_digest(expected.encode(), commitment.encode())
