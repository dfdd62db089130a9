"""Agreement among raters (docs/design.md, Agreement): the band, membership, lower, upper and
verdict alphas per sub-action and pooled (stratified by sub-action), with bootstrap intervals and
readings; each band's consensus by the one intersection rule (bands.consensus); the report as JSON.
Pure functions on plain data: nothing here touches the database or Streamlit.
"""

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

import numpy as np

from fma_bands.agreement.bootstrap import (
    DEFAULT_B,
    DEFAULT_SEED,
    bootstrap,
    resample_weights,
)
from fma_bands.agreement.engine import (
    STANDARD_LEVELS,
    Stratum,
    Unit,
    package_alpha,
    point_alpha,
    stratum,
)
from fma_bands.agreement.panel import BandAgreement, band_agreement, band_json, band_label
from fma_bands.core.actions import sub_action
from fma_bands.core.bands import AnyBand
from fma_bands.core.errors import FmaBandsError
from fma_bands.core.protocol import DECLINE, VERDICTS

METRICS = ("band", "membership", "lower", "upper", "verdict")
POOLED = "pooled"
POOLED_LABEL = "pooled (stratified by sub-action)"
POOLABLE = ("band", "membership", "verdict")
REVIEW_MODE = "review"
MIN_BANDS = 10  # below this, no reading at all

NO_VARIATION = "no variation"
TOO_FEW_RATERS = "no band has two raters"
NOT_APPLICABLE = {
    "band": TOO_FEW_RATERS,
    "membership": "not defined: membership is for ordinal and boolean sub-actions",
    "lower": "not defined: lower is for ordinal, score and count sub-actions",
    "upper": "not defined: upper is for ordinal, score and count sub-actions",
    "verdict": TOO_FEW_RATERS,
}
NEVER_POOLED = "not pooled: the sub-actions' scales differ"
REVIEW_MODE_ONLY = "not defined: verdicts are compared in review mode only"


@dataclass(frozen=True)
class Rating:
    """One rater's submitted review of one band, as the statistics take it. `band` is the typed
    band the review vouches for (None for DECLINE); `mode` is "review" or "blind"."""

    vignette_id: str
    sub_action: str
    rater: str
    verdict: str
    band: AnyBand | None
    mode: str = REVIEW_MODE

    @cached_property
    def values(self) -> frozenset:
        """What the rater admits; empty for DECLINE (missing data)."""
        return frozenset() if self.band is None or self.verdict == DECLINE else self.band.values()


@dataclass(frozen=True)
class Alpha:
    """One alpha and what it is computed over; undefined alpha is None with its reason."""

    metric: str
    scope: str  # a sub-action, or POOLED
    level: str | None
    alpha: float | None
    reason: str | None
    n_bands: int = 0
    n_units: int = 0
    n_raters: int = 0
    n_pairable: int = 0
    n_declined: int = 0
    n_vignettes: int = 0
    ci_low: float | None = None
    ci_high: float | None = None
    p_below_0800: float | None = None
    p_below_0667: float | None = None
    undefined_resamples: float | None = None
    method: str | None = None
    warnings: tuple[str, ...] = ()

    @property
    def reading(self) -> str:
        """Krippendorff's guide read from the interval, never from the point alone."""
        if self.alpha is None:
            return f"undefined: {self.reason}"
        if self.n_bands < MIN_BANDS:
            return f"too few bands ({self.n_bands})"
        if self.ci_low is None or self.ci_high is None:
            return "no reading: no interval"
        if self.ci_low >= 0.800:
            return "reliable"
        if self.ci_low >= 0.667:
            return "tentative"
        if self.ci_high < 0.667:
            return "unreliable"
        return "inconclusive: the interval spans a threshold"


@dataclass(frozen=True)
class Report:
    metrics: Mapping[str, Mapping[str, Alpha]]  # scope -> metric -> Alpha, where it applies
    bands: tuple[BandAgreement, ...]
    bootstrap: int = DEFAULT_B
    seed: int = DEFAULT_SEED


def level(metric: str, name: str) -> str | None:
    """The level of measurement of `metric` on sub-action `name`; None where it does not apply."""
    kind = sub_action(name).kind
    if metric == "band":
        return "orders" if kind == "multilabel" else "jaccard"
    if metric == "membership":
        return "nominal" if kind in ("ordinal", "boolean") else None
    if metric in ("lower", "upper"):
        return {"ordinal": "ordinal", "score": "interval", "count": "interval"}.get(kind)
    if metric == "verdict":
        return "nominal"
    raise FmaBandsError(f"unknown metric {metric!r}; expected one of {', '.join(METRICS)}")


# --- ratings into units --------------------------------------------------------------------------

Groups = dict[tuple[str, str], list[Rating]]


def group_ratings(ratings: Iterable[Rating]) -> Groups:
    """Ratings by band (vignette, sub-action), bands and raters in sorted order; refuses, naming
    the rating, an unknown verdict, a missing or foreign band, and a rater's second rating."""
    groups: Groups = {}
    for r in sorted(ratings, key=lambda r: (r.vignette_id, r.sub_action, r.rater)):
        group = groups.setdefault((r.vignette_id, r.sub_action), [])
        problem = _problem(r, group[-1] if group else None)
        if problem:
            where = f"rating {r.vignette_id} / {r.sub_action} / {r.rater}"
            raise FmaBandsError(f"{where}: {problem}")
        group.append(r)
    return groups


def _problem(r: Rating, previous: Rating | None) -> str | None:
    sub_action(r.sub_action)  # an unknown sub-action raises, naming the valid ones
    if r.verdict not in VERDICTS:
        return f"verdict {r.verdict!r} is not one of {', '.join(VERDICTS)}"
    if r.verdict != DECLINE and r.band is None:
        return f"an {r.verdict} rating needs its band"
    if r.band is not None and r.band.sub_action != r.sub_action:
        return f"its band is for {r.band.sub_action}"
    if previous is not None and previous.rater == r.rater:
        return "the rater has two ratings for this band"
    return None


def _units(metric: str, group: list[Rating]) -> list[Unit]:
    """The metric's units in one band, each with every counted rater's value."""
    vignette = group[0].vignette_id
    if metric == "verdict":
        counted = [r for r in group if r.mode == REVIEW_MODE]
        return [(vignette, {r.rater: VERDICTS.index(r.verdict) for r in counted})]
    rated = [r for r in group if r.values]
    if metric == "band":
        return [(vignette, {r.rater: band_label(r.band) for r in rated if r.band is not None})]
    if metric == "membership":
        admitted = sorted(frozenset().union(*(r.values for r in rated)))
        return [(vignette, {r.rater: int(v in r.values) for r in rated}) for v in admitted]
    pick = min if metric == "lower" else max
    return [(vignette, {r.rater: pick(r.values) for r in rated})]


@dataclass(frozen=True)
class _Part:
    """One sub-action's share of a metric: its stratum and the sizes printed beside alpha."""

    stratum: Stratum
    n_bands: int
    n_declined: int
    n_counted: int  # ratings the metric reads (for verdicts: review mode only)


def _parts(metric: str, groups: Groups) -> dict[str, _Part]:
    """The metric's part in each sub-action it applies to, by sub-action name (sorted)."""
    by_name: dict[str, list[list[Rating]]] = {}
    for (_, name), group in groups.items():
        by_name.setdefault(name, []).append(group)
    return {
        name: _part(metric, at_level, by_name[name])
        for name in sorted(by_name)
        if (at_level := level(metric, name)) is not None
    }


def _part(metric: str, at_level: str, groups: list[list[Rating]]) -> _Part:
    units = [(group, _units(metric, group)) for group in groups]
    counted = [r for g in groups for r in g if metric != "verdict" or r.mode == REVIEW_MODE]
    return _Part(
        stratum=stratum(at_level, [u for _, us in units for u in us]),
        n_bands=sum(any(len(values) >= 2 for _, values in us) for _, us in units),
        n_declined=sum(r.verdict == DECLINE for r in counted),
        n_counted=len(counted),
    )


# --- alphas --------------------------------------------------------------------------------------


def _alpha(
    metric: str,
    scope: str,
    parts: Sequence[_Part],
    *,
    B: int,
    seed: int,
    weights: np.ndarray | None = None,
) -> Alpha:
    """Alpha of the parts (one sub-action, or the stratified pool), its sizes and interval."""
    strata = [p.stratum for p in parts]
    levels = {s.level for s in strata}
    sized = Alpha(
        metric,
        scope,
        levels.pop() if len(levels) == 1 else ("per sub-action" if levels else None),
        None,
        None,
        # In a pool, the bands of a sub-action whose values never vary add nothing to alpha,
        # so they do not count towards the bands the reading rests on.
        n_bands=sum(p.n_bands for p in parts if len(parts) == 1 or p.stratum.varies),
        n_units=sum(s.n_units for s in strata),
        n_raters=len(frozenset().union(*(s.raters for s in strata))),
        n_pairable=sum(s.n_pairable for s in strata),
        n_declined=sum(p.n_declined for p in parts),
        n_vignettes=len({v for s in strata for v in s.vignettes}),
    )
    if metric == "verdict" and not any(p.n_counted for p in parts):
        return replace(sized, reason=REVIEW_MODE_ONLY)
    if sized.n_units == 0:
        return replace(sized, reason=TOO_FEW_RATERS)
    single = len(strata) == 1 and strata[0].level in STANDARD_LEVELS
    value = package_alpha(strata[0]) if single else point_alpha(strata)
    if value is None:
        return replace(sized, reason=NO_VARIATION)
    interval = bootstrap(strata, B=B, seed=seed, weights=weights)
    return replace(
        sized,
        alpha=value,
        ci_low=interval.ci_low,
        ci_high=interval.ci_high,
        p_below_0800=interval.p_below_0800,
        p_below_0667=interval.p_below_0667,
        undefined_resamples=interval.undefined_resamples,
        method=interval.method,
        warnings=interval.warnings,
    )


def metric_alpha(
    metric: str, ratings: Iterable[Rating], *, bootstrap: int = DEFAULT_B, seed: int = DEFAULT_SEED
) -> Alpha:
    """One metric over the given ratings: of their sub-action, or pooled (stratified by
    sub-action) when they hold several; lower and upper are never pooled."""
    groups = group_ratings(ratings)
    names = sorted({name for _, name in groups})
    scope = names[0] if len(names) == 1 else POOLED
    if len(names) > 1 and metric not in POOLABLE:
        return Alpha(metric, scope, None, None, NEVER_POOLED)
    parts = _parts(metric, groups)
    if groups and not parts:
        return Alpha(metric, scope, None, None, NOT_APPLICABLE[metric])
    return _alpha(metric, scope, list(parts.values()), B=bootstrap, seed=seed)


def metric_strata(metric: str, ratings: Iterable[Rating]) -> list[Stratum]:
    """What `metric` is computed over: one stratum per sub-action it applies to."""
    return [part.stratum for part in _parts(metric, group_ratings(ratings)).values()]


def band_alpha(ratings: Iterable[Rating], **options: Any) -> Alpha:
    return metric_alpha("band", ratings, **options)


def membership_alpha(ratings: Iterable[Rating], **options: Any) -> Alpha:
    return metric_alpha("membership", ratings, **options)


def lower_alpha(ratings: Iterable[Rating], **options: Any) -> Alpha:
    return metric_alpha("lower", ratings, **options)


def upper_alpha(ratings: Iterable[Rating], **options: Any) -> Alpha:
    return metric_alpha("upper", ratings, **options)


def verdict_alpha(ratings: Iterable[Rating], **options: Any) -> Alpha:
    return metric_alpha("verdict", ratings, **options)


def agreement_report(
    ratings: Iterable[Rating], *, bootstrap: int = DEFAULT_B, seed: int = DEFAULT_SEED
) -> Report:
    """Every metric per sub-action and pooled (where it applies), and each band's consensus.

    Every interval with the same number of vignettes uses the same draws: they depend only on
    (vignettes, B, seed), so this equals drawing them afresh for each alpha.
    """
    groups = group_ratings(ratings)
    names = sorted({name for _, name in groups})
    drawn: dict[int, np.ndarray] = {}

    def weights(parts: list[_Part]) -> np.ndarray | None:
        n = len({v for p in parts for v in p.stratum.vignettes})
        if bootstrap <= 0 or n < 2:
            return None
        if n not in drawn:
            drawn[n] = resample_weights(n, bootstrap, seed)
        return drawn[n]

    metrics: dict[str, dict[str, Alpha]] = {scope: {} for scope in [*names, POOLED]}
    for metric in METRICS:
        parts = _parts(metric, groups)
        scopes = [(name, [part]) for name, part in parts.items()]
        if metric in POOLABLE and parts:
            scopes.append((POOLED, list(parts.values())))
        for scope, chosen in scopes:
            metrics[scope][metric] = _alpha(
                metric, scope, chosen, B=bootstrap, seed=seed, weights=weights(chosen)
            )
    bands = tuple(_band_agreement(group) for group in groups.values())
    return Report(metrics=metrics, bands=bands, bootstrap=bootstrap, seed=seed)


# --- JSON ----------------------------------------------------------------------------------------

ALPHA_FIELDS = (
    "alpha", "reason", "reading", "level", "ci_low", "ci_high", "p_below_0800", "p_below_0667",
    "undefined_resamples", "n_bands", "n_units", "n_raters", "n_pairable", "n_declined",
    "n_vignettes", "method", "warnings",
)  # fmt: skip


def alpha_json(a: Alpha) -> dict[str, Any]:
    data = {name: getattr(a, name) for name in ALPHA_FIELDS}
    data["warnings"] = list(a.warnings)
    return data


def absent(metric: str, scope: str) -> Alpha:
    """What stands for a metric that does not apply to a scope: None, with the reason."""
    reason = NEVER_POOLED if scope == POOLED and metric not in POOLABLE else NOT_APPLICABLE[metric]
    return Alpha(metric, scope, None, None, reason)


def _band_agreement(group: Sequence[Rating]) -> BandAgreement:
    rated = [(r.rater, r.band) for r in group if r.band is not None and r.verdict != DECLINE]
    first = group[0]
    return band_agreement(first.vignette_id, first.sub_action, rated, len(group) - len(rated))


def band_agreements(ratings: Iterable[Rating]) -> list[BandAgreement]:
    """Every band's consensus and disagreement, by vignette and sub-action."""
    return [_band_agreement(group) for group in group_ratings(ratings).values()]


def report_to_json(report: Report) -> dict[str, Any]:
    """The report as JSON-ready plain data: every scope lists every metric (one that does not
    apply has alpha None and says why)."""
    return {
        "metrics": {
            scope: {
                metric: alpha_json(by_metric.get(metric) or absent(metric, scope))
                for metric in METRICS
            }
            for scope, by_metric in report.metrics.items()
        },
        "bands": [band_json(b) for b in report.bands],
    }
