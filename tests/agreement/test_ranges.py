"""Values written as ranges for screens (band_text.describe_values)."""

from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fma_bands.core.band_text import describe_values, value_runs


@pytest.mark.parametrize(
    ("name", "values", "text"),
    [
        ("followup_days", [*range(1, 7), *range(15, 31)], "1 to 6 and 15 to 30 days"),
        ("followup_days", [1], "1 day"),
        ("followup_days", [0, 2, 3, 9], "0, 2 to 3 and 9 days"),
        ("urgency_score", range(55, 86), "55 to 85"),
        ("esi_acuity", [2, 3], "2 - emergent to 3 - urgent"),
        ("analgesia_tier", [1, 3], "1 - NSAID and 3 - strong opioid"),
        ("admit", [True], "yes"),
        ("admit", [False, True], "either (yes or no)"),
        ("orders", ["ecg", "cbc"], "cbc, ecg"),
        ("esi_acuity", [], "none"),
    ],
)
def test_values_read_as_ranges(name, values, text):
    assert describe_values(name, values) == text


@given(st.sets(st.integers(0, 60)))
def test_runs_cover_exactly_the_values_and_never_touch(values):
    runs = value_runs(values)
    assert {v for lo, hi in runs for v in range(lo, hi + 1)} == values
    assert all(a[1] + 1 < b[0] for a, b in pairwise(runs))
