"""`fma-bands impact --trajectories FILE... [--json]` on the harness's three released runs (the
reference condition alone, so replicate pairs, the noise floor): the counts equal a direct
computation with the harness's own in_band and band_straddles, for the proposal, the raters'
consensus and the consensus widened by its disputed span; on runs of every condition made by the
harness's runner, the reference pairs equal the harness's own; raters are refused; a bad file is
named in one line (in-process, with click's CliRunner)."""

import json

import pytest

from fma_bands.cli.base import REFUSED_EXIT
from fma_bands.core.bands import to_harness
from tests.conftest import HANDBACK
from tests.study.test_impact import (  # noqa: F401
    TRAJECTORIES,
    condition_runs,
    harness,
    harness_counts,
    harness_pairs,
    metrics,
)

KEYS = ["vignette_id", "sub_action", "band", "runs_in_band", "pairs_in_band",
        "pairs_across_threshold", "pairing"]  # fmt: skip
# A second rater's paper verdicts (the test's own words): narrower follow-up, ESI 2 only.
OTHER = """\
draft_documentation_01 | followup_days | AMEND {"min": 3, "max": 10} | Ten days at the latest.
draft_triage_01 | esi_acuity | AMEND {2} | Chest pain with these findings is ESI 2.
"""


@pytest.fixture(scope="module")
def cli_vignettes(shared_vignettes):
    """The store and `fma` are tests/cli/conftest.py's, on the FairMedAgent vignettes."""
    return shared_vignettes


def rows_of(fma, *args) -> list[dict]:
    result = fma("impact", "--trajectories", *map(str, TRAJECTORIES), "--json", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def one_line(result, *fragments: str, code: int = 1) -> str:
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("fma-bands: error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def test_the_proposals_on_the_released_runs_equal_the_harness(fma, shared_library, metrics):  # noqa: F811
    rows = rows_of(fma)
    assert all(list(r) == KEYS for r in rows)  # exactly these keys, in this order
    assert [r["band"] for r in rows] == ["proposal"] * 4  # no reviews yet: no consensus
    assert {r["pairing"] for r in rows} == {"replicates_noise_floor"}  # the reference alone
    for row in rows:
        proposal = shared_library.vignettes[row["vignette_id"]].proposal(row["sub_action"])
        _, inside, pairs, across = harness_counts(
            metrics,
            row["vignette_id"],
            row["sub_action"],
            to_harness(proposal.acceptable),
            proposal.effective_threshold,
        )
        assert (row["runs_in_band"], row["pairs_in_band"], row["pairs_across_threshold"]) == (
            inside,
            pairs,
            across,
        )
    deciding = [(r["pairs_across_threshold"] or 0, r["pairs_in_band"]) for r in rows]
    assert deciding == sorted(deciding, reverse=True)
    followup = next(r for r in rows if r["sub_action"] == "followup_days")
    assert followup["pairs_across_threshold"] is None  # no threshold: null, never 0


def test_the_consensus_and_widened_bands_of_two_raters(fma, tmp_path, shared_library, metrics):  # noqa: F811
    other = tmp_path / "other.txt"
    other.write_text(OTHER)
    # The hand-back's emergency bands are outside a geriatrician's scope: assigned first.
    refused = fma("handback", "import", str(HANDBACK), "--rater", "geri-01")
    assert refused.exit_code == 1 and "is not assigned to geri-01" in refused.stderr
    assign = ("assign", "--rater", "geri-01", "--sub-action", "esi_acuity")
    assert fma(*assign, "--sub-action", "analgesia_tier").exit_code == 0
    assert fma("handback", "import", str(HANDBACK), "--rater", "geri-01").exit_code == 0
    band = "draft_documentation_01:followup_days"  # outside emergency medicine's scope
    assert fma("assign", "--rater", "emerg-01", "--band", band).exit_code == 0
    assert fma("handback", "import", str(other), "--rater", "emerg-01").exit_code == 0
    rows = rows_of(fma)
    assert all(list(r) == KEYS for r in rows)
    by = {(r["vignette_id"], r["sub_action"], r["band"]): r for r in rows}
    # Follow-up: 1 to 30 (the hand-back) and 3 to 10 agree on 3 to 10; widened, 1 to 30.
    # ESI: {2} (the proposal, accepted) and {2} agree on {2}, nothing disputed.
    expected = {
        ("draft_documentation_01", "followup_days", "consensus"): {"min": 3, "max": 10},
        ("draft_documentation_01", "followup_days", "widened"): {"min": 1, "max": 30},
        ("draft_triage_01", "esi_acuity", "consensus"): [2],
        ("draft_triage_01", "esi_acuity", "widened"): [2],
    }
    for (vid, name, which), acceptable in expected.items():
        threshold = shared_library.vignettes[vid].proposal(name).effective_threshold
        _, inside, pairs, across = harness_counts(metrics, vid, name, acceptable, threshold)
        row = by[(vid, name, which)]
        assert (row["runs_in_band"], row["pairs_in_band"], row["pairs_across_threshold"]) == (
            inside,
            pairs,
            across,
        ), row
    # The two bands with one rater (ordering, medication) have no consensus: proposal only.
    assert not any(k[2] != "proposal" for k in by if k[0] in ("draft_ordering_01",))
    assert [r["band"] for r in rows if r["vignette_id"] == "draft_documentation_01"] == [
        "proposal",
        "consensus",
        "widened",
    ]


def test_the_table_says_what_each_count_is(fma):
    result = fma("impact", "--trajectories", *map(str, TRAJECTORIES))
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("48 complete runs from 3 file(s)\n")
    assert "4 vignette(s): replicate runs of one condition paired, the noise floor" in (
        result.stdout
    )
    assert "reference condition" not in result.stdout  # no vignette has a counterfactual run
    assert "replicates (noise floor)" in result.stdout  # each row says how it pairs
    assert "no complete run" not in result.stdout
    assert "across: of those pairs, the ones on opposite sides of the threshold" in result.stdout
    # Repeating the option works as well as listing the files after it.
    repeated = [arg for path in TRAJECTORIES for arg in ("--trajectories", str(path))]
    again = fma("impact", *repeated)
    assert again.exit_code == 0 and again.stdout == result.stdout


def test_runs_of_every_condition_pair_the_reference_with_each_counterfactual(
    fma,
    shared_library,
    condition_runs,  # noqa: F811
    harness,  # noqa: F811
):
    conditions, trajectories, path = condition_runs
    result = fma("impact", "--trajectories", str(path), "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert rows and all(list(r) == KEYS for r in rows)
    assert {r["pairing"] for r in rows} == {"reference_vs_counterfactual"}
    for row in rows:
        proposal = shared_library.vignettes[row["vignette_id"]].proposal(row["sub_action"])
        threshold = proposal.effective_threshold
        pairs = harness_pairs(
            harness,
            conditions,
            trajectories,
            row["vignette_id"],
            row["sub_action"],
            to_harness(proposal.acceptable),
            threshold,
        )
        rate = harness.metrics.within_range_flip_rate(pairs, bands=[])
        assert row["pairs_in_band"] == rate["n_in_band"], row
        if threshold is not None:
            assert row["pairs_across_threshold"] == rate["n_flips_in_band"], row
    text = fma("impact", "--trajectories", str(path))
    assert text.exit_code == 0, text.output
    assert (
        "4 vignette(s): the reference condition ref_white_man_private paired with each "
        "counterfactual one, control arms left out"
    ) in text.stdout
    assert "noise floor" not in text.stdout
    assert "reference vs counterfactual" in text.stdout


def test_vignettes_without_runs_are_counted_apart(fma, tmp_path):
    released = json.loads(TRAJECTORIES[0].read_text())["trajectories"]
    triage = [t for t in released if t["vignette_id"] == "draft_triage_01"]
    path = tmp_path / "triage.json"
    path.write_text(json.dumps({"trajectories": triage}))
    result = fma("impact", "--trajectories", str(path))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[1] == (
        "1 vignette(s): replicate runs of one condition paired, the noise floor (the runs hold "
        "no reference and counterfactual runs to pair)"
    )
    assert lines[2] == "3 vignette(s) with bands: no complete run"


def test_raters_never_see_it(fma):
    one_line(
        fma("impact", "--trajectories", str(TRAJECTORIES[0]), "--json", who="geri-01"),
        "only the study coordinator can see which bands decide",
        code=REFUSED_EXIT,
    )
    one_line(
        fma("impact", "--trajectories", str(TRAJECTORIES[0]), who=None),
        "coordinator action",
        code=REFUSED_EXIT,
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", "not valid JSON"),
        ("[]", "no list of trajectories"),
        ('{"trajectories": [{"complete": true}]}', "needs a vignette_id"),
        ("[" * 100 + "]" * 100, "nested more than"),
    ],
)
def test_a_bad_trajectories_file_is_named_in_one_line(fma, tmp_path, content, message):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    one_line(fma("impact", "--trajectories", str(TRAJECTORIES[0]), str(bad)), str(bad), message)


def test_a_missing_or_odd_file_is_named_too(fma, tmp_path):
    one_line(fma("impact", "--trajectories", str(tmp_path / "none.json")), "none.json")
    one_line(fma("impact", "--trajectories", str(tmp_path)), "not a regular file")
    one_line(fma("impact"), "--trajectories FILE")
