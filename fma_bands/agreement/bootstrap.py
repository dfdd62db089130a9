"""The intervals of an alpha (docs/statistics.md, The interval): vignettes are the resampling
unit, each with all its units and ratings, and the raters are held fixed. From B bootstrap
resamples and the n leave-one-vignette-out samples come the 95% interval the report prints
(CHOSEN, picked by the coverage simulation of benchmarks/bench_coverage.py), the shares of
resamples below 0.800 and 0.667, and the share in which alpha was undefined.
"""

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from statistics import NormalDist

import numpy as np

from fma_bands.agreement.engine import Stratum, alphas

DEFAULT_B = 1000
DEFAULT_SEED = 20261129
Z = NormalDist().inv_cdf(0.975)
# The interval the report prints, chosen by benchmarks/bench_coverage.py (docs/statistics.md).
CHOSEN = "jackknife-log"
METHODS = {
    "percentile": "percentile bootstrap interval",
    "basic": "basic bootstrap interval",
    "bca": "BCa bootstrap interval",
    "jackknife": "jackknife-normal interval (alpha +- 1.96 jackknife standard errors over "
    "vignettes)",
    "jackknife-t": "jackknife-t interval (alpha +- t(n-1) jackknife standard errors over "
    "vignettes)",
    "jackknife-log": "jackknife interval on the log scale of D_o/D_e (1 - (1 - alpha) "
    "exp(+-t(n-1) jackknife standard errors of log(1 - alpha)) over vignettes)",
}
COVERAGE_FILE = "coverage.json"
# Below this measured coverage at the study's size, a caution says to read the bounds loosely.
GOOD_COVERAGE = 0.93


@dataclass(frozen=True)
class Samples:
    """One alpha and the alphas of its resamples; NaN where alpha was undefined."""

    point: float
    resampled: np.ndarray  # B bootstrap resamples of the vignettes
    left_out: np.ndarray  # n samples, each without one vignette (the jackknife)


Bounds = tuple[float, float] | None


def percentile(s: Samples) -> Bounds:
    """The 2.5th and 97.5th percentiles of the defined resampled alphas."""
    defined = s.resampled[~np.isnan(s.resampled)]
    if defined.size == 0:
        return None
    low, high = np.percentile(defined, [2.5, 97.5])
    return float(low), float(high)


def basic(s: Samples) -> Bounds:
    """The percentile interval reflected about the point: 2 alpha - q97.5 to 2 alpha - q2.5."""
    found = percentile(s)
    if found is None:
        return None
    return 2 * s.point - found[1], min(1.0, 2 * s.point - found[0])


def jackknife_se(s: Samples) -> float | None:
    """The jackknife standard error over vignettes; None when leaving one out makes alpha
    undefined (one vignette carries all the variation) or there are fewer than two."""
    n = s.left_out.size
    if n < 2 or np.isnan(s.left_out).any():
        return None
    spread = s.left_out - s.left_out.mean()
    return float(np.sqrt((n - 1) / n * (spread**2).sum()))


def jackknife(s: Samples) -> Bounds:
    """alpha +- 1.96 jackknife standard errors (the upper bound at most 1, alpha's maximum)."""
    se = jackknife_se(s)
    if se is None:
        return None
    return s.point - Z * se, min(1.0, s.point + Z * se)


@lru_cache(maxsize=256)
def t_quantile(df: int, p: float = 0.975) -> float:
    """Student's t quantile with df degrees of freedom: the t at which the density, integrated
    from 0 (trapezoids on a fine grid), reaches p - 1/2; found by bisection."""
    scale = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi)

    def cdf(t: float) -> float:
        x = np.linspace(0.0, t, 20_001)
        return 0.5 + float(np.trapezoid(scale * (1 + x * x / df) ** (-(df + 1) / 2), x))

    low, high = 0.0, 1000.0
    for _ in range(60):
        middle = (low + high) / 2
        low, high = (middle, high) if cdf(middle) < p else (low, middle)
    return (low + high) / 2


def jackknife_t(s: Samples) -> Bounds:
    """alpha +- t(n - 1) jackknife standard errors (the upper bound at most 1)."""
    se = jackknife_se(s)
    if se is None:
        return None
    t = t_quantile(s.left_out.size - 1)
    return s.point - t * se, min(1.0, s.point + t * se)


def jackknife_log(s: Samples) -> Bounds:
    """The jackknife-t interval of log(1 - alpha), the log of D_o / D_e, carried back to alpha:
    1 - (1 - alpha) exp(+-t se). A ratio is closer to normal on the log scale, and the bounds
    stay below 1. None where the log is undefined: alpha, or alpha without some vignette, is 1
    (no_interval_reason says why), or leaving one out makes alpha undefined."""
    if np.isnan(s.left_out).any() or s.point >= 1.0 or (s.left_out >= 1.0).any():
        return None
    se = jackknife_se(Samples(math.log1p(-s.point), s.resampled, np.log1p(-s.left_out)))
    if se is None:
        return None
    t = t_quantile(s.left_out.size - 1)
    return 1 - (1 - s.point) * math.exp(t * se), 1 - (1 - s.point) * math.exp(-t * se)


def bca(s: Samples) -> Bounds:
    """Efron's bias-corrected and accelerated percentile interval: the bias from the share of
    resamples below the point, the acceleration from the jackknife's skewness."""
    defined = s.resampled[~np.isnan(s.resampled)]
    if defined.size == 0 or s.left_out.size < 2 or np.isnan(s.left_out).any():
        return None
    below = (np.mean(defined < s.point) + np.mean(defined <= s.point)) / 2
    if below <= 0.0 or below >= 1.0:
        return None
    z0 = NormalDist().inv_cdf(float(below))
    spread = s.left_out.mean() - s.left_out
    scale = float((spread**2).sum()) ** 1.5
    a = float((spread**3).sum()) / (6 * scale) if scale > 0 else 0.0
    levels = []
    for z in (-Z, Z):
        shifted = z0 + (z0 + z) / (1 - a * (z0 + z))
        levels.append(100 * NormalDist().cdf(shifted))
    low, high = np.percentile(defined, levels)
    return float(low), float(high)


INTERVALS: dict[str, Callable[[Samples], Bounds]] = {
    "percentile": percentile,
    "basic": basic,
    "bca": bca,
    "jackknife": jackknife,
    "jackknife-t": jackknife_t,
    "jackknife-log": jackknife_log,
}


def leave_one_out_weights(n_vignettes: int) -> np.ndarray:
    """n x n: row i draws every vignette once but vignette i (the jackknife's samples)."""
    return 1.0 - np.eye(n_vignettes)


def resample_weights(n_vignettes: int, B: int, seed: int) -> np.ndarray:
    """B x n_vignettes: how often each vignette is drawn when n_vignettes are drawn with
    replacement, from numpy's default generator seeded with `seed`."""
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n_vignettes, size=(B, n_vignettes))
    # A resample at a time: B x n_vignettes is 8 MB at 1,000 vignettes, and tallying all the
    # draws at once held five or six such arrays.
    weights = np.empty((B, n_vignettes))
    for b, drawn in enumerate(draws):
        weights[b] = np.bincount(drawn, minlength=n_vignettes)
    return weights


def two_way(
    point: float, se_vignettes: float | None, without_each: Sequence[float | None]
) -> Bounds:
    """The interval about the population of raters as well as of vignettes: alpha +- 1.96
    sqrt(se_v^2 + se_r^2), se_v the jackknife standard error over vignettes and se_r over raters
    (each rater left out in turn). None with fewer than three raters, or when leaving one out
    makes alpha undefined."""
    r = len(without_each)
    if se_vignettes is None or r < 3 or any(a is None for a in without_each):
        return None
    left = np.array(without_each, dtype=float)
    se_raters = float(np.sqrt((r - 1) / r * ((left - left.mean()) ** 2).sum()))
    se = float(np.hypot(se_vignettes, se_raters))
    return point - Z * se, min(1.0, point + Z * se)


@dataclass(frozen=True)
class Interval:
    """What the resamples say about one alpha; the bounds are None when they could not run."""

    ci_low: float | None
    ci_high: float | None
    p_below_0800: float | None
    p_below_0667: float | None
    undefined_resamples: float | None  # the share of resamples in which alpha was undefined
    n_vignettes: int
    method: str
    warnings: tuple[str, ...] = ()
    se: float | None = None  # the jackknife standard error over vignettes


def method(n_vignettes: int, B: int, seed: int) -> str:
    return (
        f"{n_vignettes} vignettes, raters held fixed (an interval about these raters); "
        f"95% {METHODS[CHOSEN]}; vignette-cluster bootstrap B={B}, seed={seed}, for the shares "
        "below 0.800 and 0.667"
    )


def bootstrap(
    strata: Sequence[Stratum],
    *,
    B: int,
    seed: int,
    point: float | None = None,
    weights: np.ndarray | None = None,
    left_out: np.ndarray | None = None,
) -> Interval:
    """The interval of the alpha of `strata` (one sub-action, or several: stratified pooled).

    `point` is the alpha itself when already computed; `weights` may pass resample_weights(n,
    B, seed) and `left_out` leave_one_out_weights(n) already drawn, n the number of vignettes
    the strata cover between them.
    """
    vignettes = sorted({v for s in strata for v in s.vignettes})
    n = len(vignettes)
    if B <= 0:
        return Interval(None, None, None, None, None, n, "no interval (B=0)")
    if n < 2:
        return Interval(
            None, None, None, None, None, n, f"no interval: resampling needs two vignettes ({n})"
        )
    if point is None:
        point = float(alphas(strata, np.ones((1, n)), vignettes)[0])
    if weights is None:
        weights = resample_weights(n, B, seed)
    if left_out is None:
        left_out = leave_one_out_weights(n)
    found = Samples(point, alphas(strata, weights, vignettes), alphas(strata, left_out, vignettes))
    defined = found.resampled[~np.isnan(found.resampled)]
    undefined = (B - defined.size) / B
    warnings = []
    if undefined > 0:
        warnings.append(
            f"alpha was undefined (no variation) in {undefined:.1%} of resamples; the shares "
            "below 0.800 and 0.667 are over the others"
        )
    bounds, spread = INTERVALS[CHOSEN](found), jackknife_se(found)
    missing = None
    if bounds is None:
        missing = no_interval_reason(found, n)
    elif spread == 0.0:
        # Raters disagree, yet every sample without one vignette has the same alpha: the
        # jackknife sees no spread, which is not certainty, so no interval rather than one of
        # width 0.
        bounds, missing = None, "alpha is the same whichever vignette is left out"
    else:
        floor = lowest_alpha(strata)
        if bounds[1] < floor:
            bounds, missing = (
                None,
                (
                    f"the interval lies wholly below {floor:g}, the lowest alpha "
                    "these values can give: too little disagreement data to bound it"
                ),
            )
        elif bounds[0] < floor:
            warnings.append(
                f"the interval's lower bound, {bounds[0]:.3f}, was below {floor:g}, the lowest "
                f"alpha these values can give, and is cut to it: the data do not bound alpha "
                "from below"
            )
            bounds = (floor, bounds[1])
    if missing:
        warnings.append(f"no interval: {missing}")
    return Interval(
        ci_low=None if bounds is None else bounds[0],
        ci_high=None if bounds is None else bounds[1],
        p_below_0800=float(np.mean(defined < 0.800)) if defined.size else None,
        p_below_0667=float(np.mean(defined < 0.667)) if defined.size else None,
        undefined_resamples=undefined,
        n_vignettes=n,
        method=method(n, B, seed) if missing is None else no_interval(n, B, seed, missing),
        warnings=tuple(warnings),
        se=spread,
    )


def no_interval_reason(s: Samples, n_vignettes: int) -> str:
    """Why the chosen interval could not be made from these samples."""
    if s.point >= 1.0:
        # Zero disagreement seen on a sample bounds nothing, as zero events in n trials do not
        # make a rate of 0: an interval of 1 to 1 would claim certainty. Said first: with no
        # disagreement, no vignette "carries" any.
        return (
            f"no disagreement was seen on these {n_vignettes} vignettes (alpha is 1), and none "
            "seen is no proof of none: the interval cannot be computed, so alpha is not read"
        )
    if np.isnan(s.left_out).any():
        return (
            "leaving out one vignette leaves no variation (one vignette holds every value that "
            "differs from the rest)"
        )
    if (s.left_out >= 1.0).any():
        return (
            "without one of the vignettes no disagreement is left (alpha is 1): the "
            "disagreement rests on too few vignettes for an interval"
        )
    return "the interval cannot be computed from these samples"


def lowest_alpha(strata: Sequence[Stratum]) -> float:
    """The lowest alpha the strata's pairable values can give, 2 - n for n of them (Krippendorff
    2011: each coincidence o_ck is at most n_c n_k). A pool is never below its lowest part, so
    2 - n holds for it too with n counting every part's values (a looser bound)."""
    return float(2 - sum(s.n_pairable for s in strata))


def no_interval(n_vignettes: int, B: int, seed: int, why: str) -> str:
    return (
        f"{n_vignettes} vignettes, raters held fixed; no interval: {why}; vignette-cluster "
        f"bootstrap B={B}, seed={seed}, for the shares below 0.800 and 0.667"
    )


# --- measured coverage ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Coverage:
    """The measured coverage of the chosen interval at one simulated size: the lowest, median
    and highest over the simulation's alphas."""

    raters: int
    vignettes: int
    low: float
    median: float
    high: float


@lru_cache(maxsize=1)
def measured() -> tuple[tuple[Coverage, ...], str]:
    """The coverage table of benchmarks/bench_coverage.py for the chosen interval, fixed panel,
    and the date of its run."""
    data = json.loads(resources.files(__package__).joinpath(COVERAGE_FILE).read_text())
    groups: dict[tuple[int, int], list[float]] = {}
    for row in data["rows"]:
        if row["panel"] == "fixed" and row["method"] == CHOSEN and row["studies"]:
            key = (row["raters"], row["vignettes"])
            groups.setdefault(key, []).append(row["covered"] / row["studies"])
    table = tuple(
        Coverage(r, v, min(shares), float(np.median(shares)), max(shares))
        for (r, v), shares in sorted(groups.items())
    )
    return table, data["run"]


def coverage_at(n_raters: int, n_vignettes: int) -> Coverage | None:
    """The measured size nearest below the study's (the smallest measured when it is smaller)."""
    table, _ = measured()
    if not table:
        return None
    raters = max((c.raters for c in table if c.raters <= n_raters), default=table[0].raters)
    sizes = [c for c in table if c.raters == raters]
    return max((c for c in sizes if c.vignettes <= n_vignettes), default=sizes[0], key=_size)


def _size(c: Coverage) -> int:
    return c.vignettes


def coverage_note(n_raters: int, n_vignettes: int) -> str | None:
    """How often this interval covered the true alpha in the simulation nearest the study's
    size (docs/statistics.md, Coverage)."""
    found = coverage_at(n_raters, n_vignettes)
    if found is None:
        return None
    _, run = measured()
    smaller = ""
    if n_vignettes < found.vignettes or n_raters < found.raters:
        smaller = f" (this study, {n_vignettes} vignettes and {n_raters} raters, is smaller)"
    return (
        f"in simulated studies of {found.vignettes} vignettes and {found.raters} raters"
        f"{smaller} (ESI, follow-up, orders and admission bands; verdicts were not simulated), "
        f"this 95% interval, where one could be made, covered the true alpha {found.low:.0%} to "
        f"{found.high:.0%} of the time (median {found.median:.0%}; simulated on {run})"
    )


def coverage_caution(n_raters: int, n_vignettes: int) -> str | None:
    """A caution when the simulation nearest the study's size covered under 93% of the time."""
    found = coverage_at(n_raters, n_vignettes)
    if found is None or found.low >= GOOD_COVERAGE:
        return None
    return (
        f"this alpha rests on {n_vignettes} vignettes and {n_raters} raters; at the nearest size "
        f"simulated ({found.vignettes} vignettes, {found.raters} raters) the interval covered "
        f"the true alpha only {found.low:.0%} to {found.high:.0%} of the time: read its bounds "
        "loosely"
    )
