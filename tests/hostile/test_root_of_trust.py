"""Issue 19's attacks on the root of trust, each run by someone with write access to
attestations/ and nothing else: no passphrase, no database.

A real study is built through the project (on SQLite and on PostgreSQL: the `engine` fixture):
a coordinator whose key is the study's root, two raters enrolled by root-signed records, a signed
policy of quorum 2 with the scope rule required, reviews submitted and signed while round 1 is
open (sealed in the store) and published when it closes. Every attack is then made with nothing
but `cryptography` (Ed25519), json, base64, hashlib and file writes (the toolkit below imports
nothing of fma_bands), and judged by the registry, read_evidence and `fma-bands verify`,
`registry` and `export`: refused with its reason code, naming the file where the attack claims a
place, and once the attack is gone the untouched study verifies and grants the same bands.
"""

import base64
import copy
import dataclasses
import hashlib
import json
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from sqlalchemy import text

from fma_bands.cli import cli
from fma_bands.core.errors import FmaBandsError
from fma_bands.core.protocol import DECLARATIONS
from fma_bands.core.vignettes import load_library
from fma_bands.evidence.export import export_document
from fma_bands.evidence.log import read_evidence
from fma_bands.evidence.provenance import ADJUDICATED
from fma_bands.evidence.registry import decide
from fma_bands.store.db import make_engine, session_scope, upgrade
from fma_bands.study.enrolment import activate, reset
from fma_bands.study.governance import set_policy
from fma_bands.study.identity import set_identity
from fma_bands.study.ledger import head as store_head
from fma_bands.study.reviews import ReviewForm, save
from fma_bands.study.rounds import close_round
from fma_bands.study.signing import attest, revoke
from fma_bands.study.state import study as study_settings
from fma_bands.study.users import unlock_signing_key
from tests.conftest import DEMO_VIGNETTES, enrol_study

# =============================================================================================
# The attacker's toolkit: cryptography, json, base64, hashlib and file writes. Nothing here
# imports or calls fma_bands: it is what anyone who can write the folder can do.
# =============================================================================================

PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT = "https://in-toto.io/Statement/v1"
SUFFIX = ".dsse.json"


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


class Key:
    """A fresh Ed25519 key pair (or one the attacker found), with its public half and key id."""

    def __init__(self, private: Ed25519PrivateKey | None = None) -> None:
        self.private = private or Ed25519PrivateKey.generate()
        raw = self.private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        self.public = b64(raw)
        self.keyid = "sha256:" + hashlib.sha256(raw).hexdigest()


def pae(payload: bytes) -> bytes:
    kind = PAYLOAD_TYPE.encode()
    return b"DSSEv1 %d %b %d %b" % (len(kind), kind, len(payload), payload)


def envelope(statement: dict, *keys: Key) -> tuple[dict, str]:
    """The DSSE envelope of `statement` signed by `keys`, and the record's digest."""
    payload = json.dumps(statement, sort_keys=True, separators=(",", ":")).encode()
    signatures = [{"keyid": k.keyid, "sig": b64(k.private.sign(pae(payload)))} for k in keys]
    digest = "sha256:" + hashlib.sha256(payload).hexdigest()
    return {"payload": b64(payload), "payloadType": PAYLOAD_TYPE, "signatures": signatures}, digest


@dataclass
class Found:
    """One record file as the attacker reads it (no signature checked)."""

    path: Path
    statement: dict
    digest: str

    @property
    def kind(self) -> str:
        return self.statement["predicateType"].rsplit("/", 2)[-2]

    @property
    def sequence(self) -> int:
        return self.statement["predicate"]["log"]["sequence"]

    @property
    def signer(self) -> str:
        return self.statement["predicate"]["signer"]["pseudonym"]


def read_record(path: Path) -> Found:
    payload = base64.b64decode(json.loads(path.read_text())["payload"])
    return Found(path, json.loads(payload), "sha256:" + hashlib.sha256(payload).hexdigest())


def records(folder: Path) -> list[Found]:
    return sorted((read_record(p) for p in folder.glob(f"*{SUFFIX}")), key=lambda f: f.sequence)


def write_record(folder: Path, statement: dict, *keys: Key, who: str = "x") -> Path:
    signed, digest = envelope(statement, *keys)
    kind = statement["predicateType"].rsplit("/", 2)[-2]
    sequence = statement["predicate"]["log"]["sequence"]
    path = folder / f"{sequence:06d}-{kind}-{who}-{digest[7:19]}{SUFFIX}"
    path.write_text(json.dumps(signed))
    return path


def forged(
    template: Found,
    *,
    sequence: int,
    previous: str | None,
    signer: Key,
    pseudonym: str,
    signed_at: str = "2026-01-01T00:00:00.000000Z",
    study: str | None = None,
) -> dict:
    """A copy of a real record's statement placed at `sequence` after `previous`, naming
    `pseudonym` and `signer`'s key as its signer."""
    statement = copy.deepcopy(template.statement)
    predicate = statement["predicate"]
    log = predicate["log"]
    predicate["log"] = {
        "study": study or log["study"],
        "sequence": sequence,
        "previous": previous,
    }
    predicate["signer"] = {"pseudonym": pseudonym, "keyid": signer.keyid}
    predicate["signed_at"] = signed_at
    return statement


def flip_a_signature_bit(path: Path) -> None:
    signed = json.loads(path.read_text())
    sig = bytearray(base64.b64decode(signed["signatures"][0]["sig"]))
    sig[17] ^= 0x01
    signed["signatures"][0]["sig"] = b64(bytes(sig))
    path.write_text(json.dumps(signed))


def resign_everything(source: Path, target: Path, *, study: str | None = None) -> None:
    """The whole log signed again under fresh keys: a new root key, a new key for each rater,
    every record re-chained (optionally under another study id)."""
    found = records(source)
    old_study = found[0].statement["predicate"]["log"]["study"]
    root = Key()
    if study == "derived":  # an attacker who knows how a study's id is made from its root key
        study = "fma-" + hashlib.sha256(root.keyid.encode()).hexdigest()[:32]
    keys: dict[str, Key] = {}  # pseudonym -> the attacker's key for them
    renamed: dict[str, str] = {}  # old digest -> new digest
    previous = None
    target.mkdir(exist_ok=True)
    for record in found:
        statement = copy.deepcopy(record.statement)
        predicate = statement["predicate"]
        predicate["log"] = {
            "study": study or old_study,
            "sequence": record.sequence,
            "previous": previous,
        }
        signer = root
        if record.kind == "root":
            holder = predicate["root"]["keys"][0]["holder"]
            predicate["root"]["keys"] = [
                {"keyid": root.keyid, "public_key": root.public, "holder": holder}
            ]
        elif record.kind == "enrolment":
            name = predicate["enrolment"]["pseudonym"]
            proof = f"the attacker's proof for {name}"
            predicate["enrolment"]["activation_check"] = (
                "sha256:" + hashlib.sha256(proof.encode()).hexdigest()
            )
        elif record.kind == "activation":
            activation = predicate["activation"]
            name = activation["pseudonym"]
            signer = keys.setdefault(name, Key())
            activation.update(
                proof=f"the attacker's proof for {name}",
                keyid=signer.keyid,
                public_key=signer.public,
                enrolment=renamed[activation["enrolment"]],
            )
        elif record.kind in ("adjudication", "revocation"):
            signer = keys[record.signer]
        for field_name in ("revokes", "approves"):
            if field_name in predicate:
                predicate[field_name] = renamed[predicate[field_name]]
        predicate["signer"]["keyid"] = signer.keyid
        made, digest = envelope(statement, signer)
        renamed[record.digest] = digest
        previous = digest
        who = record.path.name.split("-", 2)[2].rsplit("-", 1)[0]
        name = f"{record.sequence:06d}-{record.kind}-{who}-{digest[7:19]}{SUFFIX}"
        (target / name).write_text(json.dumps(made))
        if record.kind == "policy":  # the readable copy names the policy record's file
            text = (source / "policy.yaml").read_text()
            (target / "policy.yaml").write_text(text.replace(record.path.name, name))
    # adjudicators.yaml names the old keys: a careful attacker leaves it out (it is optional).


# =============================================================================================
# The study, built through the project
# =============================================================================================

COORDINATOR_PASS = "coordinator pass"
PASSES = {"adjudicator-01": "passphrase one", "adjudicator-02": "passphrase two"}
ANSWERS = {
    "q1": {"choice": "yes"},
    "q2": {"choice": "yes"},
    "q3": {"choice": "no"},
    "q4": {"choice": "no"},
    "q5": {"choice": "band", "note": "The narrow reading: the patient is stable."},
    "q6": {"choice": "yes"},
}
IDENTITY = {
    "full_name": "Rosalind Quetzal-Brightwater",
    "primary_qualification": "MBBS",
    "postgraduate_qualification": "FACEM",
    "registration_number": "MED0001234567",
    "registering_body": "Medical Board",
    "institution": "Harbour Hospital",
    "email": "r.q.brightwater@example.org",
}
# adjudicator-01 leaves this band submitted and unsigned, to sign later through the app.
HELD_BACK = ("demo_order_clear_01", "orders")
LABELLED = ("demo_order_border_01", "orders")  # a vignette with tool_labels


@dataclass
class Built:
    engine: Any
    root: Path
    vignettes: Path
    folder: Path
    library: Any
    coordinator: Any
    a: Any
    b: Any
    study: str
    head: tuple[int, str]
    grants: dict
    sealed_listing: list[str]  # the folder's envelopes while round 1 was open, after signing
    sealed_receipts: list[dict]


def submit_everything(engine, library, rater) -> None:
    with session_scope(engine) as s:
        for vignette in library:
            for proposal in vignette.proposals:
                save(
                    s,
                    library,
                    rater,
                    vignette.id,
                    proposal.sub_action,
                    ReviewForm(verdict="ACCEPT", answers=ANSWERS),
                    expected_version=0,
                    submit=True,
                )


def sign(engine, library, rater, folder, *, only=None, now=None):
    with session_scope(engine) as s:
        return attest(
            s,
            library,
            rater=rater,
            passphrase=PASSES[rater.pseudonym],
            meaning="adjudication",
            declarations=list(DECLARATIONS),
            folder=folder,
            only=only,
            now=now,
        )


def every_band(library) -> list[tuple[str, str]]:
    return [(v.id, p.sub_action) for v in library for p in v.proposals]


def build(engine, root: Path) -> Built:
    """The study: root, two raters, a signed policy of quorum 2 with scope required, every band
    submitted by both raters and signed in round 1 (adjudicator-01 holds one band back), then
    round 1 closed so the sealed records reach the folder."""
    vignettes = root / "vignettes"
    shutil.copytree(DEMO_VIGNETTES, vignettes)
    library = load_library([vignettes])
    assert library.ok, library.problems
    folder = root / "attestations"
    with session_scope(engine) as s:
        coordinator, a, b = enrol_study(s, library)
        for rater in (a, b):
            set_identity(
                s,
                actor=coordinator,
                pseudonym=rater.pseudonym,
                record=dict(IDENTITY, email=f"{rater.pseudonym}@example.org"),
                key_path=root / "identity.key",
                passphrase=COORDINATOR_PASS,
                folder=None,
            )
        set_policy(
            s, folder, actor=coordinator, passphrase=COORDINATOR_PASS, quorum=2, scope="require"
        )
        study_id = study_settings(s).study_id
        assert study_id is not None
    for rater in (a, b):
        submit_everything(engine, library, rater)
    everything = every_band(library)
    receipts = [
        sign(engine, library, a, folder, only=[band for band in everything if band != HELD_BACK]),
        sign(engine, library, b, folder),
    ]
    sealed_listing = sorted(p.name for p in folder.glob(f"*{SUFFIX}"))
    with session_scope(engine) as s:
        close_round(s, actor=coordinator, folder=folder)
    untouched = decide(library, folder, study=study_id)
    assert untouched.valid and not untouched.strays, untouched.file_problems
    return Built(
        engine,
        root,
        vignettes,
        folder,
        library,
        coordinator,
        a,
        b,
        study_id,
        untouched.head,
        granted(untouched),
        sealed_listing,
        [r.as_dict() for r in receipts],
    )


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def pristine(request, tmp_path_factory):
    """The study built once per store (SQLite, PostgreSQL) for the whole module: each test gets
    its own copy of it (`built`), so an attack never meets another's leftovers."""
    root = tmp_path_factory.mktemp("pristine")
    if request.param == "sqlite":
        url = f"sqlite:///{root / 'study.db'}"
    else:
        url = new_database(request.getfixturevalue("postgres_server"))
    engine = make_engine(url)
    upgrade(engine)
    study = build(engine, root / "study")
    engine.dispose()
    yield request.param, url, root, study
    if request.param == "postgres":
        drop_database(request.getfixturevalue("postgres_server"), url)


def new_database(server: str, template: str | None = None) -> str:
    """A new PostgreSQL database on the test server (a copy of `template`'s, if named)."""
    name = f"rot_{uuid.uuid4().hex[:12]}"
    copy_of = f' TEMPLATE "{template.rsplit("/", 1)[1]}"' if template else ""
    admin = make_engine(server)
    with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"{copy_of}'))
    admin.dispose()
    return server.rsplit("/", 1)[0] + f"/{name}"


def drop_database(server: str, url: str) -> None:
    admin = make_engine(server)
    with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f'DROP DATABASE "{url.rsplit("/", 1)[1]}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture
def built(request, pristine, tmp_path):
    """A copy of the module's study (its files and its store) for one test."""
    backend, url, root, study = pristine
    here = tmp_path / "study"
    shutil.copytree(root / "study", here)
    if backend == "sqlite":
        for suffix in ("", "-wal", "-shm"):
            if (root / f"study.db{suffix}").exists():
                shutil.copy(root / f"study.db{suffix}", tmp_path / f"study.db{suffix}")
        copied = f"sqlite:///{tmp_path / 'study.db'}"
    else:
        server = request.getfixturevalue("postgres_server")
        copied = new_database(server, template=url)
    engine = make_engine(copied)
    yield dataclasses.replace(
        study,
        engine=engine,
        root=here,
        vignettes=here / "vignettes",
        folder=here / "attestations",
        library=load_library([here / "vignettes"]),
    )
    engine.dispose()
    if backend == "postgres":
        drop_database(request.getfixturevalue("postgres_server"), copied)


def granted(registry) -> dict:
    """(vignette, sub-action) -> (band, signers) of every clinician-adjudicated band."""
    return {
        (d.vignette_id, d.sub_action): (str(d.band), d.adjudicated_by)
        for d in registry.decisions
        if d.provenance == ADJUDICATED
    }


def reasons(registry, band) -> set[str]:
    [decision] = [d for d in registry.decisions if (d.vignette_id, d.sub_action) == band]
    return {r.code for r in decision.reasons}


def head_record(folder: Path) -> Found:
    return records(folder)[-1]


def first_of(folder: Path, kind: str, signer: str | None = None) -> Found:
    return next(
        r for r in records(folder) if r.kind == kind and (signer is None or r.signer == signer)
    )


def assert_refused(study: Built, attack: Path, code: str, **pins: Any) -> None:
    """The folder is invalid because of `attack`, with `code`, and nothing is granted."""
    registry = decide(study.library, study.folder, study=study.study, **pins)
    assert not registry.valid
    assert (attack.name, code) in {(p.file, p.code) for p in registry.problems}, (
        registry.file_problems
    )
    assert granted(registry) == {}
    assert all("folder_invalid" in reasons(registry, band) for band in study.grants)


def assert_untouched(study: Built, **pins: Any) -> None:
    """The study verifies and grants exactly what it granted before the attack."""
    registry = decide(study.library, study.folder, study=study.study, **pins)
    assert registry.valid and not registry.strays, registry.file_problems
    assert granted(registry) == study.grants
    assert registry.head == study.head


def run_cli(study: Built, *args: str, folder: Path | None = None):
    base = [
        "--vignettes",
        str(study.vignettes),
        "--db",
        f"sqlite:///{study.root / 'no-database-here.db'}",
        "--attestations",
        str(folder or study.folder),
    ]
    env = {"FMA_BANDS_LOG_FILE": str(study.root / "cli.log")}
    result = CliRunner(env=env).invoke(cli, [*base, *args], catch_exceptions=False)
    assert "Traceback" not in result.output, result.output
    return result


def verify_json(study: Built, *args: str, folder: Path | None = None) -> tuple[int, dict]:
    result = run_cli(study, "verify", "--json", *args, folder=folder)
    return result.exit_code, json.loads(result.stdout)


# =============================================================================================
# The untouched study, and blinding of the folder
# =============================================================================================


def test_the_untouched_study_verifies_grants_and_kept_signatures_sealed_while_open(built):
    study = built
    # While round 1 was open, the signed attestations stayed in the store: the folder held the
    # root, the roster and the policy only; each rater's receipt said when it would be there.
    kinds = {name.split("-")[1] for name in study.sealed_listing}
    assert kinds == {"root", "enrolment", "activation", "identity", "policy"}, study.sealed_listing
    assert all(r["in_folder"] == "when round 1 closes" for r in study.sealed_receipts)
    # Closed, they are published, and the study grants bands signed by both raters.
    assert any(r.kind == "adjudication" for r in records(study.folder))
    assert study.grants and all(
        signers == ("adjudicator-01", "adjudicator-02") for _, signers in study.grants.values()
    )
    assert HELD_BACK not in study.grants and LABELLED in study.grants
    code, found = verify_json(study, "--study", study.study)
    assert code == 0 and found["valid"] and found["problems"] == []
    assert found["head"] == {"sequence": study.head[0], "digest": study.head[1]}


# =============================================================================================
# Fresh keys "for" an enrolled rater
# =============================================================================================


@pytest.mark.parametrize("kind", ["enrolment", "identity", "activation", "adjudication"])
def test_a_fresh_key_writing_for_an_enrolled_rater_is_an_unrostered_key(built, kind):
    study = built
    top = head_record(study.folder)
    attacker = Key()
    root_signed = kind in ("enrolment", "identity")
    template = first_of(study.folder, kind, None if root_signed else "adjudicator-01")
    statement = forged(
        template,
        sequence=top.sequence + 1,
        previous=top.digest,
        signer=attacker,
        pseudonym="coordinator" if root_signed else "adjudicator-01",
    )
    if kind == "identity":  # adjudicator-01 said to be someone the attacker chose
        statement["predicate"]["identity"] = {
            "pseudonym": "adjudicator-01",
            "identity_commitment": "sha256:" + hashlib.sha256(b"someone else").hexdigest(),
        }
    if kind == "enrolment":  # the attacker's enrolment of adjudicator-01, with their proof
        statement["predicate"]["enrolment"]["pseudonym"] = "adjudicator-01"
        statement["predicate"]["enrolment"]["activation_check"] = (
            "sha256:" + hashlib.sha256(b"mine").hexdigest()
        )
    if kind == "activation":  # the attacker's key activated for adjudicator-01's enrolment
        statement["predicate"]["activation"].update(
            keyid=attacker.keyid, public_key=attacker.public, proof="a guess"
        )
    if kind == "adjudication":  # every band attested as the attacker likes
        for review in statement["predicate"]["reviews"]:
            review["verdict"] = "AMEND"
    attack = write_record(study.folder, statement, attacker, who="adjudicator-01")

    assert_refused(study, attack, "unrostered_key")
    code, found = verify_json(study, "--study", study.study)
    assert code == 1 and not found["valid"]
    assert {"file": attack.name, "code": "unrostered_key"} in [
        {"file": p["file"], "code": p["code"]} for p in found["problems"]
    ]
    attack.unlink()
    assert_untouched(study)


def test_a_fresh_key_record_at_a_taken_place_is_a_stray_and_changes_nothing(built):
    study = built
    real = first_of(study.folder, "adjudication", "adjudicator-01")
    attacker = Key()
    statement = forged(
        real,
        sequence=real.sequence,
        previous=real.statement["predicate"]["log"]["previous"],
        signer=attacker,
        pseudonym="adjudicator-01",
    )
    attack = write_record(study.folder, statement, attacker, who="adjudicator-01")
    registry = decide(study.library, study.folder, study=study.study)
    assert registry.valid and granted(registry) == study.grants
    assert [(p.file, p.code) for p in registry.strays] == [(attack.name, "stray_file")]
    assert "unrostered_key" in registry.strays[0].message
    attack.unlink()
    assert_untouched(study)


# =============================================================================================
# The whole folder signed again under fresh keys
# =============================================================================================


def test_the_whole_folder_resigned_under_a_new_study_id_is_refused_by_the_pinned_study(built):
    study = built
    elsewhere = study.root / "resigned"
    resign_everything(study.folder, elsewhere, study="derived")
    # On its own it is a consistent log of another study: the pinned study refuses it.
    pinned = decide(study.library, elsewhere, study=study.study)
    assert not pinned.valid and granted(pinned) == {}
    assert any(
        (p.code, p.file) == ("folder_invalid", "") and "record 0 is missing" in p.message
        for p in pinned.problems
    )
    code, found = verify_json(study, "--study", study.study, folder=elsewhere)
    assert code == 1 and not found["valid"]
    # A root under any other id than its keys make is no root: its records are strays.
    other = study.root / "misnamed"
    resign_everything(study.folder, other, study="fma-0123456789abcdef")
    for path in other.glob(f"*{SUFFIX}"):
        shutil.copy(path, study.folder)
    misnamed = decide(study.library, study.folder)
    assert misnamed.valid and granted(misnamed) == study.grants
    assert {p.code for p in misnamed.strays} == {"wrong_study"}
    for path in other.glob(f"*{SUFFIX}"):
        (study.folder / path.name).unlink()
    # Beside the real records, and nothing pinned: two roots, so nothing is granted.
    for path in elsewhere.glob(f"*{SUFFIX}"):
        shutil.copy(path, study.folder)
    mixed = decide(study.library, study.folder)
    assert not mixed.valid and granted(mixed) == {}
    assert "roots of 2 studies" in mixed.problems[0].message
    assert run_cli(study, "verify").exit_code == 1
    # Pinned, the copies are the other study's strays.
    pinned_mixed = decide(study.library, study.folder, study=study.study)
    assert pinned_mixed.valid and granted(pinned_mixed) == study.grants
    assert {p.code for p in pinned_mixed.strays} == {"wrong_study"}
    for path in elsewhere.glob(f"*{SUFFIX}"):
        (study.folder / path.name).unlink()
    assert_untouched(study)


def test_the_whole_folder_resigned_under_the_same_study_id_is_refused_by_since(built):
    study = built
    elsewhere = study.root / "resigned"
    resign_everything(study.folder, elsewhere)
    since = f"{study.head[0]}:{study.head[1]}"
    # Against the head an editor kept (from an export or a receipt), the rewrite shows.
    refused = decide(study.library, elsewhere, study=study.study, since=study.head)
    assert not refused.valid and granted(refused) == {}
    assert any("does not extend the head" in p.message for p in refused.problems)
    code, found = verify_json(study, "--study", study.study, "--since", since, folder=elsewhere)
    assert code == 1 and not found["valid"]
    # Beside the real records: its root is not the one the study's id is made from, so each
    # of its records is a stray and the real log stands.
    for path in elsewhere.glob(f"*{SUFFIX}"):
        shutil.copy(path, study.folder)
    mixed = decide(study.library, study.folder)
    assert mixed.valid and granted(mixed) == study.grants
    assert {p.code for p in mixed.strays} == {"stray_file"}
    assert len(mixed.strays) == len(list(elsewhere.glob(f"*{SUFFIX}")))
    for path in elsewhere.glob(f"*{SUFFIX}"):
        (study.folder / path.name).unlink()
    assert_untouched(study, since=study.head)


def test_the_pinned_study_alone_refuses_a_resigning_that_keeps_the_study_id(built):
    # The study's id is made from its root keys: a new root under the same id is refused.
    study = built
    elsewhere = study.root / "resigned"
    resign_everything(study.folder, elsewhere)
    decided = decide(study.library, elsewhere, study=study.study)
    assert not decided.valid
    assert any("root keys make" in p.message for p in decided.problems)


# =============================================================================================
# A pseudonym with no account
# =============================================================================================


def test_a_phantom_pseudonym_counts_for_nothing_and_is_not_on_file(built):
    study = built
    top = head_record(study.folder)
    phantom = Key()
    template = first_of(study.folder, "activation", "adjudicator-01")
    activation = forged(
        template,
        sequence=top.sequence + 1,
        previous=top.digest,
        signer=phantom,
        pseudonym="adjudicator-99",
    )
    activation["predicate"]["activation"].update(
        pseudonym="adjudicator-99", keyid=phantom.keyid, public_key=phantom.public, proof="x"
    )
    first = write_record(study.folder, activation, phantom, who="adjudicator-99")
    vote = forged(
        first_of(study.folder, "adjudication", "adjudicator-02"),
        sequence=top.sequence + 2,
        previous=read_record(first).digest,
        signer=phantom,
        pseudonym="adjudicator-99",
    )
    second = write_record(study.folder, vote, phantom, who="adjudicator-99")

    assert_refused(study, first, "unrostered_key")
    with pytest.raises(FmaBandsError) as refused:
        export_document(study.library, study.folder, study=study.study)
    assert refused.value.code == "folder_invalid"
    provisional = export_document(study.library, study.folder, study=study.study, provisional=True)
    assert "adjudicator-99" not in {a["pseudonym"] for a in provisional["adjudicators"]}
    assert not any(a["attestation_on_file"] for a in provisional["adjudicators"])
    # Alone, its vote claims the place after the head and does not verify.
    first.unlink()
    vote["predicate"]["log"].update(sequence=top.sequence + 1, previous=top.digest)
    second.unlink()
    alone = write_record(study.folder, vote, phantom, who="adjudicator-99")
    assert_refused(study, alone, "unrostered_key")
    alone.unlink()
    assert_untouched(study)
    listed = export_document(study.library, study.folder, study=study.study)
    assert {a["pseudonym"] for a in listed["adjudicators"]} == set(PASSES)


# =============================================================================================
# Claimed times and retired keys
# =============================================================================================


def test_a_future_signed_at_orders_nothing(built):
    study = built
    top = head_record(study.folder)
    real = first_of(study.folder, "adjudication", "adjudicator-01")
    # The real record, redated to 2099: its signature no longer holds, wherever it is put.
    future = copy.deepcopy(real.statement)
    future["predicate"]["signed_at"] = "2099-12-31T23:59:59.000000Z"
    future["predicate"]["log"].update(sequence=top.sequence + 1, previous=top.digest)
    redated = json.loads(real.path.read_text())
    redated["payload"] = b64(json.dumps(future, sort_keys=True, separators=(",", ":")).encode())
    attack = study.folder / f"{top.sequence + 1:06d}-adjudication-adjudicator-01-{'f' * 12}{SUFFIX}"
    attack.write_text(json.dumps(redated))
    assert_refused(study, attack, "bad_signature")
    attack.unlink()
    assert_untouched(study)
    # Through the app, a record claiming 2099 is still outranked by a later one: the rater
    # signs her held-back band dated 2099, then revokes it (dated now): position decides.
    from datetime import UTC, datetime

    receipt = sign(
        study.engine,
        study.library,
        study.a,
        study.folder,
        only=[HELD_BACK],
        now=datetime(2099, 12, 31, tzinfo=UTC),
    )
    [(_, digest, name)] = receipt.records
    with session_scope(study.engine) as s:
        revoke(
            s,
            rater=study.a,
            passphrase=PASSES["adjudicator-01"],
            attestation=name,
            reason="signed with the wrong date",
            folder=study.folder,
        )
    evidence = read_evidence(study.folder, study=study.study)
    assert evidence.valid and digest in evidence.revoked
    registry = decide(study.library, study.folder, study=study.study)
    assert granted(registry) == study.grants and "revoked" in reasons(registry, HELD_BACK)


def test_a_retired_key_signing_a_back_dated_record_is_refused(built):
    study = built
    # The attacker holds adjudicator-01's key from a backup taken before her reset.
    with session_scope(study.engine) as s:
        _, private = unlock_signing_key(s, study.a.id, PASSES["adjudicator-01"])
    retired = Key(private)
    with session_scope(study.engine) as s:
        code = reset(
            s,
            actor=study.coordinator,
            pseudonym="adjudicator-01",
            passphrase=COORDINATOR_PASS,
            folder=study.folder,
        )
    with session_scope(study.engine) as s:
        assert activate(
            s,
            pseudonym="adjudicator-01",
            code=code,
            passphrase="a new passphrase",
            folder=study.folder,
        )
    after_reset = decide(study.library, study.folder, study=study.study)
    assert after_reset.valid
    study.grants, study.head = granted(after_reset), after_reset.head
    assert study.grants  # her signatures from before the reset still count

    real = first_of(study.folder, "adjudication", "adjudicator-01")
    back_dated = "2020-01-01T00:00:00.000000Z"
    # After the reset, dated before it: the key is retired at the reset's place.
    top = head_record(study.folder)
    late = forged(
        real,
        sequence=top.sequence + 1,
        previous=top.digest,
        signer=retired,
        pseudonym="adjudicator-01",
        signed_at=back_dated,
    )
    attack = write_record(study.folder, late, retired, who="adjudicator-01")
    assert_refused(study, attack, "unknown_key")
    attack.unlink()
    assert_untouched(study)
    # Slipped in before the reset, where the key still counted: a fork, nothing granted.
    early = forged(
        real,
        sequence=real.sequence,
        previous=real.statement["predicate"]["log"]["previous"],
        signer=retired,
        pseudonym="adjudicator-01",
        signed_at=back_dated,
    )
    for review in early["predicate"]["reviews"]:
        review["verdict"] = "DECLINE"
    attack = write_record(study.folder, early, retired, who="adjudicator-01")
    registry = decide(study.library, study.folder, study=study.study)
    assert not registry.valid and granted(registry) == {}
    assert f"forks at record {real.sequence}" in registry.problems[0].message
    assert attack.name in registry.problems[0].message
    attack.unlink()
    assert_untouched(study)


# =============================================================================================
# Another study's records
# =============================================================================================


@pytest.fixture(scope="module")
def other_study(tmp_path_factory) -> Path:
    """A second real study on the same vignette files (SQLite): its attestations folder."""
    root = tmp_path_factory.mktemp("other")
    engine = make_engine(f"sqlite:///{root / 'other.db'}")
    upgrade(engine)
    try:
        return build(engine, root).folder
    finally:
        engine.dispose()


def test_another_studys_records_are_wrong_study_strays(built, other_study):
    study = built
    theirs = sorted(other_study.glob(f"*{SUFFIX}"))
    for path in theirs:
        shutil.copy(path, study.folder)
    registry = decide(study.library, study.folder, study=study.study)
    assert registry.valid and granted(registry) == study.grants
    assert {(p.file, p.code) for p in registry.strays} == {(p.name, "wrong_study") for p in theirs}
    # Unpinned, the folder holds two studies' roots: nothing is granted.
    assert not decide(study.library, study.folder).valid
    for path in theirs:
        (study.folder / path.name).unlink()
    assert_untouched(study)
    # The folder replaced whole by theirs: the pinned study refuses it.
    replaced = study.root / "replaced"
    shutil.copytree(other_study, replaced)
    registry = decide(study.library, replaced, study=study.study)
    assert not registry.valid and granted(registry) == {}
    assert ("", "folder_invalid") in {(p.file, p.code) for p in registry.problems}
    assert any("record 0 is missing" in p.message for p in registry.problems)
    result = run_cli(
        study,
        "export",
        "--out",
        str(study.root / "bands.yaml"),
        "--study",
        study.study,
        folder=replaced,
    )
    assert result.exit_code == 1 and not (study.root / "bands.yaml").exists()
    # Read as what it is, it names the other study, never this one.
    assert decide(study.library, replaced).study != study.study


# =============================================================================================
# Fail closed
# =============================================================================================


def test_a_revocation_with_one_flipped_signature_bit_fails_closed(built):
    study = built
    victim = first_of(study.folder, "adjudication", "adjudicator-02")
    with session_scope(study.engine) as s:
        revoke(
            s,
            rater=study.b,
            passphrase=PASSES["adjudicator-02"],
            attestation=victim.path.name,
            reason="withdrawn",
            folder=study.folder,
        )
    revoked = decide(study.library, study.folder, study=study.study)
    assert revoked.valid and granted(revoked) == {}  # quorum 2: every band lost her vote
    study.grants, study.head = granted(revoked), revoked.head
    revocation = first_of(study.folder, "revocation")
    kept = revocation.path.read_bytes()
    flip_a_signature_bit(revocation.path)

    assert_refused(study, revocation.path, "bad_signature")
    with pytest.raises(FmaBandsError) as refused:
        export_document(study.library, study.folder, study=study.study)
    assert refused.value.code == "folder_invalid"
    out = study.root / "bands.yaml"
    result = run_cli(study, "export", "--out", str(out), "--study", study.study)
    assert result.exit_code == 1 and not out.exists()
    assert run_cli(study, "registry", "--json", "--study", study.study).exit_code == 1
    code, found = verify_json(study, "--study", study.study)
    assert code == 1 and (revocation.path.name, "bad_signature") in {
        (p["file"], p["code"]) for p in found["problems"]
    }
    revocation.path.write_bytes(kept)
    assert_untouched(study)


def test_deleting_the_newest_records_fails_verify_since_the_old_head(built):
    study = built
    since = f"{study.head[0]}:{study.head[1]}"
    newest = records(study.folder)[-3:]
    kept = {r.path.name: r.path.read_bytes() for r in newest}
    copy_kept = (study.folder / "adjudicators.yaml").read_bytes()
    for record in newest:
        record.path.unlink()
    (study.folder / "adjudicators.yaml").unlink()  # the copy would show the old head
    code, found = verify_json(study, "--study", study.study, "--since", since)
    assert code == 1 and not found["valid"]
    assert "does not extend the head" in found["problems"][0]["message"]
    refused = decide(study.library, study.folder, study=study.study, since=study.head)
    assert not refused.valid and granted(refused) == {}
    for name, data in kept.items():
        (study.folder / name).write_bytes(data)
    (study.folder / "adjudicators.yaml").write_bytes(copy_kept)
    assert verify_json(study, "--study", study.study, "--since", since)[0] == 0
    assert_untouched(study, since=study.head)


def test_a_hand_edited_policy_copy_grants_nothing_more(built):
    study = built
    path = study.folder / "policy.yaml"
    kept = path.read_text()
    assert yaml.safe_load(kept) == {"quorum": 2, "scope": "require"}
    path.write_text(kept.replace("quorum: 2", "quorum: 1").replace("scope: require", "scope: warn"))
    registry = decide(study.library, study.folder, study=study.study)
    assert not registry.valid
    assert ("policy.yaml", "copy_differs") in {(p.file, p.code) for p in registry.problems}
    assert set(granted(registry)) <= set(study.grants) and HELD_BACK not in granted(registry)
    assert registry.policy.quorum == 2 and registry.policy.scope == "require"
    code, found = verify_json(study, "--study", study.study)
    assert code == 1 and found["problems"][0]["code"] == "copy_differs"
    path.write_text(kept)
    assert_untouched(study)


def test_a_forged_next_record_cannot_lock_the_real_rater_out(built):
    study = built
    top = head_record(study.folder)
    attacker = Key()
    statement = forged(
        first_of(study.folder, "adjudication", "adjudicator-01"),
        sequence=top.sequence + 1,
        previous=top.digest,
        signer=attacker,
        pseudonym="adjudicator-01",
        signed_at="2099-01-01T00:00:00.000000Z",
    )
    attack = write_record(study.folder, statement, attacker, who="adjudicator-01")
    assert_refused(study, attack, "unrostered_key")
    # The real rater signs her held-back band through the app: her record takes the place.
    receipt = sign(study.engine, study.library, study.a, study.folder, only=[HELD_BACK])
    [(sequence, digest, name)] = receipt.records
    assert sequence == top.sequence + 1 and (study.folder / name).is_file()
    registry = decide(study.library, study.folder, study=study.study)
    assert registry.valid and registry.head == (sequence, digest)
    assert [(p.file, p.code) for p in registry.strays] == [(attack.name, "stray_file")]
    assert HELD_BACK in granted(registry)
    study.grants, study.head = granted(registry), registry.head
    attack.unlink()
    assert_untouched(study)


@pytest.mark.parametrize("place", ["next", "taken", "beyond", "far"])
def test_a_record_naming_a_previous_that_never_existed(built, place):
    study = built
    top = head_record(study.folder)
    real = first_of(study.folder, "adjudication", "adjudicator-02")
    attacker = Key()
    never = "sha256:" + hashlib.sha256(b"no such record").hexdigest()
    sequence = {
        "next": top.sequence + 1,
        "taken": real.sequence,
        "beyond": top.sequence + 2,
        "far": 10**40,  # the walk counts the places files claim, never the numbers between
    }
    statement = forged(
        real, sequence=sequence[place], previous=never, signer=attacker, pseudonym="adjudicator-02"
    )
    attack = write_record(study.folder, statement, attacker, who="adjudicator-02")
    registry = decide(study.library, study.folder, study=study.study)
    if place == "taken":
        assert registry.valid and granted(registry) == study.grants
        assert [(p.file, p.code) for p in registry.strays] == [(attack.name, "stray_file")]
    else:
        assert not registry.valid and granted(registry) == {}
        assert any(attack.name in f"{p.file} {p.message}" for p in registry.problems), (
            registry.file_problems
        )
    if place == "next":
        assert (attack.name, "folder_invalid") in {(p.file, p.code) for p in registry.problems}
    attack.unlink()
    assert_untouched(study)


def test_tool_labels_changed_after_signing_make_the_reviews_stale(built):
    study = built
    path = study.vignettes / f"{LABELLED[0]}.yaml"
    kept = path.read_text()
    assert "ctpa: CT pulmonary angiogram" in kept
    path.write_text(kept.replace("ctpa: CT pulmonary angiogram", "ctpa: Chest X-ray"))
    changed = load_library([study.vignettes])
    assert changed.ok
    registry = decide(changed, study.folder, study=study.study)
    assert registry.valid  # the signed records are untouched: the vignette changed
    assert LABELLED not in granted(registry) and "stale_context" in reasons(registry, LABELLED)
    assert set(granted(registry)) == {b for b in study.grants if b[0] != LABELLED[0]}
    path.write_text(kept)
    assert_untouched(study)


def test_the_store_and_the_folder_agree_on_the_head(built):
    """The folder's head is the store's: nothing the app signed is missing from it."""
    with session_scope(built.engine) as s:
        assert store_head(s) == built.head


def test_another_studys_root_in_the_folder_hides_no_cut_of_the_audit_log(built):
    # Someone who can edit the database cuts the audit log's newest events and the store's own
    # copies of the records that carry its head: the folder's records still show the cut. A
    # valid root record of another study (any key can make one) dropped into the folder must not
    # make the folder unreadable to audit verify, and so hide the cut.
    from fma_bands.study import audit
    from fma_bands.study.ledger import audit_anchors

    study = built
    with study.engine.begin() as connection:
        connection.execute(text("DELETE FROM audit_event WHERE seq > 3"))
        connection.execute(text("DELETE FROM log_record"))

    def cut_seen() -> bool:
        with session_scope(study.engine) as s:
            report = audit.verify(s, anchors=audit_anchors(s, study.folder))
        return any(p.kind == "truncated" for p in report.problems)

    assert cut_seen()
    elsewhere = study.root / "elsewhere"
    resign_everything(study.folder, elsewhere, study="derived")
    [foreign_root] = [p for p in elsewhere.glob(f"*{SUFFIX}") if p.name.startswith("000000-")]
    shutil.copy(foreign_root, study.folder / f"000000-planted{SUFFIX}")
    assert cut_seen()


def test_a_copy_planted_under_a_name_that_sorts_first_displaces_no_record(built):
    # A byte-for-byte copy of the policy record and of an attestation, each under a name ls
    # lists before the real file: the real files stay the records (the readable copies name
    # them), the copies are strays said to be copies, and deleting them later changes nothing.
    study = built
    planted = []
    for found in records(study.folder):
        if found.kind in ("policy", "adjudication") and found.kind not in {k for k, _ in planted}:
            copy = study.folder / f"{found.sequence:06d}-a{SUFFIX}"
            shutil.copy(found.path, copy)
            planted.append((found.kind, (copy.name, found.path.name)))
    assert len(planted) == 2
    registry = decide(study.library, study.folder, study=study.study)
    assert registry.valid, registry.file_problems
    assert granted(registry) == study.grants
    assert {(p.file, p.code, p.message) for p in registry.strays} == {
        (copy, "stray_file", f"a copy of {real}") for _, (copy, real) in planted
    }
    code, found = verify_json(study, "--study", study.study)
    assert code == 0 and found["valid"] and not found["problems"]
    for _, (copy, _) in planted:
        (study.folder / copy).unlink()
    assert_untouched(study)
