"""Pooled alphas are stratified by sub-action: 1 - sum_s n_s D_o(s) / sum_s n_s D_e(s), checked
against a direct computation from per-sub-action coincidence matrices; lower and upper are never
pooled."""

import random
from collections import defaultdict

import pytest
from hypothesis import HealthCheck, given, settings

from fma_bands.agreement import POOLED, agreement_report, metric_alpha
from fma_bands.agreement.metrics import NEVER_POOLED
from tests.agreement.build import rate, studies
from tests.agreement.test_against_nltk import design_distance, label

MIXED = ["esi_acuity", "admit", "orders", "followup_days", "analgesia_tier"]
SLOW = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def units(metric, ratings):
    """{sub-action: [unit as {rater: value}]}, written out from docs/design.md, Agreement,
    independently."""
    bands = defaultdict(list)
    for r in ratings:
        bands[(r.vignette_id, r.sub_action)].append(r)
    out = defaultdict(list)
    for (_, sub), group in bands.items():
        rated = [r for r in group if r.verdict != "DECLINE"]
        if metric == "verdict":
            out[sub].append({r.rater: r.verdict for r in group if r.mode == "review"})
        elif metric == "band":
            out[sub].append({r.rater: label(r) for r in rated})
        elif metric == "membership" and sub in ("esi_acuity", "analgesia_tier", "admit"):
            domain = {"esi_acuity": range(1, 6), "analgesia_tier": range(4), "admit": (False, True)}
            for value in domain[sub]:
                out[sub].append({r.rater: value in r.band.values() for r in rated})
    return out


def totals(unit_list, distance):
    """n_s D_o(s) and n_s D_e(s) from the stratum's coincidence matrix, as Krippendorff (2011)."""
    o = defaultdict(float)
    for unit in unit_list:
        values = list(unit.values())
        if len(values) < 2:
            continue
        for i, c in enumerate(values):
            for j, k in enumerate(values):
                if i != j:
                    o[(c, k)] += 1 / (len(values) - 1)
    n_c = defaultdict(float)
    for (c, _), weight in o.items():
        n_c[c] += weight
    n = sum(n_c.values())
    observed = sum(w * distance(c, k) for (c, k), w in o.items())
    expected = sum(n_c[c] * n_c[k] * distance(c, k) for c in n_c for k in n_c) / max(n - 1, 1)
    return observed, expected


def direct_pooled(metric, ratings):
    distance = design_distance if metric == "band" else (lambda a, b: float(a != b))
    parts = [totals(u, distance) for u in units(metric, ratings).values()]
    observed, expected = sum(p[0] for p in parts), sum(p[1] for p in parts)
    return None if expected == 0 else 1 - observed / expected


def per_sub_alphas(metric, ratings):
    subs = sorted({r.sub_action for r in ratings})
    each = [
        metric_alpha(metric, [r for r in ratings if r.sub_action == s], bootstrap=0) for s in subs
    ]
    return [a.alpha for a in each if a.alpha is not None]


@SLOW
@given(studies(MIXED, max_vignettes=6, modes=("review", "blind")))
def test_pooled_alphas_equal_a_direct_stratified_computation(ratings):
    # Blind-mode and review-mode ratings are reported apart, each mode's pool its own.
    report = agreement_report(ratings, bootstrap=0)
    modes = sorted({r.mode for r in ratings})
    for mode in modes:
        in_mode = [r for r in ratings if r.mode == mode]
        key = POOLED if len(modes) == 1 else f"{mode}:{POOLED}"
        for metric in ("band", "membership", "verdict"):
            pooled = report.metrics[key].get(metric)
            want = direct_pooled(metric, in_mode)
            if pooled is None or pooled.alpha is None:
                assert want is None or pooled is None, (metric, want)
                continue
            assert pooled.mode == mode
            assert pooled.alpha == pytest.approx(want, abs=1e-12), metric
            assert pooled.level in ("jaccard", "orders", "nominal", "per sub-action")


@SLOW
@given(studies(MIXED, max_vignettes=6))
def test_a_pooled_alpha_lies_between_its_sub_actions_alphas(ratings):
    # Stratified pooling is a weighted mean of the sub-actions' alphas (weights n_s D_e(s)).
    for metric in ("band", "membership", "verdict"):
        pooled = metric_alpha(metric, ratings, bootstrap=0).alpha
        alphas = per_sub_alphas(metric, ratings)
        if pooled is not None and alphas:
            assert min(alphas) - 1e-12 <= pooled <= max(alphas) + 1e-12, (metric, alphas)


def noisy_booleans(sub, rng, n=80):
    """Three raters who agree with a truth about three times in four: alpha near 0.5."""
    out = []
    for v in range(n):
        truth = rng.random() < 0.5
        for r in range(3):
            value = truth if rng.random() < 0.87 else not truth
            out.append(rate(f"v{v:03d}", sub, f"r{r}", [value], "ACCEPT" if value else "AMEND"))
    return out


def test_four_middling_sub_actions_pool_to_a_middling_alpha():
    # Four sub-actions near 0.5: one matrix for all of them would read 0.662, above every one.
    rng = random.Random(3)
    subs = ["admit", "escalate_icu", "referral", "controlled_substance_caution"]
    ratings = [r for sub in subs for r in noisy_booleans(sub, rng)]
    report = agreement_report(ratings, bootstrap=200, seed=1)
    each = [report.metrics[sub]["band"].alpha for sub in subs]
    assert all(0.3 < a < 0.75 for a in each), each
    pooled = report.metrics[POOLED]["band"]
    assert min(each) <= pooled.alpha <= max(each)
    assert pooled.n_bands == sum(report.metrics[s]["band"].n_bands for s in subs)
    assert pooled.n_raters == 3


def test_lower_and_upper_are_never_pooled():
    ratings = [
        rate("v1", "esi_acuity", "a", [2]),
        rate("v1", "esi_acuity", "b", [3]),
        rate("v1", "followup_days", "a", {"min": 1, "max": 7}),
        rate("v1", "followup_days", "b", {"min": 2, "max": 9}),
    ]
    report = agreement_report(ratings, bootstrap=0)
    assert "lower" not in report.metrics[POOLED] and "upper" not in report.metrics[POOLED]
    for metric in ("lower", "upper"):
        a = metric_alpha(metric, ratings)
        assert (a.alpha, a.reason, a.scope) == (None, NEVER_POOLED, POOLED)
