"""Shared fixtures: the real FairMedAgent data read from ../shared, and the bundled demo study."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "fairmedagent"
SHARED_VIGNETTES = SHARED / "vignettes"
DEMO_VIGNETTES = ROOT / "vignettes"
HANDBACK = SHARED / "handback-adjudicator-01.txt"


@pytest.fixture(scope="session")
def shared_vignettes() -> Path:
    if not SHARED_VIGNETTES.is_dir():
        pytest.fail(f"the FairMedAgent fixtures are missing: expected {SHARED_VIGNETTES}")
    return SHARED_VIGNETTES


@pytest.fixture(scope="session")
def shared_library(shared_vignettes):
    from fma_bands.vignettes import load_library

    return load_library([shared_vignettes])
