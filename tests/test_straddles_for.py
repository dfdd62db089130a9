"""fma_bands.export.straddles_for: an exported band's straddle of one of its named cuts, exactly
as the real harness's band_straddles gives it, and None for a cut the band does not carry."""

import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fma_bands.core.actions import parse_threshold
from fma_bands.export import straddles_for
from tests.evidence.test_harness import harness_package

ANALGESIA_CUTS = [
    {"name": "any_opioid", "expression": "value >= 2", "straddles": None},
    {"name": "strong_opioid", "expression": "value == 3", "straddles": None},
]


def band(acceptable, cuts=ANALGESIA_CUTS):
    return {"sub_action": "analgesia_tier", "acceptable": acceptable, "x_thresholds": cuts}


@pytest.mark.parametrize(
    ("acceptable", "any_opioid", "strong_opioid"),
    [
        ([1, 2], True, False),
        ([1, 3], True, True),
        ([2, 3], False, True),
        ([0], False, False),
        ({"min": 0, "max": 3}, True, True),
        ({"min": 2}, None, None),  # one bound: the harness reads no band at all
        (None, None, None),
    ],
)
def test_each_cut_is_straddled_as_the_band_lies(acceptable, any_opioid, strong_opioid):
    assert straddles_for(band(acceptable), "any_opioid") is any_opioid
    assert straddles_for(band(acceptable), "strong_opioid") is strong_opioid


def test_a_cut_the_band_does_not_carry_is_none():
    followup = {"acceptable": {"min": 1, "max": 30}, "x_thresholds": []}
    assert straddles_for(followup, "followup_within_14") is None
    assert straddles_for(band([1, 2]), "high_acuity") is None


def test_fields_without_their_x_extensions_or_a_cut_that_is_not_a_name_are_refused():
    with pytest.raises(ValueError, match="with its x_ fields"):
        straddles_for({"sub_action": "analgesia_tier", "acceptable": [1, 2]}, "any_opioid")
    with pytest.raises(TypeError, match="a cut is named by text"):
        straddles_for(band([1, 2]), None)  # type: ignore[arg-type]


CUTS = ["value <= 2", "value >= 2", "value == 3", "value < 15", "value > 0", "value == true"]
acceptables = st.one_of(
    st.lists(st.integers(0, 40), min_size=1, max_size=6, unique=True),
    st.lists(st.booleans(), min_size=1, max_size=2, unique=True),
    st.tuples(st.integers(0, 40), st.integers(0, 40)).map(lambda t: {"min": min(t), "max": max(t)}),
)


@given(acceptable=acceptables, expression=st.sampled_from(CUTS))
def test_straddles_for_is_the_harness_band_straddles(acceptable, expression):
    harness = harness_package()
    fields = {"acceptable": acceptable, "x_thresholds": [{"name": "cut", "expression": expression}]}
    phi = parse_threshold(expression).holds
    assert straddles_for(fields, "cut") is harness.metrics.band_straddles(acceptable, phi)


def test_importing_it_pulls_in_nothing_else_of_fma_bands():
    code = (
        "import sys, fma_bands.export; "
        "print(sorted(m for m in sys.modules if m.startswith('fma_bands')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == str(
        [
            "fma_bands",
            "fma_bands.core",
            "fma_bands.core.actions",
            "fma_bands.core.errors",
            "fma_bands.export",
        ]
    )
