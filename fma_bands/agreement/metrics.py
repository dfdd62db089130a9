"""Agreement among raters (docs/design.md, Agreement): the band, membership, lower, upper and
verdict alphas per sub-action and pooled (stratified by sub-action), with bootstrap intervals and
readings; blind-mode and review-mode ratings apart, never pooled; beside each alpha the share of
its own review-mode reviews (those on the bands it reads) that leave the proposal unchanged, with
their number, and the alpha with DECLINE counted as maximal disagreement; each band's consensus
by the one intersection rule (bands.consensus); the report as JSON. Pure functions on plain
data: nothing here touches the database or Streamlit.
"""

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from fma_bands.agreement.bootstrap import (
    DEFAULT_B,
    DEFAULT_SEED,
    bootstrap,
    coverage_caution,
    coverage_note,
    leave_one_out_weights,
    resample_weights,
    two_way,
)
from fma_bands.agreement.engine import (
    DECLINED,
    STANDARD_LEVELS,
    Stratum,
    Unit,
    exact_agreement,
    observed_expected,
    package_alpha,
    point_alpha,
    stratum,
)
from fma_bands.agreement.panel import BandAgreement, band_agreement, band_json, band_label
from fma_bands.core.actions import sub_action
from fma_bands.core.bands import AnyBand
from fma_bands.core.errors import FmaBandsError
from fma_bands.core.protocol import DECLINE, VERDICTS

ACCEPT = "ACCEPT"

METRICS = ("band", "membership", "lower", "upper", "verdict")
PRIMARY = "band"  # the metric the study reports first; it alone has the two-way interval
POOLED = "pooled"
POOLED_LABEL = "pooled (stratified by sub-action)"
POOLABLE = ("band", "membership", "verdict")
REVIEW_MODE = "review"
MODES = (REVIEW_MODE, "blind")
MIN_BANDS = 10  # below this many bands, or vignettes, no reading at all
MIN_VIGNETTES = 10
# Above this share of an alpha's review-mode reviews left as proposed, it may be anchoring.
ANCHORING = 0.80
READINGS = ("reliable", "tentative", "unreliable")

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


@dataclass(frozen=True, slots=True)
class Rating:
    """One rater's submitted review of one band, as the statistics take it. `band` is the typed
    band the review vouches for (None for DECLINE); `mode` is "review" or "blind"; `proposal`
    is the band the rater was shown in review mode.

    What every metric reads of it is derived once, as it is made: `values`, what the rater
    admits (empty for DECLINE, missing data); `label`, the band as the band metric compares it
    (band_label; None without a band); `unchanged`, an ACCEPT, or an AMEND whose band is the
    proposal's (same values, same required). Slotted, with the values and labels equal bands
    share: a study holds a rating per review, and each held its own dictionary of them."""

    vignette_id: str
    sub_action: str
    rater: str
    verdict: str
    band: AnyBand | None
    mode: str = REVIEW_MODE
    proposal: AnyBand | None = None
    values: frozenset = field(init=False, repr=False, compare=False)
    label: tuple | None = field(init=False, repr=False, compare=False)
    unchanged: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        band, verdict = self.band, self.verdict
        label = None if band is None else band_label(band)
        if verdict == ACCEPT:
            unchanged = True
        elif verdict == DECLINE or band is None or self.proposal is None:
            unchanged = False
        else:
            unchanged = label == band_label(self.proposal)
        values = frozenset() if band is None or verdict == DECLINE else band.values()
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "label", label)
        object.__setattr__(self, "unchanged", unchanged)


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
    # Bands with a counted rating, DECLINE included (for verdicts: review mode only), of every
    # sub-action in the scope: those whose reviews n_declined counts the DECLINEs of.
    n_bands_reviewed: int = 0
    ci_low: float | None = None
    ci_high: float | None = None
    p_below_0800: float | None = None
    p_below_0667: float | None = None
    undefined_resamples: float | None = None
    method: str | None = None
    warnings: tuple[str, ...] = ()
    mode: str = REVIEW_MODE
    # Vignettes holding a band the reading counts (in a pool, of sub-actions whose values vary).
    n_vignettes_reading: int = 0
    # Review mode: of the reviews with a band (not DECLINE) on the bands this alpha reads (those
    # n_bands counts), the share ACCEPTed, and the share left as proposed (ACCEPT, or AMEND to the
    # proposal's own band); None when there is none. n_reviewed is how many reviews that is: 0
    # when the alpha reads no band, None in blind mode (no proposal, so no share).
    share_accept: float | None = None
    share_unchanged: float | None = None
    n_reviewed: int | None = None
    # The same alpha with each DECLINE counted as maximal disagreement, and its interval.
    alpha_declines_as_disagreement: float | None = None
    ci_low_declines_as_disagreement: float | None = None
    ci_high_declines_as_disagreement: float | None = None
    reading_declines_as_disagreement: str | None = None  # its reading, at this alpha's sizes
    # A pooled alpha's weakest sub-action among those with enough bands and vignettes to read.
    weakest: str | None = None
    weakest_alpha: float | None = None
    weakest_reading: str | None = None
    # How often this interval covered the true alpha in the simulation nearest this size.
    coverage_note: str | None = None
    # The band alpha's interval about the population of raters too: the jackknife over vignettes
    # and over raters; None for other metrics and with fewer than three raters.
    ci_low_two_way: float | None = None
    ci_high_two_way: float | None = None
    # Observed and expected disagreement (alpha = 1 - D_o / D_e) and percent agreement: the
    # share of pairable pairs whose two values are equal.
    d_observed: float | None = None
    d_expected: float | None = None
    percent_agreement: float | None = None
    # The band alpha: each rater's pseudonym -> this alpha with that rater's ratings left out.
    alpha_without: Mapping[str, float | None] = field(default_factory=dict)

    @property
    def reading(self) -> str:
        """Krippendorff's guide read from the interval, never from the point alone; a pool is
        never better than inconclusive while one of its sub-actions reads unreliable."""
        plain = self.plain_reading
        if self.weakest_reading == "unreliable" and plain in ("reliable", "tentative"):
            return f"inconclusive: {sub_action(self.weakest or '').label} reads unreliable"
        return plain

    @property
    def plain_reading(self) -> str:
        """The reading of this alpha's own interval, whatever its sub-actions read."""
        return read(self, self.alpha, self.ci_low, self.ci_high)


def read(sizes: Alpha, alpha: float | None, low: float | None, high: float | None) -> str:
    """Krippendorff's guide on an interval: rely on >= 0.800, tentative from 0.667; no reading
    under MIN_BANDS bands or MIN_VIGNETTES vignettes."""
    if alpha is None:
        return f"undefined: {sizes.reason}"
    if sizes.n_bands < MIN_BANDS:
        return f"too few bands ({sizes.n_bands})"
    if sizes.n_vignettes_reading < MIN_VIGNETTES:
        return f"too few vignettes ({sizes.n_vignettes_reading})"
    if low is None or high is None:
        if alpha >= 1.0:
            return "no reading: no disagreement seen, which bounds nothing (no interval)"
        return "no reading: no interval"
    if low >= 0.800:
        return "reliable"
    if low >= 0.667:
        return "tentative"
    if high < 0.667:
        return "unreliable"
    return "inconclusive: the interval spans a threshold"


@dataclass(frozen=True)
class Report:
    metrics: Mapping[str, Mapping[str, Alpha]]  # scope -> metric -> Alpha, where it applies
    bands: tuple[BandAgreement, ...]
    bootstrap: int = DEFAULT_B
    seed: int = DEFAULT_SEED
    modes: tuple[str, ...] = (REVIEW_MODE,)  # several: each scope's key is "mode:scope"


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
    if r.mode not in MODES:
        return f"mode {r.mode!r} is not one of {', '.join(MODES)}"
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
        return [(vignette, {r.rater: r.label for r in rated if r.label is not None})]
    if metric == "membership":
        # Every value of the sub-action's fixed domain is a unit, whoever admits it: the units
        # do not grow with the panel, so neither does the metric's expected value.
        domain = sub_action(group[0].sub_action).domain()
        return [(vignette, {r.rater: int(v in r.values) for r in rated}) for v in domain]
    pick = min if metric == "lower" else max
    return [(vignette, {r.rater: pick(r.values) for r in rated})]


def _with_declines(units: list[Unit], group: list[Rating]) -> list[Unit]:
    """The band's units with each DECLINE in them as DECLINED (maximal disagreement)."""
    declined = {r.rater: DECLINED for r in group if r.verdict == DECLINE}
    return [(v, {**values, **declined}) for v, values in units] if declined else units


@dataclass(frozen=True)
class _Part:
    """One sub-action's share of a metric: its stratum and the sizes printed beside alpha."""

    name: str  # the sub-action
    stratum: Stratum
    declined: Stratum | None  # with DECLINE as maximal disagreement; None without a DECLINE
    n_bands: int
    n_declined: int
    n_counted: int  # ratings the metric reads (for verdicts: review mode only)
    n_bands_reviewed: int  # bands holding one of them
    # Review-mode ratings with a band on the bands counted in n_bands (those the alpha reads),
    # and how many of them ACCEPT, and keep the proposal: a review of a band no other rater
    # rated says nothing of the agreement beside it.
    n_reviewed: int
    n_accepted: int
    n_unchanged: int


def _parts(metric: str, groups: Groups) -> dict[str, _Part]:
    """The metric's part in each sub-action it applies to, by sub-action name (sorted)."""
    by_name: dict[str, list[list[Rating]]] = {}
    for (_, name), group in groups.items():
        by_name.setdefault(name, []).append(group)
    return {
        name: _part(metric, name, at_level, by_name[name])
        for name in sorted(by_name)
        if (at_level := level(metric, name)) is not None
    }


def _part(metric: str, name: str, at_level: str, groups: list[list[Rating]]) -> _Part:
    units = [(group, _units(metric, group)) for group in groups]
    counted = [r for g in groups for r in g if metric != "verdict" or r.mode == REVIEW_MODE]
    n_bands_reviewed = sum(
        any(metric != "verdict" or r.mode == REVIEW_MODE for r in g) for g in groups
    )
    n_declined = sum(r.verdict == DECLINE for r in counted)
    plain = stratum(at_level, [u for _, us in units for u in us])
    declined = None
    if n_declined and metric != "verdict":  # verdicts count DECLINE as a category already
        declined = stratum(at_level, [u for g, us in units for u in _with_declines(us, g)], plain)
    read = [g for g, us in units if any(len(values) >= 2 for _, values in us)]
    reviewed = [r for g in read for r in g if r.mode == REVIEW_MODE and r.values]
    return _Part(
        name=name,
        stratum=plain,
        declined=declined,
        n_bands=len(read),
        n_declined=n_declined,
        n_counted=len(counted),
        n_bands_reviewed=n_bands_reviewed,
        n_reviewed=len(reviewed),
        n_accepted=sum(r.verdict == ACCEPT for r in reviewed),
        n_unchanged=sum(r.unchanged for r in reviewed),
    )


# --- alphas --------------------------------------------------------------------------------------


# For n vignettes: the bootstrap's resample weights and the jackknife's, or None to draw them.
Draw = Callable[[int], tuple[np.ndarray | None, np.ndarray | None]]


def _no_draws(n: int) -> tuple[None, None]:
    return None, None


def _draws(bootstrap: int, seed: int) -> Draw:
    """Draws made once for each number of vignettes: they depend only on (vignettes, B, seed),
    so every interval over as many vignettes (an alpha, its pool, its alpha with DECLINEs as
    disagreement) reuses them, as if drawn afresh."""
    drawn: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def draw(n: int) -> tuple[np.ndarray | None, np.ndarray | None]:
        if bootstrap <= 0 or n < 2:
            return None, None
        if n not in drawn:
            drawn[n] = resample_weights(n, bootstrap, seed), leave_one_out_weights(n)
        return drawn[n]

    return draw


def _alpha(
    metric: str,
    scope: str,
    parts: Sequence[_Part],
    *,
    B: int,
    seed: int,
    mode: str = REVIEW_MODE,
    draw: Draw = _no_draws,
) -> Alpha:
    """Alpha of the parts (one sub-action, or the stratified pool), its sizes and interval,
    the share of its reviews left as proposed, and the alpha with DECLINE as maximal
    disagreement."""
    strata = [p.stratum for p in parts]
    levels = {s.level for s in strata}
    # In a pool, the bands of a sub-action whose values never vary add nothing to alpha, so
    # they do not count towards the bands and vignettes the reading rests on.
    read_on = [p for p in parts if len(parts) == 1 or p.stratum.varies]
    # The share left as proposed is over the reviews of the same bands as the alpha: those
    # n_bands counts.
    reviewed = sum(p.n_reviewed for p in read_on)
    sized = Alpha(
        metric,
        scope,
        levels.pop() if len(levels) == 1 else ("per sub-action" if levels else None),
        None,
        None,
        n_bands=sum(p.n_bands for p in read_on),
        n_units=sum(s.n_units for s in strata),
        # The raters of the bands the reading rests on (all of them when none varies).
        n_raters=len(frozenset().union(*(p.stratum.raters for p in read_on or parts))),
        n_pairable=sum(s.n_pairable for s in strata),
        n_declined=sum(p.n_declined for p in parts),
        n_vignettes=len({v for s in strata for v in s.vignettes}),
        n_bands_reviewed=sum(p.n_bands_reviewed for p in parts),
        mode=mode,
        n_vignettes_reading=len({v for p in read_on for v in p.stratum.vignettes}),
        share_accept=sum(p.n_accepted for p in read_on) / reviewed if reviewed else None,
        share_unchanged=sum(p.n_unchanged for p in read_on) / reviewed if reviewed else None,
        n_reviewed=reviewed if mode == REVIEW_MODE else None,
    )
    if metric == "verdict" and not any(p.n_counted for p in parts):
        return replace(sized, reason=REVIEW_MODE_ONLY)
    if sized.n_units == 0:
        return replace(sized, reason=TOO_FEW_RATERS)
    single = len(strata) == 1 and strata[0].level in STANDARD_LEVELS
    value = package_alpha(strata[0]) if single else point_alpha(strata)
    if value is None:
        # No variation, yet the share left as proposed stands beside it: so does its caution.
        return replace(sized, reason=NO_VARIATION, warnings=tuple(_cautions(sized)))
    weights, left_out = draw(sized.n_vignettes)
    interval = bootstrap(strata, B=B, seed=seed, point=value, weights=weights, left_out=left_out)
    # Each rater left out in turn, for the primary metric: its two-way interval and the
    # per-rater diagnostics.
    without: dict[str, float | None] = {}
    if metric == PRIMARY:
        raters = sorted(frozenset().union(*(s.raters for s in strata)))
        without = {r: point_alpha([s.without(r) for s in strata]) for r in raters}
    two = None
    if interval.ci_low is not None and without:
        two = two_way(value, interval.se, list(without.values()))
    disagreements = observed_expected(strata)
    found = replace(
        sized,
        alpha=value,
        alpha_without=without,
        ci_low_two_way=None if two is None else two[0],
        ci_high_two_way=None if two is None else two[1],
        d_observed=None if disagreements is None else disagreements[0],
        d_expected=None if disagreements is None else disagreements[1],
        percent_agreement=exact_agreement(strata),
        # Verdicts were not simulated: their intervals carry no measured coverage.
        coverage_note=(
            coverage_note(sized.n_raters, sized.n_vignettes)
            if interval.ci_low is not None and metric != "verdict"
            else None
        ),
        ci_low=interval.ci_low,
        ci_high=interval.ci_high,
        p_below_0800=interval.p_below_0800,
        p_below_0667=interval.p_below_0667,
        undefined_resamples=interval.undefined_resamples,
        method=interval.method,
        alpha_declines_as_disagreement=None if metric == "verdict" else value,
        ci_low_declines_as_disagreement=None if metric == "verdict" else interval.ci_low,
        ci_high_declines_as_disagreement=None if metric == "verdict" else interval.ci_high,
    )
    if any(p.declined is not None for p in parts):
        found = _declines_alpha(found, parts, B=B, seed=seed, draw=draw)
    if found.alpha_declines_as_disagreement is not None:
        declined = read(
            found,
            found.alpha_declines_as_disagreement,
            found.ci_low_declines_as_disagreement,
            found.ci_high_declines_as_disagreement,
        )
        found = replace(found, reading_declines_as_disagreement=declined)
    few = (
        coverage_caution(sized.n_raters, sized.n_vignettes)
        if interval.ci_low is not None and metric != "verdict"
        else None
    )
    panels = _panels_caution(read_on) if len(parts) > 1 else None
    return replace(
        found,
        warnings=(
            *interval.warnings,
            *found.warnings,
            *filter(None, [few, panels, _unvaried_caution(parts, read_on)]),
            *_cautions(found),
        ),
    )


# A pool whose sub-actions' panels differ by this factor or more is cautioned.
PANELS_APART = 1.5


def _panels_caution(parts: Sequence[_Part]) -> str | None:
    """A pool weighs each sub-action by its pairable values, so by the size of its panels: where
    they differ, the pooled alpha follows the sub-actions rated by more raters."""
    sizes = {
        sub_action(p.name).label: p.stratum.n_pairable / p.stratum.n_units
        for p in parts
        if p.stratum.n_units
    }
    if len(sizes) < 2 or max(sizes.values()) < PANELS_APART * min(sizes.values()):
        return None
    fewest, most = min(sizes, key=sizes.__getitem__), max(sizes, key=sizes.__getitem__)
    return (
        f"the sub-actions' panels differ in size ({sizes[fewest]:.1f} raters a band for "
        f"{fewest}, {sizes[most]:.1f} for {most}): the pool weighs each sub-action by its "
        "pairable values, so it leans towards the larger panels; read each sub-action's own "
        "alpha beside it"
    )


def _unvaried_caution(parts: Sequence[_Part], read_on: Sequence[_Part]) -> str | None:
    """A pool's sub-actions whose values never vary: pooled, but not in its bands."""
    unvaried = [p for p in parts if p not in read_on and p.n_bands]
    if not unvaried:
        return None
    named = ", ".join(
        f"{sub_action(p.name).label} ({counted(p.n_bands, 'band')})" for p in unvaried
    )
    return (
        f"the values of {named} never vary: pooled, they leave alpha as it is and are not "
        "counted in its bands or vignettes read, while its units, pairable values, D_o / D_e "
        "and the vignettes its interval resamples include them"
    )


def counted(n: int, noun: str) -> str:
    """n and the noun, plural unless n is 1."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _declines_alpha(a: Alpha, parts: Sequence[_Part], *, B: int, seed: int, draw: Draw) -> Alpha:
    """`a` with the alpha and interval of its parts where every DECLINE is a value at the
    level's largest distance from every other, another DECLINE included."""
    strata = [p.declined or p.stratum for p in parts]
    value = point_alpha(strata)
    n = len({v for s in strata for v in s.vignettes})
    weights, left_out = draw(n)
    interval = None
    if value is not None:
        interval = bootstrap(
            strata, B=B, seed=seed, point=value, weights=weights, left_out=left_out
        )
    said = [
        f"with each DECLINE as maximal disagreement, {w}"
        for w in (interval.warnings if interval else ())
        if "cut to it" in w or w.startswith("no interval")
    ]
    return replace(
        a,
        alpha_declines_as_disagreement=value,
        ci_low_declines_as_disagreement=interval.ci_low if interval else None,
        ci_high_declines_as_disagreement=interval.ci_high if interval else None,
        warnings=(*a.warnings, *said),
    )


def percent(count: int, n: int) -> str:
    """count of n (n > 0) as a whole percentage that never says all or none when it is not."""
    if 0 < count < n and f"{count / n:.0%}" in ("0%", "100%"):
        return "under 1%" if count / n < 0.5 else "over 99%"
    return f"{count / n:.0%}"


def _cautions(a: Alpha) -> list[str]:
    """What a reader must weigh beside the alpha: anchoring on the proposal, and declines."""
    out = []
    if a.share_unchanged is not None and a.share_unchanged > ANCHORING and a.n_reviewed:
        n = a.n_reviewed
        share = percent(round(a.share_unchanged * n), n)
        if share == f"{ANCHORING:.0%}":  # 80.4% is above 80%; "80% ... above 80%" is not
            share = f"{a.share_unchanged:.1%}"
        accepted = percent(round((a.share_accept or 0) * n), n)
        out.append(
            f"{share} of the {n} review{'' if n == 1 else 's'} on the bands this alpha reads "
            f"leave the proposal unchanged ({accepted} ACCEPT): above "
            f"{ANCHORING:.0%}, agreement may be anchoring on the proposal rather than "
            "independent judgement"
        )
    declined = a.reading_declines_as_disagreement
    if declined is not None and declined != a.plain_reading:
        out.append(
            f"with its {counted(a.n_declined, 'DECLINE')} counted as maximal disagreement, "
            f"alpha is {a.alpha_declines_as_disagreement:.3f} and reads {declined!r}, not "
            f"{a.plain_reading!r}: the declines may fall on the hardest bands"
        )
    return out


def _weakest(pooled: Alpha, each: Sequence[Alpha]) -> Alpha:
    """The pool with its weakest sub-action named: one reading unreliable first, else the
    lowest alpha, among those with enough bands and vignettes to read."""
    readable = [
        a
        for a in each
        if a.alpha is not None and a.plain_reading.split(":")[0] in (*READINGS, "inconclusive")
    ]
    if len(each) < 2 or not readable:
        return pooled
    weakest = min(readable, key=lambda a: (a.plain_reading != "unreliable", a.alpha))
    return replace(
        pooled,
        weakest=weakest.scope,
        weakest_alpha=weakest.alpha,
        weakest_reading=weakest.plain_reading,
    )


def _metric_alphas(
    metric: str, groups: Groups, *, B: int, seed: int, mode: str, draw: Draw
) -> dict[str, Alpha]:
    """The metric per sub-action it applies to and, where it pools, pooled (stratified)."""
    parts = _parts(metric, groups)
    out = {
        name: _alpha(metric, name, [part], B=B, seed=seed, mode=mode, draw=draw)
        for name, part in parts.items()
    }
    if metric in POOLABLE and parts:
        pooled = _alpha(metric, POOLED, list(parts.values()), B=B, seed=seed, mode=mode, draw=draw)
        out[POOLED] = _weakest(pooled, list(out.values()))
    return out


def metric_alpha(
    metric: str, ratings: Iterable[Rating], *, bootstrap: int = DEFAULT_B, seed: int = DEFAULT_SEED
) -> Alpha:
    """One metric over the given ratings: of their sub-action, or pooled (stratified by
    sub-action) when they hold several; lower and upper are never pooled, and neither are
    blind-mode and review-mode ratings (refused: compute each mode apart)."""
    groups = group_ratings(ratings)
    modes = sorted({r.mode for group in groups.values() for r in group})
    if len(modes) > 1:
        raise FmaBandsError(
            "blind-mode and review-mode ratings are never pooled: compute each mode's alpha apart"
        )
    mode = modes[0] if modes else REVIEW_MODE
    names = sorted({name for _, name in groups})
    scope = names[0] if len(names) == 1 else POOLED
    if len(names) > 1 and metric not in POOLABLE:
        return Alpha(metric, scope, None, None, NEVER_POOLED, mode=mode)
    if groups and not _parts(metric, groups):
        return Alpha(metric, scope, None, None, NOT_APPLICABLE[metric], mode=mode)
    draw = _draws(bootstrap, seed)
    found = _metric_alphas(metric, groups, B=bootstrap, seed=seed, mode=mode, draw=draw)
    return found.get(scope) or _alpha(metric, scope, [], B=bootstrap, seed=seed, mode=mode)


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
    Blind-mode and review-mode ratings are reported apart, never pooled: with both, each
    scope's key is "mode:scope" (report_key).

    Every interval with the same number of vignettes uses the same draws: they depend only on
    (vignettes, B, seed), so this equals drawing them afresh for each alpha.
    """
    groups = group_ratings(ratings)
    modes = tuple(m for m in MODES if any(r.mode == m for g in groups.values() for r in g))
    draw = _draws(bootstrap, seed)
    metrics: dict[str, dict[str, Alpha]] = {}
    for mode in modes or (REVIEW_MODE,):
        in_mode = {key: [r for r in g if r.mode == mode] for key, g in groups.items()}
        in_mode = {key: g for key, g in in_mode.items() if g}
        names = sorted({name for _, name in in_mode})
        keys = {scope: report_key(mode, scope, modes) for scope in [*names, POOLED]}
        metrics.update({key: {} for key in keys.values()})
        for metric in METRICS:
            found = _metric_alphas(metric, in_mode, B=bootstrap, seed=seed, mode=mode, draw=draw)
            for scope, a in found.items():
                metrics[keys[scope]][metric] = a
    bands = tuple(_band_agreement(group) for group in groups.values())
    return Report(
        metrics=metrics, bands=bands, bootstrap=bootstrap, seed=seed, modes=modes or (REVIEW_MODE,)
    )


def report_key(mode: str, scope: str, modes: Sequence[str]) -> str:
    """A scope's key in the report: the scope, or "mode:scope" when the report holds both."""
    return scope if len(modes) <= 1 else f"{mode}:{scope}"


# --- JSON ----------------------------------------------------------------------------------------

ALPHA_FIELDS = (
    "alpha", "reason", "reading", "level", "ci_low", "ci_high", "p_below_0800", "p_below_0667",
    "undefined_resamples", "n_bands", "n_units", "n_raters", "n_pairable", "n_declined",
    "n_vignettes", "method", "warnings", "mode", "n_vignettes_reading", "share_accept",
    "share_unchanged", "alpha_declines_as_disagreement", "ci_low_declines_as_disagreement",
    "ci_high_declines_as_disagreement", "reading_declines_as_disagreement", "weakest",
    "weakest_alpha", "weakest_reading", "coverage_note", "ci_low_two_way", "ci_high_two_way",
    "d_observed", "d_expected", "percent_agreement", "n_reviewed", "n_bands_reviewed",
)  # fmt: skip


def alpha_json(a: Alpha) -> dict[str, Any]:
    data = {name: getattr(a, name) for name in ALPHA_FIELDS}
    data["warnings"] = list(a.warnings)
    return data


def absent(metric: str, scope: str, mode: str = REVIEW_MODE) -> Alpha:
    """What stands for a metric that does not apply to a scope: None, with the reason."""
    reason = NEVER_POOLED if scope == POOLED and metric not in POOLABLE else NOT_APPLICABLE[metric]
    return Alpha(metric, scope, None, None, reason, mode=mode)


def _band_agreement(group: Sequence[Rating]) -> BandAgreement:
    rated = [(r.rater, r.band) for r in group if r.band is not None and r.verdict != DECLINE]
    first = group[0]
    return band_agreement(first.vignette_id, first.sub_action, rated, len(group) - len(rated))


def band_agreements(ratings: Iterable[Rating]) -> list[BandAgreement]:
    """Every band's consensus and disagreement, by vignette and sub-action."""
    return [_band_agreement(group) for group in group_ratings(ratings).values()]


def _absent(metric: str, key: str, by_metric: Mapping[str, Alpha]) -> Alpha:
    mode = next((a.mode for a in by_metric.values()), REVIEW_MODE)
    return absent(metric, key.rpartition(":")[2], mode)


def report_to_json(report: Report) -> dict[str, Any]:
    """The report as JSON-ready plain data: every scope lists every metric (one that does not
    apply has alpha None and says why)."""
    return {
        "metrics": {
            key: {
                metric: alpha_json(by_metric.get(metric) or _absent(metric, key, by_metric))
                for metric in METRICS
            }
            for key, by_metric in report.metrics.items()
        },
        "bands": [band_json(b) for b in report.bands],
    }
