"""Agreement among raters (DESIGN 2.5): Krippendorff's alpha for bands, membership, endpoints and
verdicts, vignette-cluster bootstrap intervals, and the intersection rule. Pure functions on
plain data: nothing here touches the database or Streamlit.
"""

from __future__ import annotations

import functools
import gc
from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain, count, pairwise
from typing import Any

import krippendorff
import numpy as np

VERDICTS = ("ACCEPT", "AMEND", "DECLINE")
DECLINE = "DECLINE"
METRICS = ("band", "membership", "endpoints", "verdict")
POOLED = "pooled"
DEFAULT_B = 1000
DEFAULT_SEED = 20261129
NO_VARIATION = "no variation"
TOO_FEW_RATERS = "fewer than two raters on every band"
# Why a metric has no value at all for a sub-action (JSON keeps every metric, with a reason).
NOT_APPLICABLE = {
    "band": TOO_FEW_RATERS,
    "membership": "not defined: membership needs a short list of values (ordinal or boolean)",
    "endpoints": "not defined: no rater gave an interval band",
    "verdict": TOO_FEW_RATERS,
}

# krippendorff.alpha builds a units x values x values float array (several, in fact); past this
# size the same coincidence arithmetic is done here instead (tests check the two agree to 1e-12).
PACKAGE_MEMORY_BUDGET = 64 * 2**20


@dataclass(frozen=True)
class Rating:
    vignette_id: str
    sub_action: str
    rater: str
    verdict: str  # "ACCEPT" | "AMEND" | "DECLINE"
    values: frozenset | None  # the rater's band as a set of values; None when DECLINE
    interval: tuple[int, int] | None = None  # (min, max) when the band is an interval


@dataclass(frozen=True)
class Alpha:
    """One alpha and what it is computed over: n_units units holding n_pairable values (values
    in units with two or more) from n_raters raters. Undefined alpha is None with a reason."""

    metric: str
    alpha: float | None
    reason: str | None  # None when alpha is defined, else NO_VARIATION or TOO_FEW_RATERS
    n_units: int
    n_raters: int
    n_pairable: int
    ci_low: float | None = None
    ci_high: float | None = None
    p_below_0800: float | None = None
    p_below_0667: float | None = None
    method: str | None = None


@dataclass(frozen=True)
class Consensus:
    rule: str  # "applied" | "empty" | "absent"
    consensus: frozenset | None
    disputed: frozenset | None
    n_raters: int


@dataclass(frozen=True)
class BandAgreement:
    vignette_id: str
    sub_action: str
    n_raters: int  # raters whose verdict is not DECLINE
    n_declined: int
    consensus: Consensus
    disagreement: float | None  # mean pairwise Jaccard distance; None with fewer than two raters


@dataclass(frozen=True)
class Report:
    metrics: Mapping[str, Mapping[str, Alpha]]
    bands: tuple[BandAgreement, ...]


@dataclass(frozen=True)
class Bootstrap:
    ci_low: float | None
    ci_high: float | None
    p_below_0800: float | None
    p_below_0667: float | None
    n_usable: int
    method: str


@dataclass(frozen=True, eq=False)
class Pairable:
    """The pairable values of one metric, summarised per vignette for alpha and the bootstrap.

    A vignette's coincidence matrix enters alpha only through its inner product with the
    distance matrix (`observed`) and its marginals (`counts`); both are linear in the bootstrap
    weights, so a resample is a weighted sum of these rather than a recomputation.
    """

    vignettes: tuple[str, ...]
    observed: np.ndarray  # per vignette: sum over its units of c'Dc / (m_u - 1)
    counts: np.ndarray  # vignettes x values: pairable values per vignette
    distance: np.ndarray  # values x values
    labels: tuple  # the distinct values, in column order
    n_units: int
    n_raters: int
    cell_unit: np.ndarray  # per pairable value: its unit, rater and value column
    cell_rater: np.ndarray
    cell_value: np.ndarray

    @property
    def n_pairable(self) -> int:
        return round(float(self.counts.sum()))


def _gc_paused(fn):
    """Run fn with the cyclic garbage collector paused.

    The entry points allocate little that the collector tracks, but a collection that does
    start rescans the caller's whole heap (every Rating and its frozenset). Pausing costs
    nothing and keeps that out; reference counting still frees memory.
    """

    @functools.wraps(fn)
    def paused(*args, **kwargs):
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            if was_enabled:
                gc.enable()

    return paused


# --- distances ---------------------------------------------------------------------------------


def nominal_distances(labels: Sequence) -> np.ndarray:
    return 1.0 - np.eye(len(labels))


def interval_distances(labels: Sequence) -> np.ndarray:
    a = np.asarray(labels, dtype=float)
    return (a[:, None] - a[None, :]) ** 2


def _interner() -> defaultdict:
    """A dict that gives each new key the next integer: `[d[k] for k in keys]` codes keys in
    order of first appearance with one hash lookup per key."""
    return defaultdict(count().__next__)


def _jaccard(a: frozenset, b: frozenset) -> float:
    union = len(a | b)
    return (union - len(a & b)) / union if union else 0.0


def jaccard_distances(sets: Sequence[frozenset], out: np.ndarray | None = None) -> np.ndarray:
    """Jaccard distance between every two of a few distinct sets (into `out` if given).

    Each set is a bit mask over the distinct elements (64 to a word) and |A n B| is the bit count
    of A & B: integer work only, no BLAS, and exact. Rows go a block at a time through small
    buffers that are reused, so the only large array is the result.
    """
    n = len(sets)
    out = np.empty((n, n)) if out is None else out
    if n <= 8:  # a boolean's three bands and the like: plain Python is quicker
        out[...] = [[_jaccard(a, b) for b in sets] for a in sets]
        return out
    sizes = np.fromiter(map(len, sets), dtype=np.intp, count=n)
    elements = _interner()
    flat = map(elements.__getitem__, chain.from_iterable(sets))
    cols = np.fromiter(flat, dtype=np.intp, count=int(sizes.sum()))
    n_words = max(1, -(-len(elements) // 64))
    member = np.zeros((n, 64 * n_words), dtype=bool)
    member[np.repeat(np.arange(n), sizes), cols] = True
    words = np.packbits(member, axis=1).view(np.uint64)
    any_empty = bool((sizes == 0).any())
    sizes = sizes.astype(np.int32)
    step = max(1, 2**16 // max(n, 1))
    both = np.empty(step * n, dtype=np.uint64)
    bits = np.empty(step * n, dtype=np.uint8)
    inter = np.empty(step * n, dtype=np.int32)
    union = np.empty(step * n, dtype=np.int32)
    # The matrix is symmetric: each block of rows fills its columns from the diagonal on, and
    # the transpose of that fills the rows below.
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        shape = (hi - lo, n - lo)
        size = shape[0] * shape[1]
        b, c = both[:size].reshape(shape), bits[:size].reshape(shape)
        i, u = inter[:size].reshape(shape), union[:size].reshape(shape)
        for w in range(n_words):
            np.bitwise_and(words[lo:hi, None, w], words[None, lo:, w], out=b)
            if w == 0:
                np.bitwise_count(b, out=c)
                i[...] = c
            else:
                i += np.bitwise_count(b, out=c)
        np.add(sizes[lo:hi, None], sizes[None, lo:], out=u)
        u -= i
        np.subtract(u, i, out=i)
        if any_empty:  # two empty sets are one set: 0 / 1
            np.maximum(u, 1, out=u)
        # (|A u B| - |A n B|) / |A u B| as NLTK writes it, one correctly rounded division.
        np.divide(i, u, out=out[lo:hi, lo:])
        out[hi:, lo:hi] = out[lo:hi, hi:].T
    return out


# --- the ratings as integer columns ------------------------------------------------------------

_VERDICT_CODE = {v: i for i, v in enumerate(VERDICTS)}


def _refuse(r: Rating, problem: str) -> ValueError:
    return ValueError(f"rating {r.vignette_id} / {r.sub_action} / {r.rater}: {problem}")


@dataclass(frozen=True, eq=False)
class _Table:
    """Validated ratings as integer columns, one entry per rating in the order given.

    Names are coded in sorted order and bands in order of first appearance among the ratings
    sorted by (vignette, sub-action, rater), so no result depends on the order ratings arrive in.
    """

    rows: list[Rating]
    vignette: np.ndarray  # index into vignettes
    sub: np.ndarray  # index into subs
    rater: np.ndarray  # index into raters
    verdict: np.ndarray  # index into VERDICTS
    band: np.ndarray  # index into bands; -1 for DECLINE
    key: np.ndarray  # sorts as (vignette, sub-action, rater) do
    vignettes: list
    subs: list
    raters: list
    band_sub: np.ndarray  # per distinct band: its sub-action
    band_values: list[frozenset]  # per distinct band: its values

    @functools.cached_property
    def band_distance(self) -> np.ndarray:
        """Jaccard distance between distinct bands: within a sub-action only, 1 across."""
        n = len(self.band_values)
        d = np.empty((n, n))
        starts = np.flatnonzero(np.r_[True, self.band_sub[1:] != self.band_sub[:-1], True])
        for lo, hi in pairwise(starts.tolist()):  # bands are grouped by sub-action
            d[lo:hi, :lo] = 1.0
            jaccard_distances(self.band_values[lo:hi], out=d[lo:hi, lo:hi])
            d[lo:hi, hi:] = 1.0
        return d

    @functools.cached_property
    def order(self) -> np.ndarray:
        """Rating indices sorted by (vignette, sub-action, rater)."""
        return np.argsort(self.key, kind="stable")

    @functools.cached_property
    def intervals(self) -> list:
        return [r.interval for r in self.rows]


def _array(codes: list[int], n_codes: int) -> np.ndarray:
    """A list of codes in range(n_codes) as an array; below 256 through a bytearray, which
    converts a list five times as fast as np.fromiter."""
    if n_codes <= 256:
        return np.frombuffer(bytearray(codes), dtype=np.uint8).astype(np.intp)
    return np.fromiter(codes, np.intp, len(codes))


def _sorted_codes(codes: np.ndarray, keys: list) -> tuple[np.ndarray, list]:
    """Recode so that codes follow the sorted keys."""
    order = sorted(range(len(keys)), key=keys.__getitem__)
    rank = np.empty(len(keys), dtype=np.intp)
    rank[order] = np.arange(len(keys))
    return rank[codes], [keys[i] for i in order]


def _table(ratings: Iterable[Rating]) -> _Table:
    """Ratings to integer columns, one comprehension per attribute, validating as it goes.

    Refuses, naming the rating (the first in sorted order): an unknown verdict, a rating other
    than DECLINE without values, and a rater with two ratings of one band.
    """
    rows = ratings if isinstance(ratings, list) else list(ratings)
    n = len(rows)
    # One comprehension per attribute, with the dict lookup inline: about 40 ns per rating each,
    # against 50 to 60 through map() and a bound method.
    vignette_ids, sub_actions, rater_ids = _interner(), _interner(), _interner()
    vignette = _array([vignette_ids[r.vignette_id] for r in rows], len(vignette_ids))
    sub = _array([sub_actions[r.sub_action] for r in rows], len(sub_actions))
    rater = _array([rater_ids[r.rater] for r in rows], len(rater_ids))
    vignette, vignettes = _sorted_codes(vignette, list(vignette_ids))
    sub, subs = _sorted_codes(sub, list(sub_actions))
    rater, raters = _sorted_codes(rater, list(rater_ids))
    key = (vignette * len(subs) + sub) * len(raters) + rater

    def refuse(bad: np.ndarray, problem: Callable[[Rating], str]) -> ValueError:
        r = rows[int(bad[np.argmin(key[bad])])]
        return _refuse(r, problem(r))

    try:
        verdict = _array([_VERDICT_CODE[r.verdict] for r in rows], len(VERDICTS))
    except KeyError:
        bad = [i for i, r in enumerate(rows) if r.verdict not in _VERDICT_CODE]
        message = f"is not one of {', '.join(VERDICTS)}"
        raise refuse(np.array(bad), lambda r: f"verdict {r.verdict!r} {message}") from None
    rated = verdict != _VERDICT_CODE[DECLINE]

    bands = _interner()
    try:
        values = [bands[r.values] for r in rows]
    except TypeError:  # a band given as a set or a list: hashable as a frozenset
        bands = _interner()
        values = [bands[None if r.values is None else frozenset(r.values)] for r in rows]
    values = _array(values, len(bands))
    distinct = list(bands)
    if None in bands:
        missing = rated & (values == bands[None])
        if missing.any():
            raise refuse(
                np.flatnonzero(missing), lambda r: f"an {r.verdict} rating needs its band's values"
            )

    n_keys = len(vignettes) * len(subs) * len(raters)
    if n_keys <= 4 * n + 4096:
        repeated = np.bincount(key, minlength=n_keys)[key] > 1
    else:
        ordered = np.sort(key)
        repeated = np.isin(key, ordered[1:][ordered[1:] == ordered[:-1]])
    if repeated.any():
        raise refuse(np.flatnonzero(repeated), lambda r: "the rater has two ratings for this band")

    # Equal bands given as different types (a tuple, a frozenset) are one band.
    merged = _interner()
    as_set = np.array([-1 if v is None else merged[frozenset(v)] for v in distinct] or [-1])
    sets = list(merged)
    # A band is (sub-action, values). Bands are grouped by sub-action, so each sub-action's
    # bands are one block of the distance matrix, and ordered within it by the first rating
    # (in sorted order) that gives them: an order that does not depend on the input's.
    rated_rows = np.flatnonzero(rated)
    n_sets = max(len(sets), 1)
    used, position = _compact(
        sub[rated_rows] * n_sets + as_set[values[rated_rows]], len(subs) * n_sets
    )
    first = np.full(used.size, n_keys, dtype=key.dtype)
    np.minimum.at(first, position, key[rated_rows])
    by = np.lexsort((first, used // n_sets))
    rank = np.empty(by.size, dtype=np.intp)
    rank[by] = np.arange(by.size)
    band = np.full(n, -1, dtype=np.intp)
    band[rated_rows] = rank[position]
    return _Table(
        rows=rows,
        vignette=vignette,
        sub=sub,
        rater=rater,
        verdict=verdict,
        band=band,
        key=key,
        vignettes=vignettes,
        subs=subs,
        raters=raters,
        band_sub=used[by] // n_sets,
        band_values=[sets[i] for i in (used[by] % n_sets).tolist()],
    )


# --- observations --------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class _Observations:
    """Every value of one metric, all sub-actions, as integer codes for numpy."""

    unit: np.ndarray
    rater: np.ndarray
    value: np.ndarray
    sub: np.ndarray
    unit_vignette: np.ndarray  # per unit: index into vignettes
    vignettes: list
    subs: list
    labels: list
    distance: np.ndarray


def _codes(keys: Sequence[Hashable]) -> tuple[np.ndarray, list]:
    """Integer codes in order of first appearance, and the distinct keys in that order."""
    codes = _interner()
    return np.fromiter([codes[k] for k in keys], np.intp, len(keys)), list(codes)


def _observe(
    vignette: Sequence[str],
    sub: Sequence[str],
    unit: Sequence[Hashable],
    rater: Sequence[str],
    value: Sequence[Hashable],
    distance: Callable[[Sequence], np.ndarray],
) -> _Observations:
    """Parallel columns, one entry per value a rater gave a unit; a unit lies in one vignette."""
    vignette_codes, vignettes = _codes(vignette)
    unit_codes, units = _codes(unit)
    unit_vignette = np.zeros(len(units), dtype=np.intp)
    unit_vignette[unit_codes] = vignette_codes
    sub_codes, subs = _codes(sub)
    value_codes, labels = _codes(value)
    return _Observations(
        unit=unit_codes,
        rater=_codes(rater)[0],
        value=value_codes,
        sub=sub_codes,
        unit_vignette=unit_vignette,
        vignettes=vignettes,
        subs=subs,
        labels=labels,
        distance=distance(labels) if labels else np.zeros((0, 0)),
    )


def _table_observations(
    t: _Table,
    rows: np.ndarray,
    part: np.ndarray | int,
    n_parts: int,
    value: np.ndarray,
    labels: list,
    distance: np.ndarray,
) -> _Observations:
    """Observations of the ratings `rows`; a unit is (vignette, sub-action, part)."""
    sub = t.sub[rows]
    unit_key = (t.vignette[rows] * len(t.subs) + sub) * n_parts + part
    units, unit = _compact(unit_key, len(t.vignettes) * len(t.subs) * n_parts)
    return _Observations(
        unit=unit,
        rater=t.rater[rows],
        value=value,
        sub=sub,
        unit_vignette=units // (len(t.subs) * n_parts),
        vignettes=t.vignettes,
        subs=t.subs,
        labels=labels,
        distance=distance,
    )


def _compact(codes: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The codes in use (sorted) and each entry's position among them.

    Codes range over n values; when n is not much more than the entries, a count replaces a sort.
    """
    if n > 4 * codes.size + 4096:
        return np.unique(codes, return_inverse=True)
    present = np.bincount(codes, minlength=n) > 0
    return np.flatnonzero(present), (np.cumsum(present) - 1)[codes]


def _pairable(obs: _Observations, sub: str | None = None) -> Pairable:
    """Restrict to one sub-action (None: pooled) and to units holding two or more values.

    Dropping units with fewer than two values is what restricts every metric to bands with two
    or more raters: DECLINE never becomes a value except in the verdict metric.
    """
    unit, rater, value = obs.unit, obs.rater, obs.value
    if sub is not None:
        mask = obs.sub == (obs.subs.index(sub) if sub in obs.subs else -1)
        unit, rater, value = unit[mask], rater[mask], value[mask]
    n_units_all = obs.unit_vignette.size
    keep = np.bincount(unit, minlength=n_units_all)[unit] >= 2
    unit, rater, value = unit[keep], rater[keep], value[keep]
    if unit.size == 0:
        empty = np.zeros(0, dtype=np.intp)
        return Pairable((), np.zeros(0), np.zeros((0, 0)), np.zeros((0, 0)), (), 0, 0, *[empty] * 3)

    # Each unit's distinct values and their counts, units in order.
    n_all = len(obs.labels)
    key = unit * n_all + value
    if n_units_all * n_all < 2**31:  # int32 sorts in about half the time
        key = key.astype(np.int32)
    keys, counts = np.unique(key, return_counts=True)
    agg_unit, agg_value = keys // n_all, keys % n_all
    units, agg_u = _compact(agg_unit, n_units_all)
    counts = counts.astype(float)
    # c'Dc of every unit over all pairs of its distinct values: sum over units of k^2 terms.
    k = np.bincount(agg_u)
    first = np.cumsum(k) - k  # each unit's first entry
    span = k[agg_u]
    left = np.repeat(np.arange(agg_u.size), span)
    right = np.arange(left.size) - np.repeat(np.cumsum(span) - span, span) + first[agg_u][left]
    pair = counts[left] * counts[right] * obs.distance[agg_value[left], agg_value[right]]
    within = np.bincount(agg_u[left], weights=pair, minlength=units.size)
    m = np.bincount(agg_u, weights=counts, minlength=units.size)
    unit_observed = within / (m - 1.0)

    vignettes, unit_vig = _compact(obs.unit_vignette[units], len(obs.vignettes))
    used, agg_col = _compact(agg_value, n_all)
    per_vignette = np.bincount(
        unit_vig[agg_u] * used.size + agg_col, weights=counts, minlength=vignettes.size * used.size
    ).reshape(vignettes.size, used.size)
    raters, cell_rater = _compact(rater, int(rater.max()) + 1)
    unit_position = np.empty(n_units_all, dtype=np.intp)
    unit_position[units] = np.arange(units.size)
    value_position = np.empty(n_all, dtype=np.intp)
    value_position[used] = np.arange(used.size)
    every_label = used.size == n_all
    return Pairable(
        vignettes=tuple(obs.vignettes[i] for i in vignettes.tolist()),
        observed=np.bincount(unit_vig, weights=unit_observed, minlength=vignettes.size),
        counts=per_vignette,
        distance=obs.distance if every_label else obs.distance[np.ix_(used, used)],
        labels=tuple(obs.labels) if every_label else tuple(obs.labels[i] for i in used.tolist()),
        n_units=int(units.size),
        n_raters=int(raters.size),
        cell_unit=unit_position[unit],
        cell_rater=cell_rater,
        cell_value=value_position[value],
    )


# --- each metric's values ------------------------------------------------------------------------


def _band_observations(t: _Table, domains) -> _Observations:
    rows = np.flatnonzero(t.band >= 0)
    labels = list(zip([t.subs[s] for s in t.band_sub.tolist()], t.band_values, strict=True))
    return _table_observations(t, rows, 0, 1, t.band[rows], labels, t.band_distance)


def _membership_observations(t: _Table, domains: Mapping[str, Sequence]) -> _Observations:
    candidates = [list(domains.get(s, ())) for s in t.subs]
    # Whether each candidate is in each distinct band: Python work per band, not per rating.
    n_candidates = np.array([len(c) for c in candidates], dtype=np.intp)
    per_band = n_candidates[t.band_sub]
    inside = np.fromiter(
        (
            c in values
            for s, values in zip(t.band_sub.tolist(), t.band_values, strict=True)
            for c in candidates[s]
        ),
        dtype=np.intp,
        count=int(per_band.sum()),
    )
    rated = np.flatnonzero(t.band >= 0)
    rated = rated[n_candidates[t.sub[rated]] > 0]
    span = n_candidates[t.sub[rated]]
    rows = np.repeat(rated, span)
    part = np.arange(rows.size) - np.repeat(np.cumsum(span) - span, span)
    value = inside[(np.cumsum(per_band) - per_band)[t.band[rows]] + part]
    width = max(int(n_candidates.max()) if n_candidates.size else 0, 1)
    return _table_observations(t, rows, part, width, value, [0, 1], nominal_distances([0, 1]))


def _endpoint_observations(t: _Table, domains) -> _Observations:
    intervals = t.intervals
    rated = np.flatnonzero(t.band >= 0)
    rated = rated[[intervals[i] is not None for i in rated.tolist()]]
    ends = np.array([intervals[i] for i in rated.tolist()], dtype=np.int64).reshape(-1, 2)
    labels, value = np.unique(ends.ravel(), return_inverse=True)
    rows = np.repeat(rated, 2)
    part = np.tile(np.arange(2), rated.size)
    labels = labels.tolist()
    return _table_observations(t, rows, part, 2, value, labels, interval_distances(labels))


def _verdict_observations(t: _Table, domains) -> _Observations:
    rows = np.arange(t.verdict.size)
    return _table_observations(
        t, rows, 0, 1, t.verdict, list(range(len(VERDICTS))), nominal_distances(VERDICTS)
    )


# Per metric: its observations and its level for the krippendorff package (None: the set
# distance, computed here).
_METRICS = {
    "band": (_band_observations, None),
    "membership": (_membership_observations, "nominal"),
    "endpoints": (_endpoint_observations, "interval"),
    "verdict": (_verdict_observations, "nominal"),
}


def _observations(metric: str, t: _Table, domains: Mapping[str, Sequence]) -> _Observations:
    if metric not in _METRICS:
        raise ValueError(f"unknown metric {metric!r}; expected one of {', '.join(METRICS)}")
    return _METRICS[metric][0](t, domains)


@_gc_paused
def pairable_from_rows(
    rows: Iterable[tuple[str, str, Hashable, str, Hashable]],
    distance: Callable[[Sequence], np.ndarray],
) -> Pairable:
    """Pairable values from rows (vignette_id, sub_action, unit, rater, value) and a distance
    over the distinct values; the general form of every metric here."""
    columns = [list(c) for c in zip(*rows, strict=True)] or [[]] * 5
    return _pairable(_observe(*columns, distance=distance))


@_gc_paused
def tabulate(
    metric: str, ratings: Iterable[Rating], domains: Mapping[str, Sequence] | None = None
) -> Pairable:
    """The pairable values of one metric over the given ratings (all sub-actions pooled)."""
    return _pairable(_observations(metric, _table(ratings), domains or {}))


# --- alpha ---------------------------------------------------------------------------------------


def coincidence_alpha(p: Pairable) -> tuple[float | None, str | None]:
    """alpha = 1 - D_o / D_e from the summarised coincidences; (None, reason) when undefined."""
    if p.n_units == 0:
        return None, TOO_FEW_RATERS
    totals = p.counts.sum(axis=0)
    # einsum's own loop, not BLAS: threaded gemv stalls on a busy machine.
    expected = float(np.einsum("ij,j->i", p.distance, totals) @ totals)
    if expected <= 0.0:
        return None, NO_VARIATION
    n = float(totals.sum())
    return 1.0 - (n - 1.0) * float(p.observed.sum()) / expected, None


def reliability_data(p: Pairable) -> np.ndarray:
    """raters x units, np.nan where missing, as krippendorff.alpha takes it."""
    data = np.full((p.n_raters, p.n_units), np.nan)
    data[p.cell_rater, p.cell_unit] = np.asarray(p.labels, dtype=float)[p.cell_value]
    return data


def package_alpha(p: Pairable, level: str) -> tuple[float | None, str | None]:
    """alpha through the krippendorff package, unless its N x V x V arrays would be too big."""
    if p.n_units == 0:
        return None, TOO_FEW_RATERS
    n_values = len(p.labels)
    if 8 * 3 * p.n_units * n_values**2 + p.n_units * p.n_raters * n_values > PACKAGE_MEMORY_BUDGET:
        return coincidence_alpha(p)
    try:
        value = krippendorff.alpha(reliability_data=reliability_data(p), level_of_measurement=level)
    except ValueError as exc:
        # The package refuses a single distinct value; that is "no variation", never 1 or 0.
        if "more than one value" in str(exc):
            return None, NO_VARIATION
        if "at least two coders" in str(exc):
            return None, TOO_FEW_RATERS
        raise
    return float(value), None


def resample_weights(n_vignettes: int, B: int, seed: int) -> np.ndarray:
    """B x n_vignettes: how often each vignette is drawn when n_vignettes are drawn with
    replacement, from numpy's default Generator seeded with `seed`."""
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n_vignettes, size=(B, n_vignettes))
    flat = (draws + n_vignettes * np.arange(B)[:, None]).ravel()
    return np.bincount(flat, minlength=B * n_vignettes).reshape(B, n_vignettes).astype(float)


def resample_alphas(p: Pairable, weights: np.ndarray) -> np.ndarray:
    """alpha of each weighted resample of vignettes (rows of weights); nan where undefined."""
    weights = np.atleast_2d(weights)
    n = weights @ p.counts.sum(axis=1)
    observed = weights @ p.observed
    n_vig, n_val = p.counts.shape
    if n_vig * n_vig < n_vig * n_val + n_val * n_val:
        # Many distinct values (sets, pooled): w'Gw with G = C D C' per vignette pair.
        gram = (p.counts @ p.distance) @ p.counts.T
        expected = np.einsum("bi,bi->b", weights @ gram, weights)
    else:
        totals = weights @ p.counts
        expected = np.einsum("bi,bi->b", totals @ p.distance, totals)
    alphas = np.full(weights.shape[0], np.nan)
    ok = expected > 0.0
    alphas[ok] = 1.0 - (n[ok] - 1.0) * observed[ok] / expected[ok]
    return alphas


def bootstrap_alpha(
    p: Pairable,
    *,
    B: int = DEFAULT_B,
    seed: int = DEFAULT_SEED,
    weights: np.ndarray | None = None,
) -> Bootstrap:
    """Vignette-cluster bootstrap: resample vignettes with replacement, keeping all their units
    and ratings; percentile 95% interval over the resamples where alpha is defined.

    `weights` may pass in resample_weights(len(p.vignettes), B, seed) already drawn.
    """
    n_vig = len(p.vignettes)
    what = f"vignette-cluster bootstrap over {n_vig} vignettes"
    if n_vig < 2:
        return Bootstrap(None, None, None, None, 0, f"{what}: not computed, needs two vignettes")
    if weights is None:
        weights = resample_weights(n_vig, B, seed)
    alphas = resample_alphas(p, weights)
    alphas = alphas[~np.isnan(alphas)]
    used = f"B={B}" if alphas.size == B else f"B={B} ({alphas.size} usable)"
    method = f"{what}, {used}, seed={seed}, percentile 95%"
    if alphas.size == 0:
        return Bootstrap(None, None, None, None, 0, method)
    low, high = np.percentile(alphas, [2.5, 97.5])
    return Bootstrap(
        ci_low=float(low),
        ci_high=float(high),
        p_below_0800=float(np.mean(alphas < 0.800)),
        p_below_0667=float(np.mean(alphas < 0.667)),
        n_usable=int(alphas.size),
        method=method,
    )


def _alpha(
    metric: str,
    p: Pairable,
    *,
    B: int,
    seed: int,
    weights_for: Callable[[int], np.ndarray] | None = None,
) -> Alpha:
    level = _METRICS[metric][1]
    value, reason = coincidence_alpha(p) if level is None else package_alpha(p, level)
    result = Alpha(metric, value, reason, p.n_units, p.n_raters, p.n_pairable)
    if value is None or B <= 0:
        return result
    n_vig = len(p.vignettes)
    weights = weights_for(n_vig) if weights_for is not None and n_vig >= 2 else None
    boot = bootstrap_alpha(p, B=B, seed=seed, weights=weights)
    return Alpha(
        metric,
        value,
        None,
        p.n_units,
        p.n_raters,
        p.n_pairable,
        ci_low=boot.ci_low,
        ci_high=boot.ci_high,
        p_below_0800=boot.p_below_0800,
        p_below_0667=boot.p_below_0667,
        method=boot.method,
    )


def band_alpha(
    ratings: Iterable[Rating], *, bootstrap: int = DEFAULT_B, seed: int = DEFAULT_SEED
) -> Alpha:
    """Set-valued alpha, Jaccard distance between raters' value sets; DECLINE is missing.

    Over several sub-actions the bands are pooled, values of different sub-actions never match.
    """
    return _alpha("band", tabulate("band", ratings), B=bootstrap, seed=seed)


def membership_alpha(
    ratings: Iterable[Rating],
    domains: Mapping[str, Sequence],
    *,
    bootstrap: int = DEFAULT_B,
    seed: int = DEFAULT_SEED,
) -> Alpha:
    """Nominal alpha over units (vignette, sub-action, candidate value): in band or out."""
    return _alpha("membership", tabulate("membership", ratings, domains), B=bootstrap, seed=seed)


def endpoint_alpha(
    ratings: Iterable[Rating], *, bootstrap: int = DEFAULT_B, seed: int = DEFAULT_SEED
) -> Alpha:
    """Interval alpha over the min and the max of interval bands, as two units per band."""
    return _alpha("endpoints", tabulate("endpoints", ratings), B=bootstrap, seed=seed)


def verdict_alpha(
    ratings: Iterable[Rating], *, bootstrap: int = DEFAULT_B, seed: int = DEFAULT_SEED
) -> Alpha:
    """Nominal alpha over ACCEPT / AMEND / DECLINE; here DECLINE is a category."""
    return _alpha("verdict", tabulate("verdict", ratings), B=bootstrap, seed=seed)


# --- consensus -----------------------------------------------------------------------------------


def consensus(values_by_rater: Sequence[frozenset]) -> Consensus:
    """The intersection rule: what every rater admits; what only some admit is disputed."""
    sets = [frozenset(v) for v in values_by_rater]
    if len(sets) < 2:
        # One rater's band is not a consensus: the rule does not bind.
        return Consensus("absent", None, None, len(sets))
    common = frozenset.intersection(*sets)
    disputed = frozenset.union(*sets) - common
    return Consensus("applied" if common else "empty", common or None, disputed or None, len(sets))


def mean_jaccard(sets: Sequence[frozenset]) -> float | None:
    """Mean Jaccard distance over pairs of raters; None with fewer than two."""
    if len(sets) < 2:
        return None
    # Raters mostly repeat a few bands, so work over distinct sets; plain Python beats numpy
    # at this size.
    distinct = list(Counter(sets).items())
    total = 0.0
    for i, (a, count_a) in enumerate(distinct):
        for b, count_b in distinct[i + 1 :]:
            union = len(a | b)
            if union:
                total += count_a * count_b * (union - len(a & b)) / union
    m = len(sets)
    return 2.0 * total / (m * (m - 1))


@_gc_paused
def band_agreements(ratings: Iterable[Rating]) -> list[BandAgreement]:
    """Consensus and disagreement of every rated band, ordered by vignette and sub-action."""
    return _band_agreements(_table(ratings))


def _band_agreements(t: _Table) -> list[BandAgreement]:
    order = t.order
    if len(order) == 0:
        return []
    band_key = t.vignette[order] * len(t.subs) + t.sub[order]
    bounds = np.flatnonzero(np.r_[True, band_key[1:] != band_key[:-1], True]).tolist()
    codes = t.band[order].tolist()
    vignette, sub = t.vignette[order].tolist(), t.sub[order].tolist()
    out = []
    for lo, hi in pairwise(bounds):
        sets = [t.band_values[b] for b in codes[lo:hi] if b >= 0]
        out.append(
            BandAgreement(
                vignette_id=t.vignettes[vignette[lo]],
                sub_action=t.subs[sub[lo]],
                n_raters=len(sets),
                n_declined=hi - lo - len(sets),
                consensus=consensus(sets),
                disagreement=mean_jaccard(sets),
            )
        )
    return out


def most_disputed_first(bands: Iterable[BandAgreement]) -> list[BandAgreement]:
    """Highest mean pairwise Jaccard distance first; bands with fewer than two raters last."""
    return sorted(
        bands,
        key=lambda b: (
            b.disagreement is None,
            -(b.disagreement or 0.0),
            b.vignette_id,
            b.sub_action,
        ),
    )


# --- the report ----------------------------------------------------------------------------------


@_gc_paused
def agreement_report(
    ratings: Iterable[Rating],
    domains: Mapping[str, Sequence],
    *,
    bootstrap: int = DEFAULT_B,
    seed: int = DEFAULT_SEED,
) -> Report:
    """Every metric per sub-action and pooled, plus each band's consensus.

    A metric is left out where it cannot apply: membership for sub-actions without a domain in
    `domains`, endpoints for sub-actions no rater answered with an interval. "pooled" puts every
    unit of a metric in one reliability matrix: band values of different sub-actions never
    match, and pooled endpoints mix scales (days, score points, levels), so the larger scales
    dominate it; read the per-sub-action values first. All bootstraps use the same seed.
    """
    t = _table(ratings)
    subs = t.subs
    with_interval = [i for i, interval in enumerate(t.intervals) if interval is not None]
    applies = {
        "band": set(subs),
        "membership": {s for s in subs if s in domains},
        "endpoints": {subs[s] for s in set(t.sub[with_interval].tolist())},
        "verdict": set(subs),
    }
    drawn: dict[int, np.ndarray] = {}

    def weights_for(n_vig: int) -> np.ndarray:
        # The draws depend only on (vignette count, B, seed): identical to drawing them afresh.
        if n_vig not in drawn:
            drawn[n_vig] = resample_weights(n_vig, bootstrap, seed)
        return drawn[n_vig]

    metrics: dict[str, dict[str, Alpha]] = {s: {} for s in [*subs, POOLED]}
    for metric in METRICS:
        if not applies[metric]:
            continue
        obs = _observations(metric, t, domains)
        for scope in [*subs, POOLED]:
            if scope == POOLED or scope in applies[metric]:
                p = _pairable(obs, None if scope == POOLED else scope)
                metrics[scope][metric] = _alpha(
                    metric, p, B=bootstrap, seed=seed, weights_for=weights_for
                )
    return Report(metrics=metrics, bands=tuple(_band_agreements(t)))


def _sorted_list(sub_action: str, values: frozenset) -> list:
    return sorted(values)


def report_to_json(
    report: Report,
    to_harness: Callable[[str, frozenset], list | dict] | None = None,
) -> dict[str, Any]:
    """The report as JSON-ready plain data; `to_harness` writes consensus and disputed spans."""
    convert = to_harness or _sorted_list

    def span(sub: str, values: frozenset | None):
        return None if values is None else convert(sub, values)

    def absent(metric: str, scope: str) -> Alpha:
        return Alpha(metric, None, NOT_APPLICABLE[metric], 0, 0, 0)

    return {
        "metrics": {
            scope: {
                metric: {
                    "alpha": a.alpha,
                    "reason": a.reason,
                    "n_units": a.n_units,
                    "n_raters": a.n_raters,
                    "n_pairable": a.n_pairable,
                    "ci_low": a.ci_low,
                    "ci_high": a.ci_high,
                    "p_below_0800": a.p_below_0800,
                    "p_below_0667": a.p_below_0667,
                    "method": a.method,
                }
                for metric in METRICS
                for a in [by_metric.get(metric) or absent(metric, scope)]
            }
            for scope, by_metric in report.metrics.items()
        },
        "bands": [
            {
                "vignette_id": b.vignette_id,
                "sub_action": b.sub_action,
                "n_raters": b.n_raters,
                "consensus": span(b.sub_action, b.consensus.consensus),
                "disputed_span": span(b.sub_action, b.consensus.disputed),
                "intersection_rule": b.consensus.rule,
            }
            for b in report.bands
        ],
    }
