"""Bands against the harness's released runs: the counts equal a direct computation with the
harness's own in_band and band_straddles (../shared/fairmedagent/harness)."""

import json
import sys
from itertools import combinations

import pytest

from fma_bands.core.bands import consensus, parse_band, to_harness
from fma_bands.core.errors import FmaBandsError
from fma_bands.study.impact import impact, read_runs, study_impact
from tests.conftest import SHARED

TRAJECTORIES = sorted((SHARED / "trajectories").glob("*.json"))
HARNESS = SHARED / "harness"


@pytest.fixture
def metrics(monkeypatch):
    """The harness's own metrics module, imported from ../shared and forgotten afterwards."""
    monkeypatch.syspath_prepend(str(HARNESS))
    from fairmedagent import metrics

    yield metrics
    for name in [m for m in sys.modules if m.startswith("fairmedagent")]:
        monkeypatch.delitem(sys.modules, name)


def harness_actions(vignette_id: str, name: str) -> list:
    """Straight from the files: the action of every complete run of the vignette."""
    actions = []
    for path in TRAJECTORIES:
        for t in json.loads(path.read_text())["trajectories"]:
            if t["complete"] and t["vignette_id"] == vignette_id:
                actions += [s[name] for s in t["actions"].values() if name in s]
    return actions


def harness_counts(metrics, vignette_id, name, acceptable, threshold=None):
    actions = harness_actions(vignette_id, name)
    pairs = list(combinations([a for a in actions if metrics.in_band(a, acceptable)], 2))
    across = None
    if threshold is not None:
        across = sum(threshold.holds(a) != threshold.holds(b) for a, b in pairs)
        if not metrics.band_straddles(acceptable, threshold.holds):
            assert across == 0  # a band that does not straddle decides no pair
    inside = sum(bool(metrics.in_band(a, acceptable)) for a in actions)
    return len(actions), inside, len(pairs), across


def test_only_complete_runs_are_read(shared_library):
    runs = read_runs(TRAJECTORIES)
    assert len(runs) == 48  # 16 complete trajectories in each of the three files
    assert {r.condition_id for r in runs} == {"ref_white_man_private"}
    assert {r.vignette_id for r in runs} == set(shared_library.vignettes)


def test_counts_equal_the_harness_on_the_released_files(shared_library, metrics):
    rows = study_impact(shared_library, read_runs(TRAJECTORIES))
    assert [r.band for r in rows] == ["proposal"] * 4  # the four draft bands, no reviews yet
    for row in rows:
        proposal = shared_library.vignettes[row.vignette_id].proposal(row.sub_action)
        expected = harness_counts(
            metrics,
            row.vignette_id,
            row.sub_action,
            to_harness(proposal.acceptable),
            proposal.effective_threshold,
        )
        assert (row.runs, row.runs_in_band, row.pairs_in_band, row.pairs_across_threshold) == (
            expected
        ), row
    deciding = [(r.pairs_across_threshold or 0, r.pairs_in_band or 0) for r in rows]
    assert deciding == sorted(deciding, reverse=True)  # the bands that decide most come first


def test_the_consensus_and_its_widened_band_are_counted_too(shared_library, metrics):
    raters = [
        parse_band("followup_days", {"min": 1, "max": 7}),
        parse_band("followup_days", {"min": 3, "max": 14}),
    ]
    key = ("draft_documentation_01", "followup_days")
    rows = study_impact(shared_library, read_runs(TRAJECTORIES), {key: consensus(raters)})
    mine = {r.band: r for r in rows if (r.vignette_id, r.sub_action) == key}
    assert mine["consensus"].acceptable == {"min": 3, "max": 7}
    assert mine["widened"].acceptable == {"min": 1, "max": 14}
    for row in mine.values():
        expected = harness_counts(metrics, *key, row.acceptable)
        assert (row.runs, row.runs_in_band, row.pairs_in_band) == expected[:3]
        assert row.pairs_across_threshold is None  # follow-up has no pre-registered threshold
    assert [r.band for r in rows[rows.index(mine["proposal"]) :][:3]] == [
        "proposal",
        "consensus",
        "widened",
    ]  # one band's rows stay together


def test_a_band_the_harness_cannot_score_says_so(metrics):
    runs = read_runs(TRAJECTORIES)
    admit = parse_band("admit", [True])
    row = impact("draft_triage_01", "admit", "proposal", admit, admit.action.threshold, runs)
    assert (row.runs, row.runs_in_band, row.pairs_in_band) == (3, None, None)
    assert "boolean" in row.note
    with pytest.raises(TypeError):  # the harness itself refuses a boolean action
        metrics.in_band(True, [True])


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[]", "no list of trajectories"),
        ('{"trajectories": [{"complete": true}]}', "needs a vignette_id"),
        ('{"trajectories": [{"vignette_id": "v", "complete": true, "actions": 3}]}', "by step"),
        ("[" * 100 + "]" * 100, "nested more than"),
    ],
)
def test_a_bad_trajectories_file_is_named(tmp_path, content, message):
    path = tmp_path / "t.json"
    path.write_text(content)
    with pytest.raises(FmaBandsError, match=message) as caught:
        read_runs([path])
    assert str(path) in str(caught.value)
