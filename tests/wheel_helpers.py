"""fma-bands as a user gets it: a wheel built offline from a copy of the tree, installed into a
fresh virtual environment outside the repository, and its `fma-bands` command run there."""

import atexit
import functools
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from tests.conftest import ROOT

# What a copy of the tree leaves out: environments, caches, builds and a developer's study.
NOT_SOURCE = (
    ".venv",
    ".git",
    "build",
    "*.egg-info",
    "test-results",
    "*.db",
    "*.db-*",
    "__pycache__",
    ".*_cache",
    ".hypothesis",
    "fma-bands.log",
)


@functools.cache
def built_wheel() -> Path:
    """The project's wheel, built once a test run (a build takes seconds) in a folder removed
    at exit. Built from a copy, so the build leaves nothing in the working tree, and without
    build isolation, so it needs no network."""
    folder = Path(tempfile.mkdtemp(prefix="fma-bands-wheel-"))
    atexit.register(shutil.rmtree, folder, True)
    source = folder / "fma-bands"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*NOT_SOURCE))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-q",
            "-w",
            str(folder / "dist"),
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    [wheel] = (folder / "dist").glob("fma_bands-*.whl")
    return wheel


def install(folder: Path) -> Path:
    """A fresh virtual environment at folder/.venv with the wheel installed by pip, as README
    command 1 makes one; returns its `fma-bands`. The dependencies are this environment's,
    reached through a .pth file added after the install (the machine may be offline)."""
    venv = folder / ".venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    python = venv / "bin" / "python"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--no-deps",
            "--no-index",
            "-q",
            str(built_wheel()),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout.strip()
    (Path(purelib) / "test-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv / "bin" / "fma-bands"


def clean_environment() -> dict[str, str]:
    """This process's environment without a developer's FMA_BANDS_* settings or PYTHONPATH, so
    that nothing reaches the installed copy from the checkout."""
    return {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("FMA_BANDS_") and key != "PYTHONPATH"
    }


def run(command: list[str], folder: Path, **kwargs) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command,
        cwd=folder,
        env=clean_environment(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=kwargs.pop("timeout", 120),
        **kwargs,
    )
