"""The band registry decides from files alone: every way an attestation can fail has its own
reason code, and what is granted is reproducible. One signed study is built per module through
the store (a SQLite template, kept with round 1 open and after it closed); each test tampers
with its own copy of the files or the store.

Attacks on the folder are built here with nothing but `cryptography`, json and file writes
(`forge`, `chain_end`): no project internals make the forged bytes.
"""

import base64
import hashlib
import json
import shutil
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from fma_bands.core.errors import AccessDenied, FmaBandsError, WrongPassphrase
from fma_bands.core.protocol import DECLARATIONS
from fma_bands.core.vignettes import load_library
from fma_bands.evidence import envelope as envelope_module
from fma_bands.evidence import kept_parses
from fma_bands.evidence.export import (
    SECTIONS,
    export_document,
    load_adjudicators,
    load_bands,
    write_bands,
)
from fma_bands.evidence.kept_parses import keep_parses_in
from fma_bands.evidence.log import read_evidence
from fma_bands.evidence.policy import POLICY_FILE, Policy
from fma_bands.evidence.provenance import ADJUDICATED, REASONS
from fma_bands.evidence.registry import Registry, decide
from fma_bands.evidence.roster import ADJUDICATORS_FILE
from fma_bands.store.db import make_engine, session_scope, upgrade
from fma_bands.study import audit, ledger
from fma_bands.study.enrolment import activate, create_first_coordinator, reset
from fma_bands.study.governance import policy_in_force, set_policy
from fma_bands.study.handback import import_handback
from fma_bands.study.identity import set_identity
from fma_bands.study.reviews import ReviewForm, current_review, save
from fma_bands.study.rounds import close_round
from fma_bands.study.signing import attest, revoke
from fma_bands.study.state import set_mode
from fma_bands.study.state import study as study_settings
from fma_bands.study.users import unlock_signing_key
from tests.conftest import HANDBACK, enrol_study

COORDINATOR_PASS = "coordinator pass"  # tests/conftest.py enrol_study's
PASS_01 = "passphrase one"
PASS_02 = "passphrase two"
DOC = "draft_documentation_01/followup_days"
TRIAGE = "draft_triage_01/esi_acuity"
ALL_BANDS = (
    DOC,
    TRIAGE,
    "draft_ordering_01/esi_acuity",
    "draft_medication_01/analgesia_tier",
)
IDENTITY = {
    "full_name": "Imogen Quillfeather-Ashdown",
    "primary_qualification": "MBBS Wollongbar Zeta",
    "postgraduate_qualification": "FRACP Gerontic Zeta",
    "registration_number": "MED0009912345",
    "registering_body": "Wollongbar Practitioner Board",
    "institution": "Quillfeather Memorial Infirmary",
    "email": "imogen.q.ashdown@example.org",
}
# Complete answers to the six protocol questions (q5 is needed where a disputed span exists).
ANSWERS = {
    "q1": {"choice": "yes"},
    "q2": {"choice": "yes"},
    "q3": {"choice": "no"},
    "q4": {"choice": "no"},
    "q5": {"choice": "disputed", "note": "The wider reading is right for this patient."},
    "q6": {"choice": "yes"},
}
IN_TOTO = "application/vnd.in-toto+json"


# The study ------------------------------------------------------------------------------------


@dataclass
class Study:
    library: object
    coordinator: object
    a: object
    b: object
    study_id: str
    envelope: str  # the file name of adjudicator-01's attestation


def identities(s, coordinator, key_path):
    for name in ("adjudicator-01", "adjudicator-02"):
        record = {k: f"{v} {name}" for k, v in IDENTITY.items()} | {"email": f"{name}@ex.org"}
        set_identity(
            s,
            actor=coordinator,
            pseudonym=name,
            record=record,
            key_path=key_path,
            passphrase=COORDINATOR_PASS,
            folder=None,
        )


def sign(engine, library, rater, passphrase, folder, *, now=None, confirm=False):
    """The rater signs every current submitted review (a receipt; sealed while the round is
    open)."""
    with session_scope(engine) as s:
        return attest(
            s,
            library,
            rater=rater,
            passphrase=passphrase,
            meaning="adjudication",
            declarations=list(DECLARATIONS),
            folder=folder,
            confirm_imported=confirm,
            now=now,
        )


def close(engine, study, folder):
    """Close round 1, which publishes the attestations sealed during it into `folder`."""
    with session_scope(engine) as s:
        close_round(s, actor=study.coordinator, folder=folder)


def copy_database(source: Path, target: Path) -> str:
    """A copy of a SQLite study (the backup API: a consistent copy of a closed engine's file)."""
    with sqlite3.connect(source) as old, sqlite3.connect(target) as new:
        old.backup(new)
    return f"sqlite:///{target}"


@pytest.fixture(scope="module")
def signed(tmp_path_factory, shared_library):
    """The store and folder at three moments: `roster` (the root and both raters enrolled and
    activated, no policy), `open` (the policy set, adjudicator-01's hand-back imported and
    signed, round 1 still open: her attestation sealed in the store) and `closed` (round 1
    closed: her attestation published). adjudicator-02 has signed nothing. Read only."""
    root = tmp_path_factory.mktemp("registry")
    engine = make_engine(f"sqlite:///{root / 'study.db'}")
    upgrade(engine)
    folders = {name: root / name / "attestations" for name in ("roster", "open", "closed")}
    with session_scope(engine) as s:
        coordinator, a, b = enrol_study(s, shared_library)
        identities(s, coordinator, root / "identity.key")
    with session_scope(engine) as s:
        ledger.publish(s, folders["roster"])
    with session_scope(engine) as s:
        set_policy(s, None, actor=coordinator, passphrase=COORDINATOR_PASS, quorum=1, scope="warn")
        import_handback(
            s,
            shared_library,
            actor=coordinator,
            rater_pseudonym="adjudicator-01",
            text=HANDBACK.read_text(),
            source=HANDBACK.name,
        )
    receipt = sign(engine, shared_library, a, PASS_01, None, confirm=True)
    with session_scope(engine) as s:
        ledger.publish(s, folders["open"])
        study_id = study_settings(s).study_id
    engine.dispose()
    shutil.copy(root / "study.db", root / "open.db")
    engine = make_engine(f"sqlite:///{root / 'study.db'}")
    study = Study(shared_library, coordinator, a, b, study_id, receipt.records[0][2])
    close(engine, study, folders["closed"])
    engine.dispose()
    assert (folders["closed"] / study.envelope).is_file()
    assert not (folders["open"] / study.envelope).exists()
    return study, root, folders


@pytest.fixture
def files(signed, tmp_path):
    """A copy of the closed study's attestations folder, and the attestation's path in it."""
    study, _, folders = signed
    folder = tmp_path / "attestations"
    shutil.copytree(folders["closed"], folder)
    return study, folder, folder / study.envelope


@pytest.fixture
def store(signed, files, tmp_path):
    """A copy of the closed study's store as well as of its files."""
    _, root, _ = signed
    engine = make_engine(copy_database(root / "study.db", tmp_path / "copy.db"))
    yield engine
    engine.dispose()


@pytest.fixture
def opened(signed, tmp_path):
    """A copy of the study with round 1 still open (adjudicator-01's attestation sealed):
    (study, engine, folder)."""
    study, root, folders = signed
    folder = tmp_path / "open" / "attestations"
    shutil.copytree(folders["open"], folder)
    engine = make_engine(copy_database(root / "open.db", tmp_path / "open.db"))
    yield study, engine, folder
    engine.dispose()


# Reading, tampering and forging with nothing but the standard library and cryptography --------


def statement_of(path: Path) -> dict:
    return json.loads(base64.b64decode(json.loads(path.read_text())["payload"]))


def payload_digest(path: Path) -> str:
    return (
        "sha256:"
        + hashlib.sha256(base64.b64decode(json.loads(path.read_text())["payload"])).hexdigest()
    )


def chain_end(folder: Path) -> tuple[int, str]:
    """The newest record's (sequence, payload digest), as anyone can read them from the files."""
    newest = max(
        folder.glob("*.dsse.json"), key=lambda p: statement_of(p)["predicate"]["log"]["sequence"]
    )
    return statement_of(newest)["predicate"]["log"]["sequence"], payload_digest(newest)


def keyid_of(private_key) -> str:
    from cryptography.hazmat.primitives import serialization

    raw = private_key.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    return "sha256:" + hashlib.sha256(raw).hexdigest()


def forge(path: Path, statement: dict, private_key, keyid: str | None = None) -> Path:
    """A DSSE envelope around `statement`, signed with `private_key` (PAE, Ed25519)."""
    body = json.dumps(statement, sort_keys=True, separators=(",", ":")).encode()
    pae = b"DSSEv1 %d %s %d %s" % (len(IN_TOTO), IN_TOTO.encode(), len(body), body)
    envelope = {
        "payload": base64.b64encode(body).decode(),
        "payloadType": IN_TOTO,
        "signatures": [
            {
                "keyid": keyid or keyid_of(private_key),
                "sig": base64.b64encode(private_key.sign(pae)).decode(),
            }
        ],
    }
    path.write_text(json.dumps(envelope))
    return path


def stranger():
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    return Ed25519PrivateKey.generate()


def replace_payload(path: Path, statement: dict) -> None:
    """Replace the payload of an envelope file, keeping its signature."""
    envelope = json.loads(path.read_text())
    body = json.dumps(statement, sort_keys=True, separators=(",", ":")).encode()
    envelope["payload"] = base64.b64encode(body).decode()
    path.write_text(json.dumps(envelope))


def appended(folder: Path, statement: dict) -> dict:
    """`statement` moved to the place after the folder's newest record."""
    sequence, digest = chain_end(folder)
    moved = json.loads(json.dumps(statement))
    moved["predicate"]["log"]["sequence"] = sequence + 1
    moved["predicate"]["log"]["previous"] = digest
    return moved


def edit_file(path, old, new):
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def vignettes_copy(library, tmp_path):
    folder = tmp_path / "vignettes"
    folder.mkdir()
    for vignette in library:
        shutil.copy(vignette.path, folder)
    return folder


def reload(folder):
    library = load_library([folder])
    assert library.ok, library.problems
    return library


# What the registry says -----------------------------------------------------------------------


def codes(decision) -> list[str]:
    return [r.code for r in decision.reasons]


def by_band(registry: Registry) -> dict:
    return {f"{d.vignette_id}/{d.sub_action}": d for d in registry.decisions}


def problems(folder, **pinned) -> dict[str, str]:
    """file -> code of each problem that makes the folder invalid ('' names the folder), but
    for the readable copies: a chain cut short no longer matches adjudicators.yaml, which
    names its head (every_problem keeps them)."""
    return {f: c for f, c in every_problem(folder, **pinned).items() if c != "copy_differs"}


def every_problem(folder, **pinned) -> dict[str, str]:
    return {p.file: p.code for p in read_evidence(folder, **pinned).problems}


def strays(folder, **pinned) -> dict[str, str]:
    return {p.file: p.code for p in read_evidence(folder, **pinned).strays}


def not_granted(decision):
    return decision.provenance != ADJUDICATED and decision.adjudicated_by == ()


def granted(study, folder, **options) -> dict:
    """Each band's decision as data; every one of ALL_BANDS granted."""
    registry = decide(study.library, folder, **options)
    assert registry.valid, registry.file_problems
    decisions = by_band(registry)
    assert all(decisions[name].provenance == ADJUDICATED for name in ALL_BANDS)
    return {k: d.as_dict() for k, d in decisions.items()}


def nothing_granted(study, folder, code="folder_invalid") -> Registry:
    """The folder is invalid (or lacks a policy): every band is refused, with `code`."""
    registry = decide(study.library, folder)
    for decision in registry.decisions:
        assert not_granted(decision), decision
        assert code in codes(decision)
    assert registry.valid_signers == {}
    return registry


# The untouched study --------------------------------------------------------------------------


def test_every_reason_code_has_a_sentence_and_the_removed_ones_are_gone():
    for code in (
        "no_attestation",
        "bad_signature",
        "unknown_key",
        "wrong_subject",
        "digest_mismatch",
        "stale_context",
        "quorum_not_met",
        "declined",
        "no_consensus",
        "out_of_scope",
        "revoked",
        "duplicate_key",
        "proposal_changed",
        "no_policy",
        "wrong_study",
        "unrostered_key",
        "folder_invalid",
        "stray_file",
        "malformed",
    ):
        assert REASONS[code].strip(), code
    for removed in ("unsigned_record", "missing_record", "wrong_signer"):
        assert removed not in REASONS, removed


def test_the_signed_study_is_granted_and_the_decision_is_reproducible(files):
    study, folder, envelope = files
    registry = decide(study.library, folder)
    assert registry.valid and registry.strays == [] and registry.study == study.study_id
    first = by_band(registry)
    assert all(first[name].provenance == ADJUDICATED for name in ALL_BANDS)
    assert first[DOC].as_dict()["acceptable"] == {"min": 1, "max": 30}
    statement = statement_of(envelope)
    assert first[DOC].attestations == [
        {
            "file": envelope.name,
            "keyid": statement["predicate"]["signer"]["keyid"],
            "signed_at": statement["predicate"]["signed_at"],
            "sequence": statement["predicate"]["log"]["sequence"],
        }
    ]
    again = by_band(decide(study.library, folder))
    assert {k: d.as_dict() for k, d in again.items()} == {k: d.as_dict() for k, d in first.items()}


def test_an_open_rounds_folder_holds_no_attestation_and_grants_nothing(signed):
    """Blinding of the folder: while round 1 is open adjudicator-01's attestation is sealed in
    the store, so the folder verifies, holds no review, and every band is as its file says."""
    study, _, folders = signed
    folder = folders["open"]
    assert not any("-adjudication-" in p.name for p in folder.iterdir())
    registry = decide(study.library, folder)
    assert registry.valid and registry.policy_problem is None
    for decision in registry.decisions:
        assert decision.provenance == "author-derived"
        assert codes(decision) == ["no_attestation"]
        assert decision.adjudicated_by == ()


# Tampering ------------------------------------------------------------------------------------


def test_1_an_edited_payload_makes_the_folder_invalid_and_grants_nothing(files):
    study, folder, envelope = files
    statement = statement_of(envelope)
    [doc] = [r for r in statement["predicate"]["reviews"] if r["sub_action"] == "followup_days"]
    doc["attested_band"] = {"min": 1, "max": 90}
    statement["predicate"]["reviews"][0]["verdict"] = "ACCEPT"
    replace_payload(envelope, statement)

    assert problems(folder) == {envelope.name: "bad_signature"}
    registry = nothing_granted(study, folder)
    assert any(envelope.name in p and "bad_signature" in p for p in registry.file_problems)
    assert by_band(registry)[DOC].as_dict()["acceptable"] == {"min": 1, "max": 14}


def test_an_edited_payload_with_a_malformed_review_still_gets_a_decision(files):
    study, folder, envelope = files
    statement = statement_of(envelope)
    statement["predicate"]["reviews"][0]["vignette_id"] = ["draft_documentation_01"]
    replace_payload(envelope, statement)
    assert problems(folder) == {envelope.name: "bad_signature"}
    registry = nothing_granted(study, folder)
    assert len(registry.decisions) == len(ALL_BANDS)


def test_2_a_band_edited_after_signing_is_a_digest_mismatch(files, tmp_path):
    study, folder, _ = files
    vignettes = vignettes_copy(study.library, tmp_path)
    edit_file(vignettes / "draft_documentation_01.yaml", "    max: 14\n", "    max: 10\n")
    decisions = by_band(decide(reload(vignettes), folder))
    assert not_granted(decisions[DOC])
    assert "digest_mismatch" in codes(decisions[DOC])
    assert decisions[DOC].as_dict()["acceptable"] == {"min": 1, "max": 10}
    assert decisions[TRIAGE].provenance == ADJUDICATED
    assert problems(folder) == {}


def test_3_a_clinical_core_edited_after_signing_makes_it_stale(files, tmp_path):
    study, folder, _ = files
    vignettes = vignettes_copy(study.library, tmp_path)
    edit_file(vignettes / "draft_triage_01.yaml", "HR 92", "HR 96")
    decisions = by_band(decide(reload(vignettes), folder))
    assert not_granted(decisions[TRIAGE])
    assert "stale_context" in codes(decisions[TRIAGE])
    assert "digest_mismatch" not in codes(decisions[TRIAGE])
    assert decisions[DOC].provenance == ADJUDICATED


def test_4_an_attestation_re_signed_by_a_stranger_in_its_place_is_refused(files):
    """The attestation replaced by the same statement under a key nobody enrolled (the
    attacker's own): no record verifies at its place, so the folder is invalid. Claiming her
    key id, the signature is by a key that is not hers (unknown_key); claiming its own, the
    roster gives that key to nobody (unrostered_key)."""
    study, folder, envelope = files
    key = stranger()
    statement = statement_of(envelope)
    forged = forge(folder / "forged.dsse.json", statement, key)
    envelope.unlink()
    assert problems(folder) == {forged.name: "unknown_key"}
    nothing_granted(study, folder)

    statement["predicate"]["signer"]["keyid"] = keyid_of(key)
    forge(forged, statement, key)
    assert problems(folder) == {forged.name: "unrostered_key"}
    nothing_granted(study, folder)


def test_4b_a_strangers_record_beside_the_real_one_is_a_stray_and_changes_nothing(files):
    study, folder, envelope = files
    before = granted(study, folder)
    statement = statement_of(envelope)
    statement["predicate"]["reviews"][0]["verdict"] = "ACCEPT"
    forged = forge(folder / "forged.dsse.json", statement, stranger())
    assert problems(folder) == {}
    assert strays(folder) == {forged.name: "stray_file"}
    assert granted(study, folder) == before


def test_5_an_enrolled_key_signing_for_another_pseudonym_is_refused(files, store):
    """adjudicator-02's real key signs adjudicator-01's statement, claiming to be her key and
    then claiming to be its own: neither verifies at the attestation's place."""
    study, folder, envelope = files
    statement = statement_of(envelope)
    assert statement["predicate"]["signer"]["pseudonym"] == "adjudicator-01"
    with session_scope(store) as s:
        key_02, private_02 = unlock_signing_key(s, study.b.id, PASS_02)
    as_hers = forge(
        folder / "as-hers.dsse.json",
        statement,
        private_02,
        statement["predicate"]["signer"]["keyid"],
    )
    envelope.unlink()
    assert problems(folder) == {as_hers.name: "bad_signature"}
    nothing_granted(study, folder)

    as_hers.unlink()
    statement["predicate"]["signer"]["keyid"] = key_02.keyid
    own = forge(folder / "own-key.dsse.json", statement, private_02)
    assert problems(folder) == {own.name: "unrostered_key"}
    nothing_granted(study, folder)


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

    registry = decide(library, folder)
    assert registry.valid
    assert {p.file: p.code for p in registry.strays} == {
        "draft_documentation_99-copy.dsse.json": "stray_file"
    }
    decisions = by_band(registry)
    copied = decisions["draft_documentation_99/followup_days"]
    assert not_granted(copied)
    assert {"wrong_subject", "no_attestation"} <= set(codes(copied))
    assert decisions[DOC].provenance == ADJUDICATED


def save_review(engine, library, rater, band_name, form, version=0):
    vid, name = band_name.split("/")
    with session_scope(engine) as s:
        return save(s, library, rater, vid, name, form, expected_version=version, submit=True)


def test_7_a_declined_band_counts_for_nothing(opened):
    study, engine, folder = opened
    decline = ReviewForm(verdict="DECLINE", reason="I cannot judge this presentation.")
    save_review(engine, study.library, study.b, TRIAGE, decline)
    sign(engine, study.library, study.b, PASS_02, folder)
    close(engine, study, folder)
    decision = by_band(decide(study.library, folder))[TRIAGE]
    # adjudicator-01's attestation alone meets quorum 1; adjudicator-02's decline counts for none.
    assert decision.adjudicated_by == ("adjudicator-01",)
    assert "declined" in codes(decision)
    [said] = [r.message for r in decision.reasons if r.code == "declined"]
    assert "adjudicator-02" in said and '"I cannot judge this presentation."' in said
    # The export's notes (which the harness keeps) say the decline, with its reason.
    document = export_document(study.library, folder)
    vid, name = TRIAGE.split("/")
    [entry] = [
        e
        for part in SECTIONS
        for e in document.get(part, {}).get(vid, [])
        if e["sub_action"] == name
    ]
    assert entry["adjudicated_by"] == ["adjudicator-01"]
    assert "Signed but not counted: " + said in entry["notes"]
    two = by_band(decide(study.library, folder, quorum=2))[TRIAGE]
    assert not_granted(two)
    assert {"declined", "quorum_not_met"} <= set(codes(two))


def test_8_quorum_two_with_one_rater_is_not_met(files):
    study, folder, _ = files
    registry = decide(study.library, folder, quorum=2)
    assert registry.policy == Policy(2, "warn")
    for decision in registry.decisions:
        assert not_granted(decision)
        assert "quorum_not_met" in codes(decision)


def amend(band):
    return ReviewForm(verdict="AMEND", band=band, reason="My own reading.", answers=ANSWERS)


def test_9_two_raters_without_a_common_value_is_no_consensus(opened):
    study, engine, folder = opened
    save_review(engine, study.library, study.b, DOC, amend({"min": 31, "max": 60}))
    sign(engine, study.library, study.b, PASS_02, folder)
    close(engine, study, folder)
    decision = by_band(decide(study.library, folder))[DOC]
    assert not_granted(decision)
    assert "no_consensus" in codes(decision)
    assert decision.as_dict()["acceptable"] == {"min": 1, "max": 14}


def test_9b_consensus_is_the_intersection_of_each_raters_latest(opened):
    study, engine, folder = opened
    first = save_review(engine, study.library, study.b, DOC, amend({"min": 31, "max": 60}))
    sign(engine, study.library, study.b, PASS_02, folder)
    # Her later signature supersedes the earlier one for this band.
    save_review(engine, study.library, study.b, DOC, amend({"min": 7, "max": 60}), first.version)
    later = sign(engine, study.library, study.b, PASS_02, folder)
    close(engine, study, folder)
    decision = by_band(decide(study.library, folder))[DOC]
    assert decision.provenance == ADJUDICATED, codes(decision)
    assert decision.as_dict()["acceptable"] == {"min": 7, "max": 30}
    assert decision.adjudicated_by == ("adjudicator-01", "adjudicator-02")
    assert (decision.n_raters, decision.intersection_rule) == (2, "applied")
    assert [a["file"] for a in decision.attestations] == [study.envelope, later.records[0][2]]
    disputed = decision.disputed_span.values()
    assert disputed == frozenset(range(1, 7)) | frozenset(range(31, 61))


def test_10_out_of_scope_is_refused_when_the_scope_is_required(files):
    study, folder, _ = files
    decisions = by_band(decide(study.library, folder, scope="require"))
    for name in ALL_BANDS[1:]:
        assert not_granted(decisions[name])
        assert "out_of_scope" in codes(decisions[name])
    assert decisions[DOC].provenance == ADJUDICATED


def revoke_01(store, study, folder, reason="signed the wrong hand-back"):
    with session_scope(store) as s:
        receipt = revoke(
            s,
            rater=study.a,
            passphrase=PASS_01,
            attestation=study.envelope,
            reason=reason,
            folder=folder,
        )
    return folder / receipt.records[0][2]


def test_11_a_revoked_attestation_counts_for_nothing(files, store, tmp_path):
    study, folder, envelope = files
    revocation = revoke_01(store, study, folder)
    # Signed once the round is closed, the revocation is published at once.
    assert revocation.is_file()
    statement = statement_of(revocation)
    assert statement["predicate"]["revokes"] == payload_digest(envelope)
    assert statement["predicate"]["signer"]["pseudonym"] == "adjudicator-01"
    assert read_evidence(folder).revoked == {payload_digest(envelope)}

    registry = decide(study.library, folder)
    assert registry.valid
    for name in ALL_BANDS:
        assert not_granted(by_band(registry)[name])
        assert "revoked" in codes(by_band(registry)[name])
    path = write_bands(tmp_path / "bands.yaml", export_document(study.library, folder))
    [adjudicator_01] = [a for a in load_adjudicators(path) if a["pseudonym"] == "adjudicator-01"]
    assert adjudicator_01["attestation_on_file"] is False


def test_a_revoked_attestation_stays_revoked_under_another_file_name(files, store):
    """A revocation names the payload's digest: renaming the revoked file (git mv, a copy)
    must not bring the attestation back."""
    study, folder, envelope = files
    revoke_01(store, study, folder)
    envelope.rename(folder / "adjudicator-01-renamed.dsse.json")
    decisions = by_band(decide(study.library, folder))
    for name in ALL_BANDS:
        assert not_granted(decisions[name]), name
        assert "revoked" in codes(decisions[name])


def test_a_revocation_with_one_flipped_bit_makes_the_folder_invalid(files, store):
    """Fail closed: a revocation that does not verify never lets the attestation count again."""
    study, folder, _ = files
    revocation = revoke_01(store, study, folder)
    envelope = json.loads(revocation.read_text())
    sig = bytearray(base64.b64decode(envelope["signatures"][0]["sig"]))
    sig[5] ^= 1
    envelope["signatures"][0]["sig"] = base64.b64encode(bytes(sig)).decode()
    revocation.write_text(json.dumps(envelope))
    assert problems(folder) == {revocation.name: "bad_signature"}
    nothing_granted(study, folder)


def test_a_later_attestation_supersedes_the_earlier_whatever_time_it_claims(opened):
    """Order is position in the chain: the later record claims a signing time years before the
    first, and still supersedes it."""
    from datetime import UTC, datetime

    study, engine, folder = opened
    with session_scope(engine) as s:
        current = current_review(
            s, study.library, study.a, "draft_documentation_01", "followup_days"
        )
    three_weeks = ReviewForm(
        verdict="AMEND", band={"min": 1, "max": 21}, reason="Three weeks at most.", answers=ANSWERS
    )
    save_review(engine, study.library, study.a, DOC, three_weeks, current.version)
    backdated = datetime(2001, 1, 1, tzinfo=UTC)
    later = sign(engine, study.library, study.a, PASS_01, folder, now=backdated)
    close(engine, study, folder)
    later_file = folder / later.records[0][2]
    first = statement_of(folder / study.envelope)["predicate"]
    claimed = statement_of(later_file)["predicate"]
    assert claimed["signed_at"] < first["signed_at"]
    assert claimed["log"]["sequence"] > first["log"]["sequence"]
    assert problems(folder) == {}

    decision = by_band(decide(study.library, folder))[DOC]
    assert decision.provenance == ADJUDICATED
    assert decision.as_dict()["acceptable"] == {"min": 1, "max": 21}
    assert [a["file"] for a in decision.attestations] == [later_file.name]


# Policy ---------------------------------------------------------------------------------------


def test_the_policy_is_a_record_the_coordinator_signs(files, store):
    study, folder, _ = files
    head = read_evidence(folder).head
    with session_scope(store) as s, pytest.raises(AccessDenied):
        set_policy(s, folder, actor=study.a, passphrase=PASS_01, quorum=2, scope="require")
    with session_scope(store) as s, pytest.raises(WrongPassphrase):
        set_policy(s, folder, actor=study.coordinator, passphrase="not it", quorum=2, scope="warn")
    assert read_evidence(folder).head == head

    with session_scope(store) as s:
        written = set_policy(
            s,
            folder,
            actor=study.coordinator,
            passphrase=COORDINATOR_PASS,
            quorum=2,
            scope="require",
        )
    assert written == Policy(2, "require")
    evidence = read_evidence(folder)
    assert evidence.valid and evidence.policy == written
    assert evidence.head[0] == head[0] + 1
    record = folder / evidence.policy_file
    assert record.name.startswith(f"{head[0] + 1:06d}-policy-")
    assert statement_of(record)["predicate"]["policy"] == {"quorum": 2, "scope": "require"}
    # policy.yaml is the readable copy of it.
    assert yaml.safe_load((folder / POLICY_FILE).read_text()) == {"quorum": 2, "scope": "require"}
    with session_scope(store) as s:
        assert policy_in_force(s) == written
        [event] = [
            e
            for e in audit.events(s, kinds=["policy_set"])
            if e["payload"]["record"] == evidence.policy_file
        ]
    assert event["actor"] == "coordinator"
    assert event["payload"] == {
        "from": {"quorum": 1, "scope": "warn"},
        "to": {"quorum": 2, "scope": "require"},
        "record": evidence.policy_file,
    }


@pytest.mark.parametrize(("quorum", "scope"), [(0, "warn"), (1, "always"), (True, "warn")])
def test_a_bad_policy_is_refused(files, store, quorum, scope):
    study, folder, _ = files
    head, copy = read_evidence(folder).head, (folder / POLICY_FILE).read_bytes()
    with session_scope(store) as s, pytest.raises(FmaBandsError):
        set_policy(
            s,
            folder,
            actor=study.coordinator,
            passphrase=COORDINATOR_PASS,
            quorum=quorum,
            scope=scope,
        )
    assert read_evidence(folder).head == head
    assert (folder / POLICY_FILE).read_bytes() == copy


def test_overrides_apply_and_the_export_records_the_policy_used(files, store, tmp_path):
    study, folder, _ = files
    with session_scope(store) as s:
        set_policy(
            s,
            folder,
            actor=study.coordinator,
            passphrase=COORDINATOR_PASS,
            quorum=2,
            scope="require",
        )

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
    granted_doc = export_document(study.library, folder, quorum=1, scope="warn")
    sensitivity = write_bands(tmp_path / "sensitivity.yaml", granted_doc)
    assert yaml.safe_load(sensitivity.read_text())["policy"] == {"quorum": 1, "scope": "warn"}
    # Adjudicated bands, their attestations and reasoning: written as plain yaml.dump writes them.
    options = {"sort_keys": False, "allow_unicode": True, "width": 100}
    plain = yaml.dump(granted_doc, Dumper=yaml.SafeDumper, **options)
    assert sensitivity.read_bytes() == plain.encode("utf-8")
    assert all(
        e["adjudicated_by"] == ["adjudicator-01"]
        for g in load_bands(sensitivity).values()
        for e in g
    )


def test_without_a_policy_record_nothing_is_granted(signed, tmp_path):
    """The roster alone (root, enrolments, activations) and no policy record: no_policy on
    every band, whatever quorum and scope are asked for."""
    study, _, folders = signed
    folder = tmp_path / "attestations"
    shutil.copytree(folders["roster"], folder)
    assert not (folder / POLICY_FILE).exists()
    registry = nothing_granted(study, folder, "no_policy")
    assert registry.valid and "no signed policy record" in registry.policy_problem
    # Overriding quorum and scope for a sensitivity run does not stand in for the policy.
    assert not any(
        d.adjudicated for d in decide(study.library, folder, quorum=1, scope="warn").decisions
    )


@pytest.mark.parametrize("policy", ["quorum: 1\nscope: warn\n", "quorum: 0\n", "[1, 2]\n"])
def test_a_hand_written_policy_yaml_is_never_read(signed, tmp_path, policy):
    """policy.yaml is only a copy: written by hand where no policy record exists, it grants
    nothing and makes the folder invalid (copy_differs)."""
    study, _, folders = signed
    folder = tmp_path / "attestations"
    shutil.copytree(folders["roster"], folder)
    (folder / POLICY_FILE).write_text(policy)
    assert every_problem(folder) == {POLICY_FILE: "copy_differs"}
    registry = decide(study.library, folder, quorum=1, scope="warn")
    assert not any(d.adjudicated for d in registry.decisions)
    assert all({"no_policy", "folder_invalid"} <= set(codes(d)) for d in registry.decisions)


@pytest.mark.parametrize(
    ("name", "old", "new"),
    [
        (ADJUDICATORS_FILE, "specialty: geriatrics", "specialty: emergency medicine"),
        (POLICY_FILE, "quorum: 1", "quorum: 2"),
    ],
)
def test_an_edited_copy_makes_the_folder_invalid(files, name, old, new):
    """adjudicators.yaml and policy.yaml are for people: an edit to either (making the
    geriatrician an emergency physician, raising the quorum) is `copy_differs`, and the folder
    grants nothing until the copy is made again from the records."""
    study, folder, _ = files
    original = (folder / name).read_bytes()
    edit_file(folder / name, old, new)
    assert every_problem(folder) == {name: "copy_differs"}
    registry = nothing_granted(study, folder)
    assert any(p.startswith(f"{name}: copy_differs") for p in registry.file_problems)
    (folder / name).write_bytes(original)
    assert every_problem(folder) == {}


def test_a_deleted_copy_of_the_policy_is_copy_differs(files):
    study, folder, _ = files
    (folder / POLICY_FILE).unlink()
    assert every_problem(folder) == {POLICY_FILE: "copy_differs"}
    nothing_granted(study, folder)


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


def test_a_raters_key_signing_as_a_phantom_pseudonym_counts_for_nothing(files, store):
    """adjudicator-01's own key signs her attestation again as adjudicator-99, a pseudonym the
    root never enrolled, to meet a quorum of two on her own: beside her record it is a stray,
    and appended after the newest record it makes the folder invalid. It never grants."""
    study, folder, envelope = files
    with session_scope(store) as s:
        _, private_key = unlock_signing_key(s, study.a.id, PASS_01)
    statement = statement_of(envelope)
    statement["predicate"]["signer"]["pseudonym"] = "adjudicator-99"
    beside = forge(folder / "adjudicator-99.dsse.json", statement, private_key)
    assert strays(folder) == {beside.name: "stray_file"}
    decisions = by_band(decide(study.library, folder, quorum=2))
    for name in ALL_BANDS:
        assert not_granted(decisions[name])
        assert "quorum_not_met" in codes(decisions[name])

    beside.unlink()
    after = forge(
        folder / "adjudicator-99-after.dsse.json", appended(folder, statement), private_key
    )
    assert problems(folder) == {after.name: "unrostered_key"}
    nothing_granted(study, folder)


def test_an_altered_enrolment_record_makes_the_folder_invalid(files):
    """Making the geriatrician an emergency physician in her root-signed enrolment, keeping
    its signature: the record at that place does not verify."""
    study, folder, _ = files
    [path] = [p for p in folder.glob("*-enrolment-adjudicator-01-*.dsse.json")]
    record = statement_of(path)
    record["predicate"]["enrolment"]["specialty"] = "emergency medicine"
    replace_payload(path, record)
    assert problems(folder) == {path.name: "bad_signature"}
    nothing_granted(study, folder)


def test_a_self_enrolled_phantom_counts_for_nothing(files):
    """A stranger's key with a self-signed activation and attestation for adjudicator-77, no
    root-signed enrolment: unrostered_key, and the real rater's grants are never taken."""
    study, folder, envelope = files
    key = stranger()
    statement = statement_of(envelope)
    statement["predicate"]["signer"] = {"pseudonym": "adjudicator-77", "keyid": keyid_of(key)}
    beside = forge(folder / "adjudicator-77.dsse.json", statement, key)
    assert strays(folder) == {beside.name: "stray_file"}
    before = granted(study, folder)
    assert before[DOC]["adjudicated_by"] == ["adjudicator-01"]

    beside.unlink()
    after = forge(folder / "adjudicator-77-after.dsse.json", appended(folder, statement), key)
    assert problems(folder) == {after.name: "unrostered_key"}
    nothing_granted(study, folder)


def test_a_deleted_record_in_the_middle_is_a_gap(files, store):
    """Deleting a revocation that a later record follows does not restore the grants: the gap
    makes the folder invalid."""
    study, folder, _ = files
    revocation = revoke_01(store, study, folder)
    with session_scope(store) as s:
        set_policy(
            s, folder, actor=study.coordinator, passphrase=COORDINATOR_PASS, quorum=1, scope="warn"
        )
    revocation.unlink()
    registry = nothing_granted(study, folder)
    assert any("is missing" in p for p in registry.file_problems)


def test_deleting_the_newest_records_shows_against_an_earlier_head(files, store):
    """A revocation deleted as the newest record leaves a valid, shorter chain; the head seen
    before (an export's, a receipt's) shows the truncation."""
    study, folder, _ = files
    revocation = revoke_01(store, study, folder)
    seen = read_evidence(folder).head
    assert read_evidence(folder, since=seen).valid
    revocation.unlink()
    (folder / ADJUDICATORS_FILE).unlink()  # the copy names the head; a careful attacker drops it
    assert read_evidence(folder).valid
    assert problems(folder, since=seen) == {"": "folder_invalid"}
    assert decide(study.library, folder, since=seen).valid is False


def test_the_head_is_the_newest_records_place_and_digest(files):
    _, folder, _ = files
    evidence = read_evidence(folder)
    sequence, digest = evidence.head
    files_ = sorted(folder.glob("*.dsse.json"))
    assert sequence == len(files_) - 1 == chain_end(folder)[0]
    assert digest == chain_end(folder)[1] == payload_digest(files_[-1])
    assert files_[-1].name.startswith(f"{sequence:06d}-") and digest[7:19] in files_[-1].name
    copy = folder.parent / "copy"
    shutil.copytree(folder, copy)
    assert read_evidence(copy).head == (sequence, digest)  # the folder's place does not matter
    assert read_evidence(folder, since=(sequence, digest)).valid
    assert not read_evidence(folder, since=(sequence, "sha256:" + "0" * 64)).valid
    assert not read_evidence(folder, since=(sequence + 1, digest)).valid


def test_a_reset_retires_the_key_keeps_old_signatures_and_shows_the_change(files, store):
    study, folder, envelope = files
    with session_scope(store) as s:
        old_key, old_private = unlock_signing_key(s, study.a.id, PASS_01)
        code = reset(
            s,
            actor=study.coordinator,
            pseudonym="adjudicator-01",
            passphrase=COORDINATOR_PASS,
            folder=folder,
        )
    with session_scope(store) as s:
        made = activate(
            s,
            pseudonym="adjudicator-01",
            code=code,
            passphrase="a brand new passphrase",
            folder=folder,
        )
    assert made is not None and made.keyid != old_key.keyid

    evidence = read_evidence(folder)
    assert evidence.valid, evidence.problems
    keys = evidence.adjudicators["adjudicator-01"].keys
    assert [k.keyid for k in keys] == [old_key.keyid, made.keyid]
    assert keys[0].until is not None and keys[1].until is None
    decisions = by_band(decide(study.library, folder))
    # Her attestation signed with the old key still stands, and the key change shows.
    assert decisions[DOC].provenance == ADJUDICATED
    assert "key_changed" in [w.code for w in decisions[DOC].warnings]
    # The old key cannot sign any more: its private half is gone from the store ...
    with session_scope(store) as s:
        assert unlock_signing_key(s, study.a.id, "a brand new passphrase")[0].keyid == made.keyid
    # ... and a signature made with a copy of it after the reset, claiming an early date, is
    # refused by its place in the chain.
    statement = statement_of(envelope)
    statement["predicate"]["signed_at"] = "2001-01-01T00:00:00.000000Z"
    forged = forge(folder / "backdated.dsse.json", appended(folder, statement), old_private)
    assert problems(folder) == {forged.name: "unknown_key"}
    nothing_granted(study, folder)


def test_another_studys_records_are_wrong_study_strays(files, tmp_path):
    """A second study (its own root) given this study's records: none counts there, and the
    folder holding both roots is checked only once the study is named."""
    study, folder, _ = files
    engine = make_engine(f"sqlite:///{tmp_path / 'other.db'}")
    upgrade(engine)
    other = tmp_path / "other" / "attestations"
    with session_scope(engine) as s:
        coordinator = create_first_coordinator(
            s, pseudonym="coordinator", passphrase=COORDINATOR_PASS, folder=other
        )
    with session_scope(engine) as s:
        set_policy(s, other, actor=coordinator, passphrase=COORDINATOR_PASS, quorum=1, scope="warn")
        other_id = study_settings(s).study_id
    engine.dispose()
    assert other_id != study.study_id
    copied = []
    for path in folder.glob("*.dsse.json"):
        if "-root-" not in path.name:
            shutil.copy(path, other / f"copied-{path.name}")
            copied.append(f"copied-{path.name}")

    assert problems(other) == {} and read_evidence(other).study == other_id
    assert strays(other, study=other_id) == {name: "wrong_study" for name in copied}
    registry = decide(study.library, other, study=other_id)
    assert registry.valid
    for decision in registry.decisions:
        assert not_granted(decision)
        assert codes(decision) == ["no_attestation"]
    # Named as the other study, this study's own folder is not it.
    assert not read_evidence(folder, study=other_id).valid
    # Both roots in one folder: which study is meant must be said.
    shutil.copy(next(other.glob("*-root-*.dsse.json")), folder / "other-root.dsse.json")
    assert problems(folder) == {"": "folder_invalid"}
    assert read_evidence(folder, study=study.study_id).valid
    assert decide(study.library, folder, study=study.study_id).valid


def test_the_registry_says_what_it_was_decided_from(files, signed):
    study, folder, _ = files
    registry = decide(study.library, folder)
    evidence = read_evidence(folder)
    assert (registry.head, registry.study) == (evidence.head, study.study_id)
    assert registry.policy_problem is None
    missing = decide(study.library, signed[2]["roster"])
    assert "no signed policy record" in missing.policy_problem


def test_on_each_store_the_published_chain_grants_and_a_forgery_is_refused(
    engine, shared_library, tmp_path
):
    """The study built and signed on SQLite and on PostgreSQL: the folder the store publishes
    when round 1 closes verifies and grants; a stranger's record appended to it is refused."""
    folder = tmp_path / "attestations"
    with session_scope(engine) as s:
        coordinator, a, _ = enrol_study(s, shared_library)
        identities(s, coordinator, tmp_path / "identity.key")
        set_policy(
            s, folder, actor=coordinator, passphrase=COORDINATOR_PASS, quorum=1, scope="warn"
        )
        import_handback(
            s,
            shared_library,
            actor=coordinator,
            rater_pseudonym="adjudicator-01",
            text=HANDBACK.read_text(),
            source=HANDBACK.name,
        )
    receipt = sign(engine, shared_library, a, PASS_01, folder, confirm=True)
    envelope = folder / receipt.records[0][2]
    assert not envelope.exists()  # sealed while the round is open
    with session_scope(engine) as s:
        close_round(s, actor=coordinator, folder=folder)
        study_id = study_settings(s).study_id
    assert envelope.is_file()
    study = Study(shared_library, coordinator, a, None, study_id, envelope.name)
    before = granted(study, folder)
    assert read_evidence(folder).head == receipt.head
    statement = statement_of(envelope)
    statement["predicate"]["reviews"][0]["verdict"] = "ACCEPT"
    key = stranger()
    statement["predicate"]["signer"]["keyid"] = keyid_of(key)
    forged = forge(folder / "forged.dsse.json", appended(folder, statement), key)
    assert problems(folder) == {forged.name: "unrostered_key"}
    nothing_granted(study, folder)
    forged.unlink()
    assert granted(study, folder) == before


def test_9c_two_raters_short_of_quorum_without_a_common_value_are_empty_not_absent(opened):
    # "absent" is the word for one rater; two who share no value are "empty", quorum met or not.
    study, engine, folder = opened
    save_review(engine, study.library, study.b, DOC, amend({"min": 31, "max": 60}))
    sign(engine, study.library, study.b, PASS_02, folder)
    close(engine, study, folder)
    decision = by_band(decide(study.library, folder, quorum=3))[DOC]
    assert not_granted(decision) and "quorum_not_met" in codes(decision)
    assert (decision.n_raters, decision.intersection_rule) == (2, "empty")
    document = export_document(study.library, folder, quorum=3)
    vignette, name = DOC.split("/")
    [entry] = [e for e in document["bands"][vignette] if e["sub_action"] == name]
    assert entry["x_agreement"] == {"n_raters": 2, "intersection_rule": "empty"}


# The disputed span and the corrected clause: the same rule for one rater or many -------------

NEW_CLAUSE = "Follow-up within 30 days of discharge is advised after hyperglycaemia in hospital."


def review_of_doc(verdict, *, q5, band=None, corrections=None):
    answers = ANSWERS | {"q5": {"choice": q5, "note": "For this patient."}}
    return ReviewForm(
        verdict=verdict, band=band, answers=answers, reason="My reading.", corrections=corrections
    )


def only_b_on_doc(opened, form):
    """adjudicator-01's attestation revoked, adjudicator-02's review of DOC signed: DOC's
    decision with one counted rater, and her signed review as the folder holds it."""
    study, engine, folder = opened
    with session_scope(engine) as s:
        revoke(s, rater=study.a, passphrase=PASS_01, attestation=study.envelope,
               reason="signed the wrong hand-back", folder=folder)  # fmt: skip
    save_review(engine, study.library, study.b, DOC, form)
    receipt = sign(engine, study.library, study.b, PASS_02, folder)
    close(engine, study, folder)
    decision = by_band(decide(study.library, folder))[DOC]
    assert decision.adjudicated_by == ("adjudicator-02",), codes(decision)
    [signed] = [
        r
        for r in statement_of(folder / receipt.records[0][2])["predicate"]["reviews"]
        if r["sub_action"] == "followup_days"
    ]
    return decision, signed


def test_one_rater_who_leaves_the_span_disputed_keeps_the_proposals_span(opened):
    decision, _ = only_b_on_doc(opened, review_of_doc("ACCEPT", q5="disputed"))
    assert decision.disputed_span.values() == frozenset(range(15, 31))


def test_one_rater_who_takes_the_bands_reading_settles_the_span(opened):
    decision, _ = only_b_on_doc(opened, review_of_doc("ACCEPT", q5="band"))
    assert decision.disputed_span is None


def test_one_raters_amended_span_and_clause_are_signed_and_granted(opened, tmp_path):
    span = {"min": 15, "max": 60}
    form = review_of_doc(
        "AMEND",
        q5="neither",
        band={"min": 1, "max": 14},
        corrections={"clause": NEW_CLAUSE, "disputed_span": span},
    )
    decision, signed = only_b_on_doc(opened, form)
    assert signed["corrections"] == {"clause": NEW_CLAUSE, "disputed_span": span}
    assert decision.disputed_span.values() == frozenset(range(15, 61))
    assert decision.corrected == {"clause": NEW_CLAUSE}
    study, _, folder = opened
    bands = load_bands(write_bands(tmp_path / "bands.yaml", export_document(study.library, folder)))
    [doc] = bands["draft_documentation_01"]
    assert (doc["clause"], doc["disputed_span"]) == (NEW_CLAUSE, span)


def test_several_raters_span_is_the_union_of_theirs_and_what_they_dispute(opened):
    """adjudicator-01 amended to {1..30} by hand-back (no answers: the proposal's span, all
    inside her band); adjudicator-02 keeps {1..30} and sets her own span {31..45}."""
    study, engine, folder = opened
    form = review_of_doc(
        "AMEND",
        q5="disputed",
        band={"min": 1, "max": 30},
        corrections={"disputed_span": {"min": 31, "max": 45}, "clause": NEW_CLAUSE},
    )
    save_review(engine, study.library, study.b, DOC, form)
    sign(engine, study.library, study.b, PASS_02, folder)
    close(engine, study, folder)
    decision = by_band(decide(study.library, folder))[DOC]
    assert decision.adjudicated_by == ("adjudicator-01", "adjudicator-02")
    assert decision.band.values() == frozenset(range(1, 31))
    assert decision.disputed_span.values() == frozenset(range(31, 46))
    # Only one of the two corrected the clause: the proposal's stays, her correction is quoted.
    assert decision.corrected == {}
    assert [v.corrections for v in decision.verdicts][1]["clause"] == NEW_CLAUSE


def test_several_raters_who_all_settle_the_span_export_none(opened):
    """Two raters, both admitting {1..14} only and taking the band's reading: no span, as for
    one rater who does (the proposal's span is not kept for one and dropped for two)."""
    study, engine, folder = opened
    with session_scope(engine) as s:
        revoke(s, rater=study.a, passphrase=PASS_01, attestation=study.envelope,
               reason="signed the wrong hand-back", folder=folder)  # fmt: skip
    for rater, passphrase in ((study.a, PASS_01), (study.b, PASS_02)):
        with session_scope(engine) as s:
            version = current_review(s, study.library, rater, *DOC.split("/"))
        save_review(
            engine, study.library, rater, DOC, review_of_doc("ACCEPT", q5="band"),
            version.version if version else 0,
        )  # fmt: skip
        sign(engine, study.library, rater, passphrase, folder)
    close(engine, study, folder)
    decision = by_band(decide(study.library, folder))[DOC]
    assert decision.adjudicated_by == ("adjudicator-01", "adjudicator-02"), codes(decision)
    assert decision.disputed_span is None


def test_a_band_granted_on_blind_reviews_takes_nothing_unsigned_from_the_proposal(opened, tmp_path):
    # A blind review signs no proposal digest (its rater never saw one): whatever the vignette's
    # proposal says, edited after signing or not, is never written as the adjudicated band's.
    study, engine, folder = opened
    with session_scope(engine) as s:
        set_mode(s, actor=study.coordinator, mode="blind")
    save_review(engine, study.library, study.b, DOC, amend({"min": 7, "max": 20}))
    sign(engine, study.library, study.b, PASS_02, folder)
    close(engine, study, folder)
    vignettes = vignettes_copy(study.library, tmp_path)
    path = vignettes / "draft_documentation_01.yaml"
    edit_file(path, "  source: 'ADA Standards", "  source: 'FORGED: Fabricated 2099. ADA Standards")
    span = "    min: 21\n    max: 54\n  threshold: 'value >= 90'\n"
    edit_file(path, "    min: 15\n    max: 30\n", span)
    library = reload(vignettes)
    decision = by_band(decide(library, folder))[DOC]
    # adjudicator-01 reviewed the proposal, now changed; adjudicator-02's blind review stands.
    assert decision.adjudicated_by == ("adjudicator-02",), codes(decision)
    assert "proposal_changed" in codes(decision)
    assert decision.proposal_signed is False
    [entry] = [
        e
        for e in export_document(library, folder)["bands"]["draft_documentation_01"]
        if e["sub_action"] == "followup_days"
    ]
    assert entry["provenance"] == ADJUDICATED
    assert entry["acceptable"] == {"min": 7, "max": 20}
    assert (entry["source"], entry["clause"], entry["disputed_span"]) == (None, None, None)
    assert entry["x_threshold"] != "value >= 90"
    assert "FORGED" not in entry["reasoning"] + entry["notes"]
    assert "54" not in entry["reasoning"]
    assert "reviewed blind, never shown the proposal" in entry["notes"]
    # The proposal itself still travels, said to be the proposal's.
    assert entry["x_proposal"]["source"].startswith("FORGED")


def planted_root(folder: Path, root: dict) -> Path:
    """An unsigned record claiming place 0 of the study, holding `root` as its root."""
    real = statement_of(sorted(folder.glob("000000-*.dsse.json"))[0])
    statement = {
        **real,
        "predicate": {**real["predicate"], "root": root, "signer": {"keyid": "sha256:00"}},
    }
    path = folder / "000000-root-planted.dsse.json"
    payload = base64.b64encode(json.dumps(statement).encode()).decode()
    signature = {"keyid": "sha256:00", "sig": base64.b64encode(bytes(64)).decode()}
    envelope = {"payload": payload, "payloadType": "application/vnd.in-toto+json"}
    path.write_text(json.dumps({**envelope, "signatures": [signature]}))
    return path


@pytest.mark.parametrize(
    "key",
    [
        {"keyid": "sha256:00", "public_key": "AAAA", "holder": "x"},  # three bytes, no key
        {"keyid": "sha256:00", "public_key": 12, "holder": "x"},
        {"keyid": ["sha256:00"], "public_key": "AAAA", "holder": "x"},
    ],
)
def test_a_planted_root_with_a_key_that_is_no_key_is_a_stray_and_stops_nothing(files, key):
    study, folder, _ = files
    before = granted(study, folder)
    planted = planted_root(folder, {"keys": [key], "threshold": 1})
    assert problems(folder) == {}
    assert planted.name in strays(folder)
    assert granted(study, folder) == before


def test_a_signed_review_or_enrolment_of_the_wrong_kind_is_refused_whole(files, store):
    # Signed by a key the study knows, yet not what the registry reads: the record is refused
    # by name (the folder then grants nothing), never read in part or crashing a command.
    study, folder, envelope = files
    statement = statement_of(envelope)
    with session_scope(store) as s:
        _, private_01 = unlock_signing_key(s, study.a.id, PASS_01)
    del statement["predicate"]["reviews"][0]["verdict"]
    envelope.unlink()
    resigned = forge(envelope, statement, private_01)
    assert problems(folder) == {resigned.name: "malformed"}
    [said] = [p.message for p in read_evidence(folder).problems if p.file == resigned.name]
    assert "its reviews are not a list of signed reviews" in said
    nothing_granted(study, folder)


def test_a_record_of_the_wrong_kind_read_from_a_kept_parse_is_refused_as_it_was(
    files, store, tmp_path, monkeypatch
):
    """What a record's content lacks is worked out with its parse (evidence/shapes.py) and kept
    with it: a second process, finding the parse kept, refuses the record for the same reason
    without parsing it."""
    study, folder, envelope = files
    statement = statement_of(envelope)
    with session_scope(store) as s:
        _, private_01 = unlock_signing_key(s, study.a.id, PASS_01)
    statement["predicate"]["exemption_reviews"] = [{"attribute": "sex", "verdict": "CONFIRM"}]
    envelope.unlink()
    resigned = forge(envelope, statement, private_01)
    parsed: list[str] = []
    real = envelope_module._parse
    monkeypatch.setattr(
        envelope_module, "_parse", lambda data, source: parsed.append(source) or real(data, source)
    )
    checked: list[int] = []
    lacks = envelope_module.adjudication_lacks
    monkeypatch.setattr(
        envelope_module, "adjudication_lacks", lambda p: checked.append(1) or lacks(p)
    )
    each_process = []
    for _ in range(2):  # a process parsing every file, then one finding each parse kept
        envelope_module.clear_cache()
        kept_parses._kept.forget()
        checked.clear()
        with keep_parses_in(tmp_path / "kept"):
            assert problems(folder) == {resigned.name: "malformed"}
            said = [p.message for p in read_evidence(folder).problems if p.file == resigned.name]
        [message] = said
        assert message.endswith(
            "does not verify: its exemption reviews are not a list of signed reviews"
        )
        each_process.append(len(checked))
    # Neither the file nor any adjudication's reviews were read again by the second.
    assert [Path(p).name for p in parsed].count(resigned.name) == 1
    assert each_process[0] > 0 and each_process[1] == 0
    nothing_granted(study, folder)


def test_a_strangers_record_of_the_wrong_kind_is_refused_for_its_key_first(files):
    """The signer's key is checked before what the record holds: a stranger's record says it
    is nobody's (unrostered_key), whatever its reviews lack."""
    study, folder, envelope = files
    key = stranger()
    statement = statement_of(envelope)
    del statement["predicate"]["reviews"][0]["verdict"]
    statement["predicate"]["signer"]["keyid"] = keyid_of(key)
    envelope.unlink()
    forged = forge(envelope, statement, key)
    assert problems(folder) == {forged.name: "unrostered_key"}
    nothing_granted(study, folder)
