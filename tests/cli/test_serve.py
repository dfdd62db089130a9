"""`fma-bands serve`: the Streamlit command it hands over to (in-process, with the hand-over
caught), the command a hint names, and one real server started from a folder of its own."""

import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from click.testing import CliRunner

from app_pages.server import READY
from fma_bands.cli import cli
from fma_bands.cli import serve as serve_module
from tests.conftest import DEMO_VIGNETTES
from tests.servers import free_port


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """An empty folder to run in, with no FMA_BANDS_* setting of the developer's."""
    monkeypatch.chdir(tmp_path)
    for name in [n for n in os.environ if n.startswith("FMA_BANDS_")]:
        monkeypatch.delenv(name)
    return tmp_path


@pytest.fixture
def handed_over(folder, monkeypatch):
    """`serve(*args)` runs the command in-process; what it would exec is recorded instead."""
    calls = []
    monkeypatch.setattr(serve_module.os, "execve", lambda *call: calls.append(call))

    def serve(*args: str):
        result = CliRunner().invoke(cli, list(args), prog_name="fma-bands", catch_exceptions=False)
        return result, calls

    return serve


def options(argv: list[str]) -> dict[str, str]:
    return dict(word[2:].split("=", 1) for word in argv if word.startswith("--"))


def test_serve_runs_the_installed_script_on_loopback_with_the_study_options(handed_over):
    (Path("vignettes")).mkdir()
    result, [(program, argv, _)] = handed_over("serve")
    assert result.exit_code == 0, result.output
    assert program == sys.executable
    # Streamlit's own command line, once the pages' modules are imported (app_pages/server.py).
    assert argv[:4] == [sys.executable, "-m", "app_pages.server", "run"]
    # The installed app script (a checkout's, installed editable), beside app_pages/.
    script = Path(argv[4])
    assert script.name == "fma_bands_app.py" and (script.parent / "app_pages" / "main.py").is_file()
    assert options(argv) == {
        "server.address": "127.0.0.1",
        "server.port": "8501",
        "server.headless": "true",
        "server.fileWatcherType": "none",
        "server.maxUploadSize": "1",
        "server.enableXsrfProtection": "true",
        "server.enableCORS": "true",
        "client.showErrorDetails": "none",
        "client.toolbarMode": "minimal",
        "browser.gatherUsageStats": "false",
        "runner.postScriptGC": "false",
    }
    assert "the app is at http://127.0.0.1:8501 (study database sqlite:///fma-bands.db)" in (
        result.stdout
    )
    assert result.stderr == ""


def test_host_and_port_are_the_ones_given(handed_over):
    result, [(_, argv, _)] = handed_over("serve", "--host", "0.0.0.0", "--port", "9001")
    assert result.exit_code == 0, result.output
    assert {k: v for k, v in options(argv).items() if k in {"server.address", "server.port"}} == {
        "server.address": "0.0.0.0",
        "server.port": "9001",
    }
    assert "http://0.0.0.0:9001" in result.stdout
    ipv6, [*_, (_, argv, _)] = handed_over("serve", "--host", "::1")
    assert "http://[::1]:8501" in ipv6.stdout and options(argv)["server.address"] == "::1"


@pytest.mark.parametrize("port", ["0", "65536", "http"])
def test_a_port_out_of_range_is_a_usage_error(handed_over, port):
    result, calls = handed_over("serve", "--port", port)
    assert result.exit_code == 2 and not calls
    assert "--port" in result.stderr


def test_the_settings_given_as_options_reach_the_app_as_its_variables(handed_over, monkeypatch):
    monkeypatch.setenv("FMA_BANDS_IDLE_MINUTES", "5")
    result, [(_, _, env)] = handed_over(
        "--db", "sqlite:///study.db", "--vignettes", str(DEMO_VIGNETTES), "--attestations", "att",
        "serve",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    given = {k: v for k, v in env.items() if k.startswith("FMA_BANDS_")}
    assert given == {
        "FMA_BANDS_DATABASE_URL": "sqlite:///study.db",
        "FMA_BANDS_VIGNETTES": str(DEMO_VIGNETTES),
        "FMA_BANDS_ATTESTATIONS": "att",
        "FMA_BANDS_IDLE_MINUTES": "5",  # the environment's own, as it was
    }
    assert env["PATH"] == os.environ["PATH"]


def test_a_missing_vignette_folder_is_warned_of_with_the_command_that_makes_one(handed_over):
    result, calls = handed_over("serve")
    assert result.exit_code == 0 and calls
    assert result.stderr.startswith("warning: there is no vignette folder vignettes here: run `")
    assert " demo` first, or give --vignettes DIR" in result.stderr


def test_a_bad_setting_is_refused_before_anything_starts(handed_over):
    Path("att").write_text("a file, not a folder")
    result, calls = handed_over("--attestations", "att", "serve")
    assert result.exit_code == 1 and not calls
    assert result.stderr.startswith("fma-bands: error: ")
    assert "setting attestations (FMA_BANDS_ATTESTATIONS): att is not a folder" in result.stderr


def test_without_the_app_script_installed_serve_says_what_to_do(handed_over, monkeypatch):
    monkeypatch.setattr(serve_module, "APP_MODULE", "fma_bands_app_not_installed")
    result, calls = handed_over("serve")
    assert result.exit_code == 1 and not calls
    assert "fma_bands_app_not_installed.py is not installed beside fma_bands" in result.stderr
    assert "Traceback" not in result.output


# The command a hint names ----------------------------------------------------------------------


@pytest.fixture
def environment(folder, monkeypatch):
    """A virtual environment's bin folder, made the one this process runs from."""
    bin_folder = folder / "env" / "bin"
    bin_folder.mkdir(parents=True)
    (bin_folder / "python").touch()
    script = bin_folder / "fma-bands"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    monkeypatch.setattr(serve_module.sys, "executable", str(bin_folder / "python"))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    return bin_folder


def test_the_hint_names_the_script_from_the_current_folder(environment):
    assert serve_module.program() == "env/bin/fma-bands"


def test_the_hint_names_fma_bands_when_it_is_the_one_on_path(environment, monkeypatch):
    monkeypatch.setenv("PATH", f"{environment}:/usr/bin")
    assert serve_module.program() == "fma-bands"


def test_the_hint_names_the_script_in_full_from_elsewhere(environment, monkeypatch, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert serve_module.program() == str(environment / "fma-bands")


def test_the_hint_names_python_m_without_a_script(environment, monkeypatch):
    (environment / "fma-bands").unlink()
    python = str(environment / "python")
    assert serve_module.program() == f"{python} -m fma_bands.cli"


def test_the_start_command_repeats_the_study_options_given(environment):
    import click

    with click.Context(cli, obj={"database_url": "postgresql://u:secret@db/x", "acting_as": "c"}):
        assert (
            serve_module.start_command() == "env/bin/fma-bands --db 'postgresql://u:***@db/x' serve"
        )
    with click.Context(cli, obj={"vignettes": "my vignettes"}):
        assert (
            serve_module.start_command("demo")
            == "env/bin/fma-bands --vignettes 'my vignettes' demo"
        )


# One real server ---------------------------------------------------------------------------------


def listening_addresses(port: int) -> set[str]:
    """The IPv4 addresses something listens on at `port`, from /proc/net/tcp."""
    found = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        address, hex_port = local.split(":")
        if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
            found.add(".".join(str(int(address[i : i + 2], 16)) for i in (6, 4, 2, 0)))
    return found


def test_serve_starts_the_app_from_any_folder_on_loopback(folder):
    shutil.copytree(DEMO_VIGNETTES, folder / "vignettes")
    port = free_port()
    log = folder / "serve.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "fma_bands.cli", "serve", "--port", str(port)],
            cwd=folder,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health") as answer:
                    assert answer.read().decode().strip() == "ok"
                break
            except OSError:
                assert process.poll() is None, log.read_text()
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.2)
        assert listening_addresses(port) == {"127.0.0.1"}
        # The process that answers is the command itself, become the server (a signal to it
        # reaches the server).
        assert (
            b"\x00app_pages.server\x00run\x00" in Path(f"/proc/{process.pid}/cmdline").read_bytes()
        )
        text = log.read_text()
        assert f"fma-bands: the app is at http://127.0.0.1:{port}" in text
        # Before anyone opens a page, the server reads the study: the database is made and the
        # vignettes synced into it, and its output says so.
        while READY not in log.read_text():
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline + 60, log.read_text()
            time.sleep(0.2)
        assert f"{READY} (12 vignettes)" in log.read_text()
        assert (folder / "fma-bands.db").is_file()
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
    assert "Traceback" not in log.read_text()
    assert "missing ScriptRunContext" not in log.read_text()  # the reading ahead is quiet
