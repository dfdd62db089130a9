"""The band registry decides from files alone: every way an attestation can fail has its own
reason code, and what is granted is reproducible. One signed study is built per module (a
SQLite template); each test tampers with its own copy of the files or the store.
"""

import base64
import json
import shutil
import subprocess
import sys

import pytest
import yaml

from fma_bands.core.canonical import canonical_json
from fma_bands.core.errors import AccessDenied, FmaBandsError
from fma_bands.core.vignettes import load_library
from fma_bands.evidence.dsse import IN_TOTO_PAYLOAD_TYPE, sign_envelope
from fma_bands.evidence.export import export_document, load_adjudicators, load_bands, write_bands
from fma_bands.evidence.keys import generate_keypair, unseal_private_key
from fma_bands.evidence.log import read_evidence, read_folder, records_head
from fma_bands.evidence.policy import POLICY_FILE, Policy, read_policy, write_policy_file
from fma_bands.evidence.provenance import ADJUDICATED, REASONS
from fma_bands.evidence.registry import decide
from fma_bands.evidence.roster import read_adjudicators
from fma_bands.store.db import make_engine, session_scope, upgrade
from fma_bands.study import audit
from fma_bands.study.enrolment import activate, reset
from fma_bands.study.reviews import ReviewForm, current_review, save
from fma_bands.study.signing import revoke
from fma_bands.study.state import set_policy
from fma_bands.study.users import unlock_signing_key
from tests.study.test_signing import (
    ANSWERS,
    PASS_01,
    PASS_02,
    build_study,
    by_band,
    codes,
    copy_database,
    sign,
    statement_of,
)

DOC = "draft_documentation_01/followup_days"
TRIAGE = "draft_triage_01/esi_acuity"
ALL_BANDS = (
    DOC,
    TRIAGE,
    "draft_ordering_01/esi_acuity",
    "draft_medication_01/analgesia_tier",
)


@pytest.fixture(scope="module")
def signed(tmp_path_factory, shared_library):
    """adjudicator-01 has signed her hand-back; adjudicator-02 is enrolled but has signed
    nothing. Read only: tests copy what they change."""
    root = tmp_path_factory.mktemp("registry")
    url = f"sqlite:///{root / 'template.db'}"
    engine = make_engine(url)
    upgrade(engine)
    study = build_study(engine, shared_library, root, second_rater=True)
    engine.dispose()
    return study, url


@pytest.fixture
def files(signed, tmp_path):
    """A copy of the attestations folder; the study's envelope path inside the copy."""
    study, _ = signed
    folder = tmp_path / "attestations"
    shutil.copytree(study.folder, folder)
    return study, folder, folder / study.envelope.name


@pytest.fixture
def store(signed, files, tmp_path):
    """A copy of the store as well as of the files, for tests that sign or revoke."""
    _, url = signed
    engine = make_engine(copy_database(url, tmp_path / "copy.db"))
    yield engine
    engine.dispose()


def vignettes_copy(library, tmp_path):
    folder = tmp_path / "vignettes"
    folder.mkdir()
    for vignette in library:
        shutil.copy(vignette.path, folder)
    return folder


def edit_file(path, old, new):
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def reload(folder):
    library = load_library([folder])
    assert library.ok, library.problems
    return library


def replace_payload(path, statement):
    """Replace the payload of an envelope file, keeping its signature."""
    envelope = json.loads(path.read_text())
    envelope["payload"] = base64.b64encode(canonical_json(statement)).decode()
    path.write_text(json.dumps(envelope))


def forge(path, statement, private_key, keyid):
    envelope = sign_envelope(canonical_json(statement), IN_TOTO_PAYLOAD_TYPE, private_key, keyid)
    path.write_text(json.dumps(envelope))


def error_codes(folder):
    """Each attestation's or revocation's error code (None when it verifies)."""
    _, checked = read_folder(folder)
    return {c.path.name: c.error[0] if c.error else None for c in checked if c.kind != "record"}


def not_granted(decision):
    return decision.provenance != ADJUDICATED and decision.adjudicated_by == ()


# The untouched study --------------------------------------------------------------------------


def test_every_reason_code_has_a_sentence():
    for code in (
        "no_attestation",
        "bad_signature",
        "unknown_key",
        "wrong_signer",
        "wrong_subject",
        "digest_mismatch",
        "stale_context",
        "quorum_not_met",
        "declined",
        "no_consensus",
        "out_of_scope",
        "revoked",
        "duplicate_key",
        "unsigned_record",
        "proposal_changed",
        "missing_record",
        "no_policy",
    ):
        assert REASONS[code].strip(), code


def test_the_signed_study_is_granted_and_the_decision_is_reproducible(files):
    study, folder, envelope = files
    first = by_band(decide(study.library, folder))
    assert all(first[name].provenance == ADJUDICATED for name in ALL_BANDS)
    assert first[DOC].as_dict()["acceptable"] == {"min": 1, "max": 30}
    assert first[DOC].attestations == [
        {
            "file": envelope.name,
            "keyid": study.a.keyid,
            "signed_at": statement_of(envelope)["predicate"]["signature_manifestation"][
                "signed_at"
            ],
        }
    ]
    again = by_band(decide(study.library, folder))
    assert {k: d.as_dict() for k, d in again.items()} == {k: d.as_dict() for k, d in first.items()}


def test_no_attestation_leaves_bands_as_the_files_say(signed, tmp_path):
    study, _ = signed
    write_policy_file(tmp_path / "empty", Policy())
    registry = decide(study.library, tmp_path / "empty")
    for decision in registry.decisions:
        assert decision.provenance == "author-derived"
        assert codes(decision) == ["no_attestation"]
        assert decision.adjudicated_by == ()


# Tampering ------------------------------------------------------------------------------------


def test_1_an_edited_payload_is_a_bad_signature(files):
    study, folder, envelope = files
    statement = statement_of(envelope)
    [doc] = [r for r in statement["predicate"]["reviews"] if r["sub_action"] == "followup_days"]
    doc["attested_band"] = {"min": 1, "max": 90}
    statement["predicate"]["reviews"][0]["verdict"] = "ACCEPT"
    replace_payload(envelope, statement)

    assert error_codes(folder) == {envelope.name: "bad_signature"}
    decisions = by_band(decide(study.library, folder))
    for name in ALL_BANDS:
        assert not_granted(decisions[name])
        assert "bad_signature" in codes(decisions[name])
    assert decisions[DOC].as_dict()["acceptable"] == {"min": 1, "max": 14}


def test_an_edited_payload_with_a_malformed_review_still_gets_a_decision(files):
    study, folder, envelope = files
    statement = statement_of(envelope)
    statement["predicate"]["reviews"][0]["vignette_id"] = ["draft_documentation_01"]
    replace_payload(envelope, statement)
    assert error_codes(folder) == {envelope.name: "bad_signature"}
    registry = decide(study.library, folder)
    assert not any(d.adjudicated for d in registry.decisions)
    reported = [c for d in registry.decisions for c in codes(d)] + registry.file_problems
    assert any("bad_signature" in r for r in reported)


def test_2_a_band_edited_after_signing_is_a_digest_mismatch(files, tmp_path):
    study, folder, envelope = files
    vignettes = vignettes_copy(study.library, tmp_path)
    edit_file(vignettes / "draft_documentation_01.yaml", "    max: 14\n", "    max: 10\n")
    library = reload(vignettes)
    decisions = by_band(decide(library, folder))
    assert not_granted(decisions[DOC])
    assert "digest_mismatch" in codes(decisions[DOC])
    assert decisions[DOC].as_dict()["acceptable"] == {"min": 1, "max": 10}
    assert decisions[TRIAGE].provenance == ADJUDICATED
    assert error_codes(folder) == {envelope.name: None}


def test_3_a_clinical_core_edited_after_signing_makes_it_stale(files, tmp_path):
    study, folder, _ = files
    vignettes = vignettes_copy(study.library, tmp_path)
    edit_file(vignettes / "draft_triage_01.yaml", "HR 92", "HR 96")
    decisions = by_band(decide(reload(vignettes), folder))
    assert not_granted(decisions[TRIAGE])
    assert "stale_context" in codes(decisions[TRIAGE])
    assert "digest_mismatch" not in codes(decisions[TRIAGE])
    assert decisions[DOC].provenance == ADJUDICATED


def test_4_a_signature_by_an_unenrolled_key_is_unknown(files):
    study, folder, envelope = files
    statement = statement_of(envelope)
    pair = generate_keypair("a stranger's passphrase")
    forged = folder / "adjudicator-01-forged.dsse.json"
    forge(
        forged,
        statement,
        unseal_private_key(pair.sealed_private_key, "a stranger's passphrase"),
        pair.keyid,
    )
    envelope.unlink()

    assert error_codes(folder) == {forged.name: "unknown_key"}
    decisions = by_band(decide(study.library, folder))
    for name in ALL_BANDS:
        assert not_granted(decisions[name])
        assert "unknown_key" in codes(decisions[name])


def test_5_an_enrolled_key_signing_for_another_pseudonym_is_the_wrong_signer(files, store):
    study, folder, envelope = files
    statement = statement_of(envelope)
    assert statement["predicate"]["adjudicator"]["pseudonym"] == "adjudicator-01"
    with session_scope(store) as s:
        _, key_02 = unlock_signing_key(s, study.b.id, PASS_02)
    forged = folder / "adjudicator-01-by-02.dsse.json"
    forge(forged, statement, key_02, study.b.keyid)
    envelope.unlink()

    assert error_codes(folder) == {forged.name: "wrong_signer"}
    decisions = by_band(decide(study.library, folder))
    for name in ALL_BANDS:
        assert not_granted(decisions[name])
        assert "wrong_signer" in codes(decisions[name])


def test_6_an_envelope_copied_for_an_identical_band_of_another_vignette(files, tmp_path):
    study, folder, envelope = files
    vignettes = vignettes_copy(study.library, tmp_path)
    copy = vignettes / "draft_documentation_99.yaml"
    copy.write_text(
        (vignettes / "draft_documentation_01.yaml")
        .read_text()
        .replace("id: draft_documentation_01", "id: draft_documentation_99")
        .replace("FMA-CANARY-documentation-01-b3a1", "FMA-CANARY-documentation-99-0000")
    )
    shutil.copy(envelope, folder / "draft_documentation_99-copy.dsse.json")
    library = reload(vignettes)
    assert (
        library.vignettes["draft_documentation_99"].proposals[0].acceptable
        == library.vignettes["draft_documentation_01"].proposals[0].acceptable
    )

    decisions = by_band(decide(library, folder))
    copied = decisions["draft_documentation_99/followup_days"]
    assert not_granted(copied)
    assert {"wrong_subject", "no_attestation"} <= set(codes(copied))
    assert decisions[DOC].provenance == ADJUDICATED


def test_7_a_declined_band_counts_for_nothing(files, store, tmp_path):
    study, _, _ = files
    with session_scope(store) as s:
        save(
            s,
            study.library,
            study.b,
            "draft_triage_01",
            "esi_acuity",
            ReviewForm(verdict="DECLINE", reason="I cannot judge this presentation."),
            expected_version=0,
            submit=True,
        )
    only_02 = tmp_path / "only-02"
    sign(store, study.library, study.b, PASS_02, only_02)
    [decision] = [
        d for d in decide(study.library, only_02).decisions if d.vignette_id == "draft_triage_01"
    ]
    assert decision.provenance == "author-derived"
    assert decision.adjudicated_by == ()
    assert "declined" in codes(decision)


def test_8_quorum_two_with_one_rater_is_not_met(files):
    study, folder, _ = files
    registry = decide(study.library, folder, quorum=2)
    assert registry.policy == Policy(2, "warn")
    for decision in registry.decisions:
        assert not_granted(decision)
        assert "quorum_not_met" in codes(decision)


def amend_02(engine, library, rater, band, version=0):
    with session_scope(engine) as s:
        return save(
            s,
            library,
            rater,
            "draft_documentation_01",
            "followup_days",
            ReviewForm(verdict="AMEND", band=band, reason="My own reading.", answers=ANSWERS),
            expected_version=version,
            submit=True,
        )


def test_9_two_raters_consensus_is_the_intersection_or_nothing(files, store, tmp_path):
    study, folder, _ = files
    first = amend_02(store, study.library, study.b, {"min": 31, "max": 60})
    sign(store, study.library, study.b, PASS_02, folder)
    decision = by_band(decide(study.library, folder))[DOC]
    assert not_granted(decision)
    assert "no_consensus" in codes(decision)
    assert decision.as_dict()["acceptable"] == {"min": 1, "max": 14}

    # Her later signature supersedes the earlier one for this band.
    amend_02(store, study.library, study.b, {"min": 7, "max": 60}, version=first.version)
    sign(store, study.library, study.b, PASS_02, folder)
    decision = by_band(decide(study.library, folder))[DOC]
    assert decision.provenance == ADJUDICATED, codes(decision)
    assert decision.as_dict()["acceptable"] == {"min": 7, "max": 30}
    assert decision.adjudicated_by == ("adjudicator-01", "adjudicator-02")
    assert (decision.n_raters, decision.intersection_rule) == (2, "applied")
    assert {a["keyid"] for a in decision.attestations} == {study.a.keyid, study.b.keyid}
    disputed = decision.disputed_span.values()
    assert disputed == frozenset(range(1, 7)) | frozenset(range(31, 61))


def test_10_out_of_scope_is_refused_when_the_scope_is_required(files):
    study, folder, _ = files
    decisions = by_band(decide(study.library, folder, scope="require"))
    for name in ALL_BANDS[1:]:
        assert not_granted(decisions[name])
        assert "out_of_scope" in codes(decisions[name])
    assert decisions[DOC].provenance == ADJUDICATED


def test_11_a_revoked_attestation_counts_for_nothing(files, store, tmp_path):
    study, folder, envelope = files
    with session_scope(store) as s:
        revocation = revoke(
            s,
            rater=study.a,
            passphrase=PASS_01,
            attestation=envelope,
            reason="signed the wrong hand-back",
            folder=folder,
        )
    _, checked = read_folder(folder)
    [found] = [c for c in checked if c.path == revocation]
    assert (found.error, found.kind, found.pseudonym) == (None, "revocation", "adjudicator-01")
    assert statement_of(revocation)["predicate"]["revokes"] == envelope.name

    decisions = by_band(decide(study.library, folder))
    for name in ALL_BANDS:
        assert not_granted(decisions[name])
        assert "revoked" in codes(decisions[name])
    path = write_bands(tmp_path / "bands.yaml", export_document(study.library, folder))
    [adjudicator_01] = [a for a in load_adjudicators(path) if a["pseudonym"] == "adjudicator-01"]
    assert adjudicator_01["attestation_on_file"] is False


def test_a_revoked_attestation_stays_revoked_under_another_file_name(files, store):
    """A revocation names the payload's digest: renaming the revoked file (git mv, a copy)
    must not bring the attestation back."""
    study, folder, envelope = files
    with session_scope(store) as s:
        revoke(
            s,
            rater=study.a,
            passphrase=PASS_01,
            attestation=envelope,
            reason="signed the wrong hand-back",
            folder=folder,
        )
    envelope.rename(folder / "adjudicator-01-renamed.dsse.json")
    decisions = by_band(decide(study.library, folder))
    for name in ALL_BANDS:
        assert not_granted(decisions[name]), name
        assert "revoked" in codes(decisions[name])


def test_a_later_attestation_by_the_same_rater_supersedes_the_earlier(files, store):
    study, folder, envelope = files
    with session_scope(store) as s:
        current = current_review(
            s, study.library, study.a, "draft_documentation_01", "followup_days"
        )
        save(
            s,
            study.library,
            study.a,
            "draft_documentation_01",
            "followup_days",
            ReviewForm(
                verdict="AMEND",
                band={"min": 1, "max": 21},
                reason="Three weeks at most.",
                answers=ANSWERS,
            ),
            expected_version=current.version,
            submit=True,
        )
    signed_at = statement_of(envelope)["predicate"]["signature_manifestation"]["signed_at"]
    later = sign(store, study.library, study.a, PASS_01, folder)
    assert statement_of(later)["predicate"]["signature_manifestation"]["signed_at"] > signed_at
    assert error_codes(folder) == {envelope.name: None, later.name: None}

    decision = by_band(decide(study.library, folder))[DOC]
    assert decision.provenance == ADJUDICATED
    assert decision.as_dict()["acceptable"] == {"min": 1, "max": 21}
    assert [a["file"] for a in decision.attestations] == [later.name]


# Policy ---------------------------------------------------------------------------------------


def test_the_policy_is_the_coordinators_and_round_trips(files, store):
    study, folder, _ = files
    (folder / POLICY_FILE).unlink()
    with session_scope(store) as s, pytest.raises(AccessDenied):
        set_policy(s, folder, actor=study.a, quorum=2, scope="require")
    assert not (folder / POLICY_FILE).exists()
    with pytest.raises(FmaBandsError, match=r"no policy\.yaml") as missing:
        read_policy(folder)
    assert missing.value.code == "no_policy"

    with session_scope(store) as s:
        written = set_policy(s, folder, actor=study.coordinator, quorum=2, scope="require")
    assert written == Policy(2, "require")
    assert read_policy(folder) == written
    assert yaml.safe_load((folder / POLICY_FILE).read_text()) == {"quorum": 2, "scope": "require"}
    with session_scope(store) as s:
        [event] = audit.events(s, kinds=["policy_set"])
    assert event["actor"] == "coordinator"
    assert event["payload"] == {"from": None, "to": {"quorum": 2, "scope": "require"}}


@pytest.mark.parametrize(("quorum", "scope"), [(0, "warn"), (1, "always"), (True, "warn")])
def test_a_bad_policy_is_refused(files, store, quorum, scope):
    study, folder, _ = files
    (folder / POLICY_FILE).unlink()
    with session_scope(store) as s, pytest.raises(FmaBandsError):
        set_policy(s, folder, actor=study.coordinator, quorum=quorum, scope=scope)
    assert not (folder / POLICY_FILE).exists()


def test_overrides_apply_and_the_export_records_the_policy_used(files, store, tmp_path):
    study, folder, _ = files
    with session_scope(store) as s:
        set_policy(s, folder, actor=study.coordinator, quorum=2, scope="require")

    stored = decide(study.library, folder)
    assert stored.policy == Policy(2, "require")
    decisions = by_band(stored)
    assert {"quorum_not_met"} <= set(codes(decisions[DOC]))
    assert {"out_of_scope", "quorum_not_met"} <= set(codes(decisions[TRIAGE]))
    assert not any(d.adjudicated for d in stored.decisions)

    overridden = decide(study.library, folder, quorum=1, scope="warn")
    assert overridden.policy == Policy(1, "warn")
    assert all(d.adjudicated for d in overridden.decisions)
    only_scope = decide(study.library, folder, quorum=1)
    assert only_scope.policy == Policy(1, "require")
    assert [
        d.adjudicated for d in only_scope.decisions if f"{d.vignette_id}/{d.sub_action}" == DOC
    ] == [True]

    as_stored = write_bands(tmp_path / "stored.yaml", export_document(study.library, folder))
    assert yaml.safe_load(as_stored.read_text())["policy"] == {"quorum": 2, "scope": "require"}
    assert all(not e["adjudicated_by"] for g in load_bands(as_stored).values() for e in g)
    granted = export_document(study.library, folder, quorum=1, scope="warn")
    sensitivity = write_bands(tmp_path / "sensitivity.yaml", granted)
    assert yaml.safe_load(sensitivity.read_text())["policy"] == {"quorum": 1, "scope": "warn"}
    # Adjudicated bands, their attestations and reasoning: written as plain yaml.dump writes them.
    options = {"sort_keys": False, "allow_unicode": True, "width": 100}
    plain = yaml.dump(granted, Dumper=yaml.SafeDumper, **options)
    assert sensitivity.read_bytes() == plain.encode("utf-8")
    assert all(
        e["adjudicated_by"] == ["adjudicator-01"]
        for g in load_bands(sensitivity).values()
        for e in g
    )


# Files alone, and what they cannot be made to say ----------------------------------------------


def test_the_registry_reads_files_without_the_database():
    code = (
        "import sys, fma_bands.evidence.registry, fma_bands.evidence.log\n"
        "import fma_bands.evidence.roster, fma_bands.evidence.envelope\n"
        "assert 'sqlmodel' not in sys.modules and 'sqlalchemy' not in sys.modules, "
        "sorted(m for m in sys.modules if m.startswith('sql'))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


PROPOSAL_EDITS = {
    "source": ("ADA Standards of Care", "ADA Standards of Kare"),
    "clause": ("within one month of discharge", "within two months of discharge"),
    "reasoning": ("Resolving mild DKA", "Resolved mild DKA"),
    "notes": ("PROVISIONAL, not adjudicated.", "Adjudicated."),
    "disputed_span": ("    min: 15\n    max: 30\n", "    min: 15\n    max: 29\n"),
    "threshold": ("  source: 'ADA", "  threshold: value <= 21\n  source: 'ADA"),
    "provenance": ("provenance: author-derived", "provenance: guideline-derived"),
}


@pytest.mark.parametrize("field", list(PROPOSAL_EDITS))
def test_any_proposal_field_edited_after_signing_is_proposal_changed(files, tmp_path, field):
    study, folder, _ = files
    vignettes = vignettes_copy(study.library, tmp_path)
    edit_file(vignettes / "draft_documentation_01.yaml", *PROPOSAL_EDITS[field])
    decisions = by_band(decide(reload(vignettes), folder))
    assert not_granted(decisions[DOC])
    assert codes(decisions[DOC]) == ["proposal_changed", "quorum_not_met"]
    assert decisions[TRIAGE].provenance == ADJUDICATED


def signed_statement(path):
    return statement_of(path), json.loads(path.read_text())


def latest_record(folder, pseudonym="adjudicator-01"):
    return sorted(folder.glob(f"{pseudonym}-*-record.dsse.json"))[-1]


def test_one_key_under_two_pseudonyms_counts_for_neither(files, store):
    """adjudicator-01's key also signs a public record and an attestation as adjudicator-99,
    to meet a quorum of two on her own."""
    study, folder, envelope = files
    with session_scope(store) as s:
        key, private_key = unlock_signing_key(s, study.a.id, PASS_01)
    record = statement_of(latest_record(folder))
    record["predicate"]["record"]["pseudonym"] = "adjudicator-99"
    record["predicate"]["record"]["specialty"] = "emergency medicine"
    forge(folder / "adjudicator-99-record.dsse.json", record, private_key, key.keyid)
    attestation = statement_of(envelope)
    attestation["predicate"]["adjudicator"]["pseudonym"] = "adjudicator-99"
    forge(folder / "adjudicator-99.dsse.json", attestation, private_key, key.keyid)

    assert set(error_codes(folder).values()) == {"duplicate_key"}
    for quorum in (1, 2):
        decisions = by_band(decide(study.library, folder, quorum=quorum))
        for name in ALL_BANDS:
            assert not_granted(decisions[name])
            assert {"duplicate_key", "quorum_not_met"} <= set(codes(decisions[name]))


def test_an_altered_public_record_is_unsigned(files):
    study, folder, _ = files
    path = latest_record(folder)
    record = statement_of(path)
    record["predicate"]["record"]["specialty"] = "emergency medicine"
    replace_payload(path, record)
    _, checked = read_folder(folder)
    assert {c.path.name: c.error[0] for c in checked if c.error} == {path.name: "unsigned_record"}
    decisions = by_band(decide(study.library, folder, scope="require"))
    # The altered record is also no longer the record the attestation was signed beside.
    for name in ALL_BANDS:
        assert not_granted(decisions[name])
        assert "missing_record" in codes(decisions[name])


def test_an_edited_adjudicators_yaml_changes_no_grant(files):
    """adjudicators.yaml is for people: making the geriatrician an emergency physician there
    does not put triage in her scope, and verify names the edit."""
    study, folder, _ = files
    before = {
        k: d.as_dict() for k, d in by_band(decide(study.library, folder, scope="require")).items()
    }
    edit_file(
        folder / "adjudicators.yaml", "specialty: geriatrics", "specialty: emergency medicine"
    )
    after = decide(study.library, folder, scope="require")
    assert {k: d.as_dict() for k, d in by_band(after).items()} == before
    assert not_granted(by_band(after)[TRIAGE])
    assert any(
        p.startswith("unsigned_record: adjudicators.yaml gives") for p in after.file_problems
    )
    assert read_evidence(folder).problems[0][0] == "unsigned_record"


def test_an_attestation_with_no_self_signed_record_is_unsigned(files):
    study, folder, envelope = files
    statement = statement_of(envelope)
    statement["predicate"]["adjudicator"]["pseudonym"] = "adjudicator-77"
    pair = generate_keypair("a stranger's passphrase")
    forged = folder / "adjudicator-77.dsse.json"
    forge(
        forged,
        statement,
        unseal_private_key(pair.sealed_private_key, "a stranger's passphrase"),
        pair.keyid,
    )
    assert error_codes(folder)[forged.name] == "unsigned_record"
    assert "unsigned_record" in codes(by_band(decide(study.library, folder))[DOC])


@pytest.mark.parametrize("policy", [None, "quorum: 0\nscope: warn\n", "quorum: 1\n", "[1, 2]\n"])
def test_without_a_valid_policy_nothing_is_granted(files, policy):
    study, folder, _ = files
    if policy is None:
        (folder / POLICY_FILE).unlink()
    else:
        (folder / POLICY_FILE).write_text(policy)
    registry = decide(study.library, folder)
    for decision in registry.decisions:
        assert not_granted(decision)
        assert "no_policy" in codes(decision)
    assert registry.valid_signers == {}
    # Overriding quorum and scope for a sensitivity run does not stand in for the policy.
    assert not any(
        d.adjudicated for d in decide(study.library, folder, quorum=1, scope="warn").decisions
    )


def test_a_deleted_revocation_is_a_missing_record(files, store):
    """Deleting a revocation does not restore the grants: the next record signed names it."""
    study, folder, envelope = files
    with session_scope(store) as s:
        revocation = revoke(
            s,
            rater=study.a,
            passphrase=PASS_01,
            attestation=envelope,
            reason="wrong hand-back",
            folder=folder,
        )
    amend_02(store, study.library, study.b, {"min": 7, "max": 60})
    later = sign(store, study.library, study.b, PASS_02, folder)
    assert revocation.name in {link["file"] for link in statement_of(later)["predicate"]["records"]}
    revocation.unlink()

    registry = decide(study.library, folder)
    for decision in registry.decisions:
        assert not_granted(decision)
        assert "missing_record" in codes(decision)
    assert any(revocation.name in p for p in registry.file_problems)
    assert registry.valid_signers == {}


def test_the_head_counts_and_digests_every_record(files):
    _, folder, envelope = files
    count, digest = records_head(folder)
    assert count == len(list(folder.glob("*.dsse.json"))) == 4  # 3 records, 1 attestation
    assert digest.startswith("sha256:") and len(digest) == 71
    copy = folder.parent / "copy"
    shutil.copytree(folder, copy)
    assert records_head(copy) == (count, digest)  # file names and places do not matter
    envelope.unlink()
    assert records_head(folder)[0] == count - 1 and records_head(folder)[1] != digest


def test_a_reset_retires_the_key_keeps_old_signatures_and_shows_the_change(files, store):
    study, folder, envelope = files
    with session_scope(store) as s:
        old_key, old_private = unlock_signing_key(s, study.a.id, PASS_01)
        code = reset(s, actor=study.coordinator, pseudonym="adjudicator-01")
    with session_scope(store) as s:
        made = activate(
            s,
            pseudonym="adjudicator-01",
            code=code,
            passphrase="a brand new passphrase",
            folder=folder,
        )
    assert made is not None and made.keyid != old_key.keyid

    published = read_adjudicators(folder)["adjudicator-01"]
    keys = published["keys"]
    assert [k["keyid"] for k in keys] == [old_key.keyid, made.keyid]
    assert keys[0]["retired"] is not None and keys[1]["retired"] is None
    decisions = by_band(decide(study.library, folder))
    # Her attestation signed with the old key still stands, and the key change shows.
    assert decisions[DOC].provenance == ADJUDICATED
    assert "key_changed" in [w.code for w in decisions[DOC].warnings]
    # The old key cannot sign any more: its private half is gone from the store ...
    with session_scope(store) as s:
        assert unlock_signing_key(s, study.a.id, "a brand new passphrase")[0].keyid == made.keyid
    # ... and a signature made with a copy of it after the reset is refused.
    statement = statement_of(envelope)
    statement["predicate"]["signature_manifestation"]["signed_at"] = "2999-01-01T00:00:00.000000Z"
    forged = folder / "adjudicator-01-backdated.dsse.json"
    forge(forged, statement, old_private, old_key.keyid)
    assert error_codes(folder)[forged.name] == "unknown_key"


def test_the_registry_says_what_it_was_decided_from(files):
    study, folder, _ = files
    registry = decide(study.library, folder)
    assert registry.head == records_head(folder) and registry.policy_problem is None
    (folder / POLICY_FILE).unlink()
    missing = decide(study.library, folder)
    assert "no policy.yaml" in missing.policy_problem
