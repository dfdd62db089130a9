"""Attacks on the chair's decision (docs/design.md, The registry), each built with nothing
but `cryptography`, json and file writes (tests/evidence/test_registry.py's `forge`): a decision
signed by a rater who is not the chair, by the coordinator's root key, for a stale proposal, for a
band with consensus, replayed into another study, or left standing after the policy's chair
changed. Each grants nothing, and the registry says why with its reason code.

The keys an attacker signs with are unsealed from the store with their holder's passphrase: the
holder is the attacker (a rater who wants their band, the coordinator who holds the root)."""

import base64
import json

import pytest

from fma_bands.evidence.log import read_evidence
from fma_bands.evidence.provenance import ADJUDICATED
from fma_bands.evidence.registry import decide
from fma_bands.store.db import session_scope
from fma_bands.study.enrolment import root_signer
from fma_bands.study.governance import set_policy
from fma_bands.study.ledger import write_copies
from fma_bands.study.users import unlock_signing_key
from tests.evidence.test_registry import appended, forge, statement_of
from tests.study import chair_study as cs


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return cs.build(tmp_path_factory.mktemp("chair-attacks") / "study")


@pytest.fixture
def study(built, tmp_path):
    return cs.copy(built, tmp_path / "study")


def by_band(study):
    # The readable copies made again, as the next command would: only the signed records count.
    write_copies(study.folder, study.study_id)
    registry = decide(study.library, study.folder)
    return registry, {(d.vignette_id, d.sub_action): d for d in registry.decisions}


def codes(decision):
    return [r.code for r in decision.reasons]


def not_granted(decision):
    return decision.provenance != ADJUDICATED and decision.adjudicated_by == ()


def rater_key(study, name):
    engine = cs.engine_of(study)
    with session_scope(engine) as s:
        key, private = unlock_signing_key(s, study.users[name].id, cs.passphrase(name))
        keyid = key.keyid
    engine.dispose()
    return keyid, private


def the_chairs_decision(study):
    """The chair's real decision on the ESI band, as the app signs it: its file and statement."""
    [(_, _, file)] = cs.decide_as_chair(study).records
    path = study.folder / file
    return path, statement_of(path)


def as_signed_by(statement, name, keyid):
    forged = json.loads(json.dumps(statement))
    forged["predicate"]["signer"] = {"pseudonym": name, "keyid": keyid}
    return forged


def test_a_decision_signed_by_a_rater_who_is_not_the_chair_grants_nothing(study):
    path, statement = the_chairs_decision(study)
    path.unlink()  # the attacker's record takes the place the chair's held
    keyid, private = rater_key(study, "rater-01")
    forged = as_signed_by(statement, "rater-01", keyid)
    forge(study.folder / "000013-chair_decision-rater-01-forged.dsse.json", forged, private)
    registry, decisions = by_band(study)
    assert registry.valid, registry.file_problems  # a rostered key: the record stands
    esi = decisions[cs.ESI]
    assert not_granted(esi) and cs.ESI not in registry.chaired
    assert codes(esi) == ["no_consensus", "chair_not_chair"]
    assert "rater-01" in esi.reasons[-1].message


def test_a_decision_signed_by_the_coordinators_root_key_makes_the_folder_invalid(study):
    path, statement = the_chairs_decision(study)
    path.unlink()
    engine = cs.engine_of(study)
    with session_scope(engine) as s:
        root = root_signer(s, study.users["coordinator"], cs.ROOT_PASS)
    engine.dispose()
    for name in ("coordinator", cs.CHAIR):  # in their own name, and in the chair's
        forged = as_signed_by(statement, name, root.keyid)
        target = study.folder / f"000013-chair_decision-{name}-forged.dsse.json"
        forge(target, forged, root.private_key)
        registry, decisions = by_band(study)
        assert not registry.valid
        assert {p.code for p in registry.problems} == {"unrostered_key"}
        assert not_granted(decisions[cs.ESI]) and "folder_invalid" in codes(decisions[cs.ESI])
        assert registry.chaired == {}
        target.unlink()


def test_a_decision_for_a_stale_proposal_grants_nothing(study):
    path, statement = the_chairs_decision(study)
    path.unlink()
    stale = json.loads(json.dumps(statement))
    stale["predicate"]["decision"]["proposal_digest"] = "sha256:" + "0" * 64
    _keyid, private = rater_key(study, cs.CHAIR)
    forge(study.folder / "000013-chair_decision-rater-03-stale.dsse.json", stale, private)
    registry, decisions = by_band(study)
    assert registry.valid, registry.file_problems
    assert not_granted(decisions[cs.ESI])
    assert codes(decisions[cs.ESI]) == ["no_consensus", "chair_stale"]


def test_a_decision_on_a_band_with_consensus_changes_nothing(study):
    path, statement = the_chairs_decision(study)
    path.unlink()
    _keyid, private = rater_key(study, cs.CHAIR)
    other = json.loads(json.dumps(statement))
    urgency = study.library.band(*cs.URGENCY)[1]
    vignette = study.library.band(*cs.URGENCY)[0]
    other["predicate"]["decision"].update(
        sub_action="urgency_score",
        band={"min": 90, "max": 100},
        band_digest="sha256:" + urgency.band_digest.removeprefix("sha256:"),
        context_digest=vignette.context_digest_for("urgency_score"),
        proposal_digest=urgency.proposal_digest,
    )
    other["subject"] = [{"name": f"{cs.VID}/urgency_score", "digest": {"sha256": "0" * 64}}]
    forge(study.folder / "000013-chair_decision-rater-03-other.dsse.json", other, private)
    registry, decisions = by_band(study)
    assert registry.valid, registry.file_problems
    kept = decisions[cs.URGENCY]
    assert kept.adjudicated and kept.adjudicated_by == ("rater-01", "rater-02")
    assert kept.band.values() == frozenset(range(55, 86))  # the raters' consensus, not 90-100
    assert codes(kept) == ["chair_not_in_dispute"] and registry.chaired == {}
    assert not_granted(decisions[cs.ESI])


def test_a_decision_replayed_into_another_study_is_a_stray(study, tmp_path):
    path, _ = the_chairs_decision(study)
    other = cs.build(tmp_path / "other")  # its own root key: another study id
    assert other.study_id != study.study_id
    (other.folder / path.name).write_bytes(path.read_bytes())
    evidence = read_evidence(other.folder)
    assert evidence.valid
    assert {p.file: p.code for p in evidence.strays} == {path.name: "wrong_study"}
    registry, decisions = by_band(other)
    assert not_granted(decisions[cs.ESI]) and codes(decisions[cs.ESI]) == ["no_consensus"]
    assert registry.chaired == {}


def test_a_chair_replaced_afterwards_takes_their_decision_back(study):
    the_chairs_decision(study)
    registry, _ = by_band(study)
    assert cs.ESI in registry.chaired
    cs.name_chair(study, "rater-01")  # the coordinator names another chair
    registry, decisions = by_band(study)
    assert registry.valid, registry.file_problems
    assert not_granted(decisions[cs.ESI])
    assert codes(decisions[cs.ESI]) == ["no_consensus", "chair_not_chair"]
    # The band is still in dispute for the new chair, whose own decision settles it.
    cs.decide_as_chair(
        study, band=(2,), who=study.users["rater-01"], passphrase=cs.passphrase("rater-01")
    )
    registry, decisions = by_band(study)
    assert registry.chaired[cs.ESI].chair == "rater-01"
    assert decisions[cs.ESI].band.values() == frozenset({2})
    assert codes(decisions[cs.ESI]) == ["chair_not_chair"]  # rater-03's, said beside the grant


def test_a_decision_made_before_its_signer_was_named_chair_counts_for_nothing(study):
    # rater-01 signs a decision while rater-03 is chair, then has themselves named chair.
    path, statement = the_chairs_decision(study)
    path.unlink()
    keyid, private = rater_key(study, "rater-01")
    forged = as_signed_by(statement, "rater-01", keyid)
    forge(study.folder / "000013-chair_decision-rater-01-early.dsse.json", forged, private)
    engine = cs.engine_of(study)
    with session_scope(engine) as s:
        # The store's chain holds the chair's own record 13; the folder, the forgery. Sign the
        # policy on the folder's chain instead, as the coordinator's root key would.
        root = root_signer(s, study.users["coordinator"], cs.ROOT_PASS)
    engine.dispose()
    policies = sorted(study.folder.glob("*-policy-*.dsse.json"))
    policy = json.loads(json.dumps(statement_of(policies[-1])))
    policy["predicate"]["policy"]["chair"] = "rater-01"
    forge(
        study.folder / "000014-policy-coordinator-named.dsse.json",
        appended(study.folder, policy),
        root.private_key,
    )
    registry, decisions = by_band(study)
    assert registry.policy.chair == "rater-01"
    assert not_granted(decisions[cs.ESI])
    assert codes(decisions[cs.ESI]) == ["no_consensus", "chair_not_chair"]


def test_a_policy_without_a_chair_grants_nothing_on_a_decision(study):
    the_chairs_decision(study)
    engine = cs.engine_of(study)
    with session_scope(engine) as s:
        set_policy(
            s,
            study.folder,
            actor=study.users["coordinator"],
            passphrase=cs.ROOT_PASS,
            quorum=2,
            scope="warn",
        )
    engine.dispose()
    _registry, decisions = by_band(study)
    assert not_granted(decisions[cs.ESI])
    assert codes(decisions[cs.ESI]) == ["no_consensus", "chair_none"]


def test_a_decision_whose_band_was_edited_after_signing_makes_the_folder_invalid(study):
    path, _ = the_chairs_decision(study)
    envelope = json.loads(path.read_text())
    payload = json.loads(base64.b64decode(envelope["payload"]))
    payload["predicate"]["decision"]["band"] = [1]
    envelope["payload"] = base64.b64encode(
        json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()
    ).decode()
    path.write_text(json.dumps(envelope))
    registry, decisions = by_band(study)
    assert not registry.valid and not_granted(decisions[cs.ESI])
    assert "folder_invalid" in codes(decisions[cs.ESI])
