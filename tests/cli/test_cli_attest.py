"""Enrolment by code, identity, attestation, verification, policy, registry and export through
the fma-bands command, run as a coordinator and a rater run it: a subprocess on a SQLite file.
No traceback, ever, and no command signs for a rater with the coordinator's credentials.

The study's log: the coordinator's root record, the root-signed enrolment and the rater's
activation, the root-signed policy, then her attestation, sealed in the store while the round
is open and published to attestations/ when it closes.

One study is set up per module (enrolment and signing cost Argon2 time); tests that change it
work on copies of its store and attestations folder.
"""

import ast
import base64
import json
import re
import resource
import shutil
import sqlite3
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from fma_bands.cli import cli as fma_bands_cli
from fma_bands.cli.base import REFUSED_EXIT
from fma_bands.cli.registry import KEPT
from fma_bands.core.protocol import DECLARATIONS
from fma_bands.store.models import utcnow
from fma_bands.study import throttle
from fma_bands.study.throttle import FREE_FAILURES, wait_after
from tests.conftest import HANDBACK

PASS_01 = "passphrase of adjudicator one"
IDENTITY = {
    "full_name": "Imogen Quillfeather-Ashdown",
    "primary_qualification": "MBBS Wollongbar Zeta",
    "postgraduate_qualification": "FRACP Gerontic Zeta",
    "registration_number": "MED0009912345",
    "registering_body": "Wollongbar Practitioner Board",
    "institution": "Quillfeather Memorial Infirmary",
    "email": "imogen.q.ashdown@example.org",
}

DOC = ("draft_documentation_01", "followup_days")
TRIAGE = ("draft_triage_01", "esi_acuity")
REGISTRY_KEYS = {
    "vignette_id",
    "sub_action",
    "provenance",
    "acceptable",
    "adjudicated_by",
    "reasons",
    "warnings",
    "attestations",
}


@dataclass(frozen=True)
class Cli:
    root: Path
    db: str
    vignettes: Path
    attestations: Path
    identity_key: Path

    def coordinator(self, *args: str) -> subprocess.CompletedProcess:
        """A coordinator command, naming and authenticating the coordinator."""
        return self("--as", "coordinator", "--passphrase-file", "coordinator.pass", *args)

    def __call__(self, *args: str, memory: int | None = None) -> subprocess.CompletedProcess:
        """The command in a process of its own; `memory` caps its address space (bytes)."""

        def capped() -> None:
            if memory is not None:
                resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "fma_bands.cli",
                "--db",
                self.db,
                "--vignettes",
                str(self.vignettes),
                "--attestations",
                str(self.attestations),
                "--identity-key",
                str(self.identity_key),
                *args,
            ],
            cwd=self.root,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            preexec_fn=capped,
        )
        assert "Traceback" not in result.stderr, result.stderr
        return result


# An editor's view: the folder alone, no database (and --study, read from the paper).
EDITOR = ("--db", "sqlite:///no-database.db")


def ok(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def declares(*names: str) -> list[str]:
    return [arg for name in names for arg in ("--declare", name)]


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


def adjudications(folder: Path) -> list[Path]:
    return sorted(folder.glob("*-adjudication-*.dsse.json"))


def verified(cli: Cli, *args: str) -> dict:
    result = cli("verify", "--json", *args)
    data = json.loads(result.stdout)
    assert (result.returncode == 0) == data["valid"], result.stdout + result.stderr
    return data


@pytest.fixture(scope="module")
def study(tmp_path_factory, shared_vignettes):
    """adjudicator-01 enrolled, her hand-back imported, her identity set, her reviews signed."""
    root = tmp_path_factory.mktemp("cli")
    cli = Cli(
        root=root,
        db=f"sqlite:///{root / 'fma-bands.db'}",
        vignettes=shared_vignettes,
        attestations=root / "attestations",
        identity_key=root / "identity.key",
    )
    (root / "coordinator.pass").write_text("coordinator passphrase\n")
    (root / "rater.pass").write_text(PASS_01 + "\n")
    (root / "identity.yaml").write_text(yaml.safe_dump(IDENTITY))
    ok(
        cli(
            "user",
            "add",
            "coordinator",
            "--role",
            "coordinator",
            "--passphrase-file",
            "coordinator.pass",
        )
    )
    enrolled = ok(
        cli.coordinator(
            "user",
            "add",
            "adjudicator-01",
            "--specialty",
            "geriatrics",
            "--jurisdiction",
            "Australia",
            "--years",
            "12",
            "--code-file",
            "code.txt",
        )
    )
    assert "enrolled adjudicator-01 (rater), awaiting activation" in enrolled
    # The rater, at her own terminal, activates with the code and her own passphrase.
    assert "activated adjudicator-01 (rater); signing key sha256:" in ok(
        cli(
            "user",
            "activate",
            "adjudicator-01",
            "--code-file",
            "code.txt",
            "--passphrase-file",
            "rater.pass",
        )
    )
    # The hand-back's emergency bands are outside a geriatrician's scope: assigned first.
    emergency = ("--sub-action", "esi_acuity", "--sub-action", "analgesia_tier")
    ok(cli.coordinator("assign", "--rater", "adjudicator-01", *emergency))
    assert "imported 4 submitted reviews" in ok(
        cli.coordinator("handback", "import", str(HANDBACK), "--rater", "adjudicator-01")
    )
    assert "commitment sha256:" in ok(
        cli.coordinator("identity", "set", "adjudicator-01", "--from", "identity.yaml")
    )
    assert "quorum 1, scope warn" in ok(
        cli.coordinator("policy", "set", "--quorum", "1", "--scope", "warn")
    )
    # The study just before she signs, for the tests of passphrases refused (`unsigned`).
    copy_database(cli.db, root / "unsigned.db")
    shutil.copytree(cli.attestations, root / "unsigned-attestations")
    attest = ("attest", "--rater", "adjudicator-01", "--passphrase-file", "rater.pass")
    unconfirmed = cli(*attest, *declares(*DECLARATIONS))
    assert unconfirmed.returncode == 1
    assert "4 imported from your paper hand-back wait for you to confirm them" in unconfirmed.stderr
    before = verified(cli)["head"]
    signed = ok(cli(*attest, *declares(*DECLARATIONS), "--confirm-imported"))
    assert signed.count("confirmed and covered: ") == 4
    assert "entered from your paper hand-back by coordinator on " in signed
    # Her receipt, at once: the record, her key's fingerprint, and the head after it.
    [(sequence, name, digest)] = re.findall(r"signed record (\d+): (\S+) \((sha256:\w+)\)", signed)
    assert int(sequence) == before["sequence"] + 1
    assert name.startswith(f"{int(sequence):06d}-adjudication-adjudicator-01-")
    assert re.search(r"key fingerprint: sha256:[0-9a-f]{64}", signed)
    assert f"head after signing: {sequence}:{digest}" in signed
    # Sealed while the round is open: the folder does not show her work yet.
    assert adjudications(cli.attestations) == []
    assert verified(cli)["head"] == before
    assert "round 1 closed" in ok(cli.coordinator("round", "close"))
    envelope = cli.attestations / name
    assert adjudications(cli.attestations) == [envelope]
    assert verified(cli, "--since", f"{sequence}:{digest}")["head"] == {
        "sequence": int(sequence),
        "digest": digest,
    }
    return cli, envelope


@pytest.fixture
def copied(study, tmp_path):
    """The study with its own store and attestations folder, to change freely."""
    cli, envelope = study
    folder = tmp_path / "attestations"
    shutil.copytree(cli.attestations, folder)
    mine = replace(cli, db=copy_database(cli.db, tmp_path / "copy.db"), attestations=folder)
    return mine, folder / envelope.name


class Desk:
    """fma-bands run in-process on a copy of the study just before adjudicator-01 signs, with
    the clock the passphrase throttle reads in the test's hands (no test sleeps)."""

    def __init__(self, cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.db = copy_database(f"sqlite:///{cli.root / 'unsigned.db'}", tmp_path / "desk.db")
        self.folder = tmp_path / "attestations"
        shutil.copytree(cli.root / "unsigned-attestations", self.folder)
        self.cli = cli
        self.now = utcnow()
        monkeypatch.setattr(throttle, "utcnow", lambda: self.now)
        for name in ("FMA_BANDS_AS", "FMA_BANDS_PASSPHRASE_FILE"):
            monkeypatch.delenv(name, raising=False)
        self.wrong = tmp_path / "wrong.pass"
        self.wrong.write_text("a wrong guess at the passphrase\n")

    def file(self, name: str) -> str:
        return str(self.cli.root / name)

    def __call__(self, *args: str) -> Result:
        options = ["--db", self.db, "--vignettes", str(self.cli.vignettes)]
        options += [
            "--attestations",
            str(self.folder),
            "--identity-key",
            str(self.cli.identity_key),
        ]
        result = CliRunner().invoke(fma_bands_cli, [*options, *args], catch_exceptions=False)
        assert "Traceback" not in result.output
        return result

    def refused(self, *args: str, code: int = REFUSED_EXIT) -> str:
        """The one line a refused command says (exit 3, or 1 for a form's field; never a bug's
        70)."""
        result = self(*args)
        assert result.exit_code == code, result.output
        [line] = result.stderr.splitlines()
        return line.removeprefix("fma-bands: error: ")

    def failures(self) -> list[dict]:
        """The passphrase_failed events' payloads, oldest first."""
        rows = sqlite3.connect(self.db.removeprefix("sqlite:///")).execute(
            "SELECT payload FROM audit_event WHERE kind = 'passphrase_failed' ORDER BY seq"
        )
        return [json.loads(payload) for (payload,) in rows]


@pytest.fixture
def unsigned(study, tmp_path, monkeypatch) -> Desk:
    cli, _ = study
    return Desk(cli, tmp_path, monkeypatch)


LOCKED = "Too many failed attempts: wait 1 second before trying again"


def test_attest_with_wrong_passphrases_locks_the_rater_out_until_the_wait_passes(unsigned):
    attest = ("attest", "--rater", "adjudicator-01", *declares(*DECLARATIONS))
    attest += ("--confirm-imported", "--passphrase-file")
    for _ in range(FREE_FAILURES):
        assert unsigned.refused(*attest, str(unsigned.wrong)) == (
            "that passphrase is not right; nothing was signed"
        )
    # Her own passphrase, too soon: refused unchecked, saying how long to wait.
    assert unsigned.refused(*attest, unsigned.file("rater.pass")) == LOCKED
    assert [(p["pseudonym"], p["where"], p["throttled"]) for p in unsigned.failures()] == [
        ("adjudicator-01", "signing", False)
    ] * FREE_FAILURES + [("adjudicator-01", "signing", True)]
    assert "wrong guess" not in json.dumps(unsigned.failures())
    unsigned.now += wait_after(FREE_FAILURES)
    signed = unsigned(*attest, unsigned.file("rater.pass"))
    assert signed.exit_code == 0, signed.output
    assert "signed record " in signed.output


def test_user_passphrase_with_wrong_passphrases_is_locked_out(unsigned):
    new = unsigned.file("coordinator.pass")  # any passphrase of 12 characters or more will do
    change = ("user", "passphrase", "adjudicator-01", "--new-passphrase-file", new)
    for _ in range(FREE_FAILURES):
        # The page shows it beside the field, so it is the field's error (exit 1).
        assert unsigned.refused(*change, "--passphrase-file", str(unsigned.wrong), code=1) == (
            "old: the current passphrase is not right"
        )
    assert unsigned.refused(*change, "--passphrase-file", unsigned.file("rater.pass")) == LOCKED
    assert {p["where"] for p in unsigned.failures()} == {"passphrase change"}
    unsigned.now += wait_after(FREE_FAILURES)
    changed = unsigned(*change, "--passphrase-file", unsigned.file("rater.pass"))
    assert changed.exit_code == 0, changed.output


def test_the_coordinator_named_by_as_is_locked_out_after_wrong_passphrases(unsigned):
    def show(passphrase_file: str) -> Result:
        return unsigned(
            "--as", "coordinator", "--passphrase-file", passphrase_file, "round", "show"
        )

    for _ in range(FREE_FAILURES):
        result = show(str(unsigned.wrong))
        assert result.exit_code == REFUSED_EXIT
        assert result.stderr == (
            "fma-bands: error: Authentication failed: check your name and passphrase.\n"
        )
    locked = show(unsigned.file("coordinator.pass"))
    assert (locked.exit_code, locked.stderr) == (REFUSED_EXIT, f"fma-bands: error: {LOCKED}\n")
    assert [(p["pseudonym"], p["where"]) for p in unsigned.failures()] == [
        ("coordinator", "cli --as")
    ] * (FREE_FAILURES + 1)
    unsigned.now += wait_after(FREE_FAILURES)
    assert show(unsigned.file("coordinator.pass")).exit_code == 0


def registry_json(cli: Cli, *args: str) -> tuple[dict, dict]:
    data = json.loads(ok(cli("registry", "--json", *args)))
    return data, {(b["vignette_id"], b["sub_action"]): b for b in data["bands"]}


def test_identity_set_names_what_is_missing_or_unknown(study):
    cli, _ = study
    broken = cli.root / "broken-identity.yaml"
    record = {k: v for k, v in IDENTITY.items() if k != "email"} | {"nickname": "Immy"}
    broken.write_text(yaml.safe_dump(record))
    result = cli.coordinator("identity", "set", "adjudicator-01", "--from", str(broken))
    assert result.returncode == 1
    assert str(broken) in result.stderr
    assert "missing email" in result.stderr and "nickname" in result.stderr


def test_identity_reveal_then_check_against_the_published_commitment(study, tmp_path):
    cli, _ = study
    revealed = ok(cli.coordinator("identity", "reveal", "adjudicator-01"))
    record = yaml.safe_load(revealed)
    assert record["record"] == IDENTITY and record["salt"]
    path = tmp_path / "revealed.yaml"
    path.write_text(revealed)
    assert "matches" in ok(cli("identity", "check", str(path)))

    path.write_text(revealed.replace(IDENTITY["email"], "someone.else@example.org"))
    result = cli("identity", "check", str(path))
    assert result.returncode == 1
    assert "does NOT match" in result.stdout


def test_identity_reveal_with_a_missing_key_file_fails_cleanly(study, tmp_path):
    cli, _ = study
    missing = tmp_path / "no-such.key"
    result = replace(cli, identity_key=missing).coordinator("identity", "reveal", "adjudicator-01")
    assert result.returncode == 1
    assert str(missing) in result.stderr
    assert not missing.exists()


def test_attest_needs_every_declaration(study):
    cli, envelope = study
    partial = [d for d in DECLARATIONS if d != "consent-editor-disclosure"]
    result = cli(
        "attest",
        "--rater",
        "adjudicator-01",
        "--passphrase-file",
        "rater.pass",
        *declares(*partial),
    )
    assert result.returncode == 1
    assert "consent-editor-disclosure" in result.stderr
    assert adjudications(cli.attestations) == [envelope]


def test_verify_passes_then_names_an_edited_envelope(study, copied):
    cli, envelope = study
    out = ok(cli("verify"))
    sequence = int(envelope.name[:6])
    assert re.search(rf"ok +{sequence} adjudication +adjudicator-01 +{envelope.name}", out)
    assert len(re.findall(r"^ok ", out, flags=re.MULTILINE)) == sequence + 1
    assert f"head: {sequence}:sha256:" in out and out.rstrip().endswith("the folder verifies")

    mine, tampered = copied
    data = json.loads(tampered.read_text())
    statement = json.loads(base64.b64decode(data["payload"]))
    statement["predicate"]["reviews"][0]["verdict"] = "DECLINE"
    data["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    tampered.write_text(json.dumps(data))
    result = mine("verify")
    assert result.returncode == 1
    assert f"FAIL  {tampered.name}: bad_signature: record {sequence} does not verify" in (
        result.stdout
    )
    assert len(re.findall(r"^ok ", result.stdout, flags=re.MULTILINE)) == sequence
    # The editor's view of the same folder grants nothing, and export writes nothing.
    study_id = verified(cli)["study"]
    data = json.loads(mine(*EDITOR, "registry", "--json", "--study", study_id).stdout)
    assert data["valid"] is False
    assert all(b["reasons"] == ["folder_invalid"] for b in data["bands"])
    out = tampered.parent.parent / "bands.yaml"
    refused = mine(*EDITOR, "export", "--out", str(out), "--study", study_id)
    assert refused.returncode == 1 and not out.exists()


def imported(cli: Cli, modules: tuple[str, ...], *args: str) -> tuple[str, list[str]]:
    """The command's output, and which of `modules` its process imported (run as the console
    script runs it)."""
    code = (
        "import atexit, sys\n"
        f"modules = {modules!r}\n"
        "seen = lambda: [m for m in modules if m in sys.modules]\n"
        "atexit.register(lambda: print(seen(), file=sys.stderr))\n"
        "from fma_bands.cli import run\n"
        "run()\n"
    )
    options = ["--db", cli.db, "--vignettes", str(cli.vignettes)]
    options += ["--attestations", str(cli.attestations), *args]
    result = subprocess.run(
        [sys.executable, "-c", code, *options],
        cwd=cli.root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout, ast.literal_eval(result.stderr.splitlines()[-1])


def test_verify_reads_the_folder_without_the_database_library_or_the_statistics(study):
    """What an editor runs is mostly the fixed cost of starting: the database's library would
    more than double it (docs/performance.md), and `verify` needs neither it nor numpy."""
    cli, _ = study
    out, found = imported(cli, ("sqlalchemy", "sqlmodel", "numpy"), "verify")
    assert out.rstrip().endswith("the folder verifies")
    assert found == []


def test_a_kept_agreement_on_sqlite_imports_no_statistics_nor_postgresqls_dialect(study):
    """A kept answer is mostly the imports: the statistics are not needed to print it, nor, on
    a SQLite study, PostgreSQL's dialect to count the coordinator's sign-in."""
    cli, _ = study
    heavy = ("numpy", "krippendorff", "sqlalchemy.dialects.postgresql")
    who = ("--as", "coordinator", "--passphrase-file", "coordinator.pass")
    computed, _ = imported(cli, heavy, *who, "agreement", "--json", "--bootstrap", "0")
    kept, found = imported(cli, heavy, *who, "agreement", "--json", "--bootstrap", "0")
    assert kept == computed
    assert found == []


def test_registry_json_has_the_documented_shape(study):
    cli, envelope = study
    data, bands = registry_json(cli)
    assert data["policy"] == {"quorum": 1, "scope": "warn"}
    assert data["valid"] is True and data["problems"] == [] and data["strays"] == []
    assert data["head"] == verified(cli)["head"]
    assert data["head"]["sequence"] == int(envelope.name[:6])
    assert len(bands) == 4
    for band in data["bands"]:
        assert set(band) >= REGISTRY_KEYS, band
    doc = bands[DOC]
    assert doc["provenance"] == "clinician-adjudicated"
    assert doc["acceptable"] == {"min": 1, "max": 30}
    assert doc["adjudicated_by"] == ["adjudicator-01"]
    assert doc["reasons"] == [] and doc["warnings"] == []
    [attestation] = doc["attestations"]
    assert attestation["file"] == envelope.name
    assert attestation["keyid"].startswith("sha256:")
    assert bands[TRIAGE]["warnings"] == ["out_of_scope"]


def test_policy_then_registry_and_export_with_an_override(copied, tmp_path):
    cli, _ = copied
    assert "quorum 2, scope require" in ok(
        cli.coordinator("policy", "set", "--quorum", "2", "--scope", "require")
    )
    assert "quorum 2, scope require" in ok(cli("policy", "show"))
    data, bands = registry_json(cli)
    assert data["policy"] == {"quorum": 2, "scope": "require"}
    assert "quorum_not_met" in bands[DOC]["reasons"]
    assert {"out_of_scope", "quorum_not_met"} <= set(bands[TRIAGE]["reasons"])
    assert all(b["adjudicated_by"] == [] for b in data["bands"])

    stored = tmp_path / "bands.yaml"
    assert "(0 clinician-adjudicated)" in ok(cli("export", "--out", str(stored)))
    assert yaml.safe_load(stored.read_text())["policy"] == {"quorum": 2, "scope": "require"}

    sensitivity = tmp_path / "bands-sensitivity.yaml"
    out = ok(cli("export", "--out", str(sensitivity), "--quorum", "1", "--scope", "warn"))
    assert "(4 clinician-adjudicated)" in out
    document = yaml.safe_load(sensitivity.read_text())
    assert document["policy"] == {"quorum": 1, "scope": "warn"}
    [doc] = document["bands"]["draft_documentation_01"]
    assert doc["adjudicated_by"] == ["adjudicator-01"]
    assert doc["acceptable"] == {"min": 1, "max": 30}
    # The override did not touch the policy file.
    assert yaml.safe_load((cli.attestations / "policy.yaml").read_text()) == {
        "quorum": 2,
        "scope": "require",
    }


def test_an_export_anchors_the_audit_log_against_a_later_cut(copied, tmp_path):
    """The audit events after the newest signed record are anchored by an export alone: cut
    back by a database administrator, `audit verify` reads intact and `--export` does not."""
    cli, _ = copied
    out = tmp_path / "bands.yaml"
    ok(cli.coordinator("export", "--out", str(out), "--sign-head"))
    header = yaml.safe_load(out.read_text())["attestations"]
    seq = header["audit_head"]["seq"]
    assert "chain intact" in ok(cli("audit", "verify", "--export", str(out)))
    assert verified(cli, "--export", str(out))["valid"]  # the signed head covers the audit head

    with sqlite3.connect(cli.db.removeprefix("sqlite:///")) as db:
        db.execute("DELETE FROM audit_event WHERE seq >= ?", (seq,))
    assert "chain intact" in ok(cli("audit", "verify"))
    cut = cli("audit", "verify", "--export", str(out))
    assert cut.returncode == 1 and "Traceback" not in cut.stderr
    assert "truncated" in cut.stdout and out.name in cut.stdout

    # A hand edit of the audit head an export carries breaks its signed head.
    header["audit_head"]["seq"] = seq - 1
    document = yaml.safe_load(out.read_text())
    document["attestations"] = header
    out.write_text(yaml.safe_dump(document))
    found = verified(cli, "--export", str(out))
    assert not found["valid"] and [p["code"] for p in found["problems"]] == ["bad_signature"]


def test_audit_verify_refuses_an_export_without_an_audit_head(copied, tmp_path):
    cli, _ = copied
    out = tmp_path / "bands.yaml"
    ok(cli("export", "--out", str(out)))
    document = yaml.safe_load(out.read_text())
    del document["attestations"]["audit_head"]
    out.write_text(yaml.safe_dump(document))
    refused = cli("audit", "verify", "--export", str(out))
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "carries no audit head" in refused.stderr and str(out) in refused.stderr


def test_verify_names_an_edited_adjudicators_file_and_a_deleted_record(copied):
    cli, _ = copied
    study_id = verified(cli)["study"]
    published = cli.attestations / "adjudicators.yaml"
    published.write_text(published.read_text().replace("geriatrics", "emergency medicine"))
    result = cli("verify")
    assert result.returncode == 1
    assert "FAIL  adjudicators.yaml: copy_differs: adjudicators.yaml was edited" in result.stdout
    # Read alone (an editor's --study, no database), the folder grants nothing.
    editor = cli(*EDITOR, "registry", "--json", "--study", study_id)
    assert editor.returncode == 1
    assert all(b["reasons"] == ["folder_invalid"] for b in json.loads(editor.stdout)["bands"])
    # With the study's database too: an edited copy is left for verify and the registry to
    # name; deleted, the next command writes it again from the signed records.
    assert cli("registry", "--scope", "require").returncode == 1
    assert "emergency medicine" in published.read_text()
    published.unlink()
    _, bands = registry_json(cli, "--scope", "require")
    assert "out_of_scope" in bands[TRIAGE]["reasons"]  # the signed specialty counts
    assert "geriatrics" in published.read_text()

    [enrolment] = cli.attestations.glob("000001-enrolment-adjudicator-01-*.dsse.json")
    enrolment.unlink()
    result = cli("verify", "--json")
    assert result.returncode == 1
    assert {"file": "", "code": "folder_invalid"}.items() <= (
        json.loads(result.stdout)["problems"][0].items()
    )
    assert "record 1 is missing" in result.stdout
    editor = cli(*EDITOR, "registry", "--json", "--study", study_id)
    assert editor.returncode == 1
    for band in json.loads(editor.stdout)["bands"]:
        assert band["provenance"] == "author-derived" and "folder_invalid" in band["reasons"]
    assert not enrolment.exists()
    # The store holds the whole chain: the next command on it publishes the record again.
    registry_json(cli)
    assert enrolment.exists() and verified(cli)["valid"]


def test_no_command_signs_for_a_rater_with_the_coordinators_credentials(copied):
    """Every command that signs, or could get at the rater's key, tried with the coordinator's
    passphrase: each is refused and no file changes."""
    cli, envelope = copied
    before = {p.name: p.read_bytes() for p in cli.attestations.iterdir()}
    assert (cli.root / "code.txt").exists()  # the code she activated with, now spent
    attempts = [
        (
            "attest",
            "--rater",
            "adjudicator-01",
            "--passphrase-file",
            "coordinator.pass",
            *declares(*DECLARATIONS),
            "--confirm-imported",
        ),
        (
            "--as",
            "coordinator",
            "--passphrase-file",
            "coordinator.pass",
            "attest",
            "--rater",
            "adjudicator-01",
            "--passphrase-file",
            "coordinator.pass",
            *declares(*DECLARATIONS),
        ),
        (
            "attest",
            "--rater",
            "coordinator",
            "--passphrase-file",
            "coordinator.pass",
            *declares(*DECLARATIONS),
        ),
        (
            "revoke",
            envelope.name,
            "--rater",
            "adjudicator-01",
            "--passphrase-file",
            "coordinator.pass",
            "--reason",
            "x",
        ),
        (
            "user",
            "passphrase",
            "adjudicator-01",
            "--passphrase-file",
            "coordinator.pass",
            "--new-passphrase-file",
            "coordinator.pass",
        ),
        (
            "user",
            "activate",
            "adjudicator-01",
            "--code-file",
            "code.txt",
            "--passphrase-file",
            "coordinator.pass",
        ),
        ("--as", "adjudicator-01", "--passphrase-file", "coordinator.pass", "phase", "closed"),
    ]
    codes = []
    for args in attempts:
        result = cli(*args)
        codes.append(result.returncode)
        assert result.stderr.startswith("fma-bands: error: "), result.stderr
    # Nothing new to sign (1) comes before the passphrase is tried; the rest are refused (3),
    # but a wrong current passphrase, which is the passphrase form's field error (1).
    assert codes == [1, 1, REFUSED_EXIT, REFUSED_EXIT, 1, REFUSED_EXIT, REFUSED_EXIT], codes
    assert {p.name: p.read_bytes() for p in cli.attestations.iterdir()} == before
    assert "adjudicator-01" in ok(cli("user", "list"))


def test_revoke_names_the_file_and_the_registry_stops_counting_it(copied):
    cli, envelope = copied
    _, bands = registry_json(cli)
    assert bands[DOC]["adjudicated_by"] == ["adjudicator-01"]
    head = verified(cli)["head"]
    revoke = ("revoke", envelope.name, "--rater", "adjudicator-01", "--reason", "signed too soon")
    refused = cli(*revoke, "--passphrase-file", "coordinator.pass")
    assert refused.returncode == REFUSED_EXIT and "Traceback" not in refused.stderr
    out = ok(cli(*revoke, "--passphrase-file", "rater.pass"))
    assert f"revoked {envelope.name}" in out
    [(sequence, name)] = re.findall(r"signed record (\d+): (\S+) ", out)
    assert int(sequence) == head["sequence"] + 1
    assert name.startswith(f"{int(sequence):06d}-revocation-adjudicator-01-")
    assert (cli.attestations / name).exists()  # the round is closed: published at once
    assert verified(cli, "--since", f"{head['sequence']}:{head['digest']}")["valid"]
    data, bands = registry_json(cli)
    assert all(b["provenance"] == "author-derived" for b in data["bands"])
    assert bands[DOC]["adjudicated_by"] == []
    again = cli(*revoke, "--passphrase-file", "rater.pass")
    assert again.returncode == 1 and "revoked already" in again.stderr


def test_verify_export_says_whether_the_folder_or_the_export_fails(copied, tmp_path):
    """The last line says which of the two does not verify: an export without a signed head
    is never reported as a folder that does not verify."""
    cli, _ = copied
    unsigned, signed = tmp_path / "unsigned.yaml", tmp_path / "signed.yaml"
    ok(cli("export", "--out", str(unsigned)))
    ok(cli.coordinator("export", "--out", str(signed), "--sign-head"))
    refused = cli("verify", "--export", str(unsigned))
    assert refused.returncode == 1
    assert "unsigned_head" in refused.stdout
    assert refused.stdout.rstrip().endswith(
        "the folder verifies, but the export unsigned.yaml does NOT (FAIL above; an export made "
        "without --sign-head has no signed head)"
    )
    passed = ok(cli("verify", "--export", str(signed)))
    assert passed.rstrip().endswith("the folder verifies and so does the export")


def test_verify_export_builds_only_the_header_of_a_bands_yaml(copied, tmp_path):
    # A bands.yaml of three million empty lists beside its header: read whole, it would take
    # gigabytes; only the header is built, so the check answers in bounded memory. Its keys in
    # any order (a file dumped again with sorted keys), a header given twice is refused.
    cli, _ = copied
    out = tmp_path / "bands.yaml"
    ok(cli.coordinator("export", "--sign-head", "--out", str(out)))
    document = yaml.safe_load(out.read_text())
    lists = ",".join(["[]"] * 3_000_000)
    hostile = tmp_path / "hostile.yaml"
    hostile.write_text(yaml.safe_dump(document) + f"x_planted: [{lists}]\n")
    # Built whole, these lists alone take about 2 GB; the command is given 1.5 GB to run in.
    checked = cli("verify", "--export", str(hostile), memory=1536 * 1024 * 1024)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "the folder verifies and so does the export" in checked.stdout
    twice = tmp_path / "twice.yaml"
    header = yaml.safe_dump({"attestations": document["attestations"]})
    twice.write_text(out.read_text() + header)
    refused = cli("verify", "--export", str(twice))
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "gives the key 'attestations' twice" in refused.stderr


KEPT_NOTE = "the answer kept from the same files"  # registry's on stderr, export's on stdout


def declined(envelope: Path) -> None:
    """The signed review's verdict changed to DECLINE, the signature left as it was."""
    data = json.loads(envelope.read_bytes())
    statement = json.loads(base64.b64decode(data["payload"]))
    statement["predicate"]["reviews"][0]["verdict"] = "DECLINE"
    data["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    envelope.write_text(json.dumps(data))


def test_registry_answers_again_from_what_it_kept_never_from_a_changed_or_planted_file(
    copied, kept_answers_of_this_test
):
    """A kept answer is the registry's own, byte for byte, given only while every file it was
    decided from is as it was; a record tampered with is decided afresh (and refused), and an
    answer planted in the kept folder by anyone without its key is not given."""
    cli, envelope = copied
    first = cli("registry", "--json")
    assert first.returncode == 0 and KEPT_NOTE not in first.stderr
    again = cli("registry", "--json")
    assert again.returncode == 0 and KEPT_NOTE in again.stderr
    assert again.stdout == first.stdout
    assert json.loads(again.stdout)["valid"] is True
    [kept_answer] = kept_answers_of_this_test.glob("*.answer")

    original = envelope.read_bytes()
    declined(envelope)
    tampered = cli("registry", "--json")
    assert tampered.returncode == 1 and KEPT_NOTE not in tampered.stderr
    assert json.loads(tampered.stdout)["valid"] is False
    # Its answer, kept in its turn, replaced by the granting one: found under no question.
    [refusal] = set(kept_answers_of_this_test.glob("*.answer")) - {kept_answer}
    refusal.write_bytes(kept_answer.read_bytes())
    planted = cli("registry", "--json")
    assert planted.returncode == 1 and KEPT_NOTE not in planted.stderr
    assert json.loads(planted.stdout)["valid"] is False
    # The record as it was: the answer kept for it is given again.
    envelope.write_bytes(original)
    restored = cli("registry", "--json")
    assert restored.returncode == 0 and KEPT_NOTE in restored.stderr
    assert restored.stdout == first.stdout
    fresh = cli("registry", "--json", "--fresh")
    assert fresh.stdout == first.stdout and KEPT_NOTE not in fresh.stderr
    # The text answer and an override are other questions.
    assert KEPT_NOTE not in cli("registry").stderr
    assert KEPT_NOTE not in cli("registry", "--json", "--quorum", "2").stderr


def test_an_answer_decided_while_a_file_changed_is_not_kept(copied, monkeypatch):
    """Decided while a record was written (here, with the same bytes: it could have been a
    swap and back), the answer may have been made from other bytes than those hashed for its
    key, so it is not kept: the next run decides again."""
    from fma_bands.evidence import registry as deciding

    cli, envelope = copied
    decide = deciding.decide

    def while_written(*args, **kwargs):
        made = decide(*args, **kwargs)
        envelope.write_bytes(envelope.read_bytes())
        return made

    monkeypatch.setattr(deciding, "decide", while_written)
    options = ["--db", cli.db, "--vignettes", str(cli.vignettes)]
    options += ["--attestations", str(cli.attestations), "registry", "--json"]
    monkeypatch.chdir(cli.root)
    first = CliRunner().invoke(fma_bands_cli, options, catch_exceptions=False)
    assert first.exit_code == 0, first.output
    monkeypatch.setattr(deciding, "decide", decide)
    again = cli("registry", "--json")
    assert again.returncode == 0 and KEPT_NOTE not in again.stderr
    assert json.loads(again.stdout) == json.loads(first.stdout)
    # Decided with nothing written meanwhile, it is kept.
    assert KEPT_NOTE in cli("registry", "--json").stderr


def test_registry_decides_afresh_when_the_kept_folder_is_not_the_users_alone(
    copied, kept_answers_of_this_test
):
    cli, _ = copied
    first = ok(cli("registry", "--json"))
    kept_answers_of_this_test.chmod(0o777)
    try:
        open_to_all = cli("registry", "--json")
    finally:
        kept_answers_of_this_test.chmod(0o700)
    assert open_to_all.returncode == 0 and KEPT_NOTE not in open_to_all.stderr
    assert open_to_all.stdout == first


def test_export_writes_again_from_what_it_kept_with_the_time_it_is_written(copied, tmp_path):
    cli, envelope = copied
    first, second = tmp_path / "bands.yaml", tmp_path / "again.yaml"
    wrote = cli("export", "--out", str(first))
    assert wrote.returncode == 0 and KEPT_NOTE not in wrote.stdout
    kept = cli("export", "--out", str(second))
    # Said on standard output, with what was written: standard error stays empty.
    assert kept.returncode == 0 and kept.stderr == ""
    assert kept.stdout == (
        f"wrote 4 bands of 4 vignettes to {second} (4 clinician-adjudicated; {KEPT})\n"
    )
    before, after = first.read_text(), second.read_text()
    stamp = re.compile(r"^generated_at: .*$", flags=re.MULTILINE)
    assert stamp.sub("", before) == stamp.sub("", after)
    assert yaml.safe_load(after)["generated_at"] >= yaml.safe_load(before)["generated_at"]
    # Written elsewhere, the header names the attestations folder from there: another question.
    (tmp_path / "elsewhere").mkdir()
    moved = cli("export", "--out", str(tmp_path / "elsewhere" / "bands.yaml"))
    assert moved.returncode == 0 and KEPT_NOTE not in moved.stdout
    # A head signed by the root is signed afresh every time.
    signed = cli.coordinator("export", "--out", str(second), "--sign-head")
    assert signed.returncode == 0 and KEPT_NOTE not in signed.stdout
    assert "head_signature" in yaml.safe_load(second.read_text())["attestations"]
    # A record changed after: refused afresh, nothing written over the export.
    declined(envelope)
    refused = cli("export", "--out", str(first))
    assert refused.returncode == 1 and KEPT_NOTE not in refused.stdout + refused.stderr
    assert first.read_text() == before


def test_registry_says_each_band_as_bands_yaml_writes_it(study):
    """The text lines give the harness values as bands.yaml writes them (YAML's flow form),
    never Python's ({'min': 1, ...}, [True])."""
    cli, _ = study
    out = ok(cli("registry"))
    bands = [line for line in out.splitlines() if not line.startswith((" ", "policy"))]
    assert bands and all("; acceptable: " in line for line in bands)
    assert "'" not in "".join(bands) and "True" not in "".join(bands)
    assert any(re.search(r"acceptable: \{min: \d+, max: \d+\}$", line) for line in bands)


def test_a_command_parses_only_the_records_it_has_not_read_before(tmp_path, monkeypatch):
    """verify's second run, in a new process, parses no record and says what the first said;
    the parses are kept in the kept answers' folder (evidence/kept_parses.py)."""
    from benchmarks.study_files import build_study
    from fma_bands.evidence import envelope, kept_parses

    built = build_study(tmp_path / "study", n_vignettes=4, n_raters=2)
    kept = tmp_path / "kept"
    monkeypatch.setenv("FMA_BANDS_KEPT_ANSWERS", str(kept))
    options = ["--db", built.database_url, "--attestations", str(built.attestations)]
    first = subprocess.run(
        [sys.executable, "-m", "fma_bands.cli", *options, "verify", "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert list((kept / kept_parses.FOLDER).glob("*.answer"))
    envelope.clear_cache()  # as in a new process
    kept_parses._kept.forget()
    parsed: list[str] = []
    real = envelope._parse
    monkeypatch.setattr(
        envelope, "_parse", lambda data, source: parsed.append(source) or real(data, source)
    )
    second = CliRunner().invoke(fma_bands_cli, [*options, "verify", "--json"])
    assert second.exit_code == 0, second.output
    assert parsed == [] and json.loads(second.stdout) == json.loads(first.stdout)
    assert json.loads(first.stdout)["valid"] is True
