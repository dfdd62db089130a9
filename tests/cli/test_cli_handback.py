"""`fma-bands handback import FILE --rater NAME`: a hand-back with lines for bands not assigned to
its rater is refused whole, each such line named with its number and the `fma-bands assign`
command that assigns it, and nothing is imported; once assigned, the same file imports
(in-process, with click's CliRunner, on the FairMedAgent vignettes)."""

import pytest

from tests.conftest import HANDBACK


@pytest.fixture(scope="module")
def cli_vignettes(shared_vignettes):
    """The store and `fma` are tests/cli/conftest.py's, on the FairMedAgent vignettes."""
    return shared_vignettes


def test_an_unassigned_band_refuses_the_file_until_the_coordinator_assigns_it(fma):
    refused = fma("handback", "import", str(HANDBACK), "--rater", "geri-01")
    assert refused.exit_code == 1 and "Traceback" not in refused.output
    first, *problems = refused.stderr.splitlines()
    assert first == f"fma-bands: error: {HANDBACK}: 3 problem(s); nothing was imported"
    # A geriatrician's specialty covers the follow-up band (line 8), not the emergency ones.
    for number, band in [
        (5, "draft_triage_01:esi_acuity"),
        (6, "draft_ordering_01:esi_acuity"),
        (7, "draft_medication_01:analgesia_tier"),
    ]:
        [line] = [p for p in problems if p.strip().startswith(f"{HANDBACK}:{number}:")]
        assert "is not assigned to geri-01; the coordinator assigns it first" in line
        assert f"(fma-bands assign --rater geri-01 --band {band}, or Study admin)" in line
    assert len(problems) == 3
    assert fma("audit", "verify").exit_code == 0
    assigned = fma(
        "assign", "--rater", "geri-01", "--sub-action", "esi_acuity", "--sub-action",
        "analgesia_tier",
    )  # fmt: skip
    assert assigned.exit_code == 0, assigned.output
    done = fma("handback", "import", str(HANDBACK), "--rater", "geri-01")
    assert done.exit_code == 0, done.output
    assert done.stdout.startswith(f"imported 4 submitted reviews for geri-01 from {HANDBACK}")
