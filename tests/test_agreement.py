"""The agreement layer: alpha against published values and NLTK, undefined cases, the bootstrap,
the intersection rule and the report's JSON shape."""

import json
import math
import random
from fractions import Fraction

import krippendorff
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from nltk.metrics.agreement import AnnotationTask
from nltk.metrics.distance import jaccard_distance

from fma_bands import agreement as ag
from fma_bands.agreement import (
    NO_VARIATION,
    NOT_APPLICABLE,
    POOLED,
    TOO_FEW_RATERS,
    Rating,
    agreement_report,
    band_agreements,
    band_alpha,
    bootstrap_alpha,
    coincidence_alpha,
    consensus,
    endpoint_alpha,
    interval_distances,
    jaccard_distances,
    membership_alpha,
    most_disputed_first,
    nominal_distances,
    package_alpha,
    pairable_from_rows,
    report_to_json,
    resample_alphas,
    resample_weights,
    tabulate,
    verdict_alpha,
)

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability": 4 observers x 12 units.
K2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
]
# Exact values from the coincidence matrix (see exact_k2011_alpha); the package and our own
# arithmetic are held to these at 1e-12.
K2011_ALPHA = {
    "nominal": Fraction(113, 152),
    "ordinal": Fraction(108577, 133160),
    "interval": Fraction(951, 1120),
    "ratio": Fraction(18222619, 22852465),
}
# The fractions TESTING.md gives. Nominal and interval are the exact values. Ordinal and ratio are
# the exact values rounded: limit_denominator(100000) of them, 1.0e-10 and 2.2e-10 off, so they
# hold to 1e-9 but not to 1e-12.
K2011_TESTING_MD = {
    "nominal": Fraction(113, 152),
    "ordinal": Fraction(60801, 74567),
    "interval": Fraction(951, 1120),
    "ratio": Fraction(58334, 73155),
}
K2011_PUBLISHED = {"nominal": 0.743, "ordinal": 0.815, "interval": 0.849, "ratio": 0.797}
DOMAINS = {"esi_acuity": range(1, 6), "admit": (False, True)}


def k2011_array() -> np.ndarray:
    return np.array([[np.nan if v is None else v for v in row] for row in K2011], dtype=float)


def k2011_rows():
    for i, row in enumerate(K2011):
        for j, v in enumerate(row):
            if v is not None:
                yield f"unit{j:02d}", "x", j, "ABCD"[i], v


def nltk_band_alpha(ratings) -> float:
    # Labels carry the sub-action, as the pooled band metric compares values within one only.
    data = [
        (r.rater, f"{r.vignette_id}|{r.sub_action}", frozenset((r.sub_action, x) for x in r.values))
        for r in ratings
        if r.verdict != "DECLINE"
    ]
    return AnnotationTask(data=data, distance=jaccard_distance).alpha()


def esi(vignette, rater, values, verdict="AMEND", sub="esi_acuity"):
    values = frozenset(values)
    interval = (
        (min(values), max(values)) if values == set(range(min(values), max(values) + 1)) else None
    )
    return Rating(vignette, sub, rater, verdict, values, interval)


def study(n_vignettes=40, n_raters=5, seed=7) -> list[Rating]:
    """A small study with real but imperfect agreement on ESI (intervals) and admit (sets)."""
    rng = random.Random(seed)
    out = []
    for v in range(n_vignettes):
        centre, admit = rng.randint(1, 4), rng.random() < 0.5
        for r in range(n_raters):
            rater = f"rater-{r}"
            if rng.random() < 0.08:
                out.append(Rating(f"v{v:03d}", "esi_acuity", rater, "DECLINE", None))
            else:
                lo = max(1, centre + rng.choice((-1, 0, 0, 0, 0)))
                hi = min(5, centre + rng.choice((0, 0, 0, 1, 1)))
                verdict = "ACCEPT" if (lo, hi) == (centre, centre + 1) else "AMEND"
                out.append(esi(f"v{v:03d}", rater, range(lo, hi + 1), verdict))
            flip = rng.random() < 0.15
            out.append(Rating(f"v{v:03d}", "admit", rater, "ACCEPT", frozenset({admit != flip})))
    return out


def exact_k2011_alpha(level: str) -> Fraction:
    """Krippendorff's (2011) procedure in exact arithmetic, independent of numpy and the package."""
    values = [1, 2, 3, 4, 5]
    o = {(c, k): Fraction(0) for c in values for k in values}
    for j in range(12):
        column = [row[j] for row in K2011 if row[j] is not None]
        for a, c in enumerate(column):
            for b, k in enumerate(column):
                if a != b and len(column) >= 2:
                    o[(c, k)] += Fraction(1, len(column) - 1)
    n_c = {c: sum(o[(c, k)] for k in values) for c in values}
    n = sum(n_c.values())

    def delta(c, k):
        if level == "nominal":
            return Fraction(int(c != k))
        if level == "ordinal":
            between = sum(n_c[g] for g in values if min(c, k) <= g <= max(c, k))
            return (between - (n_c[c] + n_c[k]) / 2) ** 2
        if level == "interval":
            return Fraction((c - k) ** 2)
        return Fraction(c - k, c + k) ** 2

    observed = sum(o[(c, k)] * delta(c, k) for c in values for k in values)
    expected = sum(n_c[c] * n_c[k] * delta(c, k) for c in values for k in values) / (n - 1)
    return 1 - observed / expected


# --- published values ----------------------------------------------------------------------------


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_gold_values_are_krippendorffs(level):
    assert exact_k2011_alpha(level) == K2011_ALPHA[level]
    assert round(float(K2011_ALPHA[level]), 3) == K2011_PUBLISHED[level]


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_testing_md_fractions_are_the_gold_values_rounded(level):
    # TESTING.md's published fractions; ordinal and ratio are rounded, hence 1e-9 and not 1e-12.
    published = float(K2011_TESTING_MD[level])
    assert published == pytest.approx(float(K2011_ALPHA[level]), abs=1e-9)
    got = krippendorff.alpha(reliability_data=k2011_array(), level_of_measurement=level)
    assert got == pytest.approx(published, abs=1e-9)
    if level in ("nominal", "interval"):
        assert K2011_TESTING_MD[level] == K2011_ALPHA[level]


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_krippendorff_package_reproduces_krippendorff_2011(level):
    got = krippendorff.alpha(reliability_data=k2011_array(), level_of_measurement=level)
    assert got == pytest.approx(float(K2011_ALPHA[level]), abs=1e-12)


@pytest.mark.parametrize(
    ("level", "distance"), [("nominal", nominal_distances), ("interval", interval_distances)]
)
def test_own_coincidences_reproduce_krippendorff_2011(level, distance):
    p = pairable_from_rows(k2011_rows(), distance)
    value, reason = coincidence_alpha(p)
    assert reason is None
    assert value == pytest.approx(float(K2011_ALPHA[level]), abs=1e-12)
    # Unit 12 has a single value: not pairable, as Krippendorff counts it.
    assert (p.n_units, p.n_pairable) == (11, 40)


@pytest.mark.parametrize(
    ("level", "distance"), [("nominal", nominal_distances), ("interval", interval_distances)]
)
def test_package_path_reproduces_krippendorff_2011(level, distance):
    p = pairable_from_rows(k2011_rows(), distance)
    value, _ = package_alpha(p, level)
    assert value == pytest.approx(float(K2011_ALPHA[level]), abs=1e-12)


# --- band alpha against NLTK ---------------------------------------------------------------------

SUBS = ["esi_acuity", "analgesia_tier"]
values_st = st.frozensets(st.integers(0, 4), min_size=1, max_size=4)


@st.composite
def band_studies(draw):
    ratings = []
    for v in range(draw(st.integers(2, 6))):
        for sub in draw(st.lists(st.sampled_from(SUBS), min_size=1, max_size=2, unique=True)):
            for r in range(draw(st.integers(1, 5))):
                if draw(st.booleans()) and draw(st.booleans()) and draw(st.booleans()):
                    continue  # a rater who never rated this band
                if draw(st.integers(0, 9)) == 0:
                    ratings.append(Rating(f"v{v}", sub, f"r{r}", "DECLINE", None))
                else:
                    ratings.append(Rating(f"v{v}", sub, f"r{r}", "AMEND", draw(values_st)))
    return ratings


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(band_studies())
def test_band_alpha_equals_nltk_jaccard_alpha(ratings):
    ours = band_alpha(ratings, bootstrap=0)
    assume(ours.alpha is not None)  # NLTK returns 1 or raises where alpha is undefined
    assert ours.alpha == pytest.approx(nltk_band_alpha(ratings), abs=1e-10)


@settings(max_examples=50, deadline=None)
@given(band_studies(), st.randoms(use_true_random=False))
def test_band_alpha_ignores_order_and_rater_names(ratings, rnd):
    shuffled = list(ratings)
    rnd.shuffle(shuffled)
    assert band_alpha(shuffled, bootstrap=0) == band_alpha(ratings, bootstrap=0)
    names = sorted({r.rater for r in ratings})
    renamed = dict(zip(names, rnd.sample(names, len(names)), strict=True))
    other = [
        Rating(r.vignette_id, r.sub_action, "x" + renamed[r.rater], r.verdict, r.values)
        for r in ratings
    ]
    a, b = band_alpha(ratings, bootstrap=0), band_alpha(other, bootstrap=0)
    assert (a.reason, a.n_units, a.n_pairable) == (b.reason, b.n_units, b.n_pairable)
    if a.alpha is not None:
        assert b.alpha == pytest.approx(a.alpha, abs=1e-12)


def test_identical_ratings_that_vary_across_units_give_one():
    ratings = [esi(f"v{v}", f"r{r}", {v % 5 + 1, v % 5 + 2}) for v in range(6) for r in range(3)]
    assert band_alpha(ratings, bootstrap=0).alpha == 1.0


def test_jaccard_distances_match_nltk_and_treat_empty_sets_as_equal():
    sets = [frozenset(), frozenset({1}), frozenset({1, 2}), frozenset({2, 3, 4})]
    d = jaccard_distances(sets)
    for i, a in enumerate(sets):
        for j, b in enumerate(sets):
            want = 0.0 if not (a or b) else jaccard_distance(a, b)
            assert d[i, j] == pytest.approx(want, abs=1e-15)


def test_band_alpha_on_a_hand_computed_example():
    # Two units, two raters: {1,2} vs {2} (distance 1/2) and {3} vs {3}. n = 4 values.
    # D_o = (2 * 1/2) / 4 = 1/4. Values {1,2} x1, {2} x1, {3} x2: D_e = 2 (1/2 + 1 + 1 + 1 + 1)
    # / (4 * 3) = 9/12. alpha = 1 - (1/4) / (3/4) = 2/3.
    ratings = [
        esi("a", "r1", {1, 2}),
        esi("a", "r2", {2}),
        esi("b", "r1", {3}),
        esi("b", "r2", {3}),
    ]
    assert band_alpha(ratings, bootstrap=0).alpha == pytest.approx(2 / 3, abs=1e-15)


def test_decline_is_missing_for_band_alpha_but_a_category_for_verdicts():
    ratings = study(n_vignettes=12, seed=3)
    declined = [*ratings, Rating("v003", "esi_acuity", "late-rater", "DECLINE", None)]
    assert band_alpha(declined, bootstrap=0) == band_alpha(ratings, bootstrap=0)
    assert membership_alpha(declined, DOMAINS, bootstrap=0) == membership_alpha(
        ratings, DOMAINS, bootstrap=0
    )
    assert endpoint_alpha(declined, bootstrap=0) == endpoint_alpha(ratings, bootstrap=0)
    before, after = verdict_alpha(ratings, bootstrap=0), verdict_alpha(declined, bootstrap=0)
    assert before.alpha is not None and after.alpha is not None
    assert after.alpha != before.alpha
    assert after.n_pairable == before.n_pairable + 1


@settings(max_examples=50, deadline=None)
@given(band_studies())
def test_an_extra_decline_never_moves_band_alpha(ratings):
    extra = [
        *ratings,
        Rating("v0", ratings[0].sub_action if ratings else "x", "zz", "DECLINE", None),
    ]
    assert band_alpha(extra, bootstrap=0) == band_alpha(ratings, bootstrap=0)


# --- undefined alpha -----------------------------------------------------------------------------


def assert_undefined(a, reason):
    assert a.alpha is None
    assert a.reason == reason
    assert (a.ci_low, a.ci_high, a.p_below_0800, a.p_below_0667, a.method) == (None,) * 5


def test_no_variation_is_undefined_for_every_metric():
    ratings = [esi(f"v{v}", f"r{r}", {2}, "ACCEPT") for v in range(4) for r in range(3)]
    assert_undefined(band_alpha(ratings), NO_VARIATION)
    assert_undefined(endpoint_alpha(ratings), NO_VARIATION)
    assert_undefined(verdict_alpha(ratings), NO_VARIATION)  # the package raises; we say why
    # Membership varies across candidates (2 in, the rest out), so it is defined.
    assert membership_alpha(ratings, DOMAINS).alpha == 1.0
    only_in = [esi(f"v{v}", f"r{r}", {1, 2, 3, 4, 5}) for v in range(3) for r in range(2)]
    assert_undefined(membership_alpha(only_in, DOMAINS), NO_VARIATION)
    a = band_alpha(ratings)
    assert (a.n_units, a.n_raters, a.n_pairable) == (4, 3, 12)


def test_one_rater_per_band_is_undefined_for_every_metric():
    ratings = [esi(f"v{v}", f"r{v}", {v % 5 + 1}) for v in range(5)]
    ratings += [Rating("v0", "esi_acuity", "r9", "DECLINE", None)]  # a DECLINE does not pair
    for a in (band_alpha(ratings), membership_alpha(ratings, DOMAINS), endpoint_alpha(ratings)):
        assert_undefined(a, TOO_FEW_RATERS)
        assert (a.n_units, a.n_pairable) == (0, 0)
    # For verdicts a DECLINE is a rater too: v0 now has two, so only the others are alone.
    assert_undefined(verdict_alpha(ratings[1:5]), TOO_FEW_RATERS)
    assert verdict_alpha(ratings, bootstrap=0).n_units == 1
    assert_undefined(band_alpha([]), TOO_FEW_RATERS)


def test_undefined_alpha_is_never_printed_as_a_number():
    report = report_to_json(agreement_report([esi("v0", "r0", {1})], DOMAINS))
    for by_metric in report["metrics"].values():
        for entry in by_metric.values():
            assert entry["alpha"] is None
            assert entry["reason"] == TOO_FEW_RATERS


# --- the package and our coincidence arithmetic agree --------------------------------------------


@pytest.mark.parametrize(
    ("metric", "level"),
    [("membership", "nominal"), ("endpoints", "interval"), ("verdict", "nominal")],
)
def test_package_and_own_coincidences_agree(metric, level):
    p = tabulate(metric, study(seed=11), DOMAINS)
    via_package, _ = package_alpha(p, level)
    own, _ = coincidence_alpha(p)
    assert via_package == pytest.approx(own, abs=1e-12)


def test_memory_guard_falls_back_to_the_same_arithmetic(monkeypatch):
    ratings = study(seed=5)
    before = endpoint_alpha(ratings, bootstrap=0)
    monkeypatch.setattr(ag, "PACKAGE_MEMORY_BUDGET", 0)
    after = endpoint_alpha(ratings, bootstrap=0)
    assert after.alpha == pytest.approx(before.alpha, abs=1e-12)


def test_membership_matches_a_hand_built_reliability_matrix():
    ratings = study(n_vignettes=15, seed=2)
    a = membership_alpha(ratings, {"esi_acuity": range(1, 6)}, bootstrap=0)
    raters = sorted({r.rater for r in ratings})
    bands = {}
    for r in ratings:
        if r.sub_action == "esi_acuity" and r.verdict != "DECLINE":
            bands.setdefault(r.vignette_id, {})[r.rater] = r.values
    columns = [
        [float(c in rated[x]) if x in rated else np.nan for x in raters]
        for rated in bands.values()
        if len(rated) >= 2
        for c in range(1, 6)
    ]
    want = krippendorff.alpha(reliability_data=np.array(columns).T, level_of_measurement="nominal")
    assert a.alpha == pytest.approx(want, abs=1e-12)


# --- bootstrap -----------------------------------------------------------------------------------


def test_same_seed_same_interval_and_other_seeds_differ():
    ratings = study()
    a, b = band_alpha(ratings, bootstrap=300, seed=1), band_alpha(ratings, bootstrap=300, seed=1)
    assert a == b
    c = band_alpha(ratings, bootstrap=300, seed=2)
    assert (c.ci_low, c.ci_high) != (a.ci_low, a.ci_high)
    assert c.alpha == a.alpha


@pytest.mark.parametrize("metric", ["band", "membership", "endpoints", "verdict"])
def test_interval_contains_alpha_and_method_names_b_and_seed(metric):
    fn = {
        "band": band_alpha,
        "membership": lambda r, **k: membership_alpha(r, DOMAINS, **k),
        "endpoints": endpoint_alpha,
        "verdict": verdict_alpha,
    }[metric]
    a = fn(study(n_vignettes=60), bootstrap=500, seed=99)
    assert a.ci_low <= a.alpha <= a.ci_high
    assert 0.0 <= a.p_below_0667 <= a.p_below_0800 <= 1.0
    assert "vignette-cluster bootstrap" in a.method
    assert "B=500" in a.method
    assert "seed=99" in a.method


def test_resamples_without_variation_are_skipped_and_counted():
    # Two vignettes agree perfectly on different values; a third disagrees. Resamples of one
    # vignette only have no variation.
    ratings = [esi("a", f"r{r}", {1}) for r in range(2)] + [
        esi("b", f"r{r}", {4}) for r in range(2)
    ]
    a = band_alpha(ratings, bootstrap=200, seed=4)
    assert a.alpha == 1.0
    assert "usable" in a.method
    used = int(a.method.split("(")[1].split()[0])
    assert 0 < used < 200


def resampled_ratings(ratings, p, weights_row):
    """The resample built from scratch: each drawn vignette copied under a fresh id."""
    out = []
    for vignette, count in zip(p.vignettes, weights_row, strict=True):
        for k in range(int(count)):
            out += [
                Rating(
                    f"{r.vignette_id}#{k}", r.sub_action, r.rater, r.verdict, r.values, r.interval
                )
                for r in ratings
                if r.vignette_id == vignette
            ]
    return out


@pytest.mark.parametrize(
    ("metric", "fn"),
    [
        ("band", band_alpha),
        ("membership", lambda r, **k: membership_alpha(r, DOMAINS, **k)),
        ("endpoints", endpoint_alpha),
        ("verdict", verdict_alpha),
    ],
)
def test_bootstrap_resample_equals_recomputation_from_scratch(metric, fn):
    ratings = study(n_vignettes=25, seed=13)
    p = tabulate(metric, ratings, DOMAINS)
    weights = resample_weights(len(p.vignettes), 4, seed=123)
    fast = resample_alphas(p, weights)
    for row, want in zip(weights, fast, strict=True):
        slow = fn(resampled_ratings(ratings, p, row), bootstrap=0).alpha
        assert slow == pytest.approx(want, abs=1e-12)


def test_bootstrap_alpha_on_one_vignette_says_it_cannot():
    p = tabulate("band", [esi("a", "r1", {1}), esi("a", "r2", {2})])
    boot = bootstrap_alpha(p, B=100, seed=1)
    assert boot.ci_low is None
    assert "needs two vignettes" in boot.method


# --- consensus -----------------------------------------------------------------------------------


def test_consensus_applied_with_disputed_span():
    c = consensus([frozenset({1, 2}), frozenset({2, 3})])
    assert (c.rule, c.consensus, c.disputed, c.n_raters) == ("applied", {2}, {1, 3}, 2)


def test_consensus_applied_without_dispute():
    c = consensus([frozenset({2, 3})] * 3)
    assert (c.rule, c.consensus, c.disputed) == ("applied", {2, 3}, None)


def test_consensus_empty_when_raters_share_nothing():
    c = consensus([frozenset({1}), frozenset({3}), frozenset({1, 3})])
    assert (c.rule, c.consensus, c.disputed) == ("empty", None, {1, 3})


@pytest.mark.parametrize("sets", [[], [frozenset({1, 2})]])
def test_consensus_absent_with_fewer_than_two_raters(sets):
    c = consensus(sets)
    assert (c.rule, c.consensus, c.disputed, c.n_raters) == ("absent", None, None, len(sets))


def test_band_agreements_leave_declines_out_of_the_intersection():
    ratings = [
        esi("v1", "a", {2, 3}),
        esi("v1", "b", {3, 4}),
        Rating("v1", "esi_acuity", "c", "DECLINE", None),
        esi("v2", "a", {1}),
        Rating("v2", "esi_acuity", "b", "DECLINE", None),
    ]
    one, two = band_agreements(ratings)
    assert (one.n_raters, one.n_declined, one.consensus.rule) == (2, 1, "applied")
    assert one.consensus.consensus == {3}
    assert one.disagreement == pytest.approx(2 / 3)
    assert (two.n_raters, two.consensus.rule, two.disagreement) == (1, "absent", None)


def test_most_disputed_first():
    ratings = [
        esi("a", "r1", {1}), esi("a", "r2", {1}),
        esi("b", "r1", {1}), esi("b", "r2", {5}),
        esi("c", "r1", {1, 2}), esi("c", "r2", {2}),
        esi("d", "r1", {3}),
    ]  # fmt: skip
    order = [b.vignette_id for b in most_disputed_first(band_agreements(ratings))]
    assert order == ["b", "c", "a", "d"]


# --- the report ----------------------------------------------------------------------------------

ALPHA_KEYS = {
    "alpha", "reason", "n_units", "n_raters", "n_pairable",
    "ci_low", "ci_high", "p_below_0800", "p_below_0667", "method",
}  # fmt: skip
BAND_KEYS = {
    "vignette_id",
    "sub_action",
    "n_raters",
    "consensus",
    "disputed_span",
    "intersection_rule",
}


def test_report_json_shape():
    ratings = [
        *study(n_vignettes=20),
        Rating("v000", "orders", "rater-0", "AMEND", frozenset({"cbc"})),
    ]
    report = agreement_report(ratings, DOMAINS, bootstrap=200)
    data = json.loads(json.dumps(report_to_json(report)))
    assert set(data) == {"metrics", "bands"}
    assert set(data["metrics"]) == {"admit", "esi_acuity", "orders", POOLED}
    assert set(data["metrics"]["esi_acuity"]) == {"band", "membership", "endpoints", "verdict"}
    # Every scope lists every metric; one that cannot apply says why instead of a number.
    assert set(data["metrics"]["admit"]) == {"band", "membership", "endpoints", "verdict"}
    assert data["metrics"]["admit"]["endpoints"]["alpha"] is None
    assert data["metrics"]["admit"]["endpoints"]["reason"] == NOT_APPLICABLE["endpoints"]
    assert data["metrics"]["orders"]["membership"]["reason"] == NOT_APPLICABLE["membership"]
    assert data["metrics"]["orders"]["membership"]["n_units"] == 0
    assert set(data["metrics"][POOLED]) == {"band", "membership", "endpoints", "verdict"}
    for by_metric in data["metrics"].values():
        for entry in by_metric.values():
            assert set(entry) == ALPHA_KEYS
    assert data["metrics"]["orders"]["band"]["reason"] == TOO_FEW_RATERS
    assert data["metrics"]["orders"]["band"]["ci_low"] is None
    assert isinstance(data["metrics"][POOLED]["band"]["alpha"], float)
    assert len(data["bands"]) == 41
    for band in data["bands"]:
        assert set(band) == BAND_KEYS
    orders = next(b for b in data["bands"] if b["sub_action"] == "orders")
    assert orders == {
        "vignette_id": "v000",
        "sub_action": "orders",
        "n_raters": 1,
        "consensus": None,
        "disputed_span": None,
        "intersection_rule": "absent",
    }


def test_report_json_uses_the_injected_converter():
    ratings = [esi("v1", "a", {1, 2, 3}), esi("v1", "b", {2, 3, 4, 5})]

    def to_harness(sub_action, values):
        return {"min": min(values), "max": max(values), "sub": sub_action}

    band = report_to_json(agreement_report(ratings, DOMAINS, bootstrap=0), to_harness)["bands"][0]
    assert band["consensus"] == {"min": 2, "max": 3, "sub": "esi_acuity"}
    assert band["disputed_span"] == {"min": 1, "max": 5, "sub": "esi_acuity"}
    default = report_to_json(agreement_report(ratings, DOMAINS, bootstrap=0))["bands"][0]
    assert (default["consensus"], default["disputed_span"]) == ([2, 3], [1, 4, 5])


def test_report_metrics_match_the_single_metric_functions():
    ratings = study(seed=21)
    report = agreement_report(ratings, DOMAINS, bootstrap=100, seed=5)
    esi_only = [r for r in ratings if r.sub_action == "esi_acuity"]
    assert report.metrics["esi_acuity"]["band"] == band_alpha(esi_only, bootstrap=100, seed=5)
    assert report.metrics[POOLED]["verdict"] == verdict_alpha(ratings, bootstrap=100, seed=5)
    pooled = report.metrics[POOLED]["band"].alpha
    assert pooled == pytest.approx(nltk_band_alpha(ratings), abs=1e-10)
    assert not math.isnan(pooled)


def test_bad_ratings_are_refused_with_the_band_named():
    with pytest.raises(ValueError, match="v1 / esi_acuity / a: the rater has two ratings"):
        band_alpha([esi("v1", "a", {1}), esi("v1", "a", {2})])
    with pytest.raises(ValueError, match="verdict 'MAYBE'"):
        band_alpha([Rating("v1", "esi_acuity", "a", "MAYBE", frozenset({1}))])
    with pytest.raises(ValueError, match="needs its band's values"):
        band_alpha([Rating("v1", "esi_acuity", "a", "ACCEPT", None)])


def test_the_refused_rating_is_the_first_in_sorted_order_whatever_the_input_order():
    ratings = [
        Rating("v2", "esi_acuity", "b", "MAYBE", frozenset({1})),
        esi("v1", "a", {1}),
        Rating("v1", "esi_acuity", "c", "PERHAPS", frozenset({1})),
    ]
    for order in (ratings, ratings[::-1]):
        with pytest.raises(ValueError, match="rating v1 / esi_acuity / c: verdict 'PERHAPS'"):
            band_alpha(order)
    twice = [esi("v9", "z", {1}), esi("v3", "b", {1}), esi("v9", "z", {2}), esi("v3", "b", {2})]
    with pytest.raises(ValueError, match="v3 / esi_acuity / b: the rater has two ratings"):
        band_alpha(twice)


def test_duplicates_are_found_when_the_ratings_are_sparse():
    # 300 vignettes x 300 raters with one rating each: too sparse to count, so a sort finds them.
    ratings = [esi(f"v{i:03d}", f"r{i:03d}", {i % 5 + 1}) for i in range(300)]
    band_alpha(ratings, bootstrap=0)
    with pytest.raises(ValueError, match="v123 / esi_acuity / r123: the rater has two ratings"):
        band_alpha([*ratings, esi("v123", "r123", {2})], bootstrap=0)


def test_bands_given_as_sets_lists_or_tuples_are_the_same_bands():
    ratings = study(n_vignettes=15, seed=8)
    want = band_alpha(ratings, bootstrap=50)
    for kind in (set, list, tuple):
        other = [
            Rating(r.vignette_id, r.sub_action, r.rater, r.verdict, r.values and kind(r.values))
            for r in ratings
        ]
        assert band_alpha(other, bootstrap=50) == want
    mixed = [
        Rating(r.vignette_id, r.sub_action, r.rater, r.verdict, r.values and tuple(r.values))
        if i % 2
        else r
        for i, r in enumerate(ratings)
    ]
    assert band_alpha(mixed, bootstrap=50) == want


def test_jaccard_distances_over_many_elements_and_many_sets_match_nltk():
    # More than 64 distinct elements (several bit words) and more sets than one block of rows.
    rng = random.Random(5)
    sets = [frozenset(rng.sample(range(150), rng.randint(0, 40))) for _ in range(260)]
    sets = list(dict.fromkeys([*sets, frozenset()]))
    d = jaccard_distances(sets)
    for i, a in enumerate(sets):
        for j, b in enumerate(sets):
            want = 0.0 if not (a or b) else jaccard_distance(a, b)
            assert d[i, j] == want  # the same division of the same two integers: bit for bit
