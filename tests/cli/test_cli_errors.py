"""Every failure reaches a coordinator as one line: `fma-bands: error: ...`, never a traceback."""

import shutil

import pytest
import yaml
from click.testing import CliRunner

from fma_bands.cli import cli
from fma_bands.cli.base import BUG_EXIT, PIPE_CLOSED_EXIT
from tests.conftest import DEMO_VIGNETTES


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


def one_line_error(result, *fragments: str, code: int = 1) -> str:
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines and lines[0].startswith("fma-bands: error: "), result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr
    return result.stderr


def test_a_hand_edited_adjudicators_file_is_named_and_not_believed(run, tmp_path):
    assert run("demo").exit_code == 0
    path = tmp_path / "attestations" / "adjudicators.yaml"
    data = yaml.safe_load(path.read_text())
    signed = {a["pseudonym"]: a["specialty"] for a in data["adjudicators"]}
    del data["adjudicators"][0]["specialty"]
    data["adjudicators"][1]["specialty"] = "cardiothoracic surgery"
    path.write_text(yaml.safe_dump(data))
    # Decisions come from the signed records, so the export stands; the registry names the edit.
    assert run("export", "--out", "bands.yaml").exit_code == 0
    exported = yaml.safe_load((tmp_path / "bands.yaml").read_text())["adjudicators"]
    assert {a["pseudonym"]: a["specialty"] for a in exported} == signed
    listing = run("registry")
    assert listing.exit_code == 0 and "Traceback" not in listing.output
    assert "adjudicators.yaml" in listing.stdout


def test_export_to_a_folder_is_refused_by_name(run, tmp_path):
    (tmp_path / "out").mkdir()
    one_line_error(run("export", "--out", "out"), "out: this is a folder")


def test_export_under_proc_is_refused_by_name(run):
    one_line_error(run("export", "--out", "/proc/bands.yaml"), "/proc/bands.yaml: cannot write")


@pytest.mark.parametrize(
    ("url", "fragment"),
    [
        ("bogus://", "the database URL 'bogus://' is for bogus"),
        ("mysql://root@localhost/study", "is for mysql; fma-bands works with SQLite"),
        ("sqlite:////proc/no/such/study.db", "cannot"),
    ],
)
def test_a_database_url_it_cannot_use_is_named(run, url, fragment):
    one_line_error(run("--db", url, "phase"), fragment)


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
    assert run("demo").exit_code == 0
    (tmp_path / "attestations" / "policy.yaml").unlink()
    text = run("registry")
    assert text.output.splitlines()[0].startswith("policy: none (")
    assert "nothing is granted" in text.output.splitlines()[0]
    data = yaml.safe_load(run("registry", "--json").output)
    assert data["policy"] is None and "policy.yaml" in data["policy_problem"]


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
