"""A signed head of the study's log, as Certificate Transparency's signed tree head: the study,
a sequence and the digest of the record there, signed with a root key. An export carries one when
the coordinator signs it, so an editor can check, from the export and the folder alone, that the
bands were decided from a log the study's root vouched for and that the folder still extends it.
"""

import json
from typing import Any, NamedTuple

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from fma_bands.core.canonical import canonical_json
from fma_bands.core.errors import FmaBandsError
from fma_bands.evidence.dsse import parse_envelope, sign_envelope, verify_parsed

HEAD_TYPE = "application/vnd.fma-bands.head+json"


class SignedHead(NamedTuple):
    """What a signed head states, and which root key signed it."""

    study: str
    sequence: int
    digest: str
    keyid: str
    audit_head: dict[str, Any] | None  # {seq, hash} of the audit log when the head was signed


def sign_head(
    study: str,
    head: tuple[int, str],
    keyid: str,
    private_key: Ed25519PrivateKey,
    audit_head: tuple[int, str] | None = None,
) -> dict[str, Any]:
    """A DSSE envelope whose payload is {study, sequence, digest} and, when given, the audit
    log's head at that moment ({seq, hash}), which `fma-bands audit verify --export` checks."""
    sequence, digest = head
    payload: dict[str, Any] = {"study": study, "sequence": sequence, "digest": digest}
    if audit_head is not None:
        payload["audit_head"] = {"seq": audit_head[0], "hash": audit_head[1]}
    return sign_envelope(canonical_json(payload), HEAD_TYPE, private_key, keyid)


def check_head(envelope: Any, root_keys: dict[str, str]) -> SignedHead:
    """What a signed head that a root key signed states; FmaBandsError saying why otherwise.
    `root_keys` maps keyid -> public key."""
    parsed = parse_envelope(envelope)
    if parsed[1] != HEAD_TYPE:
        raise FmaBandsError(f"the signed head's payloadType is {parsed[1]}, not {HEAD_TYPE}")
    verified = verify_parsed(parsed, root_keys)
    try:
        head = json.loads(parsed[0])
        study, sequence, digest = head["study"], head["sequence"], head["digest"]
        audit_head = head.get("audit_head")
    except (KeyError, TypeError, ValueError, AttributeError):
        raise FmaBandsError("the signed head is not {study, sequence, digest}") from None
    if not (isinstance(study, str) and isinstance(sequence, int) and isinstance(digest, str)):
        raise FmaBandsError("the signed head is not {study, sequence, digest}")
    if audit_head is not None and parse_audit_head(audit_head) is None:
        raise FmaBandsError("the signed head's audit_head is not {seq, hash}")
    return SignedHead(study, sequence, digest, verified.keyids[0], audit_head)


def parse_audit_head(value: Any) -> tuple[int, str] | None:
    """(seq, hash) of an audit head as an export or a record states it, or None if it is not one."""
    if not isinstance(value, dict):
        return None
    seq, digest = value.get("seq"), value.get("hash")
    if isinstance(seq, bool) or not isinstance(seq, int) or not isinstance(digest, str):
        return None
    return seq, digest
