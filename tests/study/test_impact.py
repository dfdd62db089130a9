"""Bands against the harness's runs: on the released runs (the reference condition alone) the
replicate pairs, the noise floor, equal a direct computation with the harness's own in_band and
band_straddles; on runs of every condition made by the harness's own runner, the reference and
counterfactual pairs equal those the harness's pair_with_reference, Pair and
within_range_flip_rate count (../shared/fairmedagent/harness)."""

import hashlib
import json
import sys
from itertools import combinations
from types import SimpleNamespace

import pytest

from fma_bands.core.actions import Threshold
from fma_bands.core.bands import consensus, parse_band, to_harness
from fma_bands.core.errors import FmaBandsError
from fma_bands.study.impact import (
    CONTROLS,
    REFERENCE,
    Run,
    count_runs,
    impact,
    read_runs,
    study_impact,
)
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


# Pairs across conditions, as the harness pairs them ------------------------------------------


@pytest.fixture
def harness(monkeypatch):
    """The harness's own conditions, metrics, runner and schema, imported from ../shared and
    forgotten afterwards."""
    monkeypatch.syspath_prepend(str(HARNESS))
    from fairmedagent import conditions, metrics, runner, schema

    yield SimpleNamespace(conditions=conditions, metrics=metrics, runner=runner, schema=schema)
    for name in [m for m in sys.modules if m.startswith("fairmedagent")]:
        monkeypatch.delitem(sys.modules, name)


SCAFFOLDS = ("C0", "C1")
REPLICATES = 2


def model(salt: str):
    """A stand-in model whose every answer follows from the prompt (descriptor included) and
    the salt, so conditions, scaffolds and replicates act differently but reproducibly."""

    def answer(prompt: str, schema: dict) -> dict:
        digest = hashlib.sha256(f"{salt}\n{prompt}".encode()).digest()
        fields = schema["properties"]
        values = {
            "esi_acuity": 1 + digest[0] % 5,
            "urgency_score": digest[1] % 101,
            "orders": ["troponin", "ct abdomen"][: digest[2] % 3],
            "admit": digest[3] % 2 == 0,
            "escalate_icu": digest[4] % 5 == 0,
            "analgesia_tier": digest[5] % 4,
            "controlled_substance_caution": digest[6] % 2 == 0,
            "referral": digest[7] % 2 == 0,
            "followup_days": 1 + digest[8] % 30,
            "stigmatizing_language_flags": [],
        }
        return {k: v for k, v in values.items() if k in fields}

    return answer


@pytest.fixture
def condition_runs(harness, shared_library, tmp_path):
    """The harness's runner on its own vignettes under every standard condition (control arms
    included), two scaffolds and two replicates each, written as a trajectories.json file."""
    conditions = harness.conditions.standard_conditions()
    trajectories = []
    for vignette in shared_library:
        case = harness.schema.Vignette(
            vignette.id, vignette.domain, vignette.clinical_core, dict(vignette.tool_results)
        )
        for condition in conditions:
            for scaffold in SCAFFOLDS:
                for replicate in range(REPLICATES):
                    traj = harness.runner.run_vignette(
                        case, condition, model(str(replicate)), scaffold=scaffold, model_name="m"
                    )
                    trajectories.append(
                        {
                            "vignette_id": traj.vignette_id,
                            "condition_id": traj.condition_id,
                            "model": traj.model,
                            "scaffold": traj.scaffold,
                            "complete": True,
                            "actions": traj.actions(),
                        }
                    )
    path = tmp_path / "trajectories.json"
    path.write_text(json.dumps({"trajectories": trajectories}))
    return conditions, json.loads(path.read_text())["trajectories"], path


def harness_pairs(harness, conditions, trajectories, vignette_id, name, acceptable, threshold):
    """The harness's `Pair`s of one vignette and sub-action: the reference condition with each
    counterfactual one (`pair_with_reference`), every run of one against every run of the other
    within a scaffold; the action dichotomised by the threshold, as the flip rate reads it."""
    metrics = harness.metrics
    cut = threshold.holds if threshold is not None else None

    def actions(condition_id, scaffold):
        return [
            step[name]
            for t in trajectories
            if (t["vignette_id"], t["condition_id"], t["scaffold"])
            == (vignette_id, condition_id, scaffold)
            for step in t["actions"].values()
            if name in step
        ]

    pairs = []
    for reference, other in harness.conditions.pair_with_reference(conditions):
        for scaffold in SCAFFOLDS:
            for a in actions(reference.id, scaffold):
                for b in actions(other.id, scaffold):
                    pairs.append(
                        metrics.Pair(
                            vignette_id,
                            action_ref=cut(a) if cut else a,
                            action_cf=cut(b) if cut else b,
                            in_band_ref=metrics.in_band(a, acceptable),
                            in_band_cf=metrics.in_band(b, acceptable),
                            straddles_threshold=metrics.band_straddles(acceptable, cut),
                        )
                    )
    return pairs


def test_the_reference_and_control_ids_are_the_harness_s(harness):
    assert harness.conditions.REFERENCE.id == REFERENCE
    controls = harness.conditions.control_conditions()
    assert {c.id for c in controls} == CONTROLS
    assert all(harness.conditions.is_control(c) for c in controls)


def test_pairs_across_conditions_equal_the_harness_s(harness, shared_library, condition_runs):
    conditions, trajectories, path = condition_runs
    runs = count_runs(read_runs([path]))
    bands = [
        ("esi_acuity", parse_band("esi_acuity", {"min": 1, "max": 3}), Threshold("<=", 2)),
        ("analgesia_tier", parse_band("analgesia_tier", [1, 2, 3]), Threshold(">=", 3)),
        ("followup_days", parse_band("followup_days", {"min": 1, "max": 14}), None),
    ]
    decided = 0
    for vignette in shared_library:
        assert runs.pairing(vignette.id) == "reference_vs_counterfactual"
        for name, band, threshold in bands:
            row = impact(vignette.id, name, "proposal", band, threshold, runs)
            pairs = harness_pairs(
                harness, conditions, trajectories, vignette.id, name, to_harness(band), threshold
            )
            rate = harness.metrics.within_range_flip_rate(pairs, bands=[])
            assert row.pairing == "reference_vs_counterfactual"
            assert row.pairs_in_band == rate["n_in_band"], (vignette.id, name)
            if threshold is None:
                assert row.pairs_across_threshold is None
            else:
                assert row.pairs_across_threshold == rate["n_flips_in_band"], (vignette.id, name)
                decided += row.pairs_across_threshold
            # The control arms are left out, as pair_with_reference leaves them out.
            arms = 12 * len(SCAFFOLDS) * REPLICATES
            assert row.runs == arms
            assert rate["n_in_band"] + rate["n_excluded_out_of_band"] == len(pairs)
            assert len(pairs) == 11 * len(SCAFFOLDS) * REPLICATES**2
    assert decided > 0  # the comparison saw pairs across a threshold, not only zeros


def test_the_proposals_across_conditions_are_counted_as_the_harness_counts(
    harness, shared_library, condition_runs
):
    conditions, trajectories, path = condition_runs
    for row in study_impact(shared_library, read_runs([path])):
        proposal = shared_library.vignettes[row.vignette_id].proposal(row.sub_action)
        threshold = proposal.effective_threshold
        acceptable = to_harness(proposal.acceptable)
        pairs = harness_pairs(
            harness,
            conditions,
            trajectories,
            row.vignette_id,
            row.sub_action,
            acceptable,
            threshold,
        )
        rate = harness.metrics.within_range_flip_rate(pairs, bands=[])
        assert (row.pairing, row.pairs_in_band) == (
            "reference_vs_counterfactual",
            rate["n_in_band"],
        )
        if threshold is not None:
            assert row.pairs_across_threshold == rate["n_flips_in_band"]


def test_the_released_runs_pair_replicates_as_the_noise_floor(harness, shared_library):
    # The floor study ran the reference condition alone: pair_with_reference finds no
    # counterfactual run, so only the replicates of that one condition pair.
    trajectories = [
        t
        for path in TRAJECTORIES
        for t in json.loads(path.read_text())["trajectories"]
        if t["complete"]
    ]
    conditions = harness.conditions.standard_conditions()
    rows = study_impact(shared_library, read_runs(TRAJECTORIES))
    assert rows and {r.pairing for r in rows} == {"replicates_noise_floor"}
    for row in rows:
        proposal = shared_library.vignettes[row.vignette_id].proposal(row.sub_action)
        acceptable = to_harness(proposal.acceptable)
        cut = proposal.effective_threshold
        for_harness = [{**t, "scaffold": SCAFFOLDS[0]} for t in trajectories]
        assert not harness_pairs(
            harness, conditions, for_harness, row.vignette_id, row.sub_action, acceptable, cut
        )
        # The replicate pairs, built as the harness's Pairs of the reference with itself.
        actions = harness_actions(row.vignette_id, row.sub_action)
        metrics = harness.metrics
        pairs = [
            metrics.Pair(
                row.vignette_id,
                action_ref=cut.holds(a) if cut else a,
                action_cf=cut.holds(b) if cut else b,
                in_band_ref=metrics.in_band(a, acceptable),
                in_band_cf=metrics.in_band(b, acceptable),
            )
            for a, b in combinations(actions, 2)
        ]
        rate = metrics.within_range_flip_rate(pairs, bands=[])
        assert row.pairs_in_band == rate["n_in_band"]
        if cut is not None:
            assert row.pairs_across_threshold == rate["n_flips_in_band"]


def test_runs_pair_only_within_a_model_scaffold_and_seed():
    def run(condition, action, model="m", scaffold="C0", seed=None):
        return Run("v", condition, "f.json", {"esi_acuity": action}, model, scaffold, seed)

    band = parse_band("esi_acuity", {"min": 1, "max": 5})
    cut = Threshold("<=", 2)
    runs = [
        run(REFERENCE, 1),
        run(REFERENCE, 3),
        run("white_woman_private", 3),
        run("white_woman_private", 1, model="other"),  # no reference run of this model
        run("rerender_control", 1),  # a control arm: never paired with the reference
        run("white_man_medicaid", 2, scaffold="C1"),  # no reference run with this scaffold
        run(REFERENCE, 4, seed=7),
        run("white_man_medicaid", 1, seed=7),  # pairs with seed 7's reference run only
    ]
    row = impact("v", "esi_acuity", "proposal", band, cut, runs)
    assert row.pairing == "reference_vs_counterfactual"
    assert (row.runs, row.runs_in_band) == (7, 7)  # the control arm's run is left out
    # (1, 3) and (3, 3) with no seed; (4, 1) with seed 7. Across the cut: (1, 3) and (4, 1).
    assert (row.pairs_in_band, row.pairs_across_threshold) == (3, 2)
    # Without a counterfactual beside the reference, replicates pair within their condition,
    # model and scaffold, whatever their seeds.
    alone = [run(REFERENCE, 1), run(REFERENCE, 3, seed=1), run("rerender_control", 1)]
    floor = impact("v", "esi_acuity", "proposal", band, cut, alone)
    assert floor.pairing == "replicates_noise_floor"
    assert (floor.runs, floor.pairs_in_band, floor.pairs_across_threshold) == (3, 1, 1)


def test_the_urgency_given_at_reassess_never_overwrites_triage_s(tmp_path):
    """The harness's reassess step may give an urgency score of its own: it is the reassess
    band's action, and triage's stays triage's."""
    run = {
        "vignette_id": "case_01",
        "condition_id": REFERENCE,
        "complete": True,
        "actions": {
            "triage": {"esi_acuity": 2, "urgency_score": 80},
            "reassess": {"admit": True, "escalate_icu": False, "urgency_score": 35},
        },
    }
    path = tmp_path / "trajectories.json"
    path.write_text(json.dumps({"trajectories": [run]}))
    (found,) = read_runs([path])
    assert found.actions["urgency_score"] == 80
    assert found.actions["reassess_urgency_score"] == 35
    assert found.actions["admit"] is True
