"""A signed head of the study's log, as Certificate Transparency's signed tree head: the study,
a sequence and the digest of the record there, signed with a root key. An export carries one when
the coordinator signs it, so an editor can check, from the export and the folder alone, that the
bands were decided from a log the study's root vouched for and that the folder still extends it.
"""

import json
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from fma_bands.core.canonical import canonical_json
from fma_bands.core.errors import FmaBandsError
from fma_bands.evidence.dsse import parse_envelope, sign_envelope, verify_parsed

HEAD_TYPE = "application/vnd.fma-bands.head+json"


def sign_head(
    study: str, head: tuple[int, str], keyid: str, private_key: Ed25519PrivateKey
) -> dict[str, Any]:
    """A DSSE envelope whose payload is {study, sequence, digest}."""
    sequence, digest = head
    payload = canonical_json({"study": study, "sequence": sequence, "digest": digest})
    return sign_envelope(payload, HEAD_TYPE, private_key, keyid)


def check_head(envelope: Any, root_keys: dict[str, str]) -> tuple[str, int, str, str]:
    """(study, sequence, digest, keyid) of a signed head that a root key signed; FmaBandsError
    saying why otherwise. `root_keys` maps keyid -> public key."""
    parsed = parse_envelope(envelope)
    if parsed[1] != HEAD_TYPE:
        raise FmaBandsError(f"the signed head's payloadType is {parsed[1]}, not {HEAD_TYPE}")
    verified = verify_parsed(parsed, root_keys)
    try:
        head = json.loads(parsed[0])
        study, sequence, digest = head["study"], head["sequence"], head["digest"]
    except (KeyError, TypeError, ValueError):
        raise FmaBandsError("the signed head is not {study, sequence, digest}") from None
    if not (isinstance(study, str) and isinstance(sequence, int) and isinstance(digest, str)):
        raise FmaBandsError("the signed head is not {study, sequence, digest}")
    return study, sequence, digest, verified.keyids[0]
