"""Published values through the public functions: Krippendorff (2011) and Hayes and Krippendorff
(2007), at each metric's level, to 1e-12 against the exact values and the krippendorff package."""

from fractions import Fraction

import krippendorff
import numpy as np
import pytest

from fma_bands.agreement import band_alpha, lower_alpha, membership_alpha, upper_alpha
from tests.agreement.build import table

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability": 4 observers x 12 units.
K2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
]
K2011_ALPHA = {
    "nominal": Fraction(113, 152),
    "ordinal": Fraction(108577, 133160),
    "interval": Fraction(951, 1120),
}
K2011_PUBLISHED = {"nominal": 0.743, "ordinal": 0.815, "interval": 0.849}
# Hayes and Krippendorff (2007), Table 1: 40 news articles x 5 observers, tone 0 to 3.
HAYES_2007 = """\
1 1 2 . 2|1 1 0 1 .|2 3 3 3 .|. 0 0 . 0|0 0 0 . 0|0 0 0 . 0|1 0 2 . 1|1 . 2 0 .
2 2 2 . 2|2 1 1 1 .|. 1 0 0 .|0 0 0 0 .|1 2 2 2 .|3 3 2 2 3|1 1 1 . 1|1 1 1 . 1
2 1 2 . 2|1 2 3 3 .|1 1 0 1 .|0 0 0 . 0|0 0 1 1 .|0 0 . 0 0|2 3 3 3 .|0 0 0 0 .
1 2 . 2 2|0 1 1 1 .|0 0 0 1 0|1 2 1 2 .|1 1 2 2 .|1 1 2 . 2|1 1 0 . 0|2 1 2 1 .
2 2 . 2 2|3 2 2 2 .|2 2 2 . 2|2 2 3 . 2|2 2 2 . 2|2 2 . 1 2|2 2 2 2 .|1 1 1 . 1"""
HAYES_2007_ORDINAL = 0.7598292  # as published, and as the package, NLTK and R's irr give it


def hayes_2007() -> list[list[int | None]]:
    """Observers x units."""
    units = [u.split() for line in HAYES_2007.splitlines() for u in line.split("|")]
    return [[None if u[i] == "." else int(u[i]) for u in units] for i in range(5)]


def as_array(rows) -> np.ndarray:
    return np.array([[np.nan if v is None else v for v in row] for row in rows], dtype=float)


def exact_k2011_alpha(level: str) -> Fraction:
    """Krippendorff's (2011) procedure in exact arithmetic, independent of numpy and the package."""
    values = [1, 2, 3, 4, 5]
    o = {(c, k): Fraction(0) for c in values for k in values}
    for j in range(12):
        column = [v for v in (row[j] for row in K2011) if v is not None]
        for a, c in enumerate(column):
            for b, k in enumerate(column):
                if a != b:
                    o[(c, k)] += Fraction(1, len(column) - 1)
    n_c = {c: sum(o[(c, k)] for k in values) for c in values}
    n = sum(n_c.values())

    def delta(c, k):
        if level == "nominal":
            return Fraction(int(c != k))
        if level == "ordinal":
            between = sum(n_c[g] for g in values if min(c, k) <= g <= max(c, k))
            return (between - (n_c[c] + n_c[k]) / 2) ** 2
        return Fraction((c - k) ** 2)

    observed = sum(o[(c, k)] * delta(c, k) for c in values for k in values)
    expected = sum(n_c[c] * n_c[k] * delta(c, k) for c in values for k in values) / (n - 1)
    return 1 - observed / expected


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_the_gold_values_are_krippendorffs(level):
    assert exact_k2011_alpha(level) == K2011_ALPHA[level]
    assert round(float(K2011_ALPHA[level]), 3) == K2011_PUBLISHED[level]
    package = krippendorff.alpha(reliability_data=as_array(K2011), level_of_measurement=level)
    assert package == pytest.approx(float(K2011_ALPHA[level]), abs=1e-12)


@pytest.mark.parametrize("form", ["set", "interval"])
def test_band_alpha_of_one_value_bands_is_nominal_alpha(form):
    # Two one-value bands are at Jaccard distance 0 or 1: the nominal distance.
    a = band_alpha(table("esi_acuity", K2011, form), bootstrap=0)
    assert a.alpha == pytest.approx(float(K2011_ALPHA["nominal"]), abs=1e-12)
    # Unit 12 has one value: it pairs with nothing, as Krippendorff counts it.
    assert (a.n_bands, a.n_units, a.n_pairable, a.n_raters) == (11, 11, 40, 4)


@pytest.mark.parametrize("form", ["set", "interval"])
@pytest.mark.parametrize("metric", [lower_alpha, upper_alpha])
def test_lower_and_upper_of_esi_are_ordinal(metric, form):
    a = metric(table("esi_acuity", K2011, form), bootstrap=0)
    assert a.level == "ordinal"
    assert a.alpha == pytest.approx(float(K2011_ALPHA["ordinal"]), abs=1e-12)


@pytest.mark.parametrize("sub", ["urgency_score", "followup_days"])
@pytest.mark.parametrize("metric", [lower_alpha, upper_alpha])
def test_lower_and_upper_of_scores_and_counts_are_interval(metric, sub):
    a = metric(table(sub, K2011, "interval"), bootstrap=0)
    assert a.level == "interval"
    assert a.alpha == pytest.approx(float(K2011_ALPHA["interval"]), abs=1e-12)


def test_hayes_and_krippendorff_2007_through_lower_analgesia():
    rows = hayes_2007()
    assert sum(v is not None for row in rows for v in row) == 159
    package = krippendorff.alpha(reliability_data=as_array(rows), level_of_measurement="ordinal")
    assert package == pytest.approx(HAYES_2007_ORDINAL, abs=5e-8)
    # Half the raters wrote their bands as intervals: lower is over the lowest value either way.
    sets = table("analgesia_tier", rows, "set")
    intervals = table("analgesia_tier", rows, "interval")
    mixed = [
        s if s.rater in ("rater-0", "rater-3") else i for s, i in zip(sets, intervals, strict=True)
    ]
    assert len({type(r.band) for r in mixed}) == 2
    for ratings in (sets, intervals, mixed):
        assert lower_alpha(ratings, bootstrap=0).alpha == pytest.approx(package, abs=1e-12)
        assert upper_alpha(ratings, bootstrap=0).alpha == pytest.approx(package, abs=1e-12)


def test_membership_of_one_value_bands():
    # Every value of ESI's fixed domain (1 to 5) is a unit of each band, in or out of each
    # rater's band, whether or not any rater chose it.
    a = membership_alpha(table("esi_acuity", K2011), bootstrap=0)
    columns = []
    for j in range(12):
        given = {i: row[j] for i, row in enumerate(K2011) if row[j] is not None}
        if len(given) < 2:
            continue
        for value in range(1, 6):
            columns.append([float(given[i] == value) if i in given else np.nan for i in range(4)])
    rows = np.array(columns).T
    want = krippendorff.alpha(reliability_data=rows, level_of_measurement="nominal")
    assert a.alpha == pytest.approx(want, abs=1e-12)
