"""Which tests read ../shared (the FairMedAgent data), found by reading the tests themselves.

A newcomer's clone has no ../shared beside it: those tests skip, saying where the data comes
from. In CI (FMA_BANDS_REQUIRE_SHARED=1) they fail instead, so they can never quietly stop running.

A test needs the data when its function, a fixture it asks for, or a helper it names (in its
own module or imported from another test module) mentions one of NAMES.
"""

import ast
import functools
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NAMES = frozenset(
    {
        "SHARED",
        "SHARED_VIGNETTES",
        "HANDBACK",
        "HARNESS",
        "TRAJECTORIES",
        "shared_vignettes",
        "shared_library",
    }
)
WHERE = "../shared/fairmedagent (the FairMedAgent data, provided beside the checkout)"


@functools.cache
def reaching(module_path: str) -> frozenset[str]:
    """The top-level names of a test module (tests, fixtures, helpers) that reach the data."""
    tree = ast.parse(Path(module_path).read_text())
    reached = set(NAMES)
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tests."):
            source = ROOT / ((node.module or "").replace(".", "/") + ".py")
            if source.exists() and str(source) != module_path:
                theirs = reaching(str(source))
                reached |= {a.asname or a.name for a in node.names if a.name in theirs}
    uses = {
        node.name: {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        | {a.arg for a in ast.walk(node) if isinstance(a, ast.arg)}
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }
    grown = True
    while grown:
        more = {name for name, refs in uses.items() if refs & reached} - reached
        reached |= more
        grown = bool(more)
    return frozenset(reached)


def needs_shared(item: pytest.Item) -> bool:
    path = str(getattr(item, "path", ""))
    if not path.endswith(".py"):
        return False
    name = getattr(item, "originalname", None) or item.name
    return name in reaching(path) or bool(set(getattr(item, "fixturenames", ())) & NAMES)


def mark(items: list[pytest.Item], shared: Path) -> None:
    """Skip (or, in CI, fail) every test that needs the data when it is not there."""
    if shared.is_dir():
        return
    required = bool(os.environ.get("FMA_BANDS_REQUIRE_SHARED"))
    for item in items:
        if needs_shared(item):
            if required:
                item.add_marker(pytest.mark.usefixtures("shared_data_required"))
            else:
                item.add_marker(pytest.mark.skip(reason=f"needs {WHERE}"))
