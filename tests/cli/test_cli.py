"""The fma-bands command on vignette files: in-process with click's CliRunner, and twice as a
real subprocess of the console script (help, and an export)."""

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml
from click.testing import CliRunner

from fma_bands.cli import cli
from tests.conftest import ROOT


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


def fma(*args: str, cwd: Path = ROOT) -> Ran:
    """fma-bands run in this process, from `cwd` (the defaults are relative paths)."""
    before = os.getcwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(cli, list(args), prog_name="fma-bands", catch_exceptions=False)
    finally:
        os.chdir(before)
    return Ran(result.exit_code, result.stdout, result.stderr)


def console(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """The installed console script, as a coordinator's shell runs it."""
    command = shutil.which("fma-bands", path=os.path.dirname(sys.executable))
    prefix = [command] if command else [sys.executable, "-m", "fma_bands.cli"]
    return subprocess.run(
        [*prefix, *args], cwd=cwd, capture_output=True, text=True, timeout=60, check=False
    )


def test_the_console_script_answers_help():
    result = console("--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Usage: fma-bands")


def test_the_console_script_exports(shared_vignettes, tmp_path):
    # No attestations folder: no study's log verifies, so only a provisional export is written.
    out = tmp_path / "bands.yaml"
    args = ("--vignettes", str(shared_vignettes), "export", "--out", str(out))
    refused = console(*args, cwd=tmp_path)
    assert refused.returncode == 1 and "does not verify" in refused.stderr
    assert not out.exists()
    result = console(*args, "--provisional", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert yaml.safe_load(out.read_text())["format"] == "fma-bands/v1"


def test_help_everywhere():
    for args in ([], ["vignettes"], ["vignettes", "check"], ["vignettes", "list"], ["export"]):
        result = fma(*args, "--help")
        assert result.returncode == 0, result.stderr
        assert "Usage: fma-bands" in result.stdout


def test_no_help_says_none_for_a_bound_it_does_not_have():
    """Every command's help, walked through the command tree: a whole number without bounds
    reads "INTEGER", never "[x<=None]"."""

    def walk(group, path):
        yield path
        for name, command in getattr(group, "commands", {}).items():
            yield from walk(command, [*path, name])

    paths = list(walk(cli, []))
    assert ["policy", "set"] in paths and ["user", "add"] in paths
    for path in paths:
        said = CliRunner().invoke(cli, [*path, "--help"]).output
        assert "None" not in said, (path, said)
    assert "--quorum INTEGER" in CliRunner().invoke(cli, ["policy", "set", "--help"]).output


def test_check_passes_on_good_folders(shared_vignettes):
    result = fma("vignettes", "check", str(shared_vignettes), "vignettes")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "valid, 0 file(s) with problems" in result.stdout


def test_check_names_the_file_and_field_of_a_broken_one(shared_vignettes, tmp_path):
    for source in shared_vignettes.glob("draft_*.yaml"):
        shutil.copy(source, tmp_path)
    broken = tmp_path / "draft_medication_01.yaml"
    broken.write_text(broken.read_text().replace("  - 2\n", "  - 7\n"))
    result = fma("vignettes", "check", str(tmp_path))
    assert result.returncode == 1
    assert f"{broken}:" in result.stdout
    assert "proposals.0.acceptable: 7 is outside the domain of analgesia_tier" in result.stdout
    assert "3 vignettes valid, 1 file(s) with problems" in result.stdout


def test_list_json(shared_vignettes):
    result = fma("--vignettes", str(shared_vignettes), "vignettes", "list", "--json")
    assert result.returncode == 0, result.stderr
    listed = {v["id"]: v for v in json.loads(result.stdout)}
    assert len(listed) == 16
    [band] = listed["draft_ordering_01"]["proposals"]
    assert band["acceptable"] == [2, 3] and band["straddles"] is True
    assert band["threshold"] == "value <= 2"


def test_list_table_never_shows_the_canary(shared_vignettes):
    result = fma("--vignettes", str(shared_vignettes), "vignettes", "list")
    assert result.returncode == 0
    assert "draft_triage_01" in result.stdout and "CANARY" not in result.stdout


def test_export_writes_the_draft_bands(shared_vignettes, tmp_path):
    out = tmp_path / "bands.yaml"
    args = ("--vignettes", str(shared_vignettes), "export", "--out", str(out), "--provisional")
    result = fma(*args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "wrote 4 bands of 4 vignettes" in result.stdout
    assert "(0 clinician-adjudicated)" in result.stdout
    assert result.stderr.startswith("PROVISIONAL: the attestations folder does not verify")
    document = yaml.safe_load(out.read_text())
    assert "attestations is not a folder" in document["provisional"]
    bands = document["bands"]
    assert {e["provenance"] for group in bands.values() for e in group} == {"author-derived"}
    assert bands["draft_documentation_01"][0]["acceptable"] == {"min": 1, "max": 14}
    assert bands["draft_documentation_01"][0]["disputed_span"] == {"min": 15, "max": 30}
    assert bands["draft_medication_01"][0]["acceptable"] == [1, 2]


def test_export_refuses_a_broken_library(shared_vignettes, tmp_path):
    folder = tmp_path / "v"
    shutil.copytree(shared_vignettes, folder)
    broken = folder / "draft_triage_01.yaml"
    broken.write_text(broken.read_text().replace("  - 2\n", "  - 0\n"))
    out = tmp_path / "bands.yaml"
    result = fma("--vignettes", str(folder), "export", "--out", str(out), "--provisional")
    assert result.returncode == 1
    assert "draft_triage_01.yaml" in result.stderr and "outside the domain" in result.stderr
    assert not out.exists()
