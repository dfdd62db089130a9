"""Ed25519 signing keys, and sealing with AES-256-GCM: private keys under a passphrase
(Argon2id), private identities under the coordinator's key file. One sealing for both.
"""

import base64
import binascii
import hashlib
import json
import secrets
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from fma_bands.core.errors import FmaBandsError, WrongPassphrase

_NONCE = 12
_KEY_AAD = b"fma-bands ed25519 key"
# Argon2id costs for the key-encryption key: memory-hard, so a stolen database does not make
# passphrases cheap to guess (PKCS8's PBKDF2 in cryptography uses 2048 iterations).
_KDF = {"kdf": "argon2id", "time_cost": 3, "memory_cost": 65536, "parallelism": 1}


@dataclass(frozen=True)
class KeyPair:
    public_key_b64: str
    keyid: str
    sealed_private_key: str


# Sealing ------------------------------------------------------------------------------------


def seal(plain: bytes, key: bytes, aad: bytes) -> bytes:
    """nonce || AES-256-GCM(plain), bound to `aad` (what it belongs to), under a 32-byte key."""
    nonce = secrets.token_bytes(_NONCE)
    return nonce + AESGCM(key).encrypt(nonce, plain, aad)


def unseal(sealed: bytes, key: bytes, aad: bytes) -> bytes:
    """The inverse of seal; raises InvalidTag if the key or the aad is not the one sealed with."""
    return AESGCM(key).decrypt(sealed[:_NONCE], sealed[_NONCE:], aad)


def new_seal_key() -> bytes:
    return AESGCM.generate_key(bit_length=256)


# Public keys --------------------------------------------------------------------------------


def decode_public_key(public_key_b64: str) -> bytes:
    try:
        raw = base64.b64decode(public_key_b64, validate=True)
    except (binascii.Error, TypeError, ValueError):
        raise FmaBandsError("the public key is not valid base64", field="public_key") from None
    if len(raw) != 32:
        raise FmaBandsError(
            f"an Ed25519 public key is 32 bytes, not {len(raw)}", field="public_key"
        )
    return raw


def keyid_for(public_key_b64: str) -> str:
    return "sha256:" + hashlib.sha256(decode_public_key(public_key_b64)).hexdigest()


def public_key_b64_of(private_key: Ed25519PrivateKey) -> str:
    raw = private_key.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    return base64.b64encode(raw).decode()


# Private keys under a passphrase -------------------------------------------------------------


def _require_passphrase(passphrase: str) -> None:
    if not passphrase or not passphrase.strip():
        raise FmaBandsError("the passphrase must not be empty", field="passphrase")


def _kek(passphrase: str, salt: bytes, params: dict[str, Any]) -> bytes:
    from argon2.low_level import Type, hash_secret_raw

    return hash_secret_raw(
        passphrase.encode(),
        salt,
        time_cost=params["time_cost"],
        memory_cost=params["memory_cost"],
        parallelism=params["parallelism"],
        hash_len=32,
        type=Type.ID,
    )


def seal_private_key(private_key: Ed25519PrivateKey, passphrase: str) -> str:
    """The raw key sealed under an Argon2id key from the passphrase; JSON with every parameter."""
    _require_passphrase(passphrase)
    raw = private_key.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )
    salt = secrets.token_bytes(16)
    sealed = seal(raw, _kek(passphrase, salt, _KDF), _KEY_AAD)
    return json.dumps(
        {
            **_KDF,
            "cipher": "aes-256-gcm",
            "salt": base64.b64encode(salt).decode(),
            "nonce": base64.b64encode(sealed[:_NONCE]).decode(),
            "ciphertext": base64.b64encode(sealed[_NONCE:]).decode(),
        },
        sort_keys=True,
    )


def generate_keypair(passphrase: str) -> KeyPair:
    _require_passphrase(passphrase)
    private_key = Ed25519PrivateKey.generate()
    public_key_b64 = public_key_b64_of(private_key)
    return KeyPair(
        public_key_b64=public_key_b64,
        keyid=keyid_for(public_key_b64),
        sealed_private_key=seal_private_key(private_key, passphrase),
    )


def unseal_private_key(sealed_key: str, passphrase: str) -> Ed25519PrivateKey:
    _require_passphrase(passphrase)
    try:
        sealed = json.loads(sealed_key)
        salt = base64.b64decode(sealed["salt"], validate=True)
        nonce = base64.b64decode(sealed["nonce"], validate=True)
        ciphertext = base64.b64decode(sealed["ciphertext"], validate=True)
        if sealed.get("kdf") != "argon2id" or sealed.get("cipher") != "aes-256-gcm":
            raise ValueError
        kek = _kek(passphrase, salt, sealed)
    except (ValueError, KeyError, TypeError, binascii.Error):
        raise FmaBandsError("the stored private key is not an fma-bands sealed key") from None
    try:
        raw = unseal(nonce + ciphertext, kek, _KEY_AAD)
    except InvalidTag:
        # `from None`: the chain must never carry secrets, and the library's message adds nothing.
        raise WrongPassphrase("that passphrase does not unlock this private key") from None
    return Ed25519PrivateKey.from_private_bytes(raw)


def reseal_private_key(sealed_key: str, old_passphrase: str, new_passphrase: str) -> str:
    _require_passphrase(new_passphrase)
    return seal_private_key(unseal_private_key(sealed_key, old_passphrase), new_passphrase)
