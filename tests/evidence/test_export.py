"""bands.yaml: harness-native form, round trips for every band form, atomic writes, loaders."""

import os
import shutil
from datetime import UTC, datetime

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from fma_bands.core.actions import SUB_ACTIONS, sub_action
from fma_bands.core.bands import band_from_values, consensus, parse_band, to_harness
from fma_bands.core.errors import FmaBandsError
from fma_bands.core.vignettes import load_library
from fma_bands.evidence import yaml_writer
from fma_bands.evidence.export import (
    ADJUDICATOR_FIELDS,
    BAND_FIELDS,
    attestations_header,
    bands_document,
    dump_bands,
    export_document,
    load_adjudicators,
    load_bands,
    load_into_harness,
    write_bands,
    write_export,
)
from fma_bands.evidence.harness import harness_note
from fma_bands.evidence.policy import Policy
from fma_bands.evidence.provenance import ADJUDICATED, Grant, Verdict
from fma_bands.evidence.registry import Registry, agreed_texts, decide
from tests.conftest import DEMO_VIGNETTES, SHARED
from tests.evidence import test_registry
from tests.evidence.test_harness import (
    HARNESS,
    fma,
    harness_package,
    require_shared,
    shipped_registry,
)
from tests.evidence.test_registry import payload_digest, replace_payload, statement_of

# The registry tests' signed study (adjudicator-01's hand-back, round 1 closed).
signed = test_registry.signed


@pytest.fixture(scope="module")
def shared_library():
    return load_library([require_shared(SHARED / "vignettes")])


@pytest.fixture
def harness():
    with shipped_registry(harness_package()) as package:
        yield package


def test_shared_drafts_export_as_the_harness_expects(shared_library, harness, tmp_path):
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
        band = harness.bands.Band(**entry)
        assert band.is_adjudicated is False
        assert vars(band) == entry
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
    doc = bands_document(
        shared_library, adjudicators=[record], generated_at=stamp, policy=Policy(2, "require")
    )
    assert doc["format"] == "fma-bands/v1"
    assert doc["generated_at"] == "2026-11-29T18:00:00Z"
    assert doc["policy"] == {"quorum": 2, "scope": "require"}
    assert "policy_problem" not in doc
    # Without a valid policy nothing is granted, and the header shows no made-up default.
    bare = bands_document(shared_library, policy_problem="policy.yaml: missing")
    assert (bare["policy"], bare["policy_problem"]) == (None, "policy.yaml: missing")
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


# What a band says about its adjudication ------------------------------------------------------


def test_a_band_not_adjudicated_keeps_the_proposals_text_and_carries_it_in_x_proposal(tmp_path):
    library = load_library([DEMO_VIGNETTES])
    document = bands_document(library)
    for vignette in library:
        for proposal, entry in zip(vignette.proposals, document["bands"][vignette.id], strict=True):
            assert (entry["reasoning"], entry["notes"]) == (proposal.reasoning, proposal.notes)
            assert entry["x_proposal"] == {
                k: v for k, v in proposal.as_data().items() if k != "sub_action"
            }
            assert entry["x_round"] is None and entry["adjudicated_by"] == []


def grant_for(proposal, verdicts, *, rule):
    bands = [v.band for v in verdicts]
    agreed = consensus(bands)
    band = bands[0] if len(bands) == 1 else agreed.band
    spare = agreed.disputed if len(bands) > 1 else frozenset()
    return Grant(
        provenance=ADJUDICATED,
        band=band,
        adjudicated_by=tuple(sorted(v.pseudonym for v in verdicts)),
        disputed_span=band_from_values(proposal.sub_action, spare) if spare else None,
        n_raters=len(verdicts),
        intersection_rule=rule,
        verdicts=tuple(verdicts),
        round=max(v.round for v in verdicts),
    )


def test_an_adjudicated_band_states_each_verdict_the_rule_and_the_round():
    library = load_library([DEMO_VIGNETTES])
    vignette = library.vignettes["demo_doc_border_01"]
    proposal = vignette.proposal("followup_days")
    week = parse_band("followup_days", {"min": 1, "max": 7})
    verdicts = [
        Verdict("rater-a", "emergency medicine", "AMEND", "Within a week.", week, 2),
        Verdict("rater-b", "geriatrics", "ACCEPT", None, proposal.acceptable, 2),
    ]
    grants = {(vignette.id, "followup_days"): grant_for(proposal, verdicts, rule="applied")}
    document = bands_document(library, grants=grants, policy=Policy(2, "require"))
    [entry] = [e for e in document["bands"][vignette.id] if e["sub_action"] == "followup_days"]
    assert entry["acceptable"] == {"min": 1, "max": 7}
    assert entry["disputed_span"] == {"min": 8, "max": 30}
    assert entry["x_round"] == 2
    assert entry["reasoning"] == (
        "Adjudicated in round 2 by 2 counted adjudicators. "
        'rater-a (emergency medicine): AMEND, {"min": 1, "max": 7} (1 day to 7 days); '
        'reason: "Within a week." '
        "rater-b (geriatrics): ACCEPT, the proposal as written, "
        '{"min": 1, "max": 30} (1 day to 30 days); no reason given. '
        'The band, {"min": 1, "max": 7}, is what every one of them admits (the intersection '
        "rule). Admitted by some of them but not all, or left disputed by one of them, and so "
        "disputed: 8 days to 30 days."
    )
    assert entry["notes"].startswith(
        "Clinician-adjudicated in round 2 under the policy quorum 2, scope require; by rater-a, "
        'rater-b (the intersection of their bands); band {"min": 1, "max": 7} (1 day to 7 days). '
        'The author-derived proposal, {"min": 1, "max": 30} (1 day to 30 days), travels unchanged'
    )
    assert proposal.notes not in entry["notes"]
    assert entry["x_proposal"]["notes"] == proposal.notes


def test_one_adjudicators_band_is_said_to_be_their_own():
    library = load_library([DEMO_VIGNETTES])
    vignette = library.vignettes["demo_med_border_01"]
    proposal = vignette.proposal("analgesia_tier")
    band = parse_band("analgesia_tier", [1, 3])
    verdict = Verdict("rater-a", "emergency medicine", "AMEND", "Strong opioid too.", band, 1)
    grants = {(vignette.id, "analgesia_tier"): grant_for(proposal, [verdict], rule="absent")}
    [entry, _] = bands_document(library, grants=grants)["bands"][vignette.id]
    assert entry["acceptable"] == [1, 3]
    assert entry["reasoning"].endswith(
        'reason: "Strong opioid too." The band, [1, 3], is rater-a\'s own: with one counted '
        "adjudicator the intersection rule does not bind."
    )
    assert "(one adjudicator: the intersection rule does not bind)" in entry["notes"]


@pytest.mark.parametrize("name", sorted(SUB_ACTIONS))
def test_the_harness_note_follows_the_kind_of_sub_action(name):
    kind = sub_action(name).kind
    for adjudicated in (False, True):
        note = harness_note(name, adjudicated)
        if kind not in ("boolean", "multilabel"):
            assert note is None
            continue
        assert ("TypeError" in note) == (kind == "boolean")
        assert ("x_required" in note) == (kind == "multilabel")
        assert ("ground truth for the record" in note) == adjudicated


# The attestations folder in the header --------------------------------------------------------


def test_the_header_names_the_folder_from_where_the_export_is_written(tmp_path):
    folder = tmp_path / "study" / "attestations"
    folder.mkdir(parents=True)
    registry = Registry([], Policy())
    assert attestations_header(registry, folder)["folder"] == "attestations"
    assert attestations_header(registry, folder, tmp_path / "study")["folder"] == "attestations"
    assert (
        attestations_header(registry, folder, tmp_path / "exports")["folder"]
        == "../study/attestations"
    )
    assert attestations_header(registry, folder, folder)["folder"] == "."


@pytest.fixture
def study_files(signed, tmp_path):
    """A copy of the signed study's folder, as study/attestations, and its study."""
    study, _, folders = signed
    folder = tmp_path / "study" / "attestations"
    shutil.copytree(folders["closed"], folder)
    return study, folder


def test_write_export_writes_bands_yaml_in_the_export_folder_only(study_files, tmp_path):
    study, folder = study_files
    before = sorted(p.name for p in folder.iterdir())
    export_dir = tmp_path / "exports"
    path = write_export(study.library, folder, export_dir)
    assert path == export_dir / "bands.yaml"
    assert [p.name for p in export_dir.iterdir()] == ["bands.yaml"]
    assert sorted(p.name for p in folder.iterdir()) == before
    header = yaml.safe_load(path.read_text())["attestations"]
    newest = sorted(folder.glob("*.dsse.json"))[-1]
    sequence = statement_of(newest)["predicate"]["log"]["sequence"]
    # The study and the head (sequence and digest) it was decided from, named in the header.
    assert header == {
        "folder": "../study/attestations",
        "study": study.study_id,
        "head": {"sequence": sequence, "digest": payload_digest(newest)},
        "valid": True,
    }
    assert (export_dir / header["folder"]).resolve() == folder.resolve()
    assert "provisional" not in yaml.safe_load(path.read_text())


def tampered(folder):
    """adjudicator-01's attestation edited after signing: the folder no longer verifies."""
    [envelope] = folder.glob("*-adjudication-*.dsse.json")
    statement = statement_of(envelope)
    statement["predicate"]["reviews"][0]["verdict"] = "ACCEPT"
    replace_payload(envelope, statement)
    return envelope


@pytest.mark.parametrize("how", ["tampered", "empty", "missing"])
def test_the_export_refuses_an_invalid_folder_and_writes_nothing(study_files, tmp_path, how):
    study, folder = study_files
    if how == "tampered":
        tampered(folder)
    elif how == "empty":
        shutil.rmtree(folder)
        folder.mkdir()
    else:
        shutil.rmtree(folder)
    export_dir = tmp_path / "exports"
    with pytest.raises(FmaBandsError) as refused:
        write_export(study.library, folder, export_dir)
    assert refused.value.code == "folder_invalid"
    assert "does not verify" in refused.value.message
    assert not export_dir.exists()
    with pytest.raises(FmaBandsError) as again:
        export_document(study.library, folder)
    assert again.value.code == "folder_invalid"


def test_a_provisional_export_writes_every_band_unadjudicated_and_says_why(
    study_files, tmp_path, harness
):
    study, folder = study_files
    assert decide(study.library, folder).valid  # granted before the tampering
    envelope = tampered(folder)
    document = export_document(study.library, folder, provisional=True, relative_to=tmp_path)
    assert "does not verify" in document["provisional"]
    assert envelope.name in document["provisional"] and "bad_signature" in document["provisional"]
    assert document["attestations"]["valid"] is False
    assert document["attestations"]["study"] == study.study_id
    entries = [e for group in document["bands"].values() for e in group]
    assert len(entries) == sum(len(v.proposals) for v in study.library)
    for entry in entries:
        assert entry["provenance"] != ADJUDICATED
        assert entry["adjudicated_by"] == [] and entry["x_attestations"] == []
    assert not any(a["attestation_on_file"] for a in document["adjudicators"])
    path = write_bands(tmp_path / "bands.yaml", document)
    assert yaml.safe_load(path.read_text())["provisional"] == document["provisional"]
    # The harness still loads it: every band author-derived.
    loaded = load_into_harness(path)
    assert not any(b.is_adjudicated for group in loaded.values() for b in group)


def test_the_harness_loads_the_export_of_the_signed_study(study_files, tmp_path, harness):
    study, folder = study_files
    path = write_export(study.library, folder, tmp_path / "exports")
    loaded = load_into_harness(path)
    assert all(b.is_adjudicated for group in loaded.values() for b in group)


def test_the_export_command_refuses_an_invalid_folder_unless_provisional(study_files, tmp_path):
    require_shared(HARNESS)
    _, folder = study_files
    args = ["--vignettes", str(SHARED / "vignettes"), "--attestations", str(folder), "export"]
    out = tmp_path / "bands.yaml"
    done = fma(*args, "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "(4 clinician-adjudicated)" in done.stdout
    out.unlink()
    tampered(folder)
    done = fma(*args, "--out", str(out))
    assert done.returncode == 1 and "does not verify" in done.stderr
    assert not out.exists()
    done = fma(*args, "--out", str(out), "--provisional")
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith("PROVISIONAL: ") and "(0 clinician-adjudicated)" in done.stdout
    assert yaml.safe_load(out.read_text())["provisional"]
    # Never into the attestations folder, not even provisionally.
    inside = folder / "bands.yaml"
    done = fma(*args, "--out", str(inside), "--provisional")
    assert done.returncode == 1 and not inside.exists()


# Written by libyaml where PyYAML has it, byte for byte as PyYAML's own emitter writes it --------


def python_dump(document) -> str:
    """What bands.yaml must be, byte for byte: plain yaml.dump with PyYAML's own emitter (and
    the resolver that quotes what YAML 1.2 reads as a number)."""
    return yaml.dump(
        dict(document),
        Dumper=yaml_writer.SafeDumper,
        sort_keys=False,
        allow_unicode=True,
        width=100,
    )


def test_the_export_is_the_pure_python_emitters_text_byte_for_byte(shared_library):
    document = bands_document(shared_library, generated_at=datetime(2026, 12, 1, tzinfo=UTC))
    assert dump_bands(document) == python_dump(document)
    demo = bands_document(load_library([DEMO_VIGNETTES]))
    assert dump_bands(demo) == python_dump(demo)


@pytest.mark.skipif(not hasattr(yaml, "CSafeDumper"), reason="PyYAML built without libyaml")
def test_libyaml_writes_an_export_of_plain_text_and_python_the_rest(monkeypatch):
    used = []
    real = yaml.emit

    def emit(events, **options):
        used.append(options["Dumper"])
        return real(events, **options)

    monkeypatch.setattr(yaml, "emit", emit)
    # Plain data never reaches yaml.dump: its events are built directly (yaml_writer).
    monkeypatch.setattr(yaml, "dump", None)
    dump_bands({"reasoning": "Plain words, a colon: and é.\nA second line."})
    dump_bands({"reasoning": "A tab\there"})
    dump_bands({"notes": ["ok", {"reason": "a space before a break \nhere"}]})
    dump_bands({"reason": "an emoji \U0001f600"})
    # Each quotes what YAML 1.2 reads as a number (yaml_writer.QuotingAsCore).
    assert used == [
        yaml_writer.C_SAFE_DUMPER,
        yaml_writer.SafeDumper,
        yaml_writer.SafeDumper,
        yaml_writer.SafeDumper,
    ]
    assert all(issubclass(d, yaml_writer.QuotingAsCore) for d in used)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300), st.text(alphabet=" \n\tab:é-\u2028\x85\U0001f600'\"", max_size=300))
def test_any_text_is_written_as_the_pure_python_emitter_writes_it(any_text, awkward):
    for text in (any_text, awkward, f"{awkward} {'word ' * 30}"):
        document = {"reasoning": text, "bands": {"v": [{"notes": text, "x": [text, 1, None]}]}}
        assert dump_bands(document) == python_dump(document)


# Cuts and scope ------------------------------------------------------------------------------


def demo_with_cuts(tmp_path):
    """Three demo vignettes: one whose analgesia proposal draws a line of its own, one whose
    follow-up proposal names the registered follow-up cut, one as shipped."""
    folder = tmp_path / "vignettes"
    folder.mkdir()
    edits = {
        "demo_med_border_01": ("    acceptable: [1, 2]\n", '    threshold: "value >= 1"\n'),
        "demo_doc_clear_01": (
            "    acceptable: {min: 2, max: 3}\n",
            "    threshold: followup_within_14\n",
        ),
        "demo_doc_border_01": None,
    }
    for name, edit in edits.items():
        text = (DEMO_VIGNETTES / f"{name}.yaml").read_text()
        if edit:
            assert text.count(edit[0]) == 1
            text = text.replace(edit[0], edit[0] + edit[1])
        (folder / f"{name}.yaml").write_text(text)
    library = load_library([folder])
    assert library.ok, library.problems
    return library


def cut(name, expression, straddles):
    return {"name": name, "expression": expression, "straddles": straddles}


def test_each_band_carries_its_named_cuts_with_their_straddles(tmp_path):
    document = bands_document(demo_with_cuts(tmp_path))

    def cuts(vid, name):
        [entry] = [e for e in document["bands"][vid] if e["sub_action"] == name]
        return entry["x_threshold"], entry["x_straddles"], entry["x_thresholds"]

    # The proposal's own line is the primary; the study-wide cuts stay after it.
    assert cuts("demo_med_border_01", "analgesia_tier") == (
        "value >= 1",
        False,
        [
            cut("proposal_threshold", "value >= 1", False),
            cut("any_opioid", "value >= 2", True),
            cut("strong_opioid", "value == 3", False),
        ],
    )
    # The follow-up cut, named by the proposal, or by its expression as shipped.
    assert cuts("demo_doc_clear_01", "followup_days") == (
        "value <= 14",
        False,
        [cut("followup_within_14", "value <= 14", False)],
    )
    assert cuts("demo_doc_border_01", "followup_days") == (
        "value <= 14",
        True,
        [cut("followup_within_14", "value <= 14", True)],
    )
    assert cuts("demo_doc_border_01", "admit") == (
        "value == true",
        False,
        [cut("admit", "value == true", False)],
    )


def test_a_granted_band_states_its_cuts_on_the_granted_values(tmp_path):
    library = demo_with_cuts(tmp_path)
    proposal = library.vignettes["demo_med_border_01"].proposal("analgesia_tier")
    band = parse_band("analgesia_tier", [0, 1])
    verdict = Verdict("rater-a", "emergency medicine", "AMEND", "No opioid.", band, 1)
    grants = {
        ("demo_med_border_01", "analgesia_tier"): grant_for(proposal, [verdict], rule="absent")
    }
    [entry, _] = bands_document(library, grants=grants)["bands"]["demo_med_border_01"]
    assert [(c["name"], c["straddles"]) for c in entry["x_thresholds"]] == [
        ("proposal_threshold", True),
        ("any_opioid", False),
        ("strong_opioid", False),
    ]


def test_an_out_of_scope_adjudicator_is_named_in_the_notes_and_an_in_scope_one_is_not():
    library = load_library([DEMO_VIGNETTES])
    vignette = library.vignettes["demo_med_border_01"]
    proposal = vignette.proposal("analgesia_tier")
    key = (vignette.id, "analgesia_tier")

    def notes(*verdicts):
        grants = {key: grant_for(proposal, list(verdicts), rule="applied")}
        document = bands_document(library, grants=grants, policy=Policy(1, "warn"))
        [entry] = [e for e in document["bands"][vignette.id] if e["sub_action"] == key[1]]
        return entry["notes"]

    band = proposal.acceptable
    inside = Verdict("rater-a", "emergency medicine", "ACCEPT", None, band, 1)
    outside = Verdict("rater-b", "geriatrics", "ACCEPT", None, band, 1)
    assert "Scope warning" not in notes(inside)
    said = notes(inside, outside)
    assert said.endswith(
        " Scope warning: rater-b, whose specialty is geriatrics, adjudicated this analgesia "
        "tier band (analgesia_tier), outside the specialties its scope rule names; the policy's "
        "scope is warn, and a second rater from that setting is advisable."
    )
    assert said.count("Scope warning") == 1


def test_a_clause_every_adjudicator_corrected_alike_replaces_the_proposals():
    library = load_library([DEMO_VIGNETTES])
    vignette = library.vignettes["demo_doc_border_01"]
    proposal = vignette.proposal("followup_days")
    clause = "Review within a month of discharge."
    fixed = {"clause": clause, "disputed_span": None}
    verdicts = [
        Verdict("rater-a", "geriatrics", "AMEND", "Clause.", proposal.acceptable, 1, fixed),
        Verdict("rater-b", "geriatrics", "AMEND", "Clause.", proposal.acceptable, 1, fixed),
    ]
    grant = grant_for(proposal, verdicts, rule="applied")
    agreed = Grant(**{**vars(grant), "corrected": agreed_texts(verdicts)})
    document = bands_document(
        library, grants={(vignette.id, "followup_days"): agreed}, policy=Policy(2, "warn")
    )
    [entry] = [e for e in document["bands"][vignette.id] if e["sub_action"] == "followup_days"]
    assert entry["clause"] == clause
    assert entry["source"] == proposal.source
    assert entry["x_proposal"]["clause"] == proposal.clause != clause
    assert f'corrected clause: "{clause}"; disputed span cleared' in entry["reasoning"]
    assert "The clause is as every counted adjudicator corrected it" in entry["reasoning"]

    # One of them corrects it differently: the proposal's clause stays, each correction quoted.
    other = Verdict("rater-b", "geriatrics", "AMEND", "Clause.", proposal.acceptable, 1,
                    {"clause": "Review within two weeks."})  # fmt: skip
    split = [verdicts[0], other]
    grant = grant_for(proposal, split, rule="applied")
    assert agreed_texts(split) == {}
    document = bands_document(
        library, grants={(vignette.id, "followup_days"): grant}, policy=Policy(2, "warn")
    )
    [entry] = [e for e in document["bands"][vignette.id] if e["sub_action"] == "followup_days"]
    assert entry["clause"] == proposal.clause
    assert 'corrected clause: "Review within two weeks."' in entry["reasoning"]
    assert "The proposal's clause stays: the counted adjudicators did not all" in entry["reasoning"]


def test_a_disputed_span_of_a_score_is_said_as_ranges_not_value_by_value():
    library = load_library([DEMO_VIGNETTES])
    vignette = library.vignettes["demo_triage_clear_01"]
    proposal = vignette.proposal("urgency_score")
    wide = parse_band("urgency_score", {"min": 40, "max": 90})
    narrow = parse_band("urgency_score", {"min": 60, "max": 80})
    verdicts = [
        Verdict("rater-a", "emergency medicine", "AMEND", "Wider.", wide, 1),
        Verdict("rater-b", "emergency medicine", "AMEND", "Narrower.", narrow, 1),
    ]
    grants = {(vignette.id, "urgency_score"): grant_for(proposal, verdicts, rule="applied")}
    document = bands_document(library, grants=grants, policy=Policy(2, "require"))
    [entry] = [e for e in document["bands"][vignette.id] if e["sub_action"] == "urgency_score"]
    assert entry["reasoning"].endswith("and so disputed: 40 to 59 and 81 to 90.")
