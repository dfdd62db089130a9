"""Sample-size planning from simulation (docs/statistics.md, Planning): studies of m vignettes
are simulated by drawing m of this study's vignettes with replacement, each with all its bands
and ratings, and the spread of their alphas says how wide an interval a study of that size would
have. It assumes these raters, and vignettes like these.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from fma_bands.agreement.bootstrap import DEFAULT_SEED
from fma_bands.agreement.engine import Stratum, alphas, point_alpha
from fma_bands.agreement.metrics import MIN_VIGNETTES, POOLED

GRID = (10, 20, 30, 50, 75, 100, 150, 200, 300, 500, 1000)
DEFAULT_WIDTH = 0.1
# Simulated studies at each size: enough for the 2.5th and 97.5th percentiles (about a dozen
# studies beyond each), few enough to keep the whole report quick.
SIMULATIONS = 500
ASSUMPTION = (
    "Planning assumes these raters, and vignettes like these: each simulated study draws m of "
    "this study's vignettes with replacement, each with all its bands and ratings. The width is "
    "that of the middle 95% of the simulated alphas, which runs narrower than the interval the "
    "report prints (by a tenth to a quarter at 30 vignettes): read the vignettes needed as the "
    "fewest that might do, not as enough."
)


@dataclass(frozen=True)
class Plan:
    """How the spread of one alpha shrinks with the number of vignettes, and the fewest vignettes
    on the grid whose width is at most `width` (None if none is)."""

    mode: str
    scope: str  # a sub-action, or POOLED
    alpha: float | None  # this study's alpha
    width: float  # the width asked for
    widths: tuple[tuple[int, float | None], ...]  # (vignettes, width); None: never defined
    vignettes_needed: int | None
    simulations: int
    seed: int
    reason: str | None = None  # why there are no widths, when there are none


def draw_weights(n_vignettes: int, m: int, simulations: int, seed: int) -> np.ndarray:
    """simulations x n_vignettes: how often each vignette is drawn when m are drawn with
    replacement (bootstrap.resample_weights with m draws instead of n); each m its own stream."""
    rng = np.random.default_rng((seed, m))
    draws = rng.integers(0, n_vignettes, size=(simulations, m))
    draws += n_vignettes * np.arange(simulations)[:, None]
    counts = np.bincount(draws.ravel(), minlength=simulations * n_vignettes)
    return counts.reshape(simulations, n_vignettes).astype(float)


def spread(simulated: np.ndarray) -> float | None:
    """The width of the middle 95% of the defined simulated alphas; None if none is defined."""
    defined = simulated[~np.isnan(simulated)]
    if defined.size == 0:
        return None
    low, high = np.percentile(defined, [2.5, 97.5])
    return float(high - low)


def vignettes_needed(
    strata: Mapping[str, Stratum],
    width: float = DEFAULT_WIDTH,
    *,
    mode: str,
    grid: tuple[int, ...] = GRID,
    simulations: int = SIMULATIONS,
    seed: int = DEFAULT_SEED,
) -> list[Plan]:
    """The pooled alpha of `strata` (sub-action -> stratum, stratified as the report pools them)
    and each sub-action's, simulated at every size on the grid: pooled first, then by name.

    Every scope uses the same simulated studies at each size, so a sub-action's alpha is the one
    of the same draws as the pool's."""
    vignettes = sorted({v for s in strata.values() for v in s.vignettes})
    scopes = {**{name: [s] for name, s in strata.items()}, POOLED: list(strata.values())}
    observed = {scope: point_alpha(chosen) for scope, chosen in scopes.items()}
    # Too few vignettes show too little of how vignettes vary to simulate from; an undefined
    # alpha (no variation) has no spread to simulate.
    reasons = {scope: _reason(len(vignettes), observed[scope]) for scope in scopes}
    found: dict[str, list[tuple[int, float | None]]] = {
        scope: [(m, None) for m in grid] for scope in scopes
    }
    simulated = [scope for scope in scopes if reasons[scope] is None]
    for i, m in enumerate(grid if simulated else ()):
        weights = draw_weights(len(vignettes), m, simulations, seed)
        # Sub-actions first: the pool reuses their disagreements on the same weights.
        for scope in simulated:
            found[scope][i] = (m, spread(alphas(scopes[scope], weights, vignettes)))
    return [
        Plan(
            mode=mode,
            scope=scope,
            alpha=observed[scope],
            width=width,
            widths=tuple(found[scope]),
            vignettes_needed=next(
                (m for m, w in found[scope] if w is not None and w <= width), None
            ),
            simulations=simulations,
            seed=seed,
            reason=reasons[scope],
        )
        for scope in [POOLED, *strata]
    ]


def _reason(n_vignettes: int, alpha: float | None) -> str | None:
    if n_vignettes < MIN_VIGNETTES:
        return f"too few vignettes to simulate from ({n_vignettes})"
    if alpha is None:
        return "alpha undefined"
    if alpha >= 1.0:
        # Every resample of a study without disagreement has none either: a width of 0 at any
        # size would promise a precision no sample without disagreement gives (the interval is
        # refused for the same reason).
        return "no disagreement seen (alpha is 1): resampling it bounds nothing"
    return None


def plan_json(p: Plan) -> dict[str, Any]:
    return {
        "mode": p.mode,
        "scope": p.scope,
        "alpha": p.alpha,
        "width": p.width,
        "vignettes_needed": p.vignettes_needed,
        "widths": [{"vignettes": m, "width": w} for m, w in p.widths],
        "simulations": p.simulations,
        "seed": p.seed,
        "reason": p.reason,
    }
