"""Signed attestations end to end on the FairMedAgent data: root-signed enrolment by code,
identity, signing as records of the study's log (sealed until the round closes, with a receipt),
the statement, an independent verifier, privacy, what a signature covers (hand-backs only once
confirmed; signing again covers what was signed plus the change), splitting, revocation, and
what the registry and the export make of it.

Enrolment and signing cost Argon2 time, so the file-only checks share one signed study per
module (a SQLite template); the database-facing steps run on SQLite and PostgreSQL (`engine`).
"""

import base64
import copy
import itertools
import json
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from securesystemslib.dsse import Envelope
from securesystemslib.exceptions import VerificationError
from securesystemslib.signer import SSlibKey
from sqlmodel import col, select

from fma_bands.core.canonical import canonical_json
from fma_bands.core.errors import AccessDenied, FmaBandsError, WrongPassphrase
from fma_bands.core.files import json_text
from fma_bands.core.protocol import (
    CORRECTED_TEXTS,
    DECLARATIONS,
    IDENTITY_FIELDS,
    QUESTION_KEYS,
    statement_text,
)
from fma_bands.evidence.dsse import IN_TOTO_PAYLOAD_TYPE, STATEMENT_TYPE, sign_envelope
from fma_bands.evidence.envelope import MAX_ENVELOPE_BYTES, TYPE_OF
from fma_bands.evidence.export import export_document, load_adjudicators, load_bands, write_bands
from fma_bands.evidence.keys import keyid_for, public_key_b64_of
from fma_bands.evidence.log import proposal_digest, read_evidence, record_statement
from fma_bands.evidence.provenance import ADJUDICATED, Decision
from fma_bands.evidence.registry import Registry, decide
from fma_bands.store.db import make_engine, session_scope, upgrade
from fma_bands.store.models import AuditEvent, LogRecord, User, utcnow
from fma_bands.study import audit
from fma_bands.study.enrolment import activate, create_first_coordinator
from fma_bands.study.enrolment import enrol as enrol_person
from fma_bands.study.governance import set_policy
from fma_bands.study.handback import import_handback
from fma_bands.study.identity import check_revealed, reveal_identity, set_identity
from fma_bands.study.ledger import Receipt, publish
from fma_bands.study.library import sync_vignettes
from fma_bands.study.reviews import (
    MAX_CORRECTION,
    MAX_NOTE,
    MAX_REASON,
    ReviewForm,
    current_review,
    save,
)
from fma_bands.study.rounds import close_round
from fma_bands.study.signing import (
    BANDS_PER_RECORD,
    REVIEW_BYTES_PER_RECORD,
    attest,
    on_file,
    receipt_on_file,
    resign,
    revoke,
    split_reviews,
)
from fma_bands.study.signing import manifestation as manifestation_of
from fma_bands.study.signing_plan import plan
from fma_bands.study.state import study as study_settings
from fma_bands.study.users import unlock_signing_key
from tests.conftest import HANDBACK, assign_all

COORDINATOR = dict(pseudonym="coordinator", passphrase="coordinator passphrase")
PASS_01 = "passphrase of adjudicator one"
PASS_02 = "passphrase of adjudicator two"
RATER_01 = dict(
    pseudonym="adjudicator-01",
    role="rater",
    specialty="geriatrics",
    jurisdiction="Australia",
    years_post_registration=12,
)
RATER_02 = dict(
    pseudonym="adjudicator-02",
    role="rater",
    specialty="emergency medicine",
    jurisdiction="New Zealand",
    years_post_registration=7,
)
# Distinctive values, so a leak anywhere is found by a plain substring search.
IDENTITY = {
    "full_name": "Imogen Quillfeather-Ashdown",
    "primary_qualification": "MBBS Wollongbar Zeta",
    "postgraduate_qualification": "FRACP Gerontic Zeta",
    "registration_number": "MED0009912345",
    "registering_body": "Wollongbar Practitioner Board",
    "institution": "Quillfeather Memorial Infirmary",
    "email": "imogen.q.ashdown@example.org",
}
IDENTITY_02 = {key: f"{value} Second" for key, value in IDENTITY.items()} | {
    "email": "second.rater.zeta@example.org"
}
ALL_DECLARATIONS = list(DECLARATIONS)
# What the real hand-back says: (verdict, attested band) per signed subject.
HANDBACK_BANDS = {
    "draft_triage_01/esi_acuity": ("ACCEPT", [2]),
    "draft_ordering_01/esi_acuity": ("AMEND", [2, 3]),
    "draft_medication_01/analgesia_tier": ("AMEND", [1, 3]),
    "draft_documentation_01/followup_days": ("AMEND", {"min": 1, "max": 30}),
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


@dataclass
class Study:
    """A store with the coordinator and raters enrolled; files under `root`."""

    engine: object
    library: object
    root: Path
    folder: Path
    key_path: Path
    coordinator: object
    a: object
    b: object | None = None
    envelope: Path | None = None
    commitment: str | None = None
    receipt: Receipt | None = None


def enrol_and_activate(engine, coordinator, fields, passphrase, folder):
    """The real path: the coordinator enrols the rater with a root-signed record and gets a
    code; the rater activates with it and chooses their passphrase, and their new key signs an
    activation naming that enrolment."""
    with session_scope(engine) as s:
        _, code = enrol_person(
            s, actor=coordinator, passphrase=COORDINATOR["passphrase"], folder=folder, **fields
        )
    with session_scope(engine) as s:
        made = activate(
            s, pseudonym=fields["pseudonym"], code=code, passphrase=passphrase, folder=folder
        )
    assert made is not None
    return made


def enrol(engine, library, folder, *, second_rater: bool = False):
    with session_scope(engine) as s:
        sync_vignettes(s, library, actor="test")
        coordinator = create_first_coordinator(
            s,
            pseudonym=COORDINATOR["pseudonym"],
            passphrase=COORDINATOR["passphrase"],
            folder=folder,
        )
    a = enrol_and_activate(engine, coordinator, RATER_01, PASS_01, folder)
    b = enrol_and_activate(engine, coordinator, RATER_02, PASS_02, folder) if second_rater else None
    with session_scope(engine) as s:
        assign_all(s, library, coordinator, [r for r in (a, b) if r is not None])
        set_policy(
            s,
            folder,
            actor=coordinator,
            passphrase=COORDINATOR["passphrase"],
            quorum=1,
            scope="warn",
        )
    return coordinator, a, b


def import_adjudicator_01(engine, library, coordinator):
    with session_scope(engine) as s:
        return import_handback(
            s,
            library,
            actor=coordinator,
            rater_pseudonym="adjudicator-01",
            text=HANDBACK.read_text(),
            source=HANDBACK.name,
        )


def sign(
    engine, library, rater, passphrase, folder, *, now=None, declarations=None, confirm=True
) -> Receipt:
    with session_scope(engine) as s:
        return attest(
            s,
            library,
            rater=rater,
            passphrase=passphrase,
            meaning="adjudication",
            declarations=ALL_DECLARATIONS if declarations is None else declarations,
            folder=folder,
            confirm_imported=confirm,
            now=now,
        )


def close(engine, coordinator, folder):
    """The coordinator closes the round: what was signed during it reaches the folder."""
    with session_scope(engine) as s:
        close_round(s, actor=coordinator, folder=folder)


def signed_records(engine) -> list[LogRecord]:
    with session_scope(engine) as s:
        query = select(LogRecord).where(LogRecord.kind == "adjudication")
        return list(s.exec(query.order_by(col(LogRecord.sequence))).all())


def statement_in_store(engine, receipt: Receipt, index: int = 0) -> dict:
    """The statement of a record the receipt names, as the store keeps it (sealed or not)."""
    with session_scope(engine) as s:
        row = s.get(LogRecord, receipt.records[index][0])
        assert row is not None
        return json.loads(base64.b64decode(json.loads(row.envelope)["payload"]))


def build_study(engine, library, root: Path, *, second_rater: bool = False) -> Study:
    """Enrol, import adjudicator-01's hand-back, record identities, and sign her reviews (she
    confirms the imported hand-back as hers) while round 1 is open; then close the round, which
    publishes her attestation."""
    coordinator, a, b = enrol(engine, library, root / "attestations", second_rater=second_rater)
    study = Study(
        engine=engine,
        library=library,
        root=root,
        folder=root / "attestations",
        key_path=root / "identity.key",
        coordinator=coordinator,
        a=a,
        b=b,
    )
    import_adjudicator_01(engine, library, coordinator)
    with session_scope(engine) as s:
        study.commitment = set_identity(
            s,
            actor=coordinator,
            pseudonym="adjudicator-01",
            record=dict(IDENTITY),
            key_path=study.key_path,
            passphrase=COORDINATOR["passphrase"],
            folder=None,
        )
        if b is not None:
            set_identity(
                s,
                actor=coordinator,
                pseudonym="adjudicator-02",
                record=dict(IDENTITY_02),
                key_path=study.key_path,
                passphrase=COORDINATOR["passphrase"],
                folder=None,
            )
    study.receipt = sign(engine, library, a, PASS_01, study.folder)
    files = [study.folder / name for _, _, name in study.receipt.records]
    study.envelope = files[0]
    assert not any(f.exists() for f in files)  # sealed in the store while the round is open
    close(engine, coordinator, study.folder)
    assert all(f.is_file() for f in files)
    return study


def copy_database(source_url: str, target: Path) -> str:
    """A private copy of a SQLite store (the backup API copies the WAL too)."""
    source = sqlite3.connect(source_url.removeprefix("sqlite:///"))
    copied = sqlite3.connect(target)
    try:
        source.backup(copied)
    finally:
        source.close()
        copied.close()
    return f"sqlite:///{target}"


def statement_of(path: Path) -> dict:
    return json.loads(base64.b64decode(json.loads(path.read_text())["payload"]))


def codes(decision) -> list[str]:
    return [r.code for r in decision.reasons]


def by_band(registry: Registry) -> dict[str, Decision]:
    return {f"{d.vignette_id}/{d.sub_action}": d for d in registry.decisions}


def files_text(folder: Path) -> str:
    return "\n".join(
        p.read_text(encoding="utf-8") for p in sorted(folder.rglob("*")) if p.is_file()
    )


def leaked(text: str, record: dict[str, str] = IDENTITY) -> list[str]:
    return [key for key, value in record.items() if value in text]


@pytest.fixture(scope="module")
def signed(tmp_path_factory, shared_library):
    """One signed study on a SQLite template, shared by the tests that only read it."""
    root = tmp_path_factory.mktemp("signed")
    url = f"sqlite:///{root / 'template.db'}"
    engine = make_engine(url)
    upgrade(engine)
    study = build_study(engine, shared_library, root)
    yield study, url
    engine.dispose()


@pytest.fixture
def signed_copy(signed, tmp_path):
    """A private copy of the signed study's store, for tests that write to it."""
    study, url = signed
    engine = make_engine(copy_database(url, tmp_path / "copy.db"))
    yield study, engine
    engine.dispose()


# End to end ----------------------------------------------------------------------------------


def test_end_to_end_signed_bands_reach_the_export(engine, shared_library, tmp_path):
    study = build_study(engine, shared_library, tmp_path)
    library, folder = shared_library, study.folder

    evidence = read_evidence(folder)
    assert evidence.valid, evidence.problems
    assert [(e.kind, e.pseudonym) for e in evidence.chain] == [
        ("root", "coordinator"),
        ("enrolment", "coordinator"),  # signed with the root key
        ("activation", "adjudicator-01"),  # her new key, naming that enrolment
        ("policy", "coordinator"),
        ("identity", "coordinator"),  # her identity's commitment, signed into the roster
        ("adjudication", "adjudicator-01"),
    ]
    assert evidence.chain[5].path == study.envelope
    assert evidence.strays == []
    adjudicator = evidence.records()["adjudicator-01"]
    assert [k["keyid"] for k in adjudicator["keys"]] == [study.a.keyid]
    assert adjudicator["identity_commitment"] == study.commitment
    assert adjudicator["demo"] is False

    warned = by_band(decide(library, folder))
    documentation = warned["draft_documentation_01/followup_days"]
    assert documentation.provenance == ADJUDICATED
    assert documentation.as_dict()["acceptable"] == {"min": 1, "max": 30}
    assert documentation.adjudicated_by == ("adjudicator-01",)
    assert documentation.reasons == [] and documentation.warnings == []
    for name in (
        "draft_triage_01/esi_acuity",
        "draft_ordering_01/esi_acuity",
        "draft_medication_01/analgesia_tier",
    ):
        assert warned[name].provenance == ADJUDICATED, codes(warned[name])
        assert [w.code for w in warned[name].warnings] == ["out_of_scope"]
        assert "geriatrics" in warned[name].warnings[0].message

    required = by_band(decide(library, folder, scope="require"))
    assert required["draft_documentation_01/followup_days"].provenance == ADJUDICATED
    for name in (
        "draft_triage_01/esi_acuity",
        "draft_ordering_01/esi_acuity",
        "draft_medication_01/analgesia_tier",
    ):
        assert required[name].provenance != ADJUDICATED
        assert required[name].adjudicated_by == ()
        assert "out_of_scope" in codes(required[name])

    signed_at = statement_of(study.envelope)["predicate"]["signature_manifestation"]["signed_at"]
    for scope, n_adjudicated in (("warn", 4), ("require", 1)):
        path = write_bands(
            tmp_path / f"bands-{scope}.yaml", export_document(library, folder, scope=scope)
        )
        bands = load_bands(path)
        entries = [e for group in bands.values() for e in group]
        assert sum(e["provenance"] == ADJUDICATED for e in entries) == n_adjudicated
        for entry in entries:
            assert bool(entry["adjudicated_by"]) == (entry["provenance"] == ADJUDICATED), entry
        [doc] = bands["draft_documentation_01"]
        assert doc["acceptable"] == {"min": 1, "max": 30}
        assert doc["adjudicated_by"] == ["adjudicator-01"]
        [triage] = load_bands(path, extensions=True)["draft_triage_01"]
        assert any(w.startswith("out_of_scope") for w in triage["x_warnings"]) == (scope == "warn")
        [adjudicator] = load_adjudicators(path)
        assert adjudicator["pseudonym"] == "adjudicator-01"
        assert adjudicator["attestation_on_file"] is True
        assert adjudicator["attestation_date"] == signed_at[:10]
        assert (adjudicator["specialty"], adjudicator["jurisdiction"]) == (
            "geriatrics",
            "Australia",
        )
        assert adjudicator["years_post_registration"] == 12
        assert leaked(path.read_text()) == []

    # No private identity value anywhere in the published files or the audit log.
    assert leaked(files_text(folder)) == []
    with session_scope(engine) as s:
        payloads = [json.dumps(e.payload) for e in s.exec(select(AuditEvent)).all()]
        kinds = [e.kind for e in s.exec(select(AuditEvent)).all()]
        user = s.exec(select(User).where(User.pseudonym == "adjudicator-01")).one()
        sealed = user.identity_sealed
    assert "attestation_signed" in kinds and "identity_recorded" in kinds
    with session_scope(engine) as s:
        stored = [r.envelope for r in s.exec(select(LogRecord)).all()]
    assert leaked("\n".join(stored)) == []
    assert leaked("\n".join(payloads)) == []
    assert sealed and leaked(sealed) == []
    assert leaked(base64.b64decode(sealed).decode("latin-1")) == []


# Refusals ------------------------------------------------------------------------------------


def test_signing_is_refused_until_everything_is_in_place(engine, shared_library, tmp_path):
    library, folder = shared_library, tmp_path / "attestations"
    coordinator, a, _ = enrol(engine, library, folder)
    before = {p.name for p in folder.iterdir()}

    with pytest.raises(FmaBandsError, match="identity is not recorded"):
        sign(engine, library, a, PASS_01, folder)

    with session_scope(engine) as s:
        set_identity(
            s,
            actor=coordinator,
            pseudonym="adjudicator-01",
            record=IDENTITY,
            key_path=tmp_path / "k",
            passphrase=COORDINATOR["passphrase"],
            folder=None,
        )
        records_before = len(s.exec(select(LogRecord)).all())
    for left_out in DECLARATIONS:
        partial = [d for d in DECLARATIONS if d != left_out]
        # The declaration in words, its name beside it.
        with pytest.raises(FmaBandsError) as refused:
            sign(engine, library, a, PASS_01, folder, declarations=partial)
        said = f'every declaration is required; missing: "{DECLARATIONS[left_out]}" ({left_out})'
        assert refused.value.message == said
    with pytest.raises(FmaBandsError, match="unknown declaration"):
        sign(engine, library, a, PASS_01, folder, declarations=[*DECLARATIONS, "no-conflicts"])

    with pytest.raises(FmaBandsError, match="no current submitted review"):
        sign(engine, library, a, PASS_01, folder)
    # A draft is not a submitted review.
    with session_scope(engine) as s:
        save(
            s,
            library,
            a,
            "draft_triage_01",
            "esi_acuity",
            ReviewForm(verdict="ACCEPT", answers=ANSWERS),
            expected_version=0,
        )
    with pytest.raises(FmaBandsError, match="no current submitted review"):
        sign(engine, library, a, PASS_01, folder)

    with session_scope(engine) as s:
        import_handback(
            s,
            library,
            actor=coordinator,
            rater_pseudonym="adjudicator-01",
            # The draft above blocks the hand-back's triage line, so leave that one out.
            text="\n".join(
                line
                for line in HANDBACK.read_text().splitlines()
                if not line.startswith("draft_triage_01")
            ),
            source=HANDBACK.name,
        )
    with pytest.raises(FmaBandsError, match="passphrase is not right"):
        sign(engine, library, a, "not the passphrase at all", folder)
    assert {p.name for p in folder.iterdir()} == before
    with session_scope(engine) as s:
        kinds = [e.kind for e in s.exec(select(AuditEvent)).all()]
        assert len(s.exec(select(LogRecord)).all()) == records_before  # nothing sealed either
    assert "attestation_signed" not in kinds
    assert "handback_imported" in kinds


# The statement -------------------------------------------------------------------------------


def test_the_envelope_holds_an_in_toto_statement_of_every_reviewed_band(signed):
    study, _ = signed
    library = study.library
    envelope = json.loads(study.envelope.read_text())
    assert envelope["payloadType"] == IN_TOTO_PAYLOAD_TYPE
    assert [s["keyid"] for s in envelope["signatures"]] == [study.a.keyid]
    statement = statement_of(study.envelope)
    assert statement["_type"] == STATEMENT_TYPE == "https://in-toto.io/Statement/v1"
    assert statement["predicateType"] == TYPE_OF["adjudication"]

    expected_subjects = {
        f"{v.id}/{p.sub_action}": p.acceptable.digest().removeprefix("sha256:")
        for v in library
        for p in v.proposals
    }
    subjects = {s["name"]: s["digest"] for s in statement["subject"]}
    assert len(subjects) == len(statement["subject"]) == 4
    assert {name: d["sha256"] for name, d in subjects.items()} == expected_subjects
    assert all(len(d["sha256"]) == 64 and set(d) == {"sha256"} for d in subjects.values())

    predicate = statement["predicate"]
    evidence = read_evidence(study.folder)
    published = evidence.records()["adjudicator-01"]
    assert predicate["adjudicator"] == {
        "pseudonym": "adjudicator-01",
        "specialty": "geriatrics",
        "jurisdiction": "Australia",
        "years_post_registration": 12,
        "anonymous_to_readers": True,
        "identity_commitment": study.commitment,
        "keyid": study.a.keyid,
        "public_key": study.a.public_key,
        "demo": False,
    }
    assert [(k["keyid"], k["public_key"]) for k in published["keys"]] == [
        (study.a.keyid, study.a.public_key)
    ]
    assert predicate["identity_commitment"] == study.commitment == published["identity_commitment"]
    # Its place in the study's log: after the root-signed identity record, signed by her key.
    with session_scope(study.engine) as s:
        study_id = study_settings(s).study_id
    assert predicate["log"] == {
        "study": study_id,
        "sequence": 5,
        "previous": evidence.chain[4].digest,
    }
    assert predicate["signer"] == {"pseudonym": "adjudicator-01", "keyid": study.a.keyid}
    assert predicate["part"] == {"index": 1, "of": 1}

    manifestation = predicate["signature_manifestation"]
    assert manifestation["printed_name"] == "adjudicator-01"
    assert manifestation["meaning"] == "adjudication"
    assert manifestation["signed_at"].endswith("Z")
    signed_at = datetime.fromisoformat(manifestation["signed_at"])
    assert signed_at.utcoffset() == timedelta(0)
    assert abs(datetime.now(UTC) - signed_at) < timedelta(hours=1)

    assert predicate["declarations"]["statement"] == statement_text([(1, "review")])
    assert predicate["declarations"]["made"] == DECLARATIONS

    reviews = {f"{r['vignette_id']}/{r['sub_action']}": r for r in predicate["reviews"]}
    assert set(reviews) == set(expected_subjects)
    handback = {
        line.split("|")[0].strip(): line.split("|")[3].strip()
        for line in HANDBACK.read_text().splitlines()
        if line.startswith("draft_")
    }
    for name, review in reviews.items():
        vid, sub = name.split("/")
        verdict, band = HANDBACK_BANDS[name]
        assert (review["verdict"], review["attested_band"]) == (verdict, band)
        assert review["answers"] == {}
        assert review["reason"] == handback[vid]
        assert review["context_digest"] == library.vignettes[vid].context_digest_for(sub)
        assert review["band_digest"] == "sha256:" + expected_subjects[name]
        # Each signed review binds the whole proposal, and says where it came from.
        assert review["proposal_digest"] == proposal_digest(library.vignettes[vid].proposal(sub))
        assert (review["origin"], review["round"], review["mode"]) == ("handback", 1, "review")
        assert review["entered_by"] == "coordinator" and review["confirmed_by_rater"] is True
        assert review["entered_at"].endswith("Z")

    with session_scope(study.engine) as s:
        [signing] = audit.events(s, kinds=["attestation_signed"])
    head = predicate["audit_head"]
    assert (signing["seq"], signing["prev_hash"]) == (head["seq"] + 1, head["hash"])
    assert signing["payload"]["records"] == [study.envelope.name]
    assert sorted(signing["payload"]["bands"]) == sorted(expected_subjects)


def test_securesystemslib_verifies_a_real_attestation(signed):
    study, _ = signed
    [record] = read_evidence(study.folder).records()["adjudicator-01"]["keys"]
    key = SSlibKey(
        record["keyid"],
        "ed25519",
        "ed25519",
        {"public": base64.b64decode(record["public_key"]).hex()},
    )
    envelope = json.loads(study.envelope.read_text())
    # from_dict rewrites the signature dicts in place, so hand it a copy.
    assert set(Envelope.from_dict(copy.deepcopy(envelope)).verify([key], 1)) == {record["keyid"]}

    statement = statement_of(study.envelope)
    statement["predicate"]["reviews"][0]["verdict"] = "DECLINE"
    envelope["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    with pytest.raises(VerificationError):
        Envelope.from_dict(copy.deepcopy(envelope)).verify([key], 1)


# Identity ------------------------------------------------------------------------------------


def test_identity_is_checked_sealed_revealed_and_matches_its_commitment(
    engine, shared_library, tmp_path
):
    key_path, folder = tmp_path / "identity.key", tmp_path / "attestations"
    coordinator, a, _ = enrol(engine, shared_library, folder)

    incomplete = {k: v for k, v in IDENTITY.items() if k != "email"}
    with session_scope(engine) as s, pytest.raises(FmaBandsError, match="missing email"):
        set_identity(
            s,
            actor=coordinator,
            pseudonym="adjudicator-01",
            record=incomplete,
            key_path=key_path,
            passphrase=COORDINATOR["passphrase"],
            folder=None,
        )
    extra = {**IDENTITY, "nickname": "Immy"}
    with (
        session_scope(engine) as s,
        pytest.raises(FmaBandsError, match=r"unknown key.*nickname"),
    ):
        set_identity(
            s,
            actor=coordinator,
            pseudonym="adjudicator-01",
            record=extra,
            key_path=key_path,
            passphrase=COORDINATOR["passphrase"],
            folder=None,
        )
    with session_scope(engine) as s:
        assert s.get(User, a.id).identity_commitment is None

    with session_scope(engine) as s:
        commitment = set_identity(
            s,
            actor=coordinator,
            pseudonym="adjudicator-01",
            record=IDENTITY,
            key_path=key_path,
            passphrase=COORDINATOR["passphrase"],
            folder=None,
        )
    assert commitment.startswith("sha256:")
    # The root-signed roster publishes it, not the rater's own statement.
    with session_scope(engine) as s:
        publish(s, folder)
    published = read_evidence(folder).records()
    assert published["adjudicator-01"]["identity_commitment"] == commitment
    import_adjudicator_01(engine, shared_library, coordinator)
    sign(engine, shared_library, a, PASS_01, folder)
    close(engine, coordinator, folder)
    assert read_evidence(folder).records()["adjudicator-01"]["identity_commitment"] == commitment
    assert leaked(files_text(folder)) == []

    with session_scope(engine) as s:
        sealed = s.get(User, a.id).identity_sealed
    assert IDENTITY["full_name"] not in sealed
    assert IDENTITY["full_name"].encode() not in base64.b64decode(sealed)

    with session_scope(engine) as s:
        revealed = reveal_identity(
            s, actor=coordinator, pseudonym="adjudicator-01", key_path=key_path
        )
    assert revealed["record"] == IDENTITY
    assert revealed["identity_commitment"] == commitment
    assert isinstance(revealed["salt"], str) and len(bytes.fromhex(revealed["salt"])) == 32
    ok, message = check_revealed(revealed, published)
    assert ok, message
    # A revealed record survives a round trip through the YAML an editor is sent.
    ok, _ = check_revealed(yaml.safe_load(yaml.safe_dump(revealed)), published)
    assert ok
    for key in IDENTITY_FIELDS:
        changed = copy.deepcopy(revealed)
        changed["record"][key] += " (edited)"
        ok, message = check_revealed(changed, published)
        assert not ok and "does NOT match" in message, key
    changed = copy.deepcopy(revealed)
    changed["salt"] = "00" * 32
    assert check_revealed(changed, published)[0] is False
    # A hostile record is refused by field, never a crash.
    for field, value in (("pseudonym", {"a": 1}), ("pseudonym", [1]), ("salt", 7)):
        ok, message = check_revealed({**revealed, field: value}, published)
        assert not ok and message.endswith(f"{field}: expected text")
    ok, message = check_revealed({"pseudonym": "adjudicator-01"}, published)
    assert not ok and message.endswith("missing salt, record")
    assert check_revealed(["a list"], published) == (
        False,
        "not a revealed identity record: expected a mapping",
    )

    with session_scope(engine) as s:
        kinds = [e["kind"] for e in audit.events(s)]
    assert "identity_revealed" in kinds


def test_revealing_with_the_wrong_identity_key_is_refused_and_creates_no_key(signed_copy, tmp_path):
    study, engine = signed_copy
    missing = tmp_path / "not-the-key.key"
    with session_scope(engine) as s, pytest.raises(FmaBandsError):
        reveal_identity(s, actor=study.coordinator, pseudonym="adjudicator-01", key_path=missing)
    assert not missing.exists()
    other = tmp_path / "other.key"
    other.write_text(base64.b64encode(b"\x01" * 32).decode() + "\n")
    with session_scope(engine) as s, pytest.raises(FmaBandsError):
        reveal_identity(s, actor=study.coordinator, pseudonym="adjudicator-01", key_path=other)


def test_identity_is_recorded_only_by_the_coordinator_and_revealed_to_them_or_the_rater(
    signed_copy, tmp_path
):
    study, engine = signed_copy
    # Its own folder: the copy's new records must not reach the shared study's.
    b = enrol_and_activate(engine, study.coordinator, RATER_02, PASS_02, tmp_path / "attestations")
    with session_scope(engine) as s, pytest.raises(AccessDenied):
        set_identity(
            s,
            actor=b,
            pseudonym="adjudicator-01",
            record=IDENTITY,
            key_path=study.key_path,
            passphrase=COORDINATOR["passphrase"],
            folder=None,
        )
    with session_scope(engine) as s, pytest.raises(AccessDenied):
        reveal_identity(s, actor=b, pseudonym="adjudicator-01", key_path=study.key_path)
    # Not even their own: the commitment is what the study's root signs into the roster.
    with session_scope(engine) as s, pytest.raises(AccessDenied):
        set_identity(
            s,
            actor=b,
            pseudonym="adjudicator-02",
            record=IDENTITY_02,
            key_path=study.key_path,
            passphrase=PASS_02,
            folder=None,
        )
    with session_scope(engine) as s:
        set_identity(
            s,
            actor=study.coordinator,
            pseudonym="adjudicator-02",
            record=IDENTITY_02,
            key_path=study.key_path,
            passphrase=COORDINATOR["passphrase"],
            folder=None,
        )
        assert reveal_identity(s, actor=b, pseudonym="adjudicator-02", key_path=study.key_path)


# What a signature covers ------------------------------------------------------------------------


def identify(engine, coordinator, key_path, *names):
    with session_scope(engine) as s:
        for name, record in zip(names, (IDENTITY, IDENTITY_02), strict=False):
            set_identity(
                s,
                actor=coordinator,
                pseudonym=name,
                record=record,
                key_path=key_path,
                passphrase=COORDINATOR["passphrase"],
                folder=None,
            )


def test_a_handback_is_covered_only_once_the_rater_confirms_it(engine, shared_library, tmp_path):
    library, folder = shared_library, tmp_path / "attestations"
    coordinator, a, _ = enrol(engine, library, folder)
    identify(engine, coordinator, tmp_path / "k", "adjudicator-01")
    import_adjudicator_01(engine, library, coordinator)

    with session_scope(engine) as s:
        waiting = plan(s, library, a)
    assert waiting.reviews == []
    assert len(waiting.imported) == 4
    assert {r["entered_by"] for r in waiting.imported} == {"coordinator"}
    with pytest.raises(FmaBandsError, match="4 imported from your paper hand-back wait"):
        sign(engine, library, a, PASS_01, folder, confirm=False)
    assert signed_records(engine) == []

    receipt = sign(engine, library, a, PASS_01, folder, confirm=True)
    reviews = statement_in_store(engine, receipt)["predicate"]["reviews"]
    assert sorted(r["origin"] for r in reviews) == ["handback"] * 4
    with session_scope(engine) as s:
        [event] = audit.events(s, kinds=["attestation_signed"])
        # Once confirmed, a later signature covers them without asking again.
        assert plan(s, library, a).imported == []
        assert len(plan(s, library, a).reviews) == 4
    assert len(event["payload"]["confirmed_imports"]) == 4


def app_review(engine, library, rater, band, form):
    with session_scope(engine) as s:
        current = current_review(s, library, rater, *band)
        return save(
            s,
            library,
            rater,
            *band,
            form,
            expected_version=current.version if current else 0,
            submit=True,
        )


def test_signing_again_after_a_change_covers_exactly_what_was_signed_plus_the_change(
    engine, shared_library, tmp_path
):
    """The attack: a rater signs; the coordinator imports a hand-back in her name;
    she revises one other band and gives her passphrase. The new signature must not take in
    the imported lines (which would make a band clinician-adjudicated on verdicts she never
    wrote)."""
    library, folder = shared_library, tmp_path / "attestations"
    coordinator, a, _ = enrol(engine, library, folder)
    identify(engine, coordinator, tmp_path / "k", "adjudicator-01")
    triage, doc = ("draft_triage_01", "esi_acuity"), ("draft_documentation_01", "followup_days")
    app_review(engine, library, a, triage, ReviewForm(verdict="ACCEPT", answers=ANSWERS))
    amend = ReviewForm(
        verdict="AMEND", band={"min": 1, "max": 21}, reason="3 weeks.", answers=ANSWERS
    )
    app_review(engine, library, a, doc, amend)
    first = sign(engine, library, a, PASS_01, folder, confirm=False)

    with session_scope(engine) as s:
        import_handback(
            s,
            library,
            actor=coordinator,
            rater_pseudonym="adjudicator-01",
            text="draft_triage_01 | esi_acuity | AMEND {1, 2, 3, 4, 5} | anything goes\n"
            "draft_ordering_01 | esi_acuity | AMEND {1, 2, 3, 4, 5} | anything goes\n",
            source="forged.txt",
        )
    revised = ReviewForm(
        verdict="AMEND", band={"min": 1, "max": 28}, reason="4 weeks.", answers=ANSWERS
    )
    app_review(engine, library, a, doc, revised)
    with session_scope(engine) as s:
        again = resign(s, library, rater=a, passphrase=PASS_01, bands=[doc], folder=folder)

    before = {
        (r["vignette_id"], r["sub_action"]): r
        for r in statement_in_store(engine, first)["predicate"]["reviews"]
    }
    after = {
        (r["vignette_id"], r["sub_action"]): r
        for r in statement_in_store(engine, again)["predicate"]["reviews"]
    }
    assert set(after) == {triage, doc}  # no imported ordering line
    assert after[triage] == before[triage]  # exactly as signed before: her ACCEPT
    assert (after[doc]["revision"], after[doc]["attested_band"]) == (2, {"min": 1, "max": 28})
    assert all(r["origin"] == "app" for r in after.values())
    # Latest by position in the log: the second signature governs once both are published.
    assert again.records[0][0] > first.records[0][0]
    close(engine, coordinator, folder)
    decisions = by_band(decide(library, folder))
    assert decisions["draft_triage_01/esi_acuity"].as_dict()["acceptable"] == [2]
    assert decisions["draft_ordering_01/esi_acuity"].provenance != ADJUDICATED
    assert decisions["draft_documentation_01/followup_days"].as_dict()["acceptable"] == {
        "min": 1,
        "max": 28,
    }


def test_the_coordinator_cannot_sign_for_a_rater(engine, shared_library, tmp_path, monkeypatch):
    """With the coordinator's credentials, no function of the package signs as the rater: the
    rater's key is sealed under a passphrase only the rater chose."""
    from fma_bands.study import throttle
    from fma_bands.study.users import change_passphrase, sign_in

    # Each try an hour after the last: what is tested is the key, not the throttle's back-off.
    hours = itertools.count()
    start = utcnow()
    monkeypatch.setattr(throttle, "utcnow", lambda: start + timedelta(hours=next(hours)))

    library, folder = shared_library, tmp_path / "attestations"
    coordinator, a, _ = enrol(engine, library, folder)
    identify(engine, coordinator, tmp_path / "k", "adjudicator-01")
    import_adjudicator_01(engine, library, coordinator)
    theirs = COORDINATOR["passphrase"]
    with pytest.raises(WrongPassphrase, match="nothing was signed"):
        sign(engine, library, a, theirs, folder)
    receipt = sign(engine, library, a, PASS_01, folder)
    [(_, _, envelope)] = receipt.records
    files = sorted(folder.iterdir())
    with session_scope(engine) as s:
        records = len(s.exec(select(LogRecord)).all())

    # Signed already, exactly as it is: nothing new to sign, whoever asks.
    with pytest.raises(FmaBandsError, match="nothing new to sign"):
        sign(engine, library, a, PASS_01, folder)
    with pytest.raises(AccessDenied, match="only a rater can sign"):
        sign(engine, library, coordinator, theirs, folder)
    with session_scope(engine) as s, pytest.raises(WrongPassphrase):
        revoke(s, rater=a, passphrase=theirs, attestation=envelope, reason="x", folder=folder)
    with session_scope(engine) as s, pytest.raises(WrongPassphrase):
        unlock_signing_key(s, a.id, theirs)
    with session_scope(engine) as s, pytest.raises(FmaBandsError, match="not right"):
        change_passphrase(s, a.id, theirs, "the coordinator's choice")
    with session_scope(engine) as s:
        assert sign_in(s, "adjudicator-01", theirs) is None
    assert sorted(folder.iterdir()) == files
    with session_scope(engine) as s:
        stored = s.get(User, a.id)
        assert stored.enrolment_code_hash is None and stored.demo is False
        assert len(s.exec(select(LogRecord)).all()) == records

    # An enrolment code works once: whoever saw it cannot use it again to make a second key.
    with session_scope(engine) as s:
        _, code = enrol_person(s, actor=coordinator, passphrase=theirs, **RATER_02)
    for passphrase, expected in ((PASS_02, "adjudicator-02"), (theirs, None)):
        with session_scope(engine) as s:
            made = activate(
                s, pseudonym="adjudicator-02", code=code, passphrase=passphrase, folder=folder
            )
        assert (made.pseudonym if made else None) == expected
    with session_scope(engine) as s:
        assert sign_in(s, "adjudicator-02", theirs) is None
        assert sign_in(s, "adjudicator-02", PASS_02) is not None


# Receipts, splitting, revocation ---------------------------------------------------------------


def test_the_receipt_names_the_key_the_records_and_the_head(signed):
    """What the rater keeps: her key's fingerprint, each record's place, digest and file, and the
    head after them, which `verify --since` checks the folder still extends."""
    study, _ = signed
    receipt = study.receipt
    [row] = signed_records(study.engine)
    assert receipt.pseudonym == "adjudicator-01" and receipt.keyid == study.a.keyid
    assert receipt.records == ((row.sequence, row.digest, row.file_name),)
    assert receipt.head == (row.sequence, row.digest)
    assert receipt.sealed_until_round == 1  # signed while round 1 was open
    shown = receipt.as_dict()
    assert shown["since"] == f"{row.sequence}:{row.digest}"
    assert shown["in_folder"] == "when round 1 closes"
    with session_scope(study.engine) as s:
        table = manifestation_of(s, receipt)
    assert table["Key fingerprint"] == study.a.keyid
    assert table["Place in the study's log"] == str(row.sequence)
    assert table["Head after signing"] == f"{row.sequence}:{row.digest}"
    assert table["Printed name"] == "adjudicator-01"
    # The published chain holds the receipt's head: the digest is the file's payload's.
    evidence = read_evidence(study.folder, since=receipt.head)
    assert evidence.valid, evidence.problems
    assert evidence.head == receipt.head
    assert evidence.chain[row.sequence].path == study.envelope
    # A head the folder does not extend is refused.
    other = (row.sequence, "sha256:" + "0" * 64)
    refused = read_evidence(study.folder, since=other)
    assert not refused.valid
    assert [p.code for p in refused.problems] == ["folder_invalid"]


def test_the_receipt_on_file_is_the_one_signing_gave_once_in_the_folder(signed, tmp_path):
    """A rater who left the page without saving the receipt gets it again: the same key,
    records and head; in the folder now (the round closed since)."""
    study, url = signed
    engine = make_engine(copy_database(url, tmp_path / "copy.db"))
    with session_scope(engine) as s:
        kept = receipt_on_file(s, "adjudicator-01")
        assert receipt_on_file(s, "adjudicator-02") is None  # nothing signed
    engine.dispose()
    assert kept is not None
    assert kept.as_dict() == {**study.receipt.as_dict(), "in_folder": "now"}


def test_a_large_attestation_is_split_into_records_of_at_most_bands_per_record(
    engine, shared_library, tmp_path, monkeypatch
):
    monkeypatch.setattr("fma_bands.study.signing.BANDS_PER_RECORD", 3)
    study = build_study(engine, shared_library, tmp_path)
    receipt = study.receipt
    assert len(receipt.records) == 2
    (first, _, _), (second, digest, _) = receipt.records
    assert second == first + 1 and receipt.head == (second, digest)
    statements = [statement_in_store(engine, receipt, i) for i in (0, 1)]
    assert [s["predicate"]["part"] for s in statements] == [
        {"index": 1, "of": 2},
        {"index": 2, "of": 2},
    ]
    assert [len(s["predicate"]["reviews"]) for s in statements] == [3, 1]
    for statement in statements:
        names = [s["name"] for s in statement["subject"]]
        covered = [
            f"{r['vignette_id']}/{r['sub_action']}" for r in statement["predicate"]["reviews"]
        ]
        assert names == covered
    assert sorted(n for s in statements for n in (x["name"] for x in s["subject"])) == sorted(
        HANDBACK_BANDS
    )
    # Both parts are published at close and, together, grant what one record would.
    evidence = read_evidence(study.folder)
    assert evidence.valid, evidence.problems
    assert [e.path.name for e in evidence.adjudications()] == [f for _, _, f in receipt.records]
    decisions = by_band(decide(shared_library, study.folder))
    assert {name: d.provenance for name, d in decisions.items()} == {
        name: ADJUDICATED for name in HANDBACK_BANDS
    }
    with session_scope(engine) as s:
        lines = on_file(s, "adjudicator-01")
        [event] = audit.events(s, kinds=["attestation_signed"])
    assert len(lines) == 2 and all("in the attestations folder (record " in ln for ln in lines)
    assert ["3 bands" in lines[0], "1 band," in lines[1]] == [True, True]
    # When and what first, the record and its file last, in words.
    assert all(ln.startswith("Signed ") and ln.endswith(".dsse.json)") for ln in lines)
    assert event["payload"]["records"] == [f for _, _, f in receipt.records]


def test_reviews_are_split_by_their_size_too(engine, shared_library, tmp_path, monkeypatch):
    """Long texts make fewer reviews fit in a record: each part stays within its bytes, and
    the parts together grant what one record would."""
    monkeypatch.setattr("fma_bands.study.signing.REVIEW_BYTES_PER_RECORD", 1)
    study = build_study(engine, shared_library, tmp_path)
    assert len(study.receipt.records) == len(HANDBACK_BANDS)  # one review to a record
    evidence = read_evidence(study.folder)
    assert evidence.valid, evidence.problems
    decisions = by_band(decide(shared_library, study.folder))
    assert {name: d.provenance for name, d in decisions.items()} == {
        name: ADJUDICATED for name in HANDBACK_BANDS
    }


def test_a_record_of_reviews_filled_to_every_bound_stays_within_the_readers_bound():
    """A review whose every text is at its bound, in characters UTF-8 writes in four bytes: a
    record of as many as fit is still an envelope every reader of the folder accepts."""
    wide = "\U0001d11e"  # a musical symbol: four bytes of UTF-8
    worst = {
        "vignette_id": "v" * 64,
        "sub_action": "controlled_substance_caution",
        "verdict": "AMEND",
        "reason": wide * MAX_REASON,
        "answers": {q: {"choice": "unsure", "note": wide * MAX_NOTE} for q in QUESTION_KEYS},
        "corrections": {k: wide * MAX_CORRECTION for k in CORRECTED_TEXTS},
        **{d: "sha256:" + "0" * 64 for d in ("band_digest", "context_digest", "proposal_digest")},
    }
    reviews = [dict(worst, vignette_id=f"{i:064d}") for i in range(3 * BANDS_PER_RECORD)]
    parts = split_reviews(reviews)
    assert [r for part in parts for r in part] == reviews
    assert all(len(part) <= BANDS_PER_RECORD for part in parts)
    sizes = [sum(len(canonical_json(r)) for r in part) for part in parts]
    assert max(sizes) <= REVIEW_BYTES_PER_RECORD
    largest = parts[sizes.index(max(sizes))]
    key = Ed25519PrivateKey.generate()
    statement = record_statement(
        "adjudication",
        study="fma-" + "0" * 32,
        sequence=10**9,
        previous="sha256:" + "0" * 64,
        signer={"pseudonym": "adjudicator-01", "keyid": keyid_for(public_key_b64_of(key))},
        signed_at="2026-12-03T12:00:00.000000Z",
        subject=[{"name": "x" * 100, "digest": {"sha256": "0" * 64}} for _ in largest],
        body={"reviews": largest, "declarations": {"statement": wide * 10_000}},
        audit_head={"seq": 10**9, "hash": "sha256:" + "0" * 64},
    )
    keyid = keyid_for(public_key_b64_of(key))
    envelope = sign_envelope(canonical_json(statement), IN_TOTO_PAYLOAD_TYPE, key, keyid)
    assert len(json_text(envelope).encode()) < MAX_ENVELOPE_BYTES


def test_a_rater_revokes_one_attestation_record_by_its_file_name(engine, shared_library, tmp_path):
    study = build_study(engine, shared_library, tmp_path, second_rater=True)
    library, folder, a, b = shared_library, study.folder, study.a, study.b
    name = study.envelope.name
    assert by_band(decide(library, folder))["draft_triage_01/esi_acuity"].provenance == ADJUDICATED

    with session_scope(engine) as s, pytest.raises(FmaBandsError, match="say why"):
        revoke(s, rater=a, passphrase=PASS_01, attestation=name, reason=" ", folder=folder)
    with (
        session_scope(engine) as s,
        pytest.raises(FmaBandsError, match="not an attestation of yours"),
    ):
        revoke(s, rater=b, passphrase=PASS_02, attestation=name, reason="mine?", folder=folder)
    with (
        session_scope(engine) as s,
        pytest.raises(FmaBandsError, match="not an attestation of yours"),
    ):
        revoke(
            s,
            rater=a,
            passphrase=PASS_01,
            attestation="no-such.dsse.json",
            reason="x",
            folder=folder,
        )
    assert read_evidence(folder).revoked == set()

    # Named by its path or its file name alike; the round is closed, so it is published at once.
    with session_scope(engine) as s:
        receipt = revoke(
            s,
            rater=a,
            passphrase=PASS_01,
            attestation=str(study.envelope),
            reason="signed on the wrong hand-back",
            folder=folder,
        )
    [(sequence, digest, file)] = receipt.records
    assert receipt.head == (sequence, digest) and receipt.sealed_until_round is None
    evidence = read_evidence(folder)
    assert evidence.valid, evidence.problems
    assert evidence.chain[-1].path.name == file and evidence.chain[-1].kind == "revocation"
    assert evidence.revoked == {study.receipt.records[0][1]}
    decisions = by_band(decide(library, folder))
    assert all(d.provenance != ADJUDICATED for d in decisions.values())
    with session_scope(engine) as s:
        assert on_file(s, "adjudicator-01") == []
        with pytest.raises(FmaBandsError, match="revoked already"):
            revoke(s, rater=a, passphrase=PASS_01, attestation=name, reason="again", folder=folder)
        [event] = audit.events(s, kinds=["attestation_revoked"])
    assert event["payload"] == {"file": file, "revokes": name}
