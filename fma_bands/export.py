"""bands.yaml (DESIGN 4): the adjudicated bands in the harness's own form, and loaders for it.

Each band's fields minus the `x_` extensions construct the harness's `Band(**fields)`; each
adjudicator's fields construct its `Adjudicator(**fields)`.
"""

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from fma_bands.actions import SUB_ACTIONS
from fma_bands.bands import MultilabelBand, parse_band, to_harness
from fma_bands.envelopes import ADJUDICATORS_FILE, read_adjudicators
from fma_bands.errors import FmaBandsError
from fma_bands.files import write_atomically
from fma_bands.policy import Policy
from fma_bands.registry import Grant, decide
from fma_bands.vignettes import Library, Proposal

FORMAT = "fma-bands/v1"
BAND_FIELDS = (
    "sub_action",
    "acceptable",
    "provenance",
    "source",
    "clause",
    "reasoning",
    "adjudicated_by",
    "disputed_span",
    "notes",
)
ADJUDICATOR_FIELDS = (
    "pseudonym",
    "specialty",
    "jurisdiction",
    "years_post_registration",
    "attestation_on_file",
    "attestation_date",
    "anonymous_to_readers",
    "notes",
)


def export_document(
    library: Library,
    folder: Path,
    *,
    quorum: int | None = None,
    scope: str | None = None,
    generated_at: datetime | None = None,
) -> dict[str, Any]:
    """bands.yaml as data: every band as the registry decided it, and the adjudicators with
    `attestation_on_file` only where a valid attestation is on file."""
    registry = decide(library, folder, quorum=quorum, scope=scope)
    adjudicators = []
    source = str(Path(folder) / ADJUDICATORS_FILE)
    for i, record in enumerate(read_adjudicators(folder).values()):
        missing = [k for k in ("pseudonym", "specialty", "jurisdiction") if not record.get(k)]
        if missing:
            raise FmaBandsError(
                f"adjudicator record {i + 1} lacks {', '.join(missing)}: the file was edited by "
                "hand or is damaged; publish it again from the store",
                file=source,
                field=f"adjudicators[{i}]",
            )
        date = registry.valid_signers.get(record["pseudonym"])
        adjudicators.append(
            {
                "pseudonym": record["pseudonym"],
                "specialty": record.get("specialty"),
                "jurisdiction": record.get("jurisdiction"),
                "years_post_registration": record.get("years_post_registration"),
                "attestation_on_file": date is not None,
                "attestation_date": date,
                "anonymous_to_readers": record.get("anonymous_to_readers", True),
                "notes": None,
            }
        )
    return bands_document(
        library,
        grants=registry.grants(),
        adjudicators=adjudicators,
        policy=registry.policy,
        generated_at=generated_at,
    )


def bands_document(
    library: Library,
    *,
    grants: Mapping[tuple[str, str], Grant] | None = None,
    adjudicators: Iterable[Mapping[str, Any]] = (),
    policy: Policy | None = None,
    generated_at: datetime | None = None,
) -> dict[str, Any]:
    """The whole export as plain data, ready for YAML."""
    grants = grants or {}
    policy = policy or Policy()
    stamp = (generated_at or datetime.now(UTC)).astimezone(UTC).replace(microsecond=0)
    bands: dict[str, list[dict[str, Any]]] = {}
    for vignette in library:
        entries = [
            _band_entry(proposal, grants.get((vignette.id, proposal.sub_action)))
            for proposal in vignette.proposals
        ]
        if entries:
            bands[vignette.id] = entries
    return {
        "format": FORMAT,
        "generated_at": stamp.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "policy": policy.as_dict(),
        "adjudicators": [_adjudicator_entry(a) for a in adjudicators],
        "bands": bands,
    }


def _band_entry(proposal: Proposal, grant: Grant | None) -> dict[str, Any]:
    adjudicated = grant is not None and grant.provenance == "clinician-adjudicated"
    band = grant.band if adjudicated else proposal.acceptable
    disputed = grant.disputed_span if adjudicated else proposal.disputed_span
    threshold = proposal.effective_threshold
    entry: dict[str, Any] = {
        "sub_action": proposal.sub_action,
        "acceptable": to_harness(band),
        "provenance": grant.provenance if grant else proposal.provenance,
        "source": proposal.source,
        "clause": proposal.clause,
        "reasoning": proposal.reasoning,
        # The harness treats any non-empty adjudicated_by as ground truth: only a grant writes it.
        "adjudicated_by": list(grant.adjudicated_by) if adjudicated else [],
        "disputed_span": to_harness(disputed) if disputed is not None else None,
        "notes": proposal.notes,
        "x_threshold": threshold.expression() if threshold else None,
        "x_straddles": band.straddles(threshold),
        "x_agreement": {
            "n_raters": grant.n_raters if grant else 0,
            "intersection_rule": grant.intersection_rule if grant else "absent",
        },
        "x_attestations": [dict(a) for a in grant.attestations] if grant else [],
        "x_warnings": list(grant.warnings) if grant else [],
    }
    if isinstance(band, MultilabelBand):
        entry["x_required"] = list(band.required)
    return entry


def _adjudicator_entry(record: Mapping[str, Any]) -> dict[str, Any]:
    missing = [k for k in ("pseudonym", "specialty", "jurisdiction") if not record.get(k)]
    if missing:
        raise FmaBandsError(f"adjudicator record lacks {', '.join(missing)}")
    entry = {key: record.get(key) for key in ADJUDICATOR_FIELDS}
    entry["attestation_on_file"] = bool(record.get("attestation_on_file"))
    entry["anonymous_to_readers"] = record.get("anonymous_to_readers", True)
    return entry


def dump_bands(document: Mapping[str, Any]) -> str:
    return yaml.safe_dump(dict(document), sort_keys=False, allow_unicode=True, width=100)


def write_bands(path: str | Path, document: Mapping[str, Any]) -> Path:
    """Write bands.yaml atomically: readers see the old file or the new one, never half."""
    return write_atomically(path, dump_bands(document))


def _read(path: str | Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise FmaBandsError(f"{path}: cannot read: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise FmaBandsError(f"{path}: format: not a {FORMAT} file")
    return data


def load_bands(path: str | Path, *, extensions: bool = False) -> dict[str, list[dict[str, Any]]]:
    """vignette_id -> band dicts; each builds the harness's Band(**fields).

    The `x_` extensions are dropped unless `extensions=True`. Every band is re-validated, so a
    hand-edited file with a tuple-like or one-bound band is refused here, not in the harness.
    """
    data = _read(path)
    bands = data.get("bands") or {}
    if not isinstance(bands, dict):
        raise FmaBandsError(f"{path}: bands: must map vignette ids to lists of bands")
    loaded: dict[str, list[dict[str, Any]]] = {}
    for vid, entries in bands.items():
        if not isinstance(entries, list):
            raise FmaBandsError(f"{path}: bands.{vid}: must be a list of bands")
        loaded[vid] = [_checked_band(path, vid, i, e, extensions) for i, e in enumerate(entries)]
    return loaded


def _checked_band(path, vid: str, i: int, entry: Any, extensions: bool) -> dict[str, Any]:
    where = f"{path}: bands.{vid}[{i}]"
    if not isinstance(entry, dict) or entry.get("sub_action") not in SUB_ACTIONS:
        raise FmaBandsError(f"{where}.sub_action: missing or unknown")
    missing = [k for k in BAND_FIELDS if k not in entry]
    if missing:
        raise FmaBandsError(f"{where}: lacks {', '.join(missing)}")
    name = entry["sub_action"]
    try:
        parse_band(name, entry["acceptable"], required=entry.get("x_required"))
        if entry["disputed_span"] is not None:
            parse_band(name, entry["disputed_span"], span=True)
    except FmaBandsError as exc:
        raise FmaBandsError(f"{where}.acceptable: {exc.message}") from None
    if entry["adjudicated_by"] and entry["provenance"] != "clinician-adjudicated":
        raise FmaBandsError(
            f"{where}.adjudicated_by: set on a {entry['provenance']} band; the harness would "
            "take it as ground truth"
        )
    keys = [k for k in entry if extensions or not k.startswith("x_")]
    return {k: entry[k] for k in keys}


def load_adjudicators(path: str | Path) -> list[dict[str, Any]]:
    """Adjudicator dicts; each builds the harness's Adjudicator(**fields)."""
    data = _read(path)
    records = data.get("adjudicators") or []
    if not isinstance(records, list):
        raise FmaBandsError(f"{path}: adjudicators: must be a list")
    out = []
    for i, record in enumerate(records):
        if not isinstance(record, dict) or set(record) != set(ADJUDICATOR_FIELDS):
            raise FmaBandsError(
                f"{path}: adjudicators[{i}]: needs exactly {', '.join(ADJUDICATOR_FIELDS)}"
            )
        out.append(dict(record))
    return out
