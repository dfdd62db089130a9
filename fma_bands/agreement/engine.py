"""The coincidence engine (Krippendorff 2011): one sub-action's pairable values for one metric,
alpha from its observed and expected disagreement, and the same for weighted resamples of its
vignettes, so that the bootstrap and the stratified pooled alpha are a few matrix products.
"""

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Literal, cast

import krippendorff
import numpy as np

# Levels of measurement: Krippendorff's standard ones, the Jaccard distance between two sets of
# values, and for orders the mean of the Jaccard distances of `required` and of `defensible`.
STANDARD_LEVELS = ("nominal", "ordinal", "interval")
LEVELS = (*STANDARD_LEVELS, "jaccard", "orders")
# krippendorff.alpha builds several units x values x values float arrays; past this size the
# engine computes the same alpha itself (the tests hold the two together at 1e-12).
PACKAGE_MEMORY_BUDGET = 64 * 2**20

# One unit: the vignette it belongs to, and each rater's value for it.
Unit = tuple[str, Mapping[str, Any]]


class _Declined:
    """A DECLINE counted as maximal disagreement: at the largest distance of its level from
    every value, another DECLINE included (docs/statistics.md, Declines)."""

    def __repr__(self) -> str:
        return "DECLINED"


DECLINED = _Declined()


@dataclass(frozen=True, eq=False)
class Stratum:
    """One sub-action's pairable values for one metric: its units with two or more values.

    `unit_counts[u, c]` is how many raters gave unit u the value `labels[c]`; unit u lies in
    vignette `vignettes[unit_vignette[u]]`. `distance` is labels x labels, or None at the
    ordinal level, whose distances depend on how often each value occurs (so on the resample).
    `unit_declines[u]` is how many raters' DECLINE unit u counts as maximal disagreement (zero
    unless the stratum was built with DECLINED values).
    """

    level: str
    labels: tuple
    vignettes: tuple[str, ...]
    unit_vignette: np.ndarray
    unit_counts: np.ndarray
    distance: np.ndarray | None
    raters: frozenset[str]
    unit_declines: np.ndarray | None = None
    # Who gave each value: cell i is rater `rater_names[cell_rater[i]]`'s value in unit
    # `cell_unit[i]`, column `cell_column[i]` (len(labels) for a DECLINE); for without().
    rater_names: tuple[str, ...] = ()
    cell_unit: np.ndarray | None = None
    cell_column: np.ndarray | None = None
    cell_rater: np.ndarray | None = None
    # The last resamples' disagreements, so that a pool reuses its sub-actions' (same draws).
    memo: list = field(default_factory=list, repr=False)

    @property
    def n_units(self) -> int:
        return len(self.unit_vignette)

    @property
    def n_pairable(self) -> int:
        return int(self.unit_counts.sum())

    @cached_property
    def declines(self) -> np.ndarray:
        """Per unit, the DECLINEs it counts (zeros for a stratum without them)."""
        if self.unit_declines is None:
            return np.zeros(self.n_units)
        return self.unit_declines

    @cached_property
    def sizes(self) -> np.ndarray:
        """Per unit, m_u: its values and the DECLINEs it counts."""
        return self.unit_counts.sum(axis=1) + self.declines

    def resampled(
        self, weights: np.ndarray, columns: Sequence[int]
    ) -> tuple[np.ndarray, np.ndarray]:
        """disagreement(self, weights[:, columns]), reused while the same weights come again:
        each sub-action's alpha and the pool it is part of draw the same resamples."""
        chosen = np.asarray(columns, dtype=np.intp)
        for held, at, found in self.memo:
            if held is weights and np.array_equal(at, chosen):
                return found
        found = disagreement(self, weights[:, chosen])
        self.memo[:] = [*self.memo[-1:], (weights, chosen, found)]
        return found

    def without(self, rater: str) -> "Stratum":
        """The same stratum with one rater's values taken out (units left with fewer than two
        values dropped), over the same labels and distances: the leave-one-rater-out alpha."""
        assert self.cell_unit is not None and self.cell_column is not None
        assert self.cell_rater is not None
        if rater not in self.rater_names:
            return self
        keep = self.cell_rater != self.rater_names.index(rater)
        counts, declines = value_counts(
            self.cell_unit[keep], self.cell_column[keep], self.n_units, len(self.labels)
        )
        pairable = counts.sum(axis=1) + declines >= 2
        if not pairable.all():  # else no copy: a unit per vignette is the rule for bands
            counts, declines = counts[pairable], declines[pairable]
        renumber = np.cumsum(pairable) - 1
        kept = keep & pairable[self.cell_unit]
        used = sorted(set(self.unit_vignette[pairable].tolist()))
        row = np.full(len(self.vignettes), -1, dtype=np.intp)
        row[used] = np.arange(len(used))
        return replace(
            self,
            vignettes=tuple(self.vignettes[v] for v in used),
            unit_vignette=row[self.unit_vignette[pairable]],
            unit_counts=counts,
            raters=frozenset(self.rater_names[i] for i in set(self.cell_rater[kept].tolist())),
            unit_declines=declines if declines.any() else None,
            cell_unit=renumber[self.cell_unit[kept]],
            cell_column=self.cell_column[kept],
            cell_rater=self.cell_rater[kept],
            memo=[],
        )

    @property
    def varies(self) -> bool:
        """Two or more values among its pairable values: a stratum holding one value has no
        expected disagreement, so it adds nothing to a pooled alpha."""
        return int((self.unit_counts.sum(axis=0) > 0).sum()) >= 2

    # Per-vignette sums, each computed once: every disagreement is linear in them, so a resample
    # of vignettes (the bootstrap, and each pool the stratum is part of) reuses them.

    @cached_property
    def counts(self) -> np.ndarray:
        """vignettes x values: the pairable values of each value in each vignette."""
        if np.array_equal(self.unit_vignette, np.arange(len(self.vignettes))):
            # One unit per vignette, in the vignettes' order (a sub-action's bands): the unit
            # counts are these sums, and a copy of them would be a second vignettes x values
            # array (one of thousands of distinct orders bands at 1,000 vignettes is 20 MB).
            return self.unit_counts
        # Summed over the values each unit holds (a few), never over units x values: a
        # stratum of thousands of distinct orders bands would make three such arrays.
        unit, column = np.nonzero(self.unit_counts)
        return tally(
            self.unit_vignette[unit],
            column,
            (len(self.vignettes), len(self.labels)),
            self.unit_counts[unit, column],
        )

    @cached_property
    def vignette_values(self) -> np.ndarray:
        """Per vignette: its pairable values (DECLINEs apart)."""
        return self.counts.sum(axis=1)

    @cached_property
    def coincidences(self) -> np.ndarray:
        """vignettes x values^2: each vignette's sum over its units of c c' / (m_u - 1)."""
        share = self.unit_counts / (self.sizes - 1.0)[:, None]
        pairs = np.zeros((len(self.vignettes), len(self.labels), len(self.labels)))
        np.add.at(pairs, self.unit_vignette, share[:, :, None] * self.unit_counts[:, None, :])
        return pairs.reshape(len(self.vignettes), len(self.labels) ** 2)

    @cached_property
    def observed(self) -> np.ndarray:
        """Per vignette, at a fixed distance: the sum over its units of c'Dc / (m_u - 1)."""
        assert self.distance is not None
        if self.cell_unit is None:
            within = ((self.unit_counts @ self.distance) * self.unit_counts).sum(axis=1)
        else:
            within = self._within()
        return np.bincount(
            self.unit_vignette, within / (self.sizes - 1.0), minlength=len(self.vignettes)
        )

    def _within(self) -> np.ndarray:
        """Per unit, c'Dc as the sum of D over every ordered pair of its raters' values: a few
        raters per unit, where c'Dc over every label costs labels^2 a unit (orders bands have
        hundreds of labels)."""
        assert self.distance is not None and self.cell_unit is not None
        assert self.cell_column is not None and self.cell_rater is not None
        if not self.labels:  # only DECLINEs: nothing to sum
            return np.zeros(self.n_units)
        held = self.cell_column < len(self.labels)  # a DECLINE is counted apart
        given = np.full((self.n_units, len(self.rater_names)), -1, dtype=np.intp)
        given[self.cell_unit[held], self.cell_rater[held]] = self.cell_column[held]
        valid = given >= 0
        at = np.where(valid, given, 0)
        pairs = self.distance[at[:, :, None], at[:, None, :]]
        return (pairs * (valid[:, :, None] & valid[:, None, :])).sum(axis=(1, 2))

    @cached_property
    def declined_pairs(self) -> np.ndarray:
        """Per vignette: the sum over its units of the pairs holding a DECLINE, 2 k (m_u - k) +
        k (k - 1) for k DECLINEs, over (m_u - 1); each such pair is at the maximal distance."""
        k = self.declines
        pairs = (2.0 * k * (self.sizes - k) + k * (k - 1.0)) / (self.sizes - 1.0)
        return np.bincount(self.unit_vignette, pairs, minlength=len(self.vignettes))

    @cached_property
    def vignette_declines(self) -> np.ndarray:
        """Per vignette: the DECLINEs its units count."""
        return np.bincount(self.unit_vignette, self.declines, minlength=len(self.vignettes))

    @property
    def maximal(self) -> float:
        """The largest distance at a fixed-distance level: 1 for nominal, Jaccard and orders;
        for interval, the squared range of the values given (1 with fewer than two)."""
        if self.level == "interval":
            return (
                float(self.distance.max())
                if self.distance is not None and len(self.labels) > 1
                else 1.0
            )
        return 1.0

    @cached_property
    def gram(self) -> np.ndarray:
        """vignettes x vignettes: C D C', so that t'Dt = w'Gw for a resample w (t = w'C)."""
        assert self.distance is not None
        counts = self.counts
        gram = np.empty((len(counts), len(counts)))
        # A block of rows at a time: C D whole would be another vignettes x values array.
        for start in range(0, len(counts), _BLOCK):
            rows = slice(start, start + _BLOCK)
            gram[rows] = counts[rows] @ self.distance @ counts.T
        return gram


def tally(
    rows: np.ndarray,
    columns: np.ndarray,
    shape: tuple[int, int],
    counts: np.ndarray | None = None,
) -> np.ndarray:
    """A rows x columns array of floats holding at each cell how many (rows[i], columns[i]) name
    it, or the sum of their `counts`: numpy's add.at, which costs per element. The counts are
    whole numbers, so the sums are exact in any order."""
    cells = np.asarray(rows, dtype=np.intp) * shape[1] + np.asarray(columns, dtype=np.intp)
    # Weights of one each when none are given: bincount then sums as floats, and the array it
    # makes is the one returned (without weights it counts in integers, and a float copy of
    # them was a second array of the whole shape).
    weights = np.ones(len(cells)) if counts is None else counts
    return np.bincount(cells, weights=weights, minlength=shape[0] * shape[1]).reshape(shape)


def value_counts(
    units: np.ndarray, columns: np.ndarray, n_units: int, n_labels: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per unit, how many of these cells give each of `n_labels` values (units x values), and
    how many are a DECLINE (column `n_labels`): made apart, never as one units x (values + 1)
    array to be split, which at a thousand distinct orders bands were two arrays of 20 MB."""
    declined = columns == n_labels
    counts = tally(units[~declined], columns[~declined], (n_units, n_labels))
    return counts, np.bincount(units[declined], minlength=n_units).astype(float)


def stratum(level: str, units: Iterable[Unit], like: Stratum | None = None) -> Stratum:
    """The pairable part of `units` at `level`: units with fewer than two values are dropped
    (a lone value pairs with nothing). Labels are sorted, so nothing depends on input order.
    A stratum `like` this one with the same labels lends its distances (computed once)."""
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}; expected one of {', '.join(LEVELS)}")
    kept = [(vignette, values) for vignette, values in units if len(values) >= 2]
    found = {v for _, values in kept for v in values.values()}
    labels = tuple(sorted(found - {DECLINED}))
    vignettes = tuple(sorted({vignette for vignette, _ in kept}))
    column: dict[Any, int] = {label: i for i, label in enumerate(labels)}
    column[DECLINED] = len(labels)  # a last column, counted apart
    row = {vignette: i for i, vignette in enumerate(vignettes)}
    names = tuple(sorted({rater for _, values in kept for rater in values}))
    who = {rater: i for i, rater in enumerate(names)}
    cells = np.array(
        [(u, column[v], who[r]) for u, (_, values) in enumerate(kept) for r, v in values.items()],
        dtype=np.intp,
    ).reshape(-1, 3)
    counts, declines = value_counts(cells[:, 0], cells[:, 1], len(kept), len(labels))
    if level == "ordinal":
        distance = None
    elif like is not None and like.level == level and like.labels == labels:
        distance = like.distance
    else:
        distance = DISTANCES[level](labels)
    return Stratum(
        level=level,
        labels=labels,
        vignettes=vignettes,
        unit_vignette=np.array([row[vignette] for vignette, _ in kept], dtype=np.intp),
        unit_counts=counts,
        distance=distance,
        raters=frozenset(names),
        unit_declines=declines if declines.any() else None,
        rater_names=names,
        cell_unit=cells[:, 0],
        cell_column=cells[:, 1],
        cell_rater=cells[:, 2],
    )


# --- distances -----------------------------------------------------------------------------------


def nominal_distances(labels: Sequence) -> np.ndarray:
    return 1.0 - np.eye(len(labels))


def interval_distances(labels: Sequence) -> np.ndarray:
    a = np.asarray(labels, dtype=float)
    return (a[:, None] - a[None, :]) ** 2


def ordinal_distances(totals: np.ndarray) -> np.ndarray:
    """Krippendorff's ordinal distances for each row of `totals` (resamples x values, the values
    in order): (n_c/2 + the n_g strictly between + n_k/2)^2, the interval distance between the
    values' mid-ranks. Returns resamples x values x values."""
    mid = np.cumsum(totals, axis=1) - totals / 2.0
    return (mid[:, :, None] - mid[:, None, :]) ** 2


def jaccard_distances(sets: Sequence[Collection]) -> np.ndarray:
    """1 - |A n B| / |A u B| between every two sets; two empty sets are at distance 0.

    Computed as NLTK's jaccard_distance is, (|A u B| - |A n B|) / |A u B|, from exact integer
    counts, so the two agree to the last bit."""
    distances = np.empty((len(sets), len(sets)))
    _jaccard_rows(sets, distances, add=False)
    return distances


def orders_distances(labels: Sequence[tuple[Collection, Collection]]) -> np.ndarray:
    """Orders bands as (required, defensible): the mean of the two Jaccard distances, so two
    raters who differ only in what they require do not agree."""
    distances = jaccard_distances([r for r, _ in labels])
    _jaccard_rows([d for _, d in labels], distances, add=True)
    distances /= 2.0
    return distances


# Rows of distances computed at a time: the square matrix written is then all that a study's
# thousands of distinct orders bands hold at once (each further square was 50 MB at 1,000
# vignettes), and a block costs a few rows of it.
_BLOCK = 128


def _jaccard_rows(sets: Sequence[Collection], out: np.ndarray, *, add: bool) -> None:
    """Write (or with `add`, add) the Jaccard distances between every two of `sets` into
    `out`, a block of rows at a time."""
    elements = {e: i for i, e in enumerate(sorted({e for s in sets for e in s}))}
    member = np.zeros((len(sets), len(elements)))
    for i, s in enumerate(sets):
        member[i, [elements[e] for e in s]] = 1.0
    sizes = member.sum(axis=1)
    for start in range(0, len(sets), _BLOCK):
        rows = slice(start, start + _BLOCK)
        both = member[rows] @ member.T
        either = np.add.outer(sizes[rows], sizes)
        either -= both
        apart = np.subtract(either, both, out=both)  # 0 where either is 0 (two empty sets)
        np.divide(apart, either, out=apart, where=either > 0)
        if add:
            out[rows] += apart
        else:
            out[rows] = apart


DISTANCES: dict[str, Callable[[Sequence], np.ndarray]] = {
    "nominal": nominal_distances,
    "interval": interval_distances,
    "jaccard": jaccard_distances,
    "orders": orders_distances,
}


# --- disagreement and alpha ----------------------------------------------------------------------


def disagreement(s: Stratum, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Observed and expected disagreement of each weighted resample, as n D_o and n D_e.

    `weights[b, v]` is how often resample b draws vignette `s.vignettes[v]` (ones: the data as
    they are). n D_o is the sum over units of c'Dc / (m_u - 1), c the unit's value counts and m_u
    their sum; n D_e is t'Dt / (n - 1), t the counts over all units and n their sum. Distances
    of a value to itself are 0, so the diagonals of both coincidence matrices drop out. A DECLINE
    counted as maximal disagreement is at the level's largest distance from every value, another
    DECLINE included, so its pairs add that distance to both sums.
    """
    weights = np.atleast_2d(np.asarray(weights, dtype=float))
    declined = weights @ s.vignette_declines
    values = weights @ s.vignette_values
    n = values + declined
    if s.distance is None:  # ordinal: the distances follow each resample's value counts
        totals = weights @ s.counts
        d = ordinal_distances(totals)
        observed = ((weights @ s.coincidences).reshape(d.shape) * d).sum(axis=(1, 2))
        expected = (totals[:, :, None] * d * totals[:, None, :]).sum(axis=(1, 2))
        maximal = d.max(axis=(1, 2)) if d.size else np.zeros(len(n))
    else:
        observed = weights @ s.observed
        if len(s.labels) > len(s.vignettes) and 2 * weights.shape[0] >= len(s.vignettes):
            # Many distinct values (orders bands, say) and many resamples: vignettes x
            # vignettes per resample instead of values x values, once C D C' is made (a
            # cached_property, as costly as a resample per vignette; the diagnostics' planning
            # asks for a few hundred at a time, the bootstraps for more). Chosen by the
            # stratum and the number of resamples alone, so that a figure is computed the same
            # way whatever was computed before it.
            expected = ((weights @ s.gram) * weights).sum(axis=1)
        else:
            totals = weights @ s.counts
            expected = ((totals @ s.distance) * totals).sum(axis=1)
        maximal = np.full(len(n), s.maximal)
    if s.unit_declines is not None:
        observed = observed + maximal * (weights @ s.declined_pairs)
        expected = expected + maximal * (2.0 * declined * values + declined * (declined - 1.0))
    # With fewer than two values t'Dt is 0 already; the guard only keeps 0 / 0 out.
    return observed, expected / np.maximum(n - 1.0, 1.0)


def alphas(strata: Sequence[Stratum], weights: np.ndarray, vignettes: Sequence[str]) -> np.ndarray:
    """alpha = 1 - sum_s n_s D_o(s) / sum_s n_s D_e(s) for each resample (rows of `weights`,
    columns the given vignettes); NaN where no stratum varies (alpha is undefined there).

    With one stratum this is Krippendorff's alpha; with several it is the alpha stratified by
    sub-action: pairs across strata never enter either disagreement.
    """
    weights = np.atleast_2d(np.asarray(weights, dtype=float))
    column = {v: i for i, v in enumerate(vignettes)}
    observed = np.zeros(weights.shape[0])
    expected = np.zeros(weights.shape[0])
    for s in strata:
        o, e = s.resampled(weights, [column[v] for v in s.vignettes])
        observed += o
        expected += e
    out = np.full(weights.shape[0], np.nan)
    varies = expected > 0.0
    out[varies] = 1.0 - observed[varies] / expected[varies]
    return out


def point_alpha(strata: Sequence[Stratum]) -> float | None:
    """alpha of the data as they are; None when undefined (no variation, or nothing pairable)."""
    vignettes = sorted({v for s in strata for v in s.vignettes})
    value = float(alphas(strata, np.ones((1, len(vignettes))), vignettes)[0])
    return None if np.isnan(value) else value


def package_alpha(s: Stratum) -> float | None:
    """alpha of one stratum at a standard level through the krippendorff package (the reference
    implementation), or through the engine when the package's arrays would not fit in memory."""
    if s.level not in STANDARD_LEVELS:
        raise ValueError(f"the krippendorff package has no {s.level!r} level")
    if s.unit_declines is not None:
        return point_alpha([s])  # DECLINE as maximal disagreement is no standard level
    if s.n_units == 0 or len(s.labels) < 2:
        return None  # nothing pairable, or no variation: the package would raise
    if 8 * 3 * s.n_units * len(s.labels) ** 2 > PACKAGE_MEMORY_BUDGET:
        return point_alpha([s])
    value = krippendorff.alpha(
        value_counts=s.unit_counts,
        value_domain=np.asarray(s.labels, dtype=float),
        level_of_measurement=cast(Literal["nominal", "ordinal", "interval"], s.level),
    )
    return float(value)


def observed_expected(strata: Sequence[Stratum]) -> tuple[float, float] | None:
    """D_o and D_e of the data as they are (over all strata: sum n_s D(s) / sum n_s), so that
    alpha = 1 - D_o / D_e; None with nothing pairable."""
    n = sum(float(s.sizes.sum()) for s in strata)
    if n == 0:
        return None
    observed = expected = 0.0
    for s in strata:
        o, e = disagreement(s, np.ones((1, len(s.vignettes))))
        observed += float(o[0])
        expected += float(e[0])
    return observed / n, expected / n


def exact_agreement(strata: Sequence[Stratum]) -> float | None:
    """Percent agreement: the share of pairable pairs (two raters' values in one unit, each
    unit's pairs weighted 1 / (m_u - 1) as in the coincidence matrix) whose values are equal."""
    n = sum(float(s.sizes.sum()) for s in strata)
    if n == 0:
        return None
    same = sum(
        float(((s.unit_counts * (s.unit_counts - 1.0)).sum(axis=1) / (s.sizes - 1.0)).sum())
        for s in strata
    )
    return same / n
