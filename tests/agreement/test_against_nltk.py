"""The band metric against NLTK's AnnotationTask with the distance of docs/design.md, Agreement, on
hypothesis studies with missing data, declines and 2 to 10 raters; and the engine against the
krippendorff package at every standard level."""

import krippendorff
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from nltk.metrics.agreement import AnnotationTask
from nltk.metrics.distance import jaccard_distance

from fma_bands.agreement import band_alpha, metric_alpha, metric_strata
from fma_bands.agreement.engine import package_alpha, point_alpha
from fma_bands.agreement.panel import mean_distance
from tests.agreement.build import rate, studies

SET_SUBS = ["esi_acuity", "analgesia_tier", "admit", "followup_days", "urgency_score"]
SLOW = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def design_distance(a, b) -> float:
    """docs/design.md, Agreement, written independently: Jaccard of value sets; for orders the mean
    of the Jaccard distances of required and defensible, two empty sets at distance 0."""

    def jaccard(x, y):
        return 0.0 if not (x or y) else jaccard_distance(x, y)

    if isinstance(a, tuple):
        return (jaccard(a[0], b[0]) + jaccard(a[1], b[1])) / 2
    return jaccard(a, b)


def label(r):
    if r.sub_action == "orders":
        return (frozenset(r.band.required), frozenset(r.band.defensible))
    return frozenset(r.band.values())


def nltk_alpha(ratings) -> float:
    data = [(r.rater, r.vignette_id, label(r)) for r in ratings if r.verdict != "DECLINE"]
    return AnnotationTask(data=data, distance=design_distance).alpha()


@SLOW
@given(studies(SET_SUBS[:1]) | studies(SET_SUBS[1:2]) | studies(SET_SUBS[2:3]))
def test_jaccard_band_alpha_equals_nltk(ratings):
    ours = band_alpha(ratings, bootstrap=0)
    assume(ours.alpha is not None)  # NLTK returns 1 or raises where alpha is undefined
    assert ours.alpha == pytest.approx(nltk_alpha(ratings), abs=1e-12)


@SLOW
@given(studies(["followup_days"]) | studies(["urgency_score"]))
def test_jaccard_band_alpha_of_intervals_equals_nltk(ratings):
    ours = band_alpha(ratings, bootstrap=0)
    assume(ours.alpha is not None)
    assert ours.alpha == pytest.approx(nltk_alpha(ratings), abs=1e-12)


@SLOW
@given(studies(["orders"]))
def test_orders_band_alpha_equals_nltk_with_required_and_defensible(ratings):
    ours = band_alpha(ratings, bootstrap=0)
    assume(ours.alpha is not None)
    assert ours.level == "orders"
    assert ours.alpha == pytest.approx(nltk_alpha(ratings), abs=1e-12)


def test_raters_who_differ_only_in_required_orders_do_not_agree():
    ratings = []
    for v in range(12):
        defensible = ["cbc", "ecg"] if v % 2 else ["cbc"]
        other = ["cbc"] if v % 3 else []  # b requires nothing on a third of the bands
        ratings += [
            rate(f"v{v}", "orders", "a", {"required": ["cbc"], "defensible": defensible}),
            rate(f"v{v}", "orders", "b", {"required": other, "defensible": defensible}),
        ]
    a = band_alpha(ratings, bootstrap=0)
    assert a.alpha == pytest.approx(nltk_alpha(ratings), abs=1e-12)
    assert a.alpha < 0.8
    # Were required ignored, the two raters would agree on every band.
    ignoring_required = [
        rate(
            r.vignette_id,
            "orders",
            r.rater,
            {"required": [], "defensible": list(r.band.defensible)},
        )
        for r in ratings
    ]
    assert band_alpha(ignoring_required, bootstrap=0).alpha == 1.0


@SLOW
@given(studies(SET_SUBS) | studies(["orders"]))
def test_each_bands_mean_distance_is_the_mean_of_nltks_pairwise_distances(ratings):
    by_band = {}
    for r in ratings:
        if r.verdict != "DECLINE":
            by_band.setdefault((r.vignette_id, r.sub_action), []).append(r)
    for group in by_band.values():
        pairs = [
            design_distance(label(a), label(b)) for i, a in enumerate(group) for b in group[i + 1 :]
        ]
        got = mean_distance([r.band for r in group])
        assert got is None if not pairs else got == pytest.approx(sum(pairs) / len(pairs))


@SLOW
@given(
    studies(["esi_acuity"]) | studies(["analgesia_tier"]) | studies(["urgency_score"]),
    st.sampled_from(["lower", "upper", "membership", "verdict"]),
)
def test_the_engine_equals_the_krippendorff_package_at_every_standard_level(ratings, metric):
    for stratum in metric_strata(metric, ratings):
        via_package = package_alpha(stratum)
        own = point_alpha([stratum])
        assert (via_package is None) == (own is None)
        if own is not None:
            assert own == pytest.approx(via_package, abs=1e-12)


def package_reference(metric, ratings, level):
    """The krippendorff package on a raters x bands matrix built here from the ratings: each
    rater's lowest (or highest) admitted value, DECLINE and absent ratings missing."""
    raters = sorted({r.rater for r in ratings})
    bands = sorted({r.vignette_id for r in ratings})
    data = np.full((len(raters), len(bands)), np.nan)
    pick = min if metric == "lower" else max
    for r in ratings:
        if r.verdict != "DECLINE":
            data[raters.index(r.rater), bands.index(r.vignette_id)] = pick(r.band.values())
    present = data[~np.isnan(data)]
    if len(set(present)) < 2 or not ((~np.isnan(data)).sum(axis=0) >= 2).any():
        return None
    with np.errstate(invalid="ignore"):  # 0 / 0 when the pairable values do not vary
        value = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
    return None if np.isnan(value) else value


@SLOW
@given(
    studies(["esi_acuity"]) | studies(["analgesia_tier"]),
    st.sampled_from(["lower", "upper"]),
)
def test_lower_and_upper_of_ordinal_sub_actions_are_the_packages_ordinal_alpha(ratings, metric):
    ours = metric_alpha(metric, ratings, bootstrap=0)
    want = package_reference(metric, ratings, "ordinal")
    assert ours.level == ("ordinal" if ratings else None)
    assert (ours.alpha is None) == (want is None)
    if want is not None:
        assert ours.alpha == pytest.approx(want, abs=1e-12)


@SLOW
@given(
    studies(["urgency_score"]) | studies(["followup_days"]),
    st.sampled_from(["lower", "upper"]),
)
def test_lower_and_upper_of_scores_and_counts_are_the_packages_interval_alpha(ratings, metric):
    ours = metric_alpha(metric, ratings, bootstrap=0)
    want = package_reference(metric, ratings, "interval")
    assert ours.level == ("interval" if ratings else None)
    assert (ours.alpha is None) == (want is None)
    if want is not None:
        assert ours.alpha == pytest.approx(want, abs=1e-12)
