"""DSSE envelopes (docs/design.md, Attestations): the pre-authentication encoding, signing, and
verification against trusted Ed25519 keys. Files and the database are other modules' business.
"""

import base64
from dataclasses import dataclass
from typing import Any

import pybase64
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from fma_bands.core.errors import FmaBandsError
from fma_bands.evidence.keys import decode_public_key, keyid_for, public_key_b64_of

IN_TOTO_PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"


@dataclass(frozen=True)
class VerifiedEnvelope:
    payload: bytes
    payload_type: str
    keyids: list[str]


def pae(payload_type: str, payload: bytes) -> bytes:
    type_bytes = payload_type.encode()
    return b"DSSEv1 %d %b %d %b" % (len(type_bytes), type_bytes, len(payload), payload)


def sign_envelope(
    payload: bytes, payload_type: str, private_key: Ed25519PrivateKey, keyid: str
) -> dict[str, Any]:
    if keyid != keyid_for(public_key_b64_of(private_key)):
        # An envelope signed under another key's id could never verify; fail at signing instead.
        raise FmaBandsError(f"keyid {keyid} does not belong to this private key")
    sig = private_key.sign(pae(payload_type, payload))
    return {
        "payload": base64.b64encode(payload).decode(),
        "payloadType": payload_type,
        "signatures": [{"keyid": keyid, "sig": base64.b64encode(sig).decode()}],
    }


def malformed(message: str) -> FmaBandsError:
    return FmaBandsError(message, code="malformed")


def check_fields(obj: Any, expected: set[str], where: str) -> None:
    if not isinstance(obj, dict):
        raise malformed(f"{where} must be a JSON object")
    if missing := sorted(expected - obj.keys()):
        raise malformed(f"{where} is missing {', '.join(missing)}")
    if extra := sorted(set(obj) - expected, key=str):
        raise malformed(f"{where} has unexpected field(s) {', '.join(map(str, extra))}")


def decode_base64(value: str | bytes) -> bytes:
    """Strict base64, as the standard library's `b64decode(value, validate=True)` reads it:
    the alphabet and its padding only (no line break or space), ValueError otherwise. pybase64
    decodes it with the processor's vector instructions, several times faster: an envelope's
    payload is most of its file, and a large study's are hundreds of megabytes decoded on every
    read of the folder (docs/performance.md). tests/evidence/test_dsse.py holds the two
    decoders to the same answers."""
    return pybase64.b64decode(value, validate=True)


def decode_b64_field(value: Any, field: str) -> bytes:
    if not isinstance(value, str):
        raise malformed(f"{field} must be a base64 string")
    try:
        raw = decode_base64(value)
    except ValueError:  # binascii.Error, and a character outside ASCII (JSON text may hold any)
        raise malformed(f"{field} is not valid base64") from None
    # One spelling only: decoders in other languages differ on stray padding bits, and every
    # verifier of a file must read the same bytes.
    if not _canonical_b64(value, len(raw)):
        raise malformed(f"{field} is not canonical padded base64")
    return raw


_B64_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def _canonical_b64(value: str, n_bytes: int) -> bool:
    """Whether `value`, which strict base64 decoding turned into `n_bytes` bytes, is what
    encoding those bytes gives. Strict decoding refuses every other misspelling (stray
    characters, missing or excess padding), so only the bits after the last byte remain: they
    must be zero. Checked on the last characters instead of encoding a whole payload again."""
    if len(value) != 4 * ((n_bytes + 2) // 3):
        return False
    spare_bits = {0: 0, 1: 4, 2: 2}[n_bytes % 3]  # bits of the last data character left over
    if not spare_bits:
        return True
    last = value[-3:].rstrip("=")[-1]  # the last data character (never copy the payload)
    return _B64_ALPHABET.index(last) % (1 << spare_bits) == 0


Parsed = tuple[bytes, str, list[tuple[str, bytes]]]  # payload, payloadType, (keyid, sig)s


# Signatures one envelope may carry: a record is signed by one key, a root record by the
# study's root keys.
MAX_SIGNATURES = 16


def parse_envelope(envelope: Any) -> Parsed:
    check_fields(envelope, {"payload", "payloadType", "signatures"}, "envelope")
    payload = decode_b64_field(envelope["payload"], "payload")
    if not isinstance(envelope["payloadType"], str):
        raise malformed("payloadType must be a string")
    signatures = envelope["signatures"]
    if not isinstance(signatures, list) or not signatures:
        raise malformed("signatures must be a non-empty list")
    if len(signatures) > MAX_SIGNATURES:
        # No record has more signers than a study has root keys: a flood is refused unread.
        raise malformed(
            f"{len(signatures)} signatures: no record carries more than {MAX_SIGNATURES}"
        )
    parsed = []
    seen: set[str] = set()
    for index, signature in enumerate(signatures):
        where = f"signatures[{index}]"
        check_fields(signature, {"keyid", "sig"}, where)
        if not isinstance(signature["keyid"], str):
            raise malformed(f"{where}.keyid must be a string")
        if signature["keyid"] in seen:
            raise malformed(f"{where}.keyid gives a key that signed already")
        seen.add(signature["keyid"])
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
        except (FmaBandsError, ValueError, TypeError):
            continue
    return keys


def verify_envelope(envelope: Any, trusted: dict[str, str]) -> VerifiedEnvelope:
    """The verified payload; raises FmaBandsError with code bad_signature, unknown_key or
    malformed."""
    return verify_parsed(parse_envelope(envelope), trusted)


def verify_parsed(parsed: Parsed, trusted: dict[str, str]) -> VerifiedEnvelope:
    """verify_envelope for an envelope parse_envelope has already read (a payload is
    decoded once)."""
    payload, payload_type, signatures = parsed
    keys = honest_keys(trusted)
    signed_bytes = pae(payload_type, payload)
    verified: list[str] = []
    for keyid, sig in signatures:
        if keyid not in keys:
            continue
        try:
            keys[keyid].verify(sig, signed_bytes)
        except InvalidSignature:
            raise FmaBandsError(
                f"the signature by {keyid} does not match the signed content", code="bad_signature"
            ) from None
        if keyid not in verified:
            verified.append(keyid)
    if not verified:
        raise FmaBandsError("no signature is by an enrolled key", code="unknown_key")
    return VerifiedEnvelope(payload=payload, payload_type=payload_type, keyids=verified)
