"""Reading attestations/ from files alone: the published adjudicator records and every signed
envelope, checked offline. No database here (a test keeps sqlmodel out of this import), so
`fma-bands verify`, the registry and an editor's own check need nothing but the folder.
"""

import base64
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from fma_bands.dsse import IN_TOTO_PAYLOAD_TYPE, STATEMENT_TYPE, verify_envelope
from fma_bands.errors import FmaBandsError

ADJUDICATION_TYPE = "https://fma-bands.org/attestation/adjudication/v1"
REVOCATION_TYPE = "https://fma-bands.org/attestation/revocation/v1"
ADJUDICATORS_FILE = "adjudicators.yaml"
ADJUDICATORS_FORMAT = "fma-bands/adjudicators/v1"
ENVELOPE_SUFFIX = ".dsse.json"


def subject_name(vignette_id: str, sub_action: str) -> str:
    return f"{vignette_id}/{sub_action}"


def read_adjudicators(folder: Path) -> dict[str, dict[str, Any]]:
    """pseudonym -> public record, from the published file alone."""
    path = Path(folder) / ADJUDICATORS_FILE
    if not path.exists():
        return {}
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        records = data["adjudicators"]
        return {r["pseudonym"]: r for r in records}
    except (OSError, UnicodeDecodeError, yaml.YAMLError, KeyError, TypeError) as exc:
        raise FmaBandsError(f"not a readable adjudicators file ({exc})", file=str(path)) from None


def trusted_keys(adjudicators: dict[str, dict[str, Any]]) -> dict[str, str]:
    return {
        r["keyid"]: r["public_key"]
        for r in adjudicators.values()
        if isinstance(r, dict) and isinstance(r.get("keyid"), str) and r.get("public_key")
    }


@dataclass
class CheckedEnvelope:
    """One envelope file as checked offline; `error` holds (code, message) when it fails."""

    path: Path
    error: tuple[str, str] | None = None
    statement: dict[str, Any] | None = None
    claimed: dict[str, Any] | None = None  # the unverified statement, to say what it claimed
    pseudonym: str | None = None
    keyid: str | None = None
    payload_sha256: str | None = None

    @property
    def kind(self) -> str | None:
        found = self.statement or self.claimed or {}
        if not isinstance(found, dict):
            return None
        return {ADJUDICATION_TYPE: "adjudication", REVOCATION_TYPE: "revocation"}.get(
            found.get("predicateType")  # type: ignore[arg-type]
        )

    @property
    def predicate(self) -> dict[str, Any]:
        """The verified statement's predicate (only on an envelope without error)."""
        assert self.statement is not None, f"{self.path} did not verify"
        return self.statement["predicate"]


def read_envelope(path: Path, adjudicators: dict[str, dict[str, Any]]) -> CheckedEnvelope:
    checked = CheckedEnvelope(Path(path))
    try:
        envelope = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        checked.error = ("malformed", f"not a readable JSON envelope: {exc}")
        return checked
    try:
        payload = base64.b64decode(envelope["payload"], validate=True)
        checked.claimed = json.loads(payload)
        checked.payload_sha256 = hashlib.sha256(payload).hexdigest()
    except (KeyError, TypeError, ValueError):
        checked.claimed = None
    try:
        verified = verify_envelope(envelope, trusted_keys(adjudicators))
    except FmaBandsError as exc:
        checked.error = (exc.code or "malformed", exc.message)
        return checked
    if verified.payload_type != IN_TOTO_PAYLOAD_TYPE:
        checked.error = ("malformed", f"payloadType is {verified.payload_type}, not in-toto")
        return checked
    statement = checked.claimed
    if not _well_formed(statement):
        checked.error = ("malformed", "the payload is not an fma-bands in-toto statement")
        return checked
    assert statement is not None
    claimed_by = statement["predicate"]["adjudicator"]["pseudonym"]
    enrolled = adjudicators.get(claimed_by)
    if enrolled is None or enrolled.get("keyid") not in verified.keyids:
        checked.error = (
            "wrong_signer",
            f"signed by {', '.join(verified.keyids)}, which is not the key enrolled for "
            f"{claimed_by}",
        )
        return checked
    checked.statement = statement
    checked.pseudonym = claimed_by
    checked.keyid = enrolled["keyid"]
    return checked


def _well_formed(statement: Any) -> bool:
    """The shape the registry relies on; a signed statement of any other shape is refused."""
    try:
        predicate = statement["predicate"]
        ok = (
            statement["_type"] == STATEMENT_TYPE
            and isinstance(predicate["adjudicator"]["pseudonym"], str)
            and all(
                isinstance(s["name"], str) and isinstance(s["digest"]["sha256"], str)
                for s in statement["subject"]
            )
        )
        if statement["predicateType"] == REVOCATION_TYPE:
            return ok and isinstance(predicate["revokes"], str) and len(statement["subject"]) == 1
        if statement["predicateType"] != ADJUDICATION_TYPE:
            return False
        return (
            ok
            and isinstance(predicate["signature_manifestation"]["signed_at"], str)
            and all(
                isinstance(r["vignette_id"], str) and isinstance(r["sub_action"], str)
                for r in predicate["reviews"]
            )
        )
    except (KeyError, TypeError, IndexError):
        return False


def read_folder(
    folder: Path, paths: list[Path] | None = None
) -> tuple[dict[str, dict[str, Any]], list[CheckedEnvelope]]:
    """The published adjudicators and every envelope in the folder (or the given paths), checked."""
    adjudicators = read_adjudicators(folder)
    files = paths if paths else sorted(Path(folder).glob(f"*{ENVELOPE_SUFFIX}"))
    return adjudicators, [read_envelope(p, adjudicators) for p in files]


def signed_revisions(folder: Path, pseudonym: str) -> dict[tuple[str, str], int]:
    """For each band, the review revision the rater's latest valid attestation covers."""
    _, checked = read_folder(folder)
    covered: dict[tuple[str, str], tuple[str, int]] = {}
    for env in checked:
        if env.error or env.kind != "adjudication" or env.pseudonym != pseudonym:
            continue
        signed_at = env.predicate["signature_manifestation"]["signed_at"]
        for review in env.predicate["reviews"]:
            band = (review["vignette_id"], review["sub_action"])
            if band not in covered or covered[band][0] < signed_at:
                covered[band] = (signed_at, review.get("revision"))
    return {band: revision for band, (_, revision) in covered.items()}
