"""Exit statuses as docs/cli.md documents them: 0 ok, 1 a check failed (or it cannot be done),
2 usage, 3 refused by a rule or a permission, 70 a bug; and `fma-bands --version`."""

import importlib.metadata
import json
import os
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from fma_bands.cli import cli
from fma_bands.cli.base import (
    BUG_EXIT,
    FAILED_EXIT,
    OK_EXIT,
    PIPE_CLOSED_EXIT,
    REFUSED_EXIT,
    USAGE_EXIT,
)
from fma_bands.core.errors import AccessDenied, ConflictError, FmaBandsError, WrongPassphrase
from tests.conftest import DEMO_VIGNETTES, ROOT

PASS = "coordinator passphrase"


@pytest.fixture
def run(tmp_path, monkeypatch):
    """fma-bands in-process, in a folder of its own holding the demo vignettes."""
    monkeypatch.chdir(tmp_path)
    shutil.copytree(DEMO_VIGNETTES, tmp_path / "vignettes")
    env = {name: None for name in os.environ if name.startswith("FMA_BANDS_")}
    env["FMA_BANDS_LOG_FILE"] = str(tmp_path / "fma-bands.log")

    def invoke(*args: str):
        return CliRunner(env=env).invoke(cli, list(args), catch_exceptions=False)

    return invoke


@pytest.fixture
def coordinator(run, tmp_path):
    """A study whose first coordinator is enrolled, and their passphrase in c.pass."""
    (tmp_path / "c.pass").write_text(PASS + "\n")
    made = run("user", "add", "coordinator", "--role", "coordinator", "--passphrase-file", "c.pass")
    assert made.exit_code == 0, made.output
    return ("--as", "coordinator", "--passphrase-file", "c.pass")


def test_the_documented_statuses_are_the_ones_used():
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    section = text.split("## Exit statuses", 1)[1].split("\n## ", 1)[0]
    documented = {int(code) for code in re.findall(r"^\| (\d+) \|", section, re.M)}
    used = {OK_EXIT, FAILED_EXIT, USAGE_EXIT, REFUSED_EXIT, BUG_EXIT, PIPE_CLOSED_EXIT}
    assert documented == used == {0, 1, 2, 3, 70, 141}


def test_version_names_the_installed_distribution(run):
    result = run("--version")
    assert result.exit_code == OK_EXIT
    assert result.stdout == f"fma-bands {importlib.metadata.version('fma-bands')}\n"


def test_0_when_a_check_passes(run):
    assert run("vignettes", "check").exit_code == OK_EXIT


def test_1_when_a_check_fails(run, tmp_path):
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "bad.yaml").write_text("id: bad\n")
    result = run("vignettes", "check", "broken")
    assert result.exit_code == FAILED_EXIT and "problem" in result.stdout


def test_1_when_it_cannot_be_done(run):
    result = run("handback", "import", "nowhere.txt", "--rater", "rater-01")
    assert result.exit_code == FAILED_EXIT
    assert result.stderr.startswith("fma-bands: error: nowhere.txt")


@pytest.mark.parametrize(
    "args",
    [("round", "open", "3"), ("vignettes", "check", "--no-such-option"), ("no-such-command",)],
)
def test_2_for_a_command_line_that_is_wrong(run, args):
    assert run(*args).exit_code == USAGE_EXIT


def test_3_for_a_coordinator_action_without_the_coordinator(run, coordinator):
    result = run("phase", "closed")
    assert result.exit_code == REFUSED_EXIT
    assert "this is a coordinator action" in result.stderr


def test_3_for_a_passphrase_that_does_not_prove_who_asks(run, coordinator, tmp_path):
    (tmp_path / "wrong.pass").write_text("not the coordinator's passphrase\n")
    result = run("--as", "coordinator", "--passphrase-file", "wrong.pass", "phase", "closed")
    assert result.exit_code == REFUSED_EXIT and "Authentication failed" in result.stderr


def test_3_for_a_closed_round_that_is_never_reopened(run, coordinator):
    assert run(*coordinator, "phase", "closed").exit_code == OK_EXIT
    result = run(*coordinator, "phase", "open")
    assert result.exit_code == REFUSED_EXIT and "never reopened" in result.stderr
    assert json.loads(run("phase", "--json").stdout) == {"round": 1, "phase": "closed"}


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (AccessDenied, REFUSED_EXIT),
        (WrongPassphrase, REFUSED_EXIT),
        (ConflictError, REFUSED_EXIT),
        (FmaBandsError, FAILED_EXIT),
        (RuntimeError, BUG_EXIT),
    ],
)
def test_each_kind_of_error_has_its_status(run, monkeypatch, error, code):
    def fail(session):
        raise error("the message")

    assert run("init").exit_code == 0
    monkeypatch.setattr("fma_bands.study.state.study", fail)
    result = run("phase")
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    [line] = result.stderr.splitlines()
    assert line.startswith("fma-bands: error: ")


def test_70_for_a_bug_names_the_log(run, monkeypatch, tmp_path):
    def broken(session):
        raise KeyError("an invariant broke")

    assert run("init").exit_code == 0
    monkeypatch.setattr("fma_bands.study.state.study", broken)
    result = run("phase", "--json")
    assert result.exit_code == BUG_EXIT and result.stdout == ""
    assert str(tmp_path / "fma-bands.log") in result.stderr
    assert "an invariant broke" in Path(tmp_path / "fma-bands.log").read_text()
