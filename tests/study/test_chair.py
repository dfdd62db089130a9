"""The chair's decision (docs/design.md, The registry) on a real store and folder: named in
the root-signed policy, signed by the chair's own key only once round 2 is closed and only for a
band its raters' bands still share no value on; granted by the registry as the chair's, exported
with the chair named (and loaded so by the real harness), and never counted as agreement."""

import ast
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import text

from fma_bands.agreement import report_to_json
from fma_bands.cli import cli
from fma_bands.core.errors import AccessDenied, FmaBandsError, WrongPassphrase
from fma_bands.evidence.export import (
    check_harness,
    export_document,
    load_adjudicators,
    load_bands,
    write_bands,
)
from fma_bands.evidence.harness import build, private_harness
from fma_bands.evidence.log import read_evidence
from fma_bands.evidence.overview import registry_rows, warning_lines
from fma_bands.evidence.policy import Policy, check_policy
from fma_bands.evidence.provenance import ADJUDICATED
from fma_bands.evidence.registry import decide
from fma_bands.store.db import session_scope
from fma_bands.study import chair, governance
from fma_bands.study.governance import policy_in_force
from fma_bands.study.ratings import study_report
from tests.cli.json_schema import check_outputs
from tests.conftest import SHARED
from tests.study import chair_study as cs

HARNESS = SHARED / "harness"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return cs.build(tmp_path_factory.mktemp("chair") / "study")


@pytest.fixture
def study(built, tmp_path):
    return cs.copy(built, tmp_path / "study")


def decisions(study):
    registry = decide(study.library, study.folder)
    assert registry.valid, registry.file_problems
    return {(d.vignette_id, d.sub_action): d for d in registry.decisions}, registry


def codes(decision):
    return [r.code for r in decision.reasons]


# The policy names the chair -------------------------------------------------------------------


def test_a_policy_names_a_chair_only_when_one_is_set():
    # Without a chair the record, and so its digest, is what it always was.
    assert Policy(2, "warn").as_dict() == {"quorum": 2, "scope": "warn"}
    assert Policy(2, "warn", "rater-03").as_dict() == {
        "quorum": 2,
        "scope": "warn",
        "chair": "rater-03",
    }
    for bad in ("", "Rater 03", 3, "x"):
        with pytest.raises(FmaBandsError) as refused:
            check_policy(1, "warn", chair=bad)
        assert refused.value.field == "chair"


def test_the_signed_policy_names_the_chair_and_only_an_enrolled_rater_can_be_it(study):
    evidence = read_evidence(study.folder)
    assert evidence.valid and evidence.policy == Policy(2, "warn", cs.CHAIR)
    assert "chair: rater-03" in (study.folder / "policy.yaml").read_text()
    engine = cs.engine_of(study)
    for name, said in (("coordinator", "not an enrolled rater"), ("nobody-99", "nobody-99")):
        with session_scope(engine) as s, pytest.raises(FmaBandsError) as refused:
            governance.set_policy(
                s,
                study.folder,
                actor=study.users["coordinator"],
                passphrase=cs.ROOT_PASS,
                quorum=2,
                scope="warn",
                chair=name,
            )
        assert said in refused.value.message and refused.value.field == "chair"
    with session_scope(engine) as s:
        assert policy_in_force(s) == Policy(2, "warn", cs.CHAIR)
    engine.dispose()


# Deciding ------------------------------------------------------------------------------------


def test_the_chair_decides_the_band_in_dispute_and_the_registry_says_it_is_the_chairs(study):
    engine = cs.engine_of(study)
    with session_scope(engine) as s:
        listed = chair.disputes(s, study.library, viewer=study.users[cs.CHAIR], folder=study.folder)
    assert [(d.vignette_id, d.sub_action, d.chaired) for d in listed] == [(*cs.ESI, None)]
    before, _ = decisions(study)
    assert codes(before[cs.ESI]) == ["no_consensus"] and not before[cs.ESI].adjudicated
    receipt = cs.decide_as_chair(study)
    [(sequence, _, file)] = receipt.records
    assert "-chair_decision-rater-03-" in file and (study.folder / file).is_file()
    statement = read_evidence(study.folder).chain[sequence].predicate["decision"]
    assert (
        "chair's decision where the raters did not agree, not a rater's review"
        in (statement["statement"])
    )
    after, registry = decisions(study)
    esi = after[cs.ESI]
    assert esi.provenance == ADJUDICATED and esi.band.values() == frozenset({2, 3})
    # The chair alone adjudicated the band granted: neither rater's band is it.
    assert esi.adjudicated_by == (cs.CHAIR,)
    # The raters' disagreement stays what it was: never counted as their agreement.
    assert (esi.n_raters, esi.intersection_rule) == (2, "empty")
    assert [w.code for w in esi.warnings if w.code == "chair_decision"] == ["chair_decision"]
    assert esi.as_dict()["warnings"].count("chair_decision") == 1
    assert esi.attestations[-1] == {
        "file": file,
        "keyid": receipt.keyid,
        "signed_at": esi.attestations[-1]["signed_at"],
        "sequence": sequence,
        "role": "chair",
    }
    assert registry.chaired[cs.ESI].chair == cs.CHAIR
    assert registry.valid_signers[cs.CHAIR]
    # The urgency band had its consensus and owes nothing to the chair.
    assert after[cs.URGENCY].adjudicated_by == ("rater-01", "rater-02")
    assert cs.URGENCY not in registry.chaired
    with session_scope(engine) as s:
        listed = chair.disputes(
            s, study.library, viewer=study.users["coordinator"], folder=study.folder
        )
        kinds = list(s.execute(text("select kind from audit_event")).scalars())
    assert [d.chaired.chair for d in listed if d.chaired] == [cs.CHAIR]
    assert "chair_decision_signed" in kinds
    engine.dispose()
    # rater-03 rated nothing of the band: nothing is said of the chair's own reading.
    assert "chair_rated" not in esi.as_dict()["warnings"]


def test_a_chair_who_rated_the_band_decides_it_and_the_registry_says_so(study, tmp_path):
    """The chair may be one of the raters (docs/design.md, The registry); a decision
    between readings one of which is the chair's own is said on the band, for an editor."""
    cs.name_chair(study, "rater-01")
    cs.decide_as_chair(study, who=study.users["rater-01"], passphrase=cs.passphrase("rater-01"))
    after, registry = decisions(study)
    esi = after[cs.ESI]
    assert esi.provenance == ADJUDICATED and registry.chaired[cs.ESI].chair == "rater-01"
    [rated] = [w for w in esi.warnings if w.code == "chair_rated"]
    assert rated.message == (
        "the study chair, rater-01, is also one of this band's counted raters: the band was "
        "decided by someone whose own reading was in dispute"
    )
    assert esi.as_dict()["warnings"].count("chair_rated") == 1
    # In words wherever the registry is read: its tag and its sentence.
    [row] = [
        r for r in registry_rows(registry, study.library) if (r.vignette_id, r.sub_action) == cs.ESI
    ]
    assert "chair also rated it" in row.tags
    # The export says it where the harness keeps it (notes), and a chair who rated nothing of
    # the band has no such sentence (the test above).
    document = export_document(study.library, study.folder, relative_to=tmp_path)
    [exported] = [b for b in document["bands"][cs.VID] if b["sub_action"] == "esi_acuity"]
    assert (
        "The chair, rater-01, is also one of these raters: the band was decided by someone "
        "whose own reading was in dispute." in exported["notes"]
    )
    assert any(
        line.startswith("The study's chair is also one of this band's raters")
        for line in warning_lines(esi)
    )


def test_the_export_says_the_chair_decided_and_the_harness_loads_it_with_the_chair_named(
    study, tmp_path
):
    cs.decide_as_chair(study, band=(2,), reason="ESI 2: chest pain needs a prompt ECG")
    document = export_document(study.library, study.folder, relative_to=tmp_path)
    [esi] = [b for b in document["bands"][cs.VID] if b["sub_action"] == "esi_acuity"]
    assert esi["provenance"] == ADJUDICATED and esi["acceptable"] == [2]
    assert esi["adjudicated_by"] == [cs.CHAIR]
    assert "decided by the study chair, rater-03, after round 2" in esi["notes"].lower()
    assert "is also one of these raters" not in esi["notes"]
    assert "the raters' bands shared no value" in esi["notes"]
    assert "not agreement between raters" in esi["reasoning"]
    assert esi["x_chair_decision"]["chair"] == cs.CHAIR
    assert esi["x_chair_decision"]["reason"] == "ESI 2: chest pain needs a prompt ECG"
    assert esi["x_agreement"] == {"n_raters": 2, "intersection_rule": "empty"}
    # rater-02's 3 is outside the chair's band: disputed, never silently dropped.
    assert esi["disputed_span"] == {"min": 3, "max": 3}
    [urgency] = [b for b in document["bands"][cs.VID] if b["sub_action"] == "urgency_score"]
    assert urgency["x_chair_decision"] is None
    [chair_record] = [a for a in document["adjudicators"] if a["pseudonym"] == cs.CHAIR]
    assert chair_record["attestation_on_file"] is True
    if not HARNESS.exists():
        pytest.skip(f"{HARNESS} is absent (../shared sits beside a full checkout only)")
    path = write_bands(tmp_path / "bands.yaml", document)
    assert check_harness(path, HARNESS).problems == []
    # The harness's own Band, built as the README's loader builds it: the chair is named and
    # registered with an attestation on file, or Band would refuse the band.
    with private_harness(HARNESS) as harness:
        built, check = build(harness, load_adjudicators(path), load_bands(path), path)
        assert check.problems == []
        [loaded] = [b for b in built[cs.VID] if b.sub_action == "esi_acuity"]
        assert loaded.provenance == ADJUDICATED and loaded.is_adjudicated
        assert list(loaded.adjudicated_by) == [cs.CHAIR]
        assert harness.registered[cs.CHAIR].attestation_on_file is True
        assert "decided by the study chair, rater-03" in loaded.notes.lower()


def test_a_later_decision_of_the_chair_replaces_the_earlier(study):
    cs.decide_as_chair(study, band=(2,), reason="first thought: 2")
    cs.decide_as_chair(study, band=(3,), reason="on reflection: 3")
    after, registry = decisions(study)
    assert after[cs.ESI].band.values() == frozenset({3})
    assert registry.chaired[cs.ESI].reason == "on reflection: 3"


def test_only_the_chair_decides_and_with_their_own_passphrase(study):
    for who in ("rater-01", "coordinator"):
        with pytest.raises(AccessDenied):
            cs.decide_as_chair(study, who=study.users[who], passphrase=cs.passphrase(who))
    with pytest.raises(WrongPassphrase):
        cs.decide_as_chair(study, passphrase="not the chair's passphrase")
    engine = cs.engine_of(study)
    with session_scope(engine) as s, pytest.raises(AccessDenied):
        chair.disputes(s, study.library, viewer=study.users["rater-01"], folder=study.folder)
    engine.dispose()
    assert not list(study.folder.glob("*-chair_decision-*"))


def test_a_band_not_in_dispute_a_bad_band_or_no_reason_is_refused_by_name(study):
    with pytest.raises(FmaBandsError) as refused:
        cs.decide_as_chair(study, name="urgency_score", band={"min": 60, "max": 70})
    assert "not in dispute" in refused.value.message and refused.value.field == "band"
    with pytest.raises(FmaBandsError) as refused:
        cs.decide_as_chair(study, band=(9,))
    assert refused.value.field == "band"
    with pytest.raises(FmaBandsError) as refused:
        cs.decide_as_chair(study, reason="   ")
    assert refused.value.field == "reason"
    assert not list(study.folder.glob("*-chair_decision-*"))


def test_nothing_is_decided_before_round_two_is_closed(study):
    engine = cs.engine_of(study)
    with engine.begin() as conn:  # the study as it was while round 2 was open
        conn.execute(text("update study_settings set phase = 'open'"))
    with session_scope(engine) as s, pytest.raises(AccessDenied) as refused:
        chair.disputes(s, study.library, viewer=study.users[cs.CHAIR], folder=study.folder)
    assert "once round 2 is closed" in refused.value.message
    engine.dispose()
    with pytest.raises(AccessDenied):
        cs.decide_as_chair(study)


# Never agreement ------------------------------------------------------------------------------


def test_agreement_is_the_same_before_and_after_the_chairs_decision(study):
    engine = cs.engine_of(study)

    def reports():
        with session_scope(engine) as s:
            viewer = study.users["coordinator"]
            return [
                report_to_json(study_report(s, study.library, viewer=viewer, bootstrap=0, round=n))
                for n in (1, 2)
            ]

    before = reports()
    cs.decide_as_chair(study)
    assert reports() == before
    engine.dispose()


def test_no_agreement_module_reads_a_chair_decision():
    """Agreement reads reviews only: nothing under fma_bands/agreement names the chair's
    decision, its module or the registry it is granted in."""
    root = Path(__file__).resolve().parents[2] / "fma_bands" / "agreement"
    for path in root.glob("*.py"):
        source = path.read_text(encoding="utf-8")
        assert "chair" not in source.lower(), path
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert node.module not in ("fma_bands.evidence.registry", "fma_bands.study.chair")


# The command line ---------------------------------------------------------------------------


def run(study, tmp_path, *args, who="coordinator"):
    secret = tmp_path / f"{who}.pass"
    secret.write_text((cs.ROOT_PASS if who == "coordinator" else cs.passphrase(who)) + "\n")
    base = ["--db", study.url, "--vignettes", str(study.root / "vignettes")]
    base += ["--attestations", str(study.folder), "--as", who, "--passphrase-file", str(secret)]
    return CliRunner().invoke(cli, [*base, *args])


def test_the_chair_decides_and_lists_from_the_command_line(study, tmp_path):
    listed = run(study, tmp_path, "chair", "list", "--json")
    assert listed.exit_code == 0, listed.output
    data = json.loads(listed.output)
    assert data["chair"] == cs.CHAIR
    assert [(b["sub_action"], b["decided_by"]) for b in data["bands"]] == [("esi_acuity", None)]
    secret = tmp_path / "chair.pass"
    secret.write_text(cs.passphrase(cs.CHAIR) + "\n")
    args = ["chair", "decide", "--rater", cs.CHAIR, "--passphrase-file", str(secret)]
    args += ["--vignette", cs.VID, "--sub-action", "esi_acuity", "--reason", "both fit"]
    bad = run(study, tmp_path, *args, "--band", "[2,")
    assert bad.exit_code != 0 and "--band is not JSON" in bad.output
    assert "Traceback" not in bad.output
    done = run(study, tmp_path, *args, "--band", "[2, 3]")
    assert done.exit_code == 0, done.output
    assert "the chair's decision is signed" in done.output
    decided = run(study, tmp_path, "chair", "list", "--json").output
    check_outputs("chair list", [listed.output, decided], "bands[].chair_decision.band.")
    data = json.loads(decided)
    [esi] = data["bands"]
    assert esi["decided_by"] == "chair" and esi["chair_decision"]["band"] == [2, 3]
    assert "chair_decision" in esi["warnings"]
    words = run(study, tmp_path, "chair", "list").output
    assert "decided by the chair, rater-03" in words
    # round show lists the band still in dispute, with the chair's decision signed for it.
    rounds = json.loads(run(study, tmp_path, "round", "show", "--json").output)
    assert rounds["chair_decisions"] == [
        {"vignette_id": cs.VID, "sub_action": "esi_acuity", "chair": cs.CHAIR}
    ]
    assert [d["sub_action"] for d in rounds["discordant"]] == ["esi_acuity"]
    shown = run(study, tmp_path, "round", "show").output
    assert f"    chair's decision: signed by {cs.CHAIR} (the registry grants" in shown
    # `verify` lists the chair's record in the folder's columns, however long its kind's name.
    listed_lines = [
        line for line in run(study, tmp_path, "verify").output.splitlines() if line.startswith("ok")
    ]
    assert any("chair_decision" in line for line in listed_lines)
    starts = {line.index(line.split()[-1]) for line in listed_lines}
    assert len(starts) == 1, listed_lines


def test_policy_set_names_the_chair_and_refuses_one_who_is_not_a_rater(study, tmp_path):
    refused = run(
        study,
        tmp_path,
        "policy",
        "set",
        "--quorum",
        "2",
        "--scope",
        "warn",
        "--chair",
        "coordinator",
    )
    assert refused.exit_code != 0 and "coordinator is not an enrolled rater" in refused.output
    dropped = run(study, tmp_path, "policy", "set", "--quorum", "2", "--scope", "warn")
    assert dropped.exit_code == 0, dropped.output
    assert "rater-03 is no longer the chair" in dropped.output
    named = run(
        study, tmp_path, "policy", "set", "--quorum", "2", "--scope", "warn", "--chair", "rater-01"
    )
    assert named.exit_code == 0 and "chair rater-01" in named.output
    shown = json.loads(run(study, tmp_path, "policy", "show", "--json").output)
    assert shown["policy"] == {"quorum": 2, "scope": "warn", "chair": "rater-01"}
