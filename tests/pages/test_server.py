"""The process `fma-bands serve` starts (app_pages/server.py): every module the pages import is
imported before Streamlit's command line runs, quietly, and the command line is Streamlit's."""

import ast
import subprocess
import sys
from pathlib import Path

from app_pages import server
from tests.conftest import ROOT

PAGES = ROOT / "app_pages"


def test_every_module_a_page_imports_is_warmed():
    found = set(server.page_modules())
    for path in PAGES.glob("*.py"):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                assert node.module in found, (path.name, node.module)
            elif isinstance(node, ast.Import):
                assert {a.name for a in node.names} <= found, path.name
    # The pages' own helpers and the domain they call, not only Streamlit.
    assert {"app_pages.common", "fma_bands.study.ratings", "fma_bands.evidence.registry"} <= found


def test_the_server_process_imports_the_pages_modules_then_runs_streamlits_command_line():
    # A fresh interpreter: what warm() imports, without a word on the error stream, then the
    # command line Streamlit's own `python -m streamlit` runs.
    probe = (
        "import sys\n"
        "from app_pages import server\n"
        "server.warm()\n"
        "wanted = (*server.page_modules(), *server.LIBRARIES)\n"
        "missing = [m for m in wanted if m not in sys.modules]\n"
        "print(missing)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    assert done.stderr == ""
    version = subprocess.run(
        [sys.executable, "-m", "app_pages.server", "version"],
        cwd=Path("/"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert version.returncode == 0, version.stderr
    assert version.stdout.startswith("Streamlit, version ")
    assert version.stderr == ""
