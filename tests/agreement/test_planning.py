"""Sample-size planning (fma_bands/agreement/planning.py): simulated studies of m vignettes drawn
from the study's own, the width of their alphas at each size of the grid, and the fewest
vignettes that reach a chosen width."""

import random

import numpy as np
import pytest

from fma_bands.agreement import metric_alpha
from fma_bands.agreement.diagnostics import mode_bands
from fma_bands.agreement.engine import alphas
from fma_bands.agreement.metrics import POOLED
from fma_bands.agreement.planning import GRID, draw_weights, spread, vignettes_needed
from tests.agreement.build import rate


def noisy_study(n_vignettes=40, n_raters=4, seed=11):
    """ESI and admission bands near a true value, each rater off by one now and then."""
    rng = random.Random(seed)
    ratings = []
    for v in range(n_vignettes):
        esi, admit = rng.randint(1, 4), rng.random() < 0.5
        for r in range(n_raters):
            lo = min(5, max(1, esi + (rng.random() < 0.3) * rng.choice((-1, 1))))
            ratings.append(rate(f"v{v:03d}", "esi_acuity", f"r{r}", {"min": lo, "max": lo}))
            flip = rng.random() < 0.15
            ratings.append(rate(f"v{v:03d}", "admit", f"r{r}", [admit != flip]))
    return ratings


def test_draw_weights_draw_m_vignettes_per_simulated_study():
    weights = draw_weights(7, 30, 200, seed=5)
    assert weights.shape == (200, 7)
    assert (weights.sum(axis=1) == 30).all()
    assert np.array_equal(weights, draw_weights(7, 30, 200, seed=5))
    assert not np.array_equal(weights[:, :7], draw_weights(7, 31, 200, seed=5)[:, :7])
    # Every vignette is as likely as any other: about 30 / 7 draws each on average.
    assert weights.mean(axis=0) == pytest.approx(np.full(7, 30 / 7), rel=0.1)


def test_each_width_is_the_spread_of_the_simulated_alphas():
    ratings = noisy_study()
    strata = mode_bands(ratings)["review"].strata
    plans = vignettes_needed(strata, 0.2, mode="review", simulations=300, seed=9)
    assert [p.scope for p in plans] == [POOLED, "admit", "esi_acuity"]
    vignettes = sorted({r.vignette_id for r in ratings})
    for p in plans:
        chosen = list(strata.values()) if p.scope == POOLED else [strata[p.scope]]
        assert p.alpha == pytest.approx(
            metric_alpha("band", [r for r in ratings if p.scope in (POOLED, r.sub_action)]).alpha
        )
        assert [m for m, _ in p.widths] == list(GRID)
        for m, width in p.widths:
            simulated = alphas(chosen, draw_weights(len(vignettes), m, 300, 9), vignettes)
            assert width == spread(simulated)
        # The fewest vignettes on the grid whose width is at most the one asked for.
        assert p.vignettes_needed == next(m for m, w in p.widths if w is not None and w <= 0.2)
        assert (p.simulations, p.seed, p.width) == (300, 9, 0.2)


def test_widths_shrink_as_one_over_the_root_of_the_vignettes():
    strata = mode_bands(noisy_study())["review"].strata
    (pooled, *_) = vignettes_needed(strata, mode="review", simulations=400, seed=2)
    width = dict(pooled.widths)
    assert width[10] > width[50] > width[200] > width[1000]
    assert width[100] / width[1000] == pytest.approx(np.sqrt(10), rel=0.25)


def test_none_when_no_size_on_the_grid_is_narrow_enough_and_when_alpha_is_undefined():
    ratings = noisy_study(n_vignettes=12)
    strata = mode_bands(ratings)["review"].strata
    for p in vignettes_needed(strata, 1e-6, mode="review", simulations=100):
        assert p.vignettes_needed is None and p.alpha is not None
    # Every rater gives the same band: alpha is undefined, and so is every width.
    same = [rate(f"v{v}", "admit", r, [True]) for v in range(12) for r in ("a", "b")]
    for p in vignettes_needed(mode_bands(same)["review"].strata, mode="review"):
        assert (p.alpha, p.vignettes_needed, p.reason) == (None, None, "alpha undefined")
        assert all(w is None for _, w in p.widths)


def test_no_vignettes_needed_are_promised_without_disagreement():
    """Two raters agree on every band (alpha 1): every resample agrees too, so every width is
    0, which would promise the smallest study on the grid. None is promised, and it says why."""
    ratings = [rate(f"v{v:02d}", "admit", r, [v % 3 == 0]) for v in range(12) for r in "ab"]
    [plan] = [p for p in vignettes_needed(mode_bands(ratings)["review"].strata, mode="review")
              if p.scope == "admit"]  # fmt: skip
    assert (plan.alpha, plan.vignettes_needed) == (1.0, None)
    assert plan.reason == "no disagreement seen (alpha is 1): resampling it bounds nothing"
    assert all(w is None for _, w in plan.widths)


def test_no_simulation_from_fewer_than_ten_vignettes():
    """Nine vignettes drawn again and again show little of how vignettes vary: one vignette
    drawn a thousand times would read as a width of 0."""
    strata = mode_bands(noisy_study(n_vignettes=9))["review"].strata
    for p in vignettes_needed(strata, mode="review"):
        assert p.alpha is not None and p.vignettes_needed is None
        assert p.reason == "too few vignettes to simulate from (9)"
        assert all(w is None for _, w in p.widths)
    plans = vignettes_needed(
        mode_bands(noisy_study(n_vignettes=10))["review"].strata, mode="review"
    )
    assert all(p.reason is None and p.widths[0][1] is not None for p in plans)


def test_spread_is_over_the_defined_alphas():
    assert spread(np.array([np.nan, np.nan])) is None
    values = np.array([np.nan, *np.linspace(0, 1, 401)])
    assert spread(values) == pytest.approx(0.95)
