"""bands.yaml: harness-native form, round trips for every band form, atomic writes, loaders."""

import os
from datetime import UTC, datetime

import pytest
import yaml

from fma_bands.bands import parse_band, to_harness
from fma_bands.errors import FmaBandsError
from fma_bands.export import (
    ADJUDICATOR_FIELDS,
    BAND_FIELDS,
    bands_document,
    load_adjudicators,
    load_bands,
    write_bands,
)
from fma_bands.vignettes import load_library
from tests.conftest import DEMO_VIGNETTES


class HarnessBand:
    """The harness's Band signature: any unexpected field raises TypeError, as a dataclass does."""

    def __init__(
        self,
        *,
        sub_action,
        acceptable,
        provenance,
        source,
        clause,
        reasoning,
        adjudicated_by,
        disputed_span,
        notes,
    ):
        self.acceptable = acceptable
        self.is_adjudicated = bool(adjudicated_by)


def test_shared_drafts_export_as_the_harness_expects(shared_library, tmp_path):
    path = write_bands(tmp_path / "bands.yaml", bands_document(shared_library))
    bands = load_bands(path)
    assert set(bands) == {
        "draft_triage_01",
        "draft_ordering_01",
        "draft_medication_01",
        "draft_documentation_01",
    }
    got = {vid: entries[0] for vid, entries in bands.items()}
    assert got["draft_triage_01"]["acceptable"] == [2]
    assert got["draft_ordering_01"]["acceptable"] == [2, 3]
    assert got["draft_medication_01"]["acceptable"] == [1, 2]
    assert got["draft_documentation_01"]["acceptable"] == {"min": 1, "max": 14}
    assert got["draft_documentation_01"]["disputed_span"] == {"min": 15, "max": 30}
    for entry in got.values():
        assert entry["provenance"] == "author-derived"
        assert entry["adjudicated_by"] == []
        assert list(entry) == list(BAND_FIELDS)
        assert HarnessBand(**entry).is_adjudicated is False
    text = path.read_text()
    assert "FMA-CANARY" not in text and "!!python" not in text


def test_every_band_form_round_trips_through_the_file(tmp_path):
    library = load_library([DEMO_VIGNETTES])
    path = write_bands(tmp_path / "bands.yaml", bands_document(library))
    loaded = load_bands(path, extensions=True)
    seen_forms = set()
    for vignette in library:
        entries = {e["sub_action"]: e for e in loaded.get(vignette.id, [])}
        assert set(entries) == {p.sub_action for p in vignette.proposals}
        for proposal in vignette.proposals:
            entry = entries[proposal.sub_action]
            name, required = entry["sub_action"], entry.get("x_required")
            assert parse_band(name, entry["acceptable"], required=required) == proposal.acceptable
            if proposal.disputed_span is not None:
                span = parse_band(proposal.sub_action, entry["disputed_span"], span=True)
                assert span.values() == proposal.disputed_span.values()
            seen_forms.add(proposal.acceptable.form)
            # Nothing but a list or a {min, max} mapping ever reaches `acceptable`.
            assert type(entry["acceptable"]) in (list, dict)
            if isinstance(entry["acceptable"], dict):
                assert set(entry["acceptable"]) == {"min", "max"}
    assert seen_forms == {"set", "interval", "multilabel"}


def test_document_header_and_adjudicators(shared_library, tmp_path):
    stamp = datetime(2026, 11, 29, 18, 0, tzinfo=UTC)
    record = {
        "pseudonym": "adjudicator-01",
        "specialty": "geriatrics",
        "jurisdiction": "Australia",
        "years_post_registration": 12,
        "attestation_on_file": False,
        "attestation_date": None,
    }
    doc = bands_document(shared_library, adjudicators=[record], generated_at=stamp)
    assert doc["format"] == "fma-bands/v1"
    assert doc["generated_at"] == "2026-11-29T18:00:00Z"
    assert doc["policy"] == {"quorum": 1, "scope": "warn"}
    path = write_bands(tmp_path / "bands.yaml", doc)
    [adjudicator] = load_adjudicators(path)
    assert list(adjudicator) == list(ADJUDICATOR_FIELDS)
    assert adjudicator["anonymous_to_readers"] is True


def test_write_is_atomic(shared_library, tmp_path, monkeypatch):
    path = tmp_path / "bands.yaml"
    path.write_text("previous export\n")

    def crash(*args):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(FmaBandsError, match="disk full"):
        write_bands(path, bands_document(shared_library))
    assert path.read_text() == "previous export\n"
    assert os.listdir(tmp_path) == ["bands.yaml"]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda e: e.update(acceptable={"min": 1}), "lacks max"),
        (lambda e: e.update(acceptable={"min": 1, "max": 400}), "outside the domain"),
        (lambda e: e.update(adjudicated_by=["adjudicator-01"]), "ground truth"),
        (lambda e: e.pop("clause"), "lacks clause"),
    ],
)
def test_load_bands_refuses_hand_edited_traps(shared_library, tmp_path, edit, message):
    path = write_bands(tmp_path / "bands.yaml", bands_document(shared_library))
    data = yaml.safe_load(path.read_text())
    edit(data["bands"]["draft_documentation_01"][0])
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(FmaBandsError, match=message) as caught:
        load_bands(path)
    assert "bands.draft_documentation_01[0]" in str(caught.value)


def test_load_bands_refuses_other_files(tmp_path):
    path = tmp_path / "other.yaml"
    path.write_text("format: something-else\n")
    with pytest.raises(FmaBandsError, match="not a fma-bands/v1 file"):
        load_bands(path)


def test_exported_orders_keep_required_in_an_extension(tmp_path):
    library = load_library([DEMO_VIGNETTES])
    orders = [(v, p) for v in library for p in v.proposals if p.sub_action == "orders"]
    assert orders
    path = write_bands(tmp_path / "bands.yaml", bands_document(library))
    loaded = load_bands(path, extensions=True)
    for vignette, proposal in orders:
        [entry] = [e for e in loaded[vignette.id] if e["sub_action"] == "orders"]
        assert entry["acceptable"] == to_harness(proposal.acceptable)
        assert entry["x_required"] == list(proposal.acceptable.required)
