"""`pip install .` (not only -e) gives a working app: the screens and the migrations ship too."""

import os
import shutil
import subprocess
import sys
import zipfile

import pytest

from tests.conftest import ROOT


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The project built as a wheel and installed into a folder of its own (no source tree)."""
    out = tmp_path_factory.mktemp("wheel")
    # Built from a copy, so the build leaves nothing in the working tree.
    source = tmp_path_factory.mktemp("source") / "fma-bands"
    shutil.copytree(
        ROOT,
        source,
        ignore=shutil.ignore_patterns(
            ".venv", ".git", "build", "*.egg-info", "test-results", "*.db"
        ),
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(source),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    [wheel] = out.glob("fma_bands-*.whl")
    target = tmp_path_factory.mktemp("site")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        archive.extractall(target)
    return target, names


def test_the_wheel_holds_the_screens_and_the_migrations(installed):
    _, names = installed
    for page in (ROOT / "app_pages").glob("*.py"):
        assert f"app_pages/{page.name}" in names
    for revision in (ROOT / "fma_bands/store/migrations/versions").glob("*.py"):
        assert f"fma_bands/store/migrations/versions/{revision.name}" in names
    assert "fma_bands/store/migrations/env.py" in names


def test_the_installed_package_upgrades_a_database_and_runs_the_app(installed, tmp_path):
    target, _ = installed
    script = f"""
import sys
sys.path.insert(0, {str(target)!r})
import app_pages.main, fma_bands
assert fma_bands.__file__.startswith({str(target)!r}), fma_bands.__file__
from streamlit.testing.v1 import AppTest
at = AppTest.from_file(app_pages.main.__file__, default_timeout=30).run()
assert not at.exception, at.exception
assert [t.value for t in at.title] == ["Set up fma-bands"], [t.value for t in at.title]
print("ok")
"""
    env = {
        **os.environ,
        "FMA_BANDS_DATABASE_URL": f"sqlite:///{tmp_path / 'study.db'}",
        "FMA_BANDS_VIGNETTES": str(ROOT / "vignettes"),
        "FMA_BANDS_ATTESTATIONS": str(tmp_path / "attestations"),
        "PYTHONPATH": "",
    }
    # Run from an empty folder, so nothing can come from the source tree.
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip().endswith("ok")
