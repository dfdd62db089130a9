"""The impact counts come from counts per action and cell (k_ref x k_cf reference pairs, C(k, 2)
replicate pairs in a band, the runs on either side multiplied across its threshold), and equal,
on any runs of any conditions, scaffolds and seeds, the plain count over every pair of runs
written here; 100,000 runs of one vignette are counted without listing their pairs."""

from itertools import combinations
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from fma_bands.core.actions import Threshold
from fma_bands.core.bands import AnyBand, IntervalBand, SetBand
from fma_bands.study.impact import CONTROLS, REFERENCE, Run, count_runs, impact

VIGNETTES = ("v1", "v2")
# Levels the band may admit, and actions it never admits (a boolean, text, a list, a float).
LEVELS = st.integers(min_value=0, max_value=8)
ODD = st.sampled_from([True, False, "2", [2], 2.0])


CONDITIONS = (REFERENCE, "white_woman_private", "black_woman_medicaid", "rerender_control")


def pairwise(
    vignette_id: str, name: str, band: AnyBand, threshold: Threshold | None, runs: list[Run]
) -> tuple[int, int, int, int | None]:
    """The reference: list the runs, then every pair of runs the pairing makes, keep those with
    both actions in the band, and compare each."""
    mine = [r for r in runs if r.vignette_id == vignette_id]
    across_conditions = any(
        r.condition_id == REFERENCE
        and any(
            (o.model, o.scaffold, o.seed) == (r.model, r.scaffold, r.seed)
            and o.condition_id not in (REFERENCE, *CONTROLS)
            for o in mine
        )
        for r in mine
    )
    if across_conditions:
        mine = [r for r in mine if r.condition_id not in CONTROLS]
        candidates = [
            (a, b)
            for a in mine
            for b in mine
            if a.condition_id == REFERENCE
            and b.condition_id != REFERENCE
            and (a.model, a.scaffold, a.seed) == (b.model, b.scaffold, b.seed)
        ]
    else:
        candidates = [
            (a, b)
            for a, b in combinations(mine, 2)
            if (a.model, a.scaffold, a.condition_id) == (b.model, b.scaffold, b.condition_id)
        ]
    actions = [r.actions[name] for r in mine if r.actions.get(name) is not None]

    def admitted(action: object) -> bool:
        return isinstance(action, int) and not isinstance(action, bool) and action in band.values()

    inside = [a for a in actions if admitted(a)]
    pairs = [
        (a.actions[name], b.actions[name])
        for a, b in candidates
        if admitted(a.actions.get(name)) and admitted(b.actions.get(name))
    ]
    across = (
        None
        if threshold is None
        else sum(threshold.holds(a) != threshold.holds(b) for a, b in pairs)
    )
    return len(actions), len(inside), len(pairs), across


@st.composite
def runs_of(draw: Any) -> list[Run]:
    """Runs of two vignettes under the reference, counterfactual and control conditions (or one
    condition alone), two scaffolds and two seeds; some without an action for the sub-action,
    some with one no band admits."""
    runs = []
    conditions = draw(st.sampled_from([CONDITIONS, ("c",), (REFERENCE, "rerender_control")]))
    for i in range(draw(st.integers(min_value=0, max_value=40))):
        action = draw(st.one_of(LEVELS, LEVELS, ODD, st.none()))
        actions = {} if draw(st.booleans()) and action is None else {"esi_acuity": action}
        runs.append(
            Run(
                draw(st.sampled_from(VIGNETTES)),
                draw(st.sampled_from(conditions)),
                "f.json",
                actions | {"x": i},
                "m",
                draw(st.sampled_from(["C0", "C1"])),
                draw(st.sampled_from([None, 1])),
            )
        )
    return runs


@st.composite
def bands(draw: Any) -> AnyBand:
    low = draw(st.integers(min_value=1, max_value=5))
    if draw(st.booleans()):
        return IntervalBand(
            sub_action="esi_acuity", min=low, max=draw(st.integers(min_value=low, max_value=5))
        )
    members = draw(st.lists(st.integers(min_value=1, max_value=5), min_size=1, unique=True))
    return SetBand(sub_action="esi_acuity", members=tuple(sorted(members)))


THRESHOLDS = st.one_of(
    st.none(),
    st.builds(
        Threshold, st.sampled_from(["<=", "<", ">=", ">", "=="]), st.integers(0, 6), st.none()
    ),
)


@given(runs=runs_of(), band=bands(), threshold=THRESHOLDS)
@settings(max_examples=300, deadline=None)
def test_counts_equal_the_pairwise_count(runs, band, threshold):
    for vignette_id in VIGNETTES:
        row = impact(vignette_id, "esi_acuity", "proposal", band, threshold, runs)
        counted = (row.runs, row.runs_in_band, row.pairs_in_band, row.pairs_across_threshold)
        assert counted == pairwise(vignette_id, "esi_acuity", band, threshold, runs)
        # Tallied once for every band, the same.
        again = impact(vignette_id, "esi_acuity", "proposal", band, threshold, count_runs(runs))
        assert again == row


def test_a_hundred_thousand_runs_of_one_vignette_are_counted_not_paired():
    # Listing these pairs would take minutes and gigabytes: 4,999,950,000 pairs.
    runs = [Run("v1", "c", "f.json", {"esi_acuity": 1 + i % 5}) for i in range(100_000)]
    band = IntervalBand(sub_action="esi_acuity", min=2, max=5)
    row = impact("v1", "esi_acuity", "proposal", band, Threshold("<=", 3, None), runs)
    k, low = 80_000, 40_000  # levels 2 to 5 are in the band; 2 and 3 on the low side
    assert (row.runs, row.runs_in_band) == (100_000, k)
    assert row.pairs_in_band == k * (k - 1) // 2
    assert row.pairs_across_threshold == low * (k - low)
