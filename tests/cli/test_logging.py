"""The command line's log (docs/cli.md, "Logging"): one JSON line per event, with the event and
the actor; each command's start and outcome at INFO, refusals at WARNING, only bugs at the
default ERROR; the file private; never a passphrase or a database password in it."""

import json
import os
import shutil
import stat

import pytest
from click.testing import CliRunner

from fma_bands.cli import cli
from fma_bands.cli.base import BUG_EXIT, REFUSED_EXIT
from fma_bands.cli.logs import LOGGER
from tests.conftest import DEMO_VIGNETTES

PASS = "coordinator passphrase"
SECRET = "s3cret-db-password"


@pytest.fixture
def run(tmp_path, monkeypatch):
    """fma-bands in-process in a folder of its own; `run(*args, **variables)`."""
    monkeypatch.chdir(tmp_path)
    shutil.copytree(DEMO_VIGNETTES, tmp_path / "vignettes")

    def invoke(*args: str, **variables: str):
        env: dict[str, str | None] = {n: None for n in os.environ if n.startswith("FMA_BANDS_")}
        env["FMA_BANDS_LOG_FILE"] = str(tmp_path / "cli.log")
        env.update({f"FMA_BANDS_{name.upper()}": value for name, value in variables.items()})
        return CliRunner(env=env).invoke(cli, list(args), catch_exceptions=False)

    return invoke


@pytest.fixture
def log(tmp_path):
    """The log's lines so far, each parsed (and each must parse)."""

    def lines() -> list[dict]:
        path = tmp_path / "cli.log"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines()]

    return lines


@pytest.fixture
def coordinator(run, tmp_path):
    (tmp_path / "c.pass").write_text(PASS + "\n")
    made = run("user", "add", "coordinator", "--role", "coordinator", "--passphrase-file", "c.pass")
    assert made.exit_code == 0, made.output
    return ("--as", "coordinator", "--passphrase-file", "c.pass")


def test_at_info_each_command_logs_its_start_and_outcome(run, log, tmp_path):
    assert run("vignettes", "check", log_level="info").exit_code == 0
    start, end = log()
    assert start["event"] == "command.start" and start["level"] == "INFO"
    assert start["command"] == "vignettes check" and start["actor"] is None
    assert end["event"] == "command.end"
    assert (end["command"], end["outcome"], end["exit"], end["message"]) == (
        "vignettes check",
        "ok",
        0,
        None,
    )
    assert end["seconds"] >= 0 and end["time"].endswith("+00:00")
    assert stat.S_IMODE((tmp_path / "cli.log").stat().st_mode) == 0o600
    # A failed check, and a command that cannot be done, are logged as such.
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "bad.yaml").write_text("id: bad\n")
    assert run("vignettes", "check", "broken", log_level="INFO").exit_code == 1
    assert run("handback", "import", "nowhere.txt", "--rater", "r", log_level="INFO").exit_code == 1
    failed, error = log()[3], log()[5]
    assert (failed["outcome"], failed["exit"], failed["message"]) == ("failed", 1, None)
    assert (error["outcome"], error["exit"]) == ("failed", 1)
    assert "nowhere.txt" in error["message"]


def test_by_default_only_a_bug_writes_a_log(run, log, coordinator, tmp_path):
    """So a command run anywhere leaves no file behind unless something is wrong with fma-bands."""
    assert run("vignettes", "check").exit_code == 0
    assert run("phase", "closed").exit_code == REFUSED_EXIT
    assert not (tmp_path / "cli.log").exists()
    assert log() == []


def test_at_warning_a_refusal_is_logged_with_its_actor(run, log, coordinator, tmp_path):
    assert run("phase", "closed", log_level="warning").exit_code == REFUSED_EXIT
    (tmp_path / "wrong.pass").write_text("not the coordinator's passphrase\n")
    wrong = ("--as", "coordinator", "--passphrase-file", "wrong.pass")
    refused = run(*wrong, "phase", "closed", log_level="warning")
    assert refused.exit_code == REFUSED_EXIT
    assert run("vignettes", "check", log_level="warning").exit_code == 0  # not logged
    anonymous, named = log()
    for line in (anonymous, named):
        assert (line["level"], line["event"], line["command"]) == (
            "WARNING",
            "command.end",
            "phase",
        )
        assert (line["outcome"], line["exit"]) == ("refused", REFUSED_EXIT)
    assert anonymous["actor"] is None and "coordinator action" in anonymous["message"]
    assert named["actor"] == "coordinator" and "Authentication failed" in named["message"]
    assert "not the coordinator's passphrase" not in (tmp_path / "cli.log").read_text()


def test_a_bug_is_logged_without_a_passphrase_or_a_database_password(
    run, log, coordinator, tmp_path, monkeypatch
):
    url = f"postgresql://someone:{SECRET}@db.example/study"

    def broken(session, **_):
        raise RuntimeError(f"failed with {PASS!r} on {url}")

    monkeypatch.setattr("fma_bands.study.rounds.close_round", broken)
    result = run(*coordinator, "phase", "closed")
    assert result.exit_code == BUG_EXIT
    text = (tmp_path / "cli.log").read_text()
    assert PASS not in text and SECRET not in text
    bug, end = log()
    assert bug["event"] == "command.bug" and bug["level"] == "ERROR"
    assert bug["actor"] == "coordinator" and bug["command"] == "phase"
    assert "RuntimeError" in bug["traceback"] and "someone:***@db.example" in bug["traceback"]
    assert "failed with '***'" in bug["traceback"]
    assert (end["outcome"], end["exit"], end["level"]) == ("bug", BUG_EXIT, "ERROR")
    assert SECRET not in end["message"] and PASS not in end["message"]


def test_a_log_left_readable_by_others_is_made_private(run, log, tmp_path):
    (tmp_path / "cli.log").write_text("")
    (tmp_path / "cli.log").chmod(0o644)
    assert run("vignettes", "check", log_level="info").exit_code == 0
    assert stat.S_IMODE((tmp_path / "cli.log").stat().st_mode) == 0o600
    assert len(log()) == 2


def test_a_usage_error_starts_no_command_and_logs_nothing(run, log):
    assert run("vignettes", "check", "--bogus", log_level="info").exit_code == 2
    assert log() == []


def test_each_command_closes_its_log(run):
    assert run("vignettes", "check", log_level="info").exit_code == 0
    assert LOGGER.handlers == []


def test_an_unknown_level_is_refused_by_name(run):
    result = run("vignettes", "check", log_level="chatty")
    assert result.exit_code == 1
    assert "log_level (FMA_BANDS_LOG_LEVEL)" in result.stderr


def test_a_misspelt_variable_is_refused_by_name_and_test_ones_are_not(run):
    result = run("vignettes", "check", log_levl="info")
    assert result.exit_code == 1
    misspelt = "FMA_BANDS_" + "LOG_LEVL"  # written apart: no such variable exists to be allowed
    assert result.stderr.startswith(f"fma-bands: error: {misspelt}: ")
    assert "did you mean FMA_BANDS_LOG_LEVEL?" in result.stderr
    assert run("vignettes", "check", require_shared="1", docs_slow="1").exit_code == 0


def test_a_fifo_named_as_the_log_never_holds_a_command(tmp_path):
    """Opening a FIFO to write waits for a reader: the log is a regular file or none, and the
    command runs on (the log then goes where a log that cannot be written goes)."""
    import subprocess
    import sys

    fifo = tmp_path / "log.fifo"
    os.mkfifo(fifo)
    env = {n: v for n, v in os.environ.items() if not n.startswith("FMA_BANDS_")}
    env |= {
        "FMA_BANDS_LOG_FILE": str(fifo),
        "FMA_BANDS_LOG_LEVEL": "info",
        "FMA_BANDS_VIGNETTES": str(DEMO_VIGNETTES),
    }
    done = subprocess.run(
        [sys.executable, "-m", "fma_bands.cli", "vignettes", "check"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        timeout=120,  # far above any run's time: a hang is what fails
        check=False,
    )
    assert done.returncode == 0, done.stderr
