"""The vignette-cluster bootstrap: a resample is the study with its vignettes drawn again (raters
held fixed), seeded and reproducible, with undefined resamples counted and small studies warned."""

import random
from dataclasses import replace

import numpy as np
import pytest

from fma_bands.agreement import agreement_report, metric_alpha, metric_strata
from fma_bands.agreement.bootstrap import FEW_VIGNETTES, bootstrap, resample_weights
from fma_bands.agreement.engine import alphas
from tests.agreement.build import rate

SUBS = ("esi_acuity", "followup_days", "orders", "admit")


def small_study(n_vignettes=25, seed=13):
    """Four raters near a truth, now and then declining; verdicts vary."""
    rng = random.Random(seed)
    out = []
    for v in range(n_vignettes):
        vid = f"v{v:03d}"
        centre, days, admit = rng.randint(1, 4), rng.choice((3, 7, 14)), rng.random() < 0.5
        for r in ("a", "b", "c", "d"):
            if rng.random() < 0.1:
                out.append(rate(vid, "esi_acuity", r))
                continue
            verdict = rng.choice(("ACCEPT", "AMEND"))
            lo = max(1, centre - rng.choice((0, 0, 1)))
            out.append(rate(vid, "esi_acuity", r, {"min": lo, "max": centre + 1}, verdict))
            spread = {"min": max(0, days - rng.randint(0, 2)), "max": days + rng.randint(0, 7)}
            out.append(rate(vid, "followup_days", r, spread, verdict))
            orders = {"required": ["ecg"][: rng.randint(0, 1)], "defensible": ["ecg", "cbc"]}
            out.append(rate(vid, "orders", r, orders, verdict))
            out.append(rate(vid, "admit", r, [admit != (rng.random() < 0.15)], verdict))
    return out


def copies(ratings, vignettes, counts):
    """The resample built from scratch: each drawn vignette copied under a fresh id."""
    out = []
    for vignette, count in zip(vignettes, counts, strict=True):
        for k in range(int(count)):
            out += [
                replace(r, vignette_id=f"{r.vignette_id}#{k}")
                for r in ratings
                if r.vignette_id == vignette
            ]
    return out


@pytest.mark.parametrize(
    ("metric", "subs"),
    [
        ("band", SUBS),  # pooled, stratified
        ("band", ("orders",)),
        ("membership", ("esi_acuity", "admit")),
        ("lower", ("esi_acuity",)),  # ordinal: distances follow each resample's counts
        ("upper", ("followup_days",)),
        ("verdict", SUBS),
    ],
)
def test_a_resample_is_the_study_with_its_vignettes_drawn_again(metric, subs):
    ratings = [r for r in small_study() if r.sub_action in subs]
    strata = metric_strata(metric, ratings)
    vignettes = sorted({v for s in strata for v in s.vignettes})
    weights = resample_weights(len(vignettes), 5, seed=123)
    fast = alphas(strata, weights, vignettes)
    for row, want in zip(weights, fast, strict=True):
        slow = metric_alpha(metric, copies(ratings, vignettes, row), bootstrap=0).alpha
        assert slow == pytest.approx(want, abs=1e-12)


def test_same_seed_same_interval_and_another_seed_another():
    ratings = small_study(40)
    a = metric_alpha("band", ratings, bootstrap=300, seed=1)
    assert a == metric_alpha("band", ratings, bootstrap=300, seed=1)
    c = metric_alpha("band", ratings, bootstrap=300, seed=2)
    assert c.alpha == a.alpha and (c.ci_low, c.ci_high) != (a.ci_low, a.ci_high)


def test_the_report_uses_the_same_draws_as_a_fresh_bootstrap():
    ratings = small_study(30)
    report = agreement_report(ratings, bootstrap=400, seed=9)
    for metric, scope in (("band", "pooled"), ("lower", "esi_acuity"), ("verdict", "admit")):
        chosen = ratings if scope == "pooled" else [r for r in ratings if r.sub_action == scope]
        fresh = bootstrap(metric_strata(metric, chosen), B=400, seed=9)
        got = report.metrics[scope][metric]
        assert (got.ci_low, got.ci_high, got.p_below_0800) == (
            fresh.ci_low,
            fresh.ci_high,
            fresh.p_below_0800,
        )


@pytest.mark.parametrize("metric", ["band", "membership", "lower", "upper", "verdict"])
def test_the_interval_contains_alpha_and_says_how_it_was_made(metric):
    chosen = {"upper": "followup_days"}.get(metric, "esi_acuity")
    ratings = [r for r in small_study(60) if r.sub_action == chosen]
    a = metric_alpha(metric, ratings, bootstrap=500, seed=99)
    assert a.ci_low <= a.alpha <= a.ci_high
    assert 0.0 <= a.p_below_0667 <= a.p_below_0800 <= 1.0
    assert a.undefined_resamples == 0.0
    assert a.method == (
        "vignette-cluster bootstrap: 60 vignettes resampled with replacement, raters held "
        "fixed; B=500, seed=99; 95% percentile interval"
    )
    assert [w for w in a.warnings if "maximal disagreement" not in w] == []


def test_resamples_without_variation_are_counted_and_said():
    # Two vignettes agree perfectly on different values; a resample of one of them has no
    # variation at all, so its alpha is undefined.
    ratings = [rate("a", "esi_acuity", r, [1]) for r in "xy"]
    ratings += [rate("b", "esi_acuity", r, [4]) for r in "xy"]
    a = metric_alpha("band", ratings, bootstrap=200, seed=4)
    assert a.alpha == 1.0
    weights = resample_weights(2, 200, 4)
    assert a.undefined_resamples == np.mean((weights == 0).any(axis=1))
    assert 0 < a.undefined_resamples < 1
    assert any(f"{a.undefined_resamples:.1%} of resamples" in w for w in a.warnings)


def test_fewer_than_30_vignettes_are_warned_of():
    few = metric_alpha("band", small_study(FEW_VIGNETTES - 1), bootstrap=100)
    assert few.n_vignettes == FEW_VIGNETTES - 1
    assert any("below 30" in w and "95%" in w for w in few.warnings)
    enough = metric_alpha("band", small_study(FEW_VIGNETTES), bootstrap=100)
    assert not any("below 30" in w for w in enough.warnings)


def test_one_vignette_or_no_resamples_give_no_interval():
    one = metric_alpha(
        "band", [rate("a", "esi_acuity", "x", [1]), rate("a", "esi_acuity", "y", [2])]
    )
    assert one.alpha is not None and one.ci_low is None
    assert one.method == "no interval: the bootstrap needs two vignettes (1)"
    none = metric_alpha("band", small_study(), bootstrap=0)
    assert (none.ci_low, none.method, none.reading) == (
        None,
        "no interval (B=0)",
        "no reading: no interval",
    )
