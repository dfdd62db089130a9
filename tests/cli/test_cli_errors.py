"""Every failure reaches a coordinator as one line: `fma-bands: error: ...`, never a traceback."""

import base64
import json
import os
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from sqlmodel import select

from fma_bands.cli import cli, main
from fma_bands.cli.base import BUG_EXIT, PIPE_CLOSED_EXIT, REFUSED_EXIT
from fma_bands.store.db import make_engine, session_scope
from fma_bands.store.models import AuditEvent
from tests.conftest import DEMO_VIGNETTES
from tests.memory import peak_of

# An editor's view: the folder alone, no database (and --study, read from the paper).
EDITOR = ("--db", "sqlite:///no-database.db")


@pytest.fixture
def run(tmp_path, monkeypatch):
    """fma-bands in-process, in a folder of its own, with the demo vignettes."""
    monkeypatch.chdir(tmp_path)
    shutil.copytree(DEMO_VIGNETTES, tmp_path / "vignettes")
    for name in ("FMA_BANDS_DATABASE_URL", "FMA_BANDS_ATTESTATIONS", "FMA_BANDS_VIGNETTES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("FMA_BANDS_LOG_FILE", str(tmp_path / "bug.log"))

    def invoke(*args: str):
        return CliRunner().invoke(cli, list(args), prog_name="fma-bands", catch_exceptions=False)

    return invoke


DEMO_PASS = "coordinator-demo"  # what `fma-bands demo` prints for its coordinator


def demo(run) -> str:
    """`fma-bands demo` in this folder (root, two raters, policy 1/warn); its study id."""
    made = run("demo")
    assert made.exit_code == 0, made.output
    Path("c.pass").write_text(DEMO_PASS + "\n")
    checked = run("verify", "--json")
    assert checked.exit_code == 0, checked.output
    return json.loads(checked.stdout)["study"]


def as_coordinator(run, *args: str):
    return run("--as", "coordinator", "--passphrase-file", "c.pass", *args)


def one_line_error(result, *fragments: str, code: int = 1) -> str:
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines and lines[0].startswith("fma-bands: error: "), result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr
    return result.stderr


def test_a_hand_edited_adjudicators_file_is_named_and_not_believed(run, tmp_path):
    study = demo(run)
    path = tmp_path / "attestations" / "adjudicators.yaml"
    data = yaml.safe_load(path.read_text())
    signed = {a["pseudonym"]: a["specialty"] for a in data["adjudicators"]}
    del data["adjudicators"][0]["specialty"]
    data["adjudicators"][1]["specialty"] = "cardiothoracic surgery"
    path.write_text(yaml.safe_dump(data))
    edited = path.read_bytes()
    # The copy no longer says what the signed records say: the folder, read alone (as an editor
    # reads it: --study, no database), does not verify, and every command names the file.
    checked = run("verify", "--json")
    assert checked.exit_code == 1
    assert {"file": "adjudicators.yaml", "code": "copy_differs"}.items() <= (
        json.loads(checked.stdout)["problems"][0].items()
    )
    listing = run(*EDITOR, "registry", "--study", study)
    assert listing.exit_code == 1 and "Traceback" not in listing.output
    assert "adjudicators.yaml: copy_differs" in listing.stdout
    assert "does NOT verify: nothing is granted" in listing.stdout
    one_line_error(run(*EDITOR, "export", "--out", "bands.yaml", "--study", study), "copy_differs")
    assert not (tmp_path / "bands.yaml").exists()
    assert path.read_bytes() == edited
    assert not (tmp_path / "no-database.db").exists()  # the editor's commands made no store
    # With the study's database too: the edited copy is left for verify to name; deleted, the
    # next command writes it again from the signed records.
    one_line_error(run("export", "--out", "bands.yaml"), "adjudicators.yaml: copy_differs")
    assert path.read_bytes() == edited
    path.unlink()
    assert run("export", "--out", "bands.yaml").exit_code == 0
    exported = yaml.safe_load((tmp_path / "bands.yaml").read_text())["adjudicators"]
    assert {a["pseudonym"]: a["specialty"] for a in exported} == signed
    assert run("verify").exit_code == 0


def test_a_huge_file_in_place_of_a_copy_is_written_over_unread(run, tmp_path):
    # A sparse file of 300 MB takes no disk; read whole it would take the memory. The command
    # that publishes the copies writes over it, reading no more than the copy would hold.
    demo(run)
    path = tmp_path / "attestations" / "adjudicators.yaml"
    copy = path.read_bytes()
    with path.open("r+b") as handle:
        handle.truncate(300 * 1024 * 1024)
    records(tmp_path / "attestations")[-1].unlink()  # published again by the next command
    listed, peak = peak_of(lambda: run("user", "list"))
    assert listed.exit_code == 0, listed.output
    assert path.read_bytes() == copy
    assert peak < 100 * 1024 * 1024


def test_export_to_a_folder_is_refused_by_name(run, tmp_path):
    (tmp_path / "out").mkdir()
    one_line_error(run("export", "--out", "out"), "out: not a regular file")


def test_export_under_proc_is_refused_by_name(run):
    one_line_error(
        run("export", "--out", "/proc/bands.yaml", "--provisional"),
        "/proc/bands.yaml: cannot write",
    )


@pytest.mark.parametrize(
    ("url", "fragment"),
    [
        ("bogus://", "the database URL 'bogus://' is for bogus"),
        ("mysql://root@localhost/study", "is for mysql; fma-bands works with SQLite"),
        ("sqlite:////proc/no/such/study.db", "cannot"),
        # An option SQLAlchemy hands the driver, which the driver cannot read.
        ("sqlite:///study.db?timeout=abc", "cannot use the database URL"),
    ],
)
def test_a_database_url_it_cannot_use_is_named(run, url, fragment):
    one_line_error(run("--db", url, "init"), fragment)


@pytest.mark.parametrize(
    "command",
    [("phase",), ("mode",), ("user", "list"), ("round", "show"), ("exemptions", "list")],
)
def test_a_command_that_reads_a_study_makes_no_database_where_there_is_none(run, tmp_path, command):
    """A mistyped --db, or a command run in the wrong folder, is said to name no study: no
    empty study (nor its folders) is made to answer from."""
    for url in (f"sqlite:///{tmp_path / 'typo.db'}", f"sqlite:///{tmp_path / 'no' / 'x.db'}"):
        one_line_error(run("--db", url, *command), "no study database at")
    one_line_error(run(*command), "no study database at sqlite:///fma-bands.db")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["vignettes"]
    # The commands that set a study up make it.
    assert run("init").exit_code == 0
    assert (tmp_path / "fma-bands.db").exists()


def test_an_empty_vignette_folder_is_refused_and_retires_nothing(run, tmp_path):
    import sqlite3

    assert run("init").exit_code == 0
    db = tmp_path / "fma-bands.db"

    def state():
        with sqlite3.connect(db) as conn:
            rows = conn.execute("SELECT count(*), sum(present) FROM vignette").fetchone()
            return rows, conn.execute("SELECT count(*) FROM audit_event").fetchone()

    before = state()
    assert before[0] == (12, 12)
    for path in (tmp_path / "vignettes").iterdir():
        path.unlink()
    message = one_line_error(
        run("init"), "no vignettes loaded from vignettes, so nothing was synced"
    )
    assert "no vignette files (*.yaml)" in message  # the problem, under the error
    assert state() == before


def test_a_missing_file_argument_is_named(run):
    one_line_error(
        run("handback", "import", "nowhere.txt", "--rater", "rater-01"),
        "nowhere.txt: cannot read the hand-back",
    )


def test_a_bug_is_one_line_pointing_at_the_log(run, tmp_path, monkeypatch):

    def broken() -> None:
        raise RuntimeError("an invariant broke")

    assert run("init").exit_code == 0
    monkeypatch.setattr("fma_bands.study.state.study", lambda session: broken())
    message = one_line_error(run("phase"), "this is a bug in fma-bands", code=BUG_EXIT)
    assert "RuntimeError" in message and str(tmp_path / "bug.log") in message
    log = (tmp_path / "bug.log").read_text()
    assert "Traceback" in log and "an invariant broke" in log


def test_a_reader_that_leaves_early_is_no_bug(tmp_path):
    """`fma-bands registry | head -1`: the pipe closes under a long output; no bug, no log."""
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT

    env = {k: v for k, v in os.environ.items() if not k.startswith("FMA_BANDS_")}
    env.update(FMA_BANDS_VIGNETTES=str(DEMO_VIGNETTES), FMA_BANDS_LOG_FILE=str(tmp_path / "l"))
    command = [sys.executable, "-m", "fma_bands.cli", "--attestations", str(tmp_path), "registry"]
    reader = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert reader.stdout is not None and reader.stderr is not None
    reader.stdout.close()  # the reader left before the first line was written
    code = reader.wait(timeout=60)
    assert b"bug" not in reader.stderr.read()
    assert code == PIPE_CLOSED_EXIT and not (tmp_path / "l").exists()


def test_the_registry_says_when_there_is_no_policy(run, tmp_path):
    # A study with its root and no policy record yet: valid, and nothing is granted.
    (tmp_path / "c.pass").write_text(DEMO_PASS + "\n")
    made = run("user", "add", "coordinator", "--role", "coordinator", "--passphrase-file", "c.pass")
    assert made.exit_code == 0, made.output
    text = run("registry")
    assert text.exit_code == 0, text.output
    assert text.output.splitlines()[0].startswith("policy: none (")
    assert "nothing is granted" in text.output.splitlines()[0]
    data = yaml.safe_load(run("registry", "--json").output)
    assert data["valid"] is True
    assert data["policy"] is None and "no signed policy record" in data["policy_problem"]
    assert data["bands"] and all("no_policy" in b["reasons"] for b in data["bands"])


def test_a_deleted_policy_copy_makes_the_folder_invalid(run, tmp_path):
    study = demo(run)
    (tmp_path / "attestations" / "policy.yaml").unlink()
    listing = run(*EDITOR, "registry", "--json", "--study", study)
    assert listing.exit_code == 1
    data = json.loads(listing.stdout)
    assert data["valid"] is False
    assert [(p["file"], p["code"]) for p in data["problems"]] == [("policy.yaml", "copy_differs")]
    assert {b["provenance"] for b in data["bands"]} == {"author-derived"}
    assert all("folder_invalid" in b["reasons"] for b in data["bands"])


def test_the_demo_refuses_another_studys_attestations_folder(run, tmp_path):
    assert run("demo").exit_code == 0
    other = run("--db", f"sqlite:///{tmp_path / 'other.db'}", "demo")
    one_line_error(other, "already holds another study's signed records")


def test_a_command_run_in_process_leaves_the_garbage_collector_as_it_was(tmp_path):
    # The console script runs its command with the collector off (fma_bands.cli.run); main(),
    # which tests and other programs call, must give it back.
    import gc

    from fma_bands.cli import main

    assert gc.isenabled()
    assert main(["--help"]) == 0
    assert gc.isenabled()
    gc.disable()
    try:
        main(["--help"])
        assert not gc.isenabled()
    finally:
        gc.enable()


# The folder's validity: verify, registry and export agree --------------------------------------


def records(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.dsse.json"))


def flip_a_signature_bit(path: Path) -> None:
    """What anyone with write access can do: one bit of the record's signature changed."""
    data = json.loads(path.read_text())
    signature = bytearray(base64.b64decode(data["signatures"][0]["sig"]))
    signature[0] ^= 1
    data["signatures"][0]["sig"] = base64.b64encode(bytes(signature)).decode()
    path.write_text(json.dumps(data))


def test_verify_json_has_the_documented_shape_and_exits_1_when_invalid(run, tmp_path):
    study = demo(run)
    folder = tmp_path / "attestations"
    good = run("verify", "--json")
    data = json.loads(good.stdout)
    assert good.exit_code == 0
    assert {"valid", "study", "head", "problems", "strays"} <= set(data)
    assert data["valid"] is True and data["study"] == study and data["problems"] == []
    newest = records(folder)[-1]
    # root, 2 x 2 roster, policy, and the demo raters' identities (2)
    assert data["head"]["sequence"] == int(newest.name[:6]) == 7
    assert data["head"]["digest"].startswith("sha256:") and len(data["head"]["digest"]) == 71
    assert newest.name.endswith(f"-{data['head']['digest'][7:19]}.dsse.json")

    tampered = records(folder)[3]  # rater-02's enrolment
    flip_a_signature_bit(tampered)
    bad = run("verify", "--json")
    assert bad.exit_code == 1
    data = json.loads(bad.stdout)
    assert data["valid"] is False
    assert data["problems"] and all(set(p) == {"file", "code", "message"} for p in data["problems"])
    problem, *others = data["problems"]
    # The copies no longer match the chain that verifies (it ends before the broken record).
    assert {p["code"] for p in others} <= {"copy_differs"}, others
    assert (problem["file"], problem["code"]) == (tampered.name, "bad_signature")
    assert "record 3 does not verify" in problem["message"]
    # The chain stops where it breaks: the head is the last record that verifies.
    assert data["head"]["sequence"] == 2
    text = run("verify")
    assert text.exit_code == 1
    assert f"FAIL  {tampered.name}: bad_signature" in text.stdout
    assert text.stdout.rstrip().endswith("the folder does NOT verify")


def test_verify_since_passes_on_an_extension_and_fails_on_a_truncation(run, tmp_path):
    demo(run)
    folder = tmp_path / "attestations"
    earlier = json.loads(run("verify", "--json").stdout)["head"]
    since = f"{earlier['sequence']}:{earlier['digest']}"
    copies = {name: (folder / name).read_bytes() for name in ("adjudicators.yaml", "policy.yaml")}
    # The log grows: an enrolment, signed by the root, and nothing before it changes.
    added = as_coordinator(
        run,
        "user",
        "add",
        "rater-03",
        "--specialty",
        "geriatrics",
        "--jurisdiction",
        "Australia",
        "--years",
        "4",
        "--code-file",
        "code",
    )
    assert added.exit_code == 0, added.output
    extended = run("verify", "--since", since, "--json")
    assert extended.exit_code == 0, extended.output
    later = json.loads(extended.stdout)["head"]
    assert later["sequence"] == earlier["sequence"] + 1
    later_since = f"{later['sequence']}:{later['digest']}"
    assert run("verify", "--since", later_since).exit_code == 0

    # The newest record deleted, and the copies put back as they were before it (anyone could
    # have kept them): what is left is a valid folder, but not one that holds the head the
    # signer (or an earlier export) saw.
    newest = records(folder)[-1]
    assert newest.name.startswith(f"{later['sequence']:06d}-enrolment-rater-03-")
    newest.unlink()
    assert run("verify").exit_code == 1  # the copies name rater-03's enrolment
    for name, data in copies.items():
        (folder / name).write_bytes(data)
    assert run("verify").exit_code == 0
    assert run("verify", "--since", since).exit_code == 0
    truncated = run("verify", "--since", later_since, "--json")
    assert truncated.exit_code == 1
    [problem] = json.loads(truncated.stdout)["problems"]
    assert problem["code"] == "folder_invalid"
    assert f"does not extend the head {later_since}" in problem["message"]

    # A record before the head changed: the folder fails, and so does the consistency check.
    flip_a_signature_bit(records(folder)[1])
    assert run("verify", "--since", since).exit_code == 1


def test_verify_since_fails_on_another_history_of_the_same_study(run, tmp_path):
    """The store (a database administrator, a restored backup) signs a different record at the
    same place: each folder verifies alone, but not as an extension of the other's head."""
    demo(run)
    shutil.copy("fma-bands.db", "other.db")
    shutil.copytree("attestations", "other")
    enrol = ("user", "add", "--specialty", "x", "--jurisdiction", "y", "--years", "3")
    assert (
        as_coordinator(run, *enrol[:2], "rater-03", *enrol[2:], "--code-file", "a").exit_code == 0
    )
    seen = json.loads(run("verify", "--json").stdout)["head"]
    other = ("--db", f"sqlite:///{tmp_path / 'other.db'}", "--attestations", "other")
    made = as_coordinator(run, *other, *enrol[:2], "rater-04", *enrol[2:], "--code-file", "b")
    assert made.exit_code == 0, made.output
    assert run("--attestations", "other", "verify").exit_code == 0
    forked = run(
        "--attestations",
        "other",
        "verify",
        "--since",
        f"{seen['sequence']}:{seen['digest']}",
        "--json",
    )
    assert forked.exit_code == 1
    [problem] = json.loads(forked.stdout)["problems"]
    assert problem["code"] == "folder_invalid" and "does not extend the head" in problem["message"]


def test_verify_since_must_be_a_head(run):
    demo(run)
    one_line_error(run("verify", "--since", "5"), "a head is SEQ:DIGEST")
    digest = "sha256:" + "0" * 64
    # Digits Python's isdigit takes and int refuses, and a number no log could count to.
    for sequence in ("²", "٣", "9" * 5000):
        one_line_error(run("verify", "--since", f"{sequence}:{digest}"), "a head is SEQ:DIGEST")


def test_a_name_that_would_act_on_a_terminal_is_printed_escaped(run, tmp_path, capsys):
    demo(run)
    spoof = "a\r\x1b[2Kthe folder verifies\n\x1b[8m\u202e.dsse.json"
    (tmp_path / "attestations" / spoof).write_text("{}")
    capsys.readouterr()
    assert main(["verify"]) == 0
    out = capsys.readouterr().out
    assert not {"\r", "\x1b", "\u202e"} & set(out)
    escaped = "a\\u000d\\u001b[2Kthe folder verifies\\u000a\\u001b[8m\\u202e.dsse.json"
    assert f"stray {escaped}: stray_file" in out
    assert out.splitlines()[-1] == "the folder verifies"


def test_a_name_that_is_not_utf8_is_printed_escaped(run, tmp_path, capfd, monkeypatch):
    """A file name of bytes that are not UTF-8 (Python holds them as lone surrogates), and a
    record naming a lone surrogate in JSON: each is a stray, named with escapes, and the rest of
    the folder verifies, as the registry decides, even on a terminal that writes UTF-8 strictly."""
    demo(run)
    folder = tmp_path / "attestations"
    with open(os.path.join(os.fsencode(folder), b"951-\xff\xfe.dsse.json"), "w") as planted:
        planted.write("{}")
    (folder / "surrogate.dsse.json").write_text(
        '{"payload": "e30=", "payloadType": "\\ud800", "signatures": []}'
    )
    strict = open(os.dup(1), "w", encoding="utf-8", errors="strict", closefd=True)  # noqa: SIM115
    monkeypatch.setattr("sys.stdout", strict)
    try:
        assert main(["verify"]) == 0
        assert main(["registry"]) == 0
    finally:
        strict.flush()
    out = capfd.readouterr().out
    assert "stray 951-\\udcff\\udcfe.dsse.json: stray_file" in out, out
    assert "stray surrogate.dsse.json: stray_file" in out and "lone surrogate" in out, out
    found = json.loads(run("verify", "--json").stdout)
    assert found["valid"] and {s["file"] for s in found["strays"]} == {
        "951-\\udcff\\udcfe.dsse.json",
        "surrogate.dsse.json",
    }


def test_a_name_given_in_bytes_that_are_not_utf8_is_refused_by_what_it_is(run, tmp_path):
    """Bytes that are not UTF-8 on the command line reach fma-bands as lone surrogates: where
    one would be looked up, stored or signed, the command says so and stops."""
    demo(run)
    said = one_line_error(
        run("--as", "co\udcff", "--passphrase-file", "c.pass", "round", "show"),
        "holds bytes that are not UTF-8 text",
    )
    assert "bug" not in said
    one_line_error(
        as_coordinator(
            run,
            *("user", "activate", "r\udcff"),
            *("--code-file", "c.pass", "--passphrase-file", "c.pass"),
        ),
        "holds bytes that are not UTF-8 text",
    )


@pytest.mark.parametrize(
    ("band", "fragment"),
    [("9" * 4301, "more than"), ("[" * 5000, "nested more than"), ("[2,", "not valid JSON")],
)
def test_a_chairs_band_fma_bands_cannot_read_is_refused_by_name(run, band, fragment):
    demo(run)
    one_line_error(
        run(
            *("chair", "decide", "--rater", "rater-01", "--passphrase-file", "c.pass"),
            *("--vignette", "demo_doc_border_01", "--sub-action", "admit"),
            *("--band", band, "--reason", "x"),
        ),
        "--band is not JSON fma-bands reads",
        fragment,
    )


def test_a_handbacks_reason_is_bounded_as_the_review_page_bounds_it(run, tmp_path):
    demo(run)
    line = "demo_doc_clear_01 | admit | ACCEPT | {}\n"
    Path("long.txt").write_text(line.format("é" * 4001), encoding="utf-8")
    one_line_error(
        as_coordinator(run, "handback", "import", "--rater", "rater-01", "long.txt"),
        "keep the reason under 4000 characters",
    )
    # A file's name may hold what no audit record holds: it is recorded as a terminal shows it.
    name = "x\x1b[31m\u202e.txt"
    Path(name).write_text(line.format("Fine as proposed."), encoding="utf-8")
    done = as_coordinator(run, "handback", "import", "--rater", "rater-01", name)
    assert done.exit_code == 0, done.output
    assert run("audit", "verify").exit_code == 0
    engine = make_engine(f"sqlite:///{tmp_path / 'fma-bands.db'}")
    with session_scope(engine) as session:
        [event] = session.exec(select(AuditEvent).where(AuditEvent.kind == "handback_imported"))
        assert event.payload["source"] == "x\\u001b[31m\\u202e.txt"
    engine.dispose()


def test_an_attestations_folder_that_cannot_be_made_is_named(run, monkeypatch):
    demo(run)
    monkeypatch.setenv("FMA_BANDS_ATTESTATIONS", "/proc/no-such-folder/attestations")
    one_line_error(
        as_coordinator(run, "round", "show"),
        "/proc/no-such-folder/attestations",
        "cannot make the attestations folder",
    )


def test_export_of_an_invalid_folder_writes_nothing_unless_provisional(run, tmp_path):
    study = demo(run)
    folder = tmp_path / "attestations"
    [policy] = [r for r in records(folder) if "-policy-" in r.name]
    flip_a_signature_bit(policy)
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    out = tmp_path / "bands.yaml"
    message = one_line_error(run(*EDITOR, "export", "--out", str(out), "--study", study))
    assert "does not verify" in message and policy.name in message and "bad_signature" in message
    assert not out.exists()
    # The same with the study's database at hand: the store does not mend a signature.
    one_line_error(run("export", "--out", str(out)), policy.name)
    assert not out.exists()
    assert run(*EDITOR, "registry", "--study", study).exit_code == 1

    provisional = run(*EDITOR, "export", "--out", str(out), "--provisional", "--study", study)
    assert provisional.exit_code == 0, provisional.output
    assert provisional.stderr.startswith("PROVISIONAL: the attestations folder does not verify")
    assert "(0 clinician-adjudicated)" in provisional.stdout
    document = yaml.safe_load(out.read_text())
    assert policy.name in document["provisional"] and "bad_signature" in document["provisional"]
    entries = [e for group in document["bands"].values() for e in group]
    assert entries and {e["provenance"] for e in entries} == {"author-derived"}
    assert not any(e.get("adjudicated_by") for e in entries)
    assert not any(a["attestation_on_file"] for a in document["adjudicators"])
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


def test_export_into_the_attestations_folder_is_refused(run, tmp_path):
    study = demo(run)
    folder = tmp_path / "attestations"
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    for out in (
        "attestations/policy.yaml",
        "attestations/bands.yaml",
        "./attestations/../attestations/x.yaml",
    ):
        one_line_error(
            run(*EDITOR, "export", "--out", out, "--study", study), "inside the attestations folder"
        )
        one_line_error(
            run("export", "--out", out, "--provisional"), "inside the attestations folder"
        )
    os.symlink("attestations", "linked")
    one_line_error(run("export", "--out", "linked/policy.yaml"), "inside the attestations folder")
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    assert run("verify").exit_code == 0


def test_export_onto_a_fifo_or_a_link_is_refused_and_leaves_it(run, tmp_path):
    study = demo(run)
    fifo = tmp_path / "bands.fifo"
    os.mkfifo(fifo)
    one_line_error(
        run(*EDITOR, "export", "--out", str(fifo), "--study", study), "not a regular file"
    )
    assert fifo.is_fifo()  # not replaced, and nothing was written into it (no reader blocked)
    target = tmp_path / "elsewhere.yaml"
    target.write_text("mine\n")
    os.symlink(target, tmp_path / "link.yaml")
    one_line_error(
        run(*EDITOR, "export", "--out", "link.yaml", "--study", study), "not a regular file"
    )
    assert (tmp_path / "link.yaml").is_symlink() and target.read_text() == "mine\n"
    assert run(*EDITOR, "export", "--out", "bands.yaml", "--study", study).exit_code == 0


def test_a_steward_approves_a_pending_policy(run, tmp_path):
    demo(run)
    added = as_coordinator(run, "steward", "add", "pi-01", "--code-file", "pi.code")
    assert added.exit_code == 0, added.output
    assert "enrolled pi-01 (steward), awaiting activation" in added.stdout
    Path("pi.pass").write_text("the steward's own passphrase\n")
    activated = run(
        "user", "activate", "pi-01", "--code-file", "pi.code", "--passphrase-file", "pi.pass"
    )
    assert activated.exit_code == 0, activated.output
    assert "threshold 2" in run("verify").stdout

    pending = as_coordinator(run, "policy", "set", "--quorum", "2", "--scope", "require")
    assert pending.exit_code == 0, pending.output
    assert "takes effect once the steward approves it" in pending.stdout
    assert run("policy", "show").stdout.strip() == "policy: quorum 1, scope warn"
    assert json.loads(run("registry", "--json").stdout)["policy"] == {"quorum": 1, "scope": "warn"}
    assert run("verify").exit_code == 0  # a record awaiting its second signature is no problem

    # Only the steward's own passphrase signs the approval.
    (tmp_path / "wrong.pass").write_text(DEMO_PASS + "\n")
    one_line_error(
        run("steward", "sign", "--steward", "pi-01", "--passphrase-file", "wrong.pass"),
        code=REFUSED_EXIT,
    )
    assert run("policy", "show").stdout.strip() == "policy: quorum 1, scope warn"

    signed = run("steward", "sign", "--steward", "pi-01", "--passphrase-file", "pi.pass")
    assert signed.exit_code == 0, signed.output
    [line] = signed.stdout.splitlines()
    assert line.startswith("approved: record ") and "-approval-pi-01-" in line
    assert run("policy", "show").stdout.strip() == "policy: quorum 2, scope require"
    checked = run("verify", "--json")
    assert checked.exit_code == 0, checked.output
    assert "-approval-pi-01-" in records(tmp_path / "attestations")[-1].name
    assert yaml.safe_load((tmp_path / "attestations" / "policy.yaml").read_text()) == {
        "quorum": 2,
        "scope": "require",
    }
    data = json.loads(run("registry", "--json").stdout)
    assert data["policy"] == {"quorum": 2, "scope": "require"}
    one_line_error(
        run("steward", "sign", "--steward", "pi-01", "--passphrase-file", "pi.pass"),
        "no change to the roster or the policy awaits your signature",
    )
