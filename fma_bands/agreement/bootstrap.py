"""The vignette-cluster bootstrap (docs/design.md, Agreement): vignettes are resampled with
replacement, each with all its units and ratings, and the raters are held fixed; a 95%
percentile interval, with the share of resamples in which alpha was undefined.
"""

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fma_bands.agreement.engine import Stratum, alphas

DEFAULT_B = 1000
DEFAULT_SEED = 20261129
# Below this many vignettes the percentile interval covers the true alpha well under 95% of the
# time; benchmarks/bench_coverage.py measures it and docs/statistics.md reports the study.
FEW_VIGNETTES = 30
MEASURED_COVERAGE_AT_10 = "78% to 93%"


@dataclass(frozen=True)
class Interval:
    """What the bootstrap says about one alpha; the bounds are None when it could not run."""

    ci_low: float | None
    ci_high: float | None
    p_below_0800: float | None
    p_below_0667: float | None
    undefined_resamples: float | None  # the share of resamples in which alpha was undefined
    n_vignettes: int
    method: str
    warnings: tuple[str, ...] = ()


def resample_weights(n_vignettes: int, B: int, seed: int) -> np.ndarray:
    """B x n_vignettes: how often each vignette is drawn when n_vignettes are drawn with
    replacement, from numpy's default generator seeded with `seed`."""
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n_vignettes, size=(B, n_vignettes))
    weights = np.zeros((B, n_vignettes))
    np.add.at(weights, (np.arange(B)[:, None], draws), 1.0)
    return weights


def method(n_vignettes: int, B: int, seed: int) -> str:
    return (
        f"vignette-cluster bootstrap: {n_vignettes} vignettes resampled with replacement, "
        f"raters held fixed; B={B}, seed={seed}; 95% percentile interval"
    )


def bootstrap(
    strata: Sequence[Stratum], *, B: int, seed: int, weights: np.ndarray | None = None
) -> Interval:
    """The interval of the alpha of `strata` (one sub-action, or several: stratified pooled).

    `weights` may pass resample_weights(n, B, seed) already drawn, n the number of vignettes
    the strata cover between them.
    """
    vignettes = sorted({v for s in strata for v in s.vignettes})
    n = len(vignettes)
    if B <= 0:
        return Interval(None, None, None, None, None, n, "no interval (B=0)")
    if n < 2:
        return Interval(
            None, None, None, None, None, n, f"no interval: the bootstrap needs two vignettes ({n})"
        )
    if weights is None:
        weights = resample_weights(n, B, seed)
    resampled = alphas(strata, weights, vignettes)
    defined = resampled[~np.isnan(resampled)]
    undefined = (B - defined.size) / B
    warnings = []
    if n < FEW_VIGNETTES:
        warnings.append(
            f"only {n} vignettes: below {FEW_VIGNETTES} this interval covers the true alpha "
            f"less often than 95% ({MEASURED_COVERAGE_AT_10} of the time at 10 vignettes in "
            "the simulation of docs/statistics.md)"
        )
    if undefined > 0:
        warnings.append(
            f"alpha was undefined (no variation) in {undefined:.1%} of resamples; the interval "
            "is over the others"
        )
    if defined.size == 0:
        return Interval(None, None, None, None, undefined, n, method(n, B, seed), tuple(warnings))
    low, high = np.percentile(defined, [2.5, 97.5])
    return Interval(
        ci_low=float(low),
        ci_high=float(high),
        p_below_0800=float(np.mean(defined < 0.800)),
        p_below_0667=float(np.mean(defined < 0.667)),
        undefined_resamples=undefined,
        n_vignettes=n,
        method=method(n, B, seed),
        warnings=tuple(warnings),
    )
