"""Signed attestations end to end on the FairMedAgent data: identity, signing, the statement,
an independent verifier, privacy, and what the registry and the export make of it.

Enrolment and signing cost Argon2 time, so the file-only checks share one signed study per
module (a SQLite template); the database-facing steps run on SQLite and PostgreSQL (`engine`).
"""

import base64
import copy
import json
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml
from securesystemslib.dsse import Envelope
from securesystemslib.exceptions import VerificationError
from securesystemslib.signer import SSlibKey
from sqlmodel import select

from fma_bands import audit
from fma_bands.attestations import attest, publish_adjudicators
from fma_bands.dsse import IN_TOTO_PAYLOAD_TYPE, STATEMENT_TYPE
from fma_bands.envelopes import ADJUDICATION_TYPE, read_adjudicators, read_folder
from fma_bands.errors import AccessDenied, FmaBandsError
from fma_bands.export import export_document, load_adjudicators, load_bands, write_bands
from fma_bands.handback import import_handback
from fma_bands.identity import check_revealed, reveal_identity, set_identity
from fma_bands.protocol import DECLARATIONS, IDENTITY_FIELDS, STATEMENT_TEXT
from fma_bands.registry import ADJUDICATED, decide
from fma_bands.reviews import ReviewForm, save
from fma_bands.store.db import make_engine, session_scope, upgrade
from fma_bands.store.models import AuditEvent, User
from fma_bands.study import sync_vignettes
from fma_bands.users import create_user
from tests.conftest import HANDBACK

COORDINATOR = dict(pseudonym="coordinator", passphrase="coordinator passphrase", role="coordinator")
PASS_01 = "passphrase of adjudicator one"
PASS_02 = "passphrase of adjudicator two"
RATER_01 = dict(
    pseudonym="adjudicator-01",
    passphrase=PASS_01,
    role="rater",
    specialty="geriatrics",
    jurisdiction="Australia",
    years_post_registration=12,
)
RATER_02 = dict(
    pseudonym="adjudicator-02",
    passphrase=PASS_02,
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


def enrol(engine, library, *, second_rater: bool = False):
    with session_scope(engine) as s:
        sync_vignettes(s, library, actor="test")
        coordinator = create_user(s, actor=None, **COORDINATOR)
        a = create_user(s, actor="coordinator", **RATER_01)
        b = create_user(s, actor="coordinator", **RATER_02) if second_rater else None
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


def sign(engine, library, rater, passphrase, folder, *, now=None, declarations=None) -> Path:
    with session_scope(engine) as s:
        return attest(
            s,
            library,
            rater=rater,
            passphrase=passphrase,
            meaning="adjudication",
            declarations=ALL_DECLARATIONS if declarations is None else declarations,
            folder=folder,
            now=now,
        )


def build_study(engine, library, root: Path, *, second_rater: bool = False) -> Study:
    """Enrol, import adjudicator-01's hand-back, record identities and sign her reviews."""
    coordinator, a, b = enrol(engine, library, second_rater=second_rater)
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
        )
        if b is not None:
            set_identity(
                s,
                actor=coordinator,
                pseudonym="adjudicator-02",
                record=dict(IDENTITY_02),
                key_path=study.key_path,
            )
    study.envelope = sign(engine, library, a, PASS_01, study.folder)
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


def by_band(registry) -> dict[str, object]:
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

    adjudicators, checked = read_folder(folder)
    assert [(c.path, c.error, c.kind, c.pseudonym) for c in checked] == [
        (study.envelope, None, "adjudication", "adjudicator-01")
    ]
    assert adjudicators["adjudicator-01"]["keyid"] == study.a.keyid

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
    assert leaked("\n".join(payloads)) == []
    assert sealed and leaked(sealed) == []
    assert leaked(base64.b64decode(sealed).decode("latin-1")) == []


# Refusals ------------------------------------------------------------------------------------


def test_signing_is_refused_until_everything_is_in_place(engine, shared_library, tmp_path):
    library, folder = shared_library, tmp_path / "attestations"
    folder.mkdir()
    coordinator, a, _ = enrol(engine, library)

    with pytest.raises(FmaBandsError, match="identity is not recorded"):
        sign(engine, library, a, PASS_01, folder)

    with session_scope(engine) as s:
        set_identity(
            s,
            actor=coordinator,
            pseudonym="adjudicator-01",
            record=IDENTITY,
            key_path=tmp_path / "k",
        )
    for left_out in DECLARATIONS:
        partial = [d for d in DECLARATIONS if d != left_out]
        with pytest.raises(FmaBandsError, match=f"missing: {left_out}"):
            sign(engine, library, a, PASS_01, folder, declarations=partial)
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
    assert list(folder.iterdir()) == []
    with session_scope(engine) as s:
        kinds = [e.kind for e in s.exec(select(AuditEvent)).all()]
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
    assert statement["predicateType"] == ADJUDICATION_TYPE

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
    published = read_adjudicators(study.folder)["adjudicator-01"]
    assert predicate["adjudicator"] == published
    assert predicate["adjudicator"]["keyid"] == study.a.keyid
    assert predicate["adjudicator"]["public_key"] == study.a.public_key
    assert predicate["identity_commitment"] == study.commitment == published["identity_commitment"]

    manifestation = predicate["signature_manifestation"]
    assert manifestation["printed_name"] == "adjudicator-01"
    assert manifestation["meaning"] == "adjudication"
    assert manifestation["signed_at"].endswith("Z")
    signed_at = datetime.fromisoformat(manifestation["signed_at"])
    assert signed_at.utcoffset() == timedelta(0)
    assert abs(datetime.now(UTC) - signed_at) < timedelta(hours=1)

    assert predicate["declarations"]["statement"] == STATEMENT_TEXT
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

    with session_scope(study.engine) as s:
        [signing] = audit.events(s, kinds=["attestation_signed"])
    head = predicate["audit_head"]
    assert (signing["seq"], signing["prev_hash"]) == (head["seq"] + 1, head["hash"])
    assert signing["payload"]["file"] == study.envelope.name
    assert sorted(signing["payload"]["bands"]) == sorted(expected_subjects)


def test_securesystemslib_verifies_a_real_attestation(signed):
    study, _ = signed
    record = read_adjudicators(study.folder)["adjudicator-01"]
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
    coordinator, a, _ = enrol(engine, shared_library)
    key_path, folder = tmp_path / "identity.key", tmp_path / "attestations"

    incomplete = {k: v for k, v in IDENTITY.items() if k != "email"}
    with session_scope(engine) as s, pytest.raises(FmaBandsError, match="missing email"):
        set_identity(
            s, actor=coordinator, pseudonym="adjudicator-01", record=incomplete, key_path=key_path
        )
    extra = {**IDENTITY, "nickname": "Immy"}
    with (
        session_scope(engine) as s,
        pytest.raises(FmaBandsError, match=r"unknown key.*nickname"),
    ):
        set_identity(
            s, actor=coordinator, pseudonym="adjudicator-01", record=extra, key_path=key_path
        )
    with session_scope(engine) as s:
        assert s.get(User, a.id).identity_commitment is None

    with session_scope(engine) as s:
        commitment = set_identity(
            s, actor=coordinator, pseudonym="adjudicator-01", record=IDENTITY, key_path=key_path
        )
        publish_adjudicators(s, folder)
    assert commitment.startswith("sha256:")
    published = read_adjudicators(folder)
    assert published["adjudicator-01"]["identity_commitment"] == commitment
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


def test_identity_is_recorded_only_by_the_coordinator_or_the_rater(signed_copy, tmp_path):
    study, engine = signed_copy
    with session_scope(engine) as s:
        b = create_user(s, actor="coordinator", **RATER_02)
    with session_scope(engine) as s, pytest.raises(AccessDenied):
        set_identity(
            s, actor=b, pseudonym="adjudicator-01", record=IDENTITY, key_path=study.key_path
        )
    with session_scope(engine) as s, pytest.raises(AccessDenied):
        reveal_identity(s, actor=b, pseudonym="adjudicator-01", key_path=study.key_path)
    with session_scope(engine) as s:
        set_identity(
            s, actor=b, pseudonym="adjudicator-02", record=IDENTITY_02, key_path=study.key_path
        )
