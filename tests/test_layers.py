"""The import contracts in pyproject.toml hold on the tree, and each one bites.

import-linter checks them (`lint-imports`, also run by .ci/run); these tests run it so that the
README's test command catches an import that crosses a layer. The planted imports show that each
contract names real modules and reports the import it forbids, so a contract that checks nothing
cannot pass here.
"""

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
CONTRACTS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"][
    "contracts"
]
LAYERS, NO_STREAMLIT, EVIDENCE_FROM_FILES = (contract["name"] for contract in CONTRACTS)


def lint_imports(folder: Path) -> subprocess.CompletedProcess[str]:
    """import-linter on the packages in `folder` (it puts its working folder first on sys.path)."""
    # Wide lines, so that a contract's name and its verdict stay on one line.
    env = {**os.environ, "COLUMNS": "250"}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_tree_keeps_every_contract() -> None:
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"Contracts: {len(CONTRACTS)} kept, 0 broken." in result.stdout


@pytest.mark.parametrize(
    ("module", "planted", "broken", "reported"),
    [
        pytest.param(
            "fma_bands/core/spreadsheet.py",
            "import fma_bands.study.reviews",
            (LAYERS,),
            "fma_bands.core.spreadsheet -> fma_bands.study.reviews",
            id="core-imports-study",
        ),
        pytest.param(
            "fma_bands/agreement/engine.py",
            "import fma_bands.store.models",
            (LAYERS,),
            "fma_bands.agreement.engine -> fma_bands.store.models",
            id="agreement-imports-store",
        ),
        pytest.param(
            "app_pages/queue_screen.py",
            "import fma_bands.cli.collector",
            (LAYERS,),
            "app_pages.queue_screen -> fma_bands.cli.collector",
            id="a-page-imports-the-command-line",
        ),
        pytest.param(
            "fma_bands/study/reviews.py",
            "import app_pages.common",
            # A page imports Streamlit, so the domain now does too.
            (LAYERS, NO_STREAMLIT),
            "fma_bands.study.reviews -> app_pages.common",
            id="domain-imports-a-page",
        ),
        pytest.param(
            "fma_bands/agreement/chart.py",
            "import streamlit",
            (NO_STREAMLIT,),
            "fma_bands.agreement.chart -> streamlit",
            id="domain-imports-streamlit",
        ),
        pytest.param(
            "fma_bands/evidence/log.py",
            "import sqlalchemy",
            (EVIDENCE_FROM_FILES,),
            "fma_bands.evidence.log -> sqlalchemy",
            id="evidence-imports-sqlalchemy",
        ),
    ],
)
def test_a_planted_import_breaks_its_contract(
    tmp_path: Path, module: str, planted: str, broken: tuple[str, ...], reported: str
) -> None:
    ignore = shutil.ignore_patterns("__pycache__")
    for package in ("fma_bands", "app_pages"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=ignore)
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    with (tmp_path / module).open("a") as source:
        source.write(f"\n{planted}\n")

    result = lint_imports(tmp_path)

    assert result.returncode == 1, result.stdout + result.stderr
    for contract in broken:
        assert f"{contract} BROKEN" in result.stdout
    assert reported in result.stdout
    # Only the planted import breaks anything: the copy itself keeps the other contracts.
    kept = len(CONTRACTS) - len(broken)
    assert f"Contracts: {kept} kept, {len(broken)} broken." in result.stdout
