"""Readings come from the interval, never from the point alone; under 10 bands there is none;
undefined alpha is said to be undefined, never printed as 0, 1 or nan."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fma_bands.agreement import POOLED, Alpha, agreement_report, metric_alpha, report_to_json
from fma_bands.agreement.metrics import NO_VARIATION, TOO_FEW_RATERS
from tests.agreement.build import rate, studies


def alpha(value, low, high, n_bands=40, n_vignettes=40):
    return Alpha(
        "band",
        "esi_acuity",
        "jaccard",
        value,
        None,
        n_bands=n_bands,
        n_vignettes_reading=n_vignettes,
        ci_low=low,
        ci_high=high,
    )


@pytest.mark.parametrize(
    ("value", "low", "high", "want"),
    [
        (0.90, 0.81, 0.95, "reliable"),
        (0.90, 0.80, 0.95, "reliable"),
        (0.90, 0.79, 0.95, "tentative"),  # the point is above 0.800, the interval is not
        (0.75, 0.667, 0.85, "tentative"),
        (0.70, 0.60, 0.85, "inconclusive: the interval spans a threshold"),
        (0.50, 0.40, 0.66, "unreliable"),
        (0.65, 0.40, 0.70, "inconclusive: the interval spans a threshold"),
        (0.90, None, None, "no reading: no interval"),
    ],
)
def test_readings_follow_the_interval(value, low, high, want):
    assert alpha(value, low, high).reading == want


def test_under_ten_bands_there_is_no_reading():
    assert alpha(0.99, 0.95, 1.0, n_bands=9).reading == "too few bands (9)"
    assert alpha(0.99, 0.95, 1.0, n_bands=10).reading == "reliable"


def test_under_ten_vignettes_there_is_no_reading_however_many_bands():
    # The audit's case: 12 bands on 2 vignettes read "reliable" on an interval of [1, 1].
    assert alpha(1.0, 1.0, 1.0, n_bands=12, n_vignettes=2).reading == "too few vignettes (2)"
    assert alpha(1.0, 1.0, 1.0, n_bands=12, n_vignettes=9).reading == "too few vignettes (9)"
    assert alpha(1.0, 1.0, 1.0, n_bands=12, n_vignettes=10).reading == "reliable"
    subs = ["esi_acuity", "analgesia_tier", "admit", "referral", "escalate_icu", "orders"]
    ratings = [
        rate(f"v{v}", sub, r, raw, "AMEND")
        for v, (esi, tier) in enumerate([(2, 1), (4, 3)])
        for sub, raw in zip(
            subs,
            [[esi], [tier], [v == 0], [v == 1], [v == 0],
             {"required": ["ecg"] if v else [], "defensible": ["ecg", "cbc"]}],
            strict=True,
        )
        for r in "abc"
    ]  # fmt: skip
    report = agreement_report(ratings, bootstrap=200, seed=1)
    pooled = report.metrics[POOLED]["band"]
    assert (pooled.alpha, pooled.n_bands, pooled.n_vignettes_reading) == (1.0, 12, 2)
    assert pooled.reading == "too few vignettes (2)"
    data = report_to_json(report)["metrics"][POOLED]["band"]
    assert (data["n_bands"], data["n_vignettes_reading"]) == (12, 2)


def test_one_band_with_two_disagreeing_raters_is_too_few_not_unreliable():
    a = metric_alpha("band", [rate("v", "esi_acuity", "a", [1]), rate("v", "esi_acuity", "b", [3])])
    assert a.alpha is not None and a.reading == "too few bands (1)"


def test_three_bands_in_perfect_agreement_are_too_few_not_reliable():
    ratings = [rate(f"v{v}", "esi_acuity", r, [v + 1]) for v in range(3) for r in "abc"]
    a = metric_alpha("band", ratings)
    assert a.alpha == 1.0 and a.reading == "too few bands (3)"


def test_undefined_alpha_says_why():
    same = [rate(f"v{v}", "esi_acuity", r, [2], "ACCEPT") for v in range(4) for r in "abc"]
    for metric in ("band", "lower", "upper", "verdict"):
        a = metric_alpha(metric, same)
        assert (a.alpha, a.reason, a.ci_low, a.method) == (None, NO_VARIATION, None, None)
        assert a.reading == "undefined: no variation"
        assert (a.n_bands, a.n_raters, a.n_pairable) == (4, 3, 12)
    alone = [rate(f"v{v}", "esi_acuity", f"r{v}", [2]) for v in range(4)]
    assert metric_alpha("band", alone).reading == f"undefined: {TOO_FEW_RATERS}"


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    studies(["esi_acuity", "admit", "orders", "followup_days"], max_raters=4, max_vignettes=14),
    st.integers(0, 2**16),
)
def test_no_reading_says_reliable_on_few_bands_or_a_low_interval(ratings, seed):
    report = agreement_report(ratings, bootstrap=60, seed=seed)
    data = json.loads(json.dumps(report_to_json(report)))
    for by_metric in data["metrics"].values():
        for a in by_metric.values():
            if a["reading"] == "reliable":
                assert a["n_bands"] >= 10 and a["ci_low"] >= 0.800
            if a["alpha"] is None:
                assert a["reading"].startswith("undefined: ") and a["reason"]
                assert a["ci_low"] is None and a["ci_high"] is None
            for key in ("alpha", "ci_low", "ci_high", "p_below_0800", "p_below_0667"):
                assert a[key] is None or isinstance(a[key], float)
    assert "NaN" not in json.dumps(report_to_json(report))


def test_a_pool_counts_only_the_bands_of_sub_actions_that_vary():
    # Five ESI bands in perfect agreement and five admit bands where every rater says yes: the
    # admit bands add nothing to the pooled alpha, which is ESI's alone, so too few bands too.
    ratings = [rate(f"v{v}", "esi_acuity", r, [1 + v % 5]) for v in range(5) for r in "ab"]
    ratings += [rate(f"w{v}", "admit", r, [True]) for v in range(5) for r in "ab"]
    report = agreement_report(ratings, bootstrap=200)
    esi, pooled = report.metrics["esi_acuity"]["band"], report.metrics["pooled"]["band"]
    assert pooled.alpha == esi.alpha
    assert pooled.n_bands == esi.n_bands == 5
    assert pooled.reading == esi.reading == "too few bands (5)"
