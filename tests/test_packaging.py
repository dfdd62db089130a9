"""The wheel is the whole app: installed into a fresh environment outside the repository, its
`fma-bands` sets up the demo from any folder (twice), and the app it serves runs from the
installed files, page links included (the browser's side: tests/browser/test_installed_browser.py).
"""

import email
import stat
import subprocess
import zipfile

import pytest

from tests.conftest import ROOT
from tests.wheel_helpers import built_wheel, clean_environment, install, run

# The umask the commands run with here: the group may read, others may not.
UMASK = 0o027


@pytest.fixture(scope="module")
def names():
    with zipfile.ZipFile(built_wheel()) as archive:
        return set(archive.namelist())


@pytest.fixture(scope="module")
def metadata():
    with zipfile.ZipFile(built_wheel()) as archive:
        [path] = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        return email.message_from_bytes(archive.read(path))


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """A folder holding a fresh environment, .venv, with the wheel installed: where README
    command 1 leaves a person."""
    folder = tmp_path_factory.mktemp("installed")
    install(folder)
    return folder


@pytest.fixture(scope="module")
def fma_bands(home):
    return home / ".venv" / "bin" / "fma-bands"


def shipped(folder: str) -> set[str]:
    return {
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / folder).rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }


def test_the_wheel_holds_every_file_of_the_packages(names):
    # Every module and data file of the tree (the packages are listed in pyproject.toml: a new
    # one left off the list, or a data file without its package-data line, fails here).
    missing = (shipped("fma_bands") | shipped("app_pages")) - names
    assert not missing, f"files of the tree the wheel lacks: {sorted(missing)}"
    assert "fma_bands/store/migrations/env.py" in names


def test_the_wheel_holds_the_app_script_and_the_demo_vignettes(names):
    assert "fma_bands_app.py" in names
    assert "app.py" not in names  # no module of so common a name in site-packages
    demo = {p.name for p in (ROOT / "vignettes").glob("*.yaml")}
    assert demo
    assert {
        n.removeprefix("fma_bands/demo_vignettes/") for n in names if "demo_vignettes/" in n
    } == demo


def test_the_wheel_carries_the_licence(names, metadata):
    assert metadata["License-Expression"] == "GPL-3.0-or-later"
    assert metadata.get_all("License-File") == ["LICENSE"]
    [licence] = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
    with zipfile.ZipFile(built_wheel()) as archive:
        text = archive.read(licence).decode()
    assert text == (ROOT / "LICENSE").read_text()
    assert "GNU GENERAL PUBLIC LICENSE" in text and "Version 3, 29 June 2007" in text


def test_the_demo_runs_twice_in_a_folder_with_nothing_but_its_environment(fma_bands, home):
    first = run([".venv/bin/fma-bands", "demo"], home)
    assert first.returncode == 0, first.stdout + first.stderr
    # The vignettes came from the package, into the folder the study lives in.
    assert sorted(p.name for p in (home / "vignettes").iterdir()) == sorted(
        p.name for p in (ROOT / "vignettes").glob("*.yaml")
    )
    assert "Demo study ready" in first.stdout and "12 vignettes" in first.stdout
    # The hint is the command to type here: the environment's script, from this folder.
    assert "start the app with `.venv/bin/fma-bands serve`" in first.stdout

    again = run([str(fma_bands), "demo"], home)
    assert again.returncode == 1
    assert "already holds a study (the demo study)" in again.stderr
    assert "`.venv/bin/fma-bands serve`" in again.stderr
    assert "`.venv/bin/fma-bands demo --reuse`" in again.stderr

    reused = run([str(fma_bands), "demo", "--reuse"], home)
    assert reused.returncode == 0, reused.stdout + reused.stderr
    assert "The demo study is already in sqlite:///fma-bands.db" in reused.stdout
    assert "start the app with `.venv/bin/fma-bands serve`" in reused.stdout
    assert "rater-01     passphrase rater-01-demo" in reused.stdout


def test_the_demo_on_a_real_study_is_refused_even_with_reuse(fma_bands, tmp_path):
    (tmp_path / "p").write_text("a real coordinator's passphrase\n")
    (tmp_path / "vignettes").mkdir()
    for path in (ROOT / "vignettes").glob("*.yaml"):
        (tmp_path / "vignettes" / path.name).write_bytes(path.read_bytes())
    made = run(
        [str(fma_bands), "user", "add", "lead", "--role", "coordinator", "--passphrase-file", "p"],
        tmp_path,
    )
    assert made.returncode == 0, made.stdout + made.stderr
    for args in (["demo"], ["demo", "--reuse"]):
        refused = run([str(fma_bands), *args], tmp_path)
        assert refused.returncode == 1, refused.stdout + refused.stderr
        assert "already holds a study (a study that is not the demo)" in refused.stderr
        # From a folder the environment is not under, the hint names its script in full.
        assert f"start the app with `{fma_bands} serve`" in refused.stderr
        assert "passphrase" not in refused.stdout


def test_exports_and_records_are_readable_by_the_group_and_secrets_are_not(fma_bands, tmp_path):
    """Files colleagues read (the signed records and their copies, an export) take the mode the
    umask gives (0640 under 027); a secret, here an enrolment code, stays its owner's (0600)."""
    assert run([str(fma_bands), "demo"], tmp_path, umask=UMASK).returncode == 0
    (tmp_path / "coordinator.pass").write_text("coordinator-demo\n")
    coordinator = ["--as", "coordinator", "--passphrase-file", "coordinator.pass"]
    rater = ["--specialty", "geriatrics", "--jurisdiction", "Australia", "--years", "4"]
    commands = [
        ["export", "--out", "out/bands.yaml"],
        [*coordinator, "user", "add", "rater-03", "--role", "rater", *rater, "--code-file", "c"],
    ]
    for command in commands:
        done = run([str(fma_bands), *command], tmp_path, umask=UMASK)
        assert done.returncode == 0, done.stdout + done.stderr

    def mode(path):
        return stat.S_IMODE(path.stat().st_mode)

    records = sorted((tmp_path / "attestations").iterdir())
    assert any(p.name.endswith(".dsse.json") for p in records)
    assert {p.name: mode(p) for p in records} == {p.name: 0o640 for p in records}
    assert mode(tmp_path / "out" / "bands.yaml") == 0o640
    assert mode(tmp_path / "c") == 0o600


def test_the_installed_app_script_finds_its_pages(fma_bands, tmp_path):
    """The sign-in page's link ("app_pages/activate.py") resolves beside the installed script,
    where a script inside app_pages/ would raise StreamlitPageNotFoundError."""
    assert run([str(fma_bands), "demo"], tmp_path).returncode == 0
    script = """
import importlib.util, sys
from streamlit.testing.v1 import AppTest
app = importlib.util.find_spec("fma_bands_app").origin
assert app.startswith(sys.prefix), app
at = AppTest.from_file(app, default_timeout=60).run()
assert not at.exception, at.exception
assert [t.value for t in at.title] == ["Sign in"], [t.value for t in at.title]
print("ok")
"""
    python = fma_bands.parent / "python"
    result = subprocess.run(
        [str(python), "-c", script],
        cwd=tmp_path,
        env=clean_environment(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip().endswith("ok")
