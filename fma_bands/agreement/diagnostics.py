"""What a reviewer asks for beside the alphas (docs/statistics.md, Diagnostics): each rater's
agreement with the rest and the pooled band alpha without them, the pooled band alpha within each
ambiguity stratum, and the vignettes a study would need for a chosen interval width (planning).
Pure functions on plain data, one mode at a time (blind and review are never pooled).
"""

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from fma_bands.agreement.bootstrap import DEFAULT_B, DEFAULT_SEED
from fma_bands.agreement.engine import Stratum, Unit, point_alpha, stratum
from fma_bands.agreement.metrics import (
    MODES,
    Alpha,
    Rating,
    alpha_json,
    group_ratings,
    level,
    metric_alpha,
)
from fma_bands.agreement.planning import (
    ASSUMPTION,
    DEFAULT_WIDTH,
    GRID,
    SIMULATIONS,
    Plan,
    plan_json,
    vignettes_needed,
)
from fma_bands.agreement.views import scope_label
from fma_bands.core.protocol import DECLINE
from fma_bands.core.vignettes import AMBIGUITIES

UNSTATED = "unstated"  # the stratum of vignettes that name no ambiguity


@dataclass(frozen=True)
class ModeBands:
    """One mode's ratings as the band metric reads them: a stratum per sub-action (whose cells
    say which rater gave which value), and how many bands each rater reviewed and declined."""

    mode: str
    strata: Mapping[str, Stratum]  # sub-action -> its band stratum
    reviewed: Mapping[str, int]  # rater -> bands reviewed in this mode, DECLINEs included
    declined: Mapping[str, int]


def mode_bands(ratings: Iterable[Rating]) -> dict[str, ModeBands]:
    """The band metric's strata of each mode the ratings hold, by mode. The ratings are checked
    as the report checks them (group_ratings names a rating it refuses)."""
    units: dict[str, dict[str, list[Unit]]] = {}
    reviewed: dict[str, Counter[str]] = {}
    declined: dict[str, Counter[str]] = {}
    for (vignette, name), group in group_ratings(ratings).items():
        by_mode: dict[str, dict[str, tuple]] = {}
        for r in group:
            reviewed.setdefault(r.mode, Counter())[r.rater] += 1
            declined.setdefault(r.mode, Counter())[r.rater] += r.verdict == DECLINE
            values = by_mode.setdefault(r.mode, {})
            if r.values and r.label is not None:  # DECLINE is missing data for the band metric
                values[r.rater] = r.label
        for mode, values in by_mode.items():
            units.setdefault(mode, {}).setdefault(name, []).append((vignette, values))
    return {
        mode: ModeBands(
            mode=mode,
            strata={
                name: stratum(_band_level(name), found)
                for name, found in sorted(units[mode].items())
            },
            reviewed=dict(reviewed[mode]),
            declined=dict(declined[mode]),
        )
        for mode in MODES
        if mode in units
    }


def _band_level(name: str) -> str:
    found = level("band", name)
    assert found is not None  # the band metric applies to every sub-action
    return found


# --- per-rater diagnostics -----------------------------------------------------------------------


@dataclass(frozen=True)
class RaterDiagnostics:
    """One rater in one mode: what they reviewed, how their bands compare with the others' on
    the same bands, and the pooled band alpha without them. None where undefined."""

    rater: str
    mode: str
    n_bands: int  # bands reviewed, DECLINEs included
    n_declined: int
    n_pairs: int  # pairs with another rater on the same band, neither declining
    exact_agreement: float | None  # the share of those pairs giving exactly the same band
    mean_distance: float | None  # the band metric's mean distance over those pairs
    alpha_without: float | None  # the pooled band alpha with this rater's ratings removed
    alpha_without_change: float | None  # alpha_without minus the pooled band alpha


def rater_diagnostics(
    bands: Mapping[str, ModeBands], pooled: Mapping[str, Alpha] | None = None
) -> list[RaterDiagnostics]:
    """Each rater's diagnostics in each mode, by mode then rater. `pooled` may pass each mode's
    pooled band Alpha from the report (its alpha_without); otherwise it is computed."""
    out = []
    for mode, found in bands.items():
        given = (pooled or {}).get(mode)
        alpha, each = (given.alpha, given.alpha_without) if given else _alpha_without(found)
        pairs = _pairs(found.strata.values())
        for rater in sorted(found.reviewed):
            n, same, distance = pairs.get(rater, (0, 0.0, 0.0))
            # A rater with no pairable band value leaves the alpha as it is.
            without = each.get(rater, alpha)
            out.append(
                RaterDiagnostics(
                    rater=rater,
                    mode=mode,
                    n_bands=found.reviewed[rater],
                    n_declined=found.declined.get(rater, 0),
                    n_pairs=n,
                    exact_agreement=same / n if n else None,
                    mean_distance=distance / n if n else None,
                    alpha_without=without,
                    alpha_without_change=(
                        None if without is None or alpha is None else without - alpha
                    ),
                )
            )
    return out


def _alpha_without(found: ModeBands) -> tuple[float | None, dict[str, float | None]]:
    """The pooled band alpha of one mode, and the same with each rater's values taken out."""
    strata = list(found.strata.values())
    raters = sorted(frozenset[str]().union(*(s.raters for s in strata)))
    return point_alpha(strata), {r: point_alpha([s.without(r) for s in strata]) for r in raters}


def _pairs(strata: Iterable[Stratum]) -> dict[str, tuple[int, float, float]]:
    """Per rater: the pairs they form with another rater on one band, how many of them give the
    same band, and the sum of their band distances (the stratum's own Jaccard or orders
    distances). Every pair of values within a unit, in both orders."""
    totals: dict[str, list[float]] = {}
    for s in strata:
        if s.n_units == 0 or s.distance is None or s.cell_unit is None:
            continue
        assert s.cell_column is not None and s.cell_rater is not None
        order = np.argsort(s.cell_unit, kind="stable")
        unit, column, who = s.cell_unit[order], s.cell_column[order], s.cell_rater[order]
        size = np.bincount(unit, minlength=s.n_units)
        start = np.cumsum(size) - size
        # Cell i meets every cell of its unit: size[unit[i]] partners, itself among them.
        reach = size[unit]
        first = np.repeat(np.arange(len(unit)), reach)
        second = (
            start[unit][first] + np.arange(first.size) - np.repeat(np.cumsum(reach) - reach, reach)
        )
        other = first != second
        a, b = column[first[other]], column[second[other]]
        rater = who[first[other]]
        n = np.bincount(rater, minlength=len(s.rater_names))
        same = np.bincount(rater, (a == b).astype(float), minlength=len(s.rater_names))
        distance = np.bincount(rater, s.distance[a, b], minlength=len(s.rater_names))
        for i, name in enumerate(s.rater_names):
            sums = totals.setdefault(name, [0, 0.0, 0.0])
            sums[0] += int(n[i])
            sums[1] += float(same[i])
            sums[2] += float(distance[i])
    return {name: (int(n), same, distance) for name, (n, same, distance) in totals.items()}


# --- alpha by ambiguity stratum ------------------------------------------------------------------


def alphas_by_stratum(
    ratings: Iterable[Rating],
    ambiguity: Mapping[str, str | None],
    *,
    metric: str = "band",
    bootstrap: int = DEFAULT_B,
    seed: int = DEFAULT_SEED,
    whole: Alpha | None = None,
) -> dict[str, Alpha]:
    """The metric (pooled where it pools) over the ratings of the vignettes in each ambiguity
    stratum (`ambiguity`: vignette id -> clear, intermediate, borderline or None), vignettes
    that state none under UNSTATED; strata in the order of AMBIGUITIES. Ratings of one mode
    (metric_alpha refuses both). `whole` may pass the metric over all the ratings with the same
    bootstrap and seed (the report's): a stratum holding every rating is that alpha."""
    chosen: dict[str, list[Rating]] = {}
    for r in ratings:
        chosen.setdefault(ambiguity.get(r.vignette_id) or UNSTATED, []).append(r)
    if len(chosen) == 1 and whole is not None:
        return {name: whole for name in chosen}
    order = [*AMBIGUITIES, *sorted(set(chosen) - {*AMBIGUITIES, UNSTATED}), UNSTATED]
    return {
        name: metric_alpha(metric, chosen[name], bootstrap=bootstrap, seed=seed)
        for name in order
        if name in chosen
    }


@dataclass(frozen=True)
class StratumAlpha:
    stratum: str
    alpha: Alpha


# --- all of it -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Diagnostics:
    """Per-rater diagnostics, the pooled band alpha by ambiguity stratum and the planning, of
    every mode the ratings hold."""

    raters: tuple[RaterDiagnostics, ...]
    by_stratum: tuple[StratumAlpha, ...]
    planning: tuple[Plan, ...]
    width: float


def diagnostics(
    ratings: Sequence[Rating],
    ambiguity: Mapping[str, str | None],
    *,
    pooled: Mapping[str, Alpha] | None = None,
    width: float = DEFAULT_WIDTH,
    bootstrap: int = DEFAULT_B,
    seed: int = DEFAULT_SEED,
    simulations: int = SIMULATIONS,
) -> Diagnostics:
    """Everything above for the ratings (`pooled`: each mode's pooled band Alpha from the
    report, which holds the alphas without each rater). With bootstrap 0 (no intervals) there
    is no planning either: it is the interval at other sizes."""
    bands = mode_bands(ratings)
    raters = tuple(rater_diagnostics(bands, pooled))
    planning = tuple(
        p
        for mode, found in bands.items()
        if bootstrap > 0
        for p in vignettes_needed(
            found.strata, width, mode=mode, simulations=simulations, seed=seed
        )
    )
    modes = list(bands)
    # The strata are let go before the alphas by ambiguity make their own: at 1,000 x 20 an
    # orders band stratum's distances alone are 50 MB.
    del bands
    return Diagnostics(
        raters=raters,
        by_stratum=tuple(
            StratumAlpha(name, a)
            for mode in modes
            for name, a in alphas_by_stratum(
                [r for r in ratings if r.mode == mode],
                ambiguity,
                bootstrap=bootstrap,
                seed=seed,
                whole=(pooled or {}).get(mode),
            ).items()
        ),
        planning=planning,
        width=width,
    )


RATER_FIELDS = (
    "rater", "mode", "n_bands", "n_declined", "n_pairs", "exact_agreement", "mean_distance",
    "alpha_without", "alpha_without_change",
)  # fmt: skip


def diagnostics_json(d: Diagnostics) -> dict[str, Any]:
    """The keys `raters`, `by_stratum` and `planning` of `fma-bands agreement --json`."""
    return {
        "raters": [{name: getattr(r, name) for name in RATER_FIELDS} for r in d.raters],
        "by_stratum": [
            {"stratum": s.stratum, "metric": s.alpha.metric, "scope": s.alpha.scope}
            | alpha_json(s.alpha)
            for s in d.by_stratum
        ],
        "planning": {
            "width": d.width,
            "grid": list(GRID),
            "assumption": ASSUMPTION,
            "plans": [plan_json(p) for p in d.planning],
        },
    }


# --- as rows of text, for the Agreement page and the command's table -----------------------------


def _number(value: float | None, sign: str = "") -> str:
    return "-" if value is None else f"{value:{sign}.3f}"


def rater_rows(raters: Iterable[RaterDiagnostics]) -> list[dict[str, str]]:
    """One row per rater and mode: bands reviewed and declined, agreement with the others on
    the same bands, and the pooled band alpha without the rater."""
    return [
        {
            "rater": r.rater,
            "mode": r.mode,
            "bands": str(r.n_bands),
            "declined": str(r.n_declined),
            "pairs": str(r.n_pairs),
            "same band": "-" if r.exact_agreement is None else f"{r.exact_agreement:.1%}",
            "mean distance": _number(r.mean_distance),
            "pooled band alpha without": (
                "undefined" if r.alpha_without is None else f"{r.alpha_without:.3f}"
            ),
            "change": _number(r.alpha_without_change, "+"),
        }
        for r in raters
    ]


RATER_NOTE = (
    "Pairs: each pair of this rater's band with another rater's on the same band, neither "
    "declining. Same band: the share of those pairs giving exactly the same band; mean "
    "distance: their mean band distance (Jaccard; for orders the mean of required and "
    "defensible). Pooled band alpha without: the same alpha with this rater's ratings removed, "
    "and its change from the alpha with every rater (a rise: the others agree better without "
    "this rater)."
)


def stratum_rows(by_stratum: Iterable[StratumAlpha]) -> list[dict[str, str]]:
    """One row per ambiguity stratum and mode: the pooled band alpha on its vignettes."""
    return [
        {
            "stratum": s.stratum,
            "mode": s.alpha.mode,
            "alpha": "undefined" if s.alpha.alpha is None else f"{s.alpha.alpha:.3f}",
            "95% interval": (
                "none"
                if s.alpha.ci_low is None
                else f"{_number(s.alpha.ci_low)} to {_number(s.alpha.ci_high)}"
            ),
            "reading": s.alpha.reading,
            "bands": str(s.alpha.n_bands),
            "vignettes": str(s.alpha.n_vignettes),
            "raters": str(s.alpha.n_raters),
        }
        for s in by_stratum
    ]


STRATUM_NOTE = (
    "Pooled band alpha (stratified by sub-action) over the vignettes of each ambiguity stratum "
    f"that the vignette files state ({', '.join(AMBIGUITIES)}); those that state none are "
    f"{UNSTATED!r}. Each interval and reading is the stratum's own."
)


def planning_rows(planning: Iterable[Plan]) -> list[dict[str, str]]:
    """One row per alpha planned: this study's alpha, the fewest vignettes on the grid for the
    width asked, and the simulated width at each size of the grid."""
    return [
        {
            "sub-action": scope_label(p.scope),
            "mode": p.mode,
            "alpha": "undefined" if p.alpha is None else f"{p.alpha:.3f}",
            "vignettes needed": _needed(p),
            **{str(m): _number(w) for m, w in p.widths},
        }
        for p in planning
    ]


def _needed(p: Plan) -> str:
    if p.vignettes_needed is not None:
        return str(p.vignettes_needed)
    return p.reason or f"over {GRID[-1]}"


def planning_note(width: float, simulations: int = SIMULATIONS) -> str:
    return (
        f"Vignettes needed for an interval at most {width:g} wide, and the width at each number "
        f"of vignettes ({simulations} simulated studies each). {ASSUMPTION}"
    )
