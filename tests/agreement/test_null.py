"""Null data: raters who choose independently of the case. Lower, upper, band and pooled alphas
come out near 0, and no reading says "reliable"."""

import random

import pytest

from fma_bands.agreement import POOLED, agreement_report
from tests.agreement.build import rate

N_VIGNETTES = 150


def null_study(seed=11):
    """Three raters choose at random, whatever the vignette: ESI intervals, follow-up intervals
    whose lower ends (1 to 7 days) and upper ends (20 to 60 days) are each pure noise, orders,
    and admit."""
    rng = random.Random(seed)
    out = []
    for v in range(N_VIGNETTES):
        vid = f"v{v:03d}"
        for r in ("a", "b", "c"):
            lo = rng.randint(1, 5)
            out.append(rate(vid, "esi_acuity", r, {"min": lo, "max": rng.randint(lo, 5)}))
            days = {"min": rng.randint(1, 7), "max": rng.randint(20, 60)}
            out.append(rate(vid, "followup_days", r, days))
            defensible = rng.sample(["cbc", "ecg", "cxr", "bmp", "lft"], rng.randint(1, 3))
            required = defensible[: rng.randint(0, 1)]
            out.append(rate(vid, "orders", r, {"required": required, "defensible": defensible}))
            out.append(rate(vid, "admit", r, rng.choice([[True], [False], [False, True]])))
    return out


@pytest.fixture(scope="module")
def report():
    return agreement_report(null_study(), bootstrap=500, seed=2)


@pytest.mark.parametrize(
    ("scope", "metric"),
    [
        ("esi_acuity", "lower"),
        ("esi_acuity", "upper"),
        ("followup_days", "lower"),
        ("followup_days", "upper"),
        ("esi_acuity", "band"),
        ("followup_days", "band"),
        ("orders", "band"),
        ("admit", "band"),
        (POOLED, "band"),
    ],
)
def test_null_data_give_alpha_near_zero_and_no_reliable_reading(report, scope, metric):
    a = report.metrics[scope][metric]
    assert abs(a.alpha) < 0.1, (scope, metric, a.alpha)
    assert a.ci_high < 0.667
    assert a.reading == "unreliable"
    assert a.n_bands == N_VIGNETTES * (4 if scope == POOLED else 1)


@pytest.mark.parametrize("scope", ["esi_acuity", "admit", POOLED])
def test_null_membership_is_near_zero(report, scope):
    # Membership's units are every value of the fixed domain, whoever admits it: under chance it
    # reads near 0, not below it as when only admitted values were units (docs/statistics.md).
    a = report.metrics[scope]["membership"]
    assert abs(a.alpha) < 0.1, a.alpha
    assert a.reading == "unreliable"
    assert a.n_units == N_VIGNETTES * {"esi_acuity": 5, "admit": 2, POOLED: 7}[scope]


def test_follow_up_ends_that_never_agree_are_not_reliable_together(report):
    # The old "endpoints" alpha put both ends in one matrix and read 0.978 on data like these.
    lower = report.metrics["followup_days"]["lower"]
    upper = report.metrics["followup_days"]["upper"]
    assert lower.level == upper.level == "interval"
    assert max(lower.alpha, upper.alpha) < 0.1
