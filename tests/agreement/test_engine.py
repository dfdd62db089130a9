"""The coincidence engine's parts: distances as NLTK computes them, the package's memory guard,
declines as missing data, and bands ordered by how far apart their raters are."""

import os
import random
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from nltk.metrics.distance import jaccard_distance

from fma_bands.agreement import band_agreements, band_alpha, metric_strata, most_disputed_first
from fma_bands.agreement import engine as engine_module
from fma_bands.agreement.engine import (
    DECLINED,
    disagreement,
    jaccard_distances,
    orders_distances,
    package_alpha,
    point_alpha,
    stratum,
)
from tests.agreement.build import rate, studies
from tests.memory import peak_of


def test_jaccard_distances_are_nltks_to_the_last_bit_and_two_empty_sets_are_equal():
    rng = random.Random(5)
    sets = [frozenset(rng.sample(range(150), rng.randint(0, 40))) for _ in range(120)]
    sets = list(dict.fromkeys([*sets, frozenset(), frozenset({1})]))
    d = jaccard_distances(sets)
    for i, a in enumerate(sets):
        for j, b in enumerate(sets):
            assert d[i, j] == (0.0 if not (a or b) else jaccard_distance(a, b))


def test_orders_distances_hold_one_square_matrix_and_a_few_rows_of_another():
    # A large study's orders bands are thousands of distinct sets: each square matrix of
    # distances is then tens of megabytes, and three of them at once were the peak of
    # `agreement` at 1,000 x 20.
    rng = random.Random(7)
    labels = list(
        dict.fromkeys(
            (frozenset(rng.sample(range(20), 2)), frozenset(rng.sample(range(20), 5)))
            for _ in range(2400)
        )
    )
    square = len(labels) ** 2 * 8
    distances, peak = peak_of(lambda: orders_distances(labels))
    assert peak < 1.4 * square
    _, peak = peak_of(lambda: jaccard_distances([d for _, d in labels]))
    assert peak < 1.4 * square
    required, defensible = (dense_jaccard([band[i] for band in labels]) for i in (0, 1))
    assert distances.tobytes() == ((required + defensible) / 2.0).tobytes()


def dense_jaccard(sets):
    """The Jaccard distances as one product of the whole membership matrix."""
    elements = sorted({e for s in sets for e in s})
    member = np.array([[float(e in s) for e in elements] for s in sets])
    both = member @ member.T
    sizes = member.sum(axis=1)
    either = sizes[:, None] + sizes[None, :] - both
    return np.divide(either - both, either, out=np.zeros_like(both), where=either > 0)


def test_a_strata_counts_per_vignette_hold_no_array_of_units_by_values():
    # A large study's orders stratum has thousands of distinct bands: three temporary arrays
    # of units x values for its counts per vignette were 60 MB of agreement's peak.
    units = [(f"v{u // 2}", {"a": ("x", u), "b": ("y", u)}) for u in range(400)]
    s = stratum("nominal", units)
    square = len(s.vignettes) * len(s.labels) * 8
    counts, peak = peak_of(lambda: s.counts)
    assert peak < 1.5 * square
    expected = np.zeros((len(s.vignettes), len(s.labels)))
    for u, v in enumerate(s.unit_vignette):
        expected[v] += s.unit_counts[u]
    assert counts.tobytes() == expected.tobytes()
    assert s.vignette_values.tolist() == expected.sum(axis=1).tolist()


def test_the_memory_guard_gives_the_packages_alpha(monkeypatch):
    ratings = [
        rate(f"v{v}", "followup_days", r, {"min": (v * 3 + k) % 20, "max": 30 + (v + k) % 9})
        for v in range(30)
        for k, r in enumerate("abc")
    ]
    [stratum] = metric_strata("upper", ratings)
    before = package_alpha(stratum)
    monkeypatch.setattr(engine_module, "PACKAGE_MEMORY_BUDGET", 0)
    assert package_alpha(stratum) == pytest.approx(before, abs=1e-12)
    assert point_alpha([stratum]) == pytest.approx(before, abs=1e-12)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(studies(["esi_acuity", "orders", "admit"]))
def test_an_extra_decline_never_moves_the_band_alpha(ratings):
    extra = [*ratings, rate("v0", ratings[0].sub_action if ratings else "admit", "late")]
    assert band_alpha(extra, bootstrap=0).alpha == band_alpha(ratings, bootstrap=0).alpha


def test_bands_most_disputed_first_and_declines_out_of_the_consensus():
    ratings = [
        rate("a", "esi_acuity", "r1", [1]), rate("a", "esi_acuity", "r2", [1]),
        rate("b", "esi_acuity", "r1", [1]), rate("b", "esi_acuity", "r2", [5]),
        rate("c", "esi_acuity", "r1", [1, 2]), rate("c", "esi_acuity", "r2", [2]),
        rate("c", "esi_acuity", "r3"),
        rate("d", "esi_acuity", "r1", [3]),
    ]  # fmt: skip
    bands = band_agreements(ratings)
    assert [b.vignette_id for b in most_disputed_first(bands)] == ["b", "c", "a", "d"]
    c = next(b for b in bands if b.vignette_id == "c")
    assert (c.n_raters, c.n_declined, c.disagreement) == (2, 1, 0.5)
    assert c.consensus.band.values() == {2} and c.consensus.rule == "applied"
    d = next(b for b in bands if b.vignette_id == "d")
    assert (d.consensus.rule, d.disagreement) == ("absent", None)


def test_fma_bands_holds_numpys_blas_to_one_thread():
    """Imported before numpy, as the command line and the app's server import it, fma-bands
    leaves numpy's BLAS one thread, whatever the environment asked: a sum split over threads
    adds in an order that depends on the machine's cores (fma_bands/__init__.py)."""
    blas = "{i['num_threads'] for i in threadpoolctl.threadpool_info() if i['user_api'] == 'blas'}"
    code = f"import fma_bands.agreement, threadpoolctl; print(sorted({blas}))"
    asked = {**os.environ, "OPENBLAS_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"}
    found = subprocess.run(
        [sys.executable, "-c", code], env=asked, capture_output=True, text=True, check=True
    )
    assert found.stdout.strip() == "[1]"


def test_a_stratum_of_one_unit_per_vignette_holds_no_second_array_of_its_counts():
    # A sub-action's stratum has one unit (band) per vignette: its counts per vignette are its
    # counts per unit, and a copy of them was 20 MB of agreement's peak at 1,000 x 20.
    units = [(f"v{u:03d}", {"a": ("x", u), "b": ("y", u % 7)}) for u in range(300)]
    s = stratum("nominal", units)
    counts, peak = peak_of(lambda: s.counts)
    assert peak < 0.1 * counts.nbytes
    assert counts.tolist() == s.unit_counts.tolist()
    assert s.vignette_values.tolist() == [2.0] * 300


def many_distinct_bands(n_vignettes: int, n_sets: int, declines: bool = False) -> list:
    """Units of an orders-like stratum: a band per vignette from four raters, drawn from
    `n_sets` distinct sets (far more than vignettes), a few raters declining."""
    rng = random.Random(11)
    sets = [frozenset(rng.sample(range(60), rng.randint(1, 6))) for _ in range(n_sets)]
    units = []
    for v in range(n_vignettes):
        values: dict[str, object] = {r: rng.choice(sets) for r in "abcd"}
        if declines and v % 5 == 0:
            values["d"] = DECLINED
        units.append((f"v{v:03d}", values))
    return units


def test_leaving_a_rater_out_makes_one_array_of_units_by_values():
    # At 1,000 x 20 the orders stratum's counts are 20 MB; leaving a rater out made them with a
    # DECLINE column and then copied them without it, twice that at agreement's peak.
    s = stratum("jaccard", many_distinct_bands(200, 3000, declines=True))
    square = s.n_units * len(s.labels) * 8
    without, peak = peak_of(lambda: s.without("d"))
    assert peak < 1.3 * square
    expected = np.zeros((s.n_units, len(s.labels)))
    for u, (_, values) in enumerate(many_distinct_bands(200, 3000, declines=True)):
        for rater, value in values.items():
            if rater != "d":
                expected[u, s.labels.index(value)] += 1
    assert without.unit_counts.tolist() == expected.tolist()
    assert without.unit_declines is None
    assert s.without("a").unit_declines.tolist() == [float(u % 5 == 0) for u in range(200)]


def test_c_d_c_is_made_a_block_of_rows_at_a_time():
    s = stratum("jaccard", many_distinct_bands(600, 20_000))
    assert len(s.labels) > 2 * len(s.vignettes)
    made, peak = peak_of(lambda: s.gram)
    assert peak < made.nbytes + 0.5 * len(s.vignettes) * len(s.labels) * 8
    assert np.allclose(made, s.counts @ s.distance @ s.counts.T, rtol=1e-13, atol=0)


def test_many_resamples_of_many_distinct_values_give_each_resamples_figures():
    # Past half as many resamples as vignettes, t'Dt is read from C D C' (vignettes x
    # vignettes) rather than from each resample's values x values product.
    s = stratum("jaccard", many_distinct_bands(120, 1500, declines=True))
    rng = np.random.default_rng(3)
    weights = rng.multinomial(120, np.ones(120) / 120, size=80).astype(float)
    observed, expected = disagreement(s, weights)
    assert "gram" in s.__dict__
    fresh = stratum("jaccard", many_distinct_bands(120, 1500, declines=True))
    for b, row in enumerate(weights):
        o, e = disagreement(fresh, row[None, :])
        assert o[0] == pytest.approx(observed[b], rel=1e-12)
        assert e[0] == pytest.approx(expected[b], rel=1e-12)
    assert "gram" not in fresh.__dict__


def test_an_alpha_is_the_same_to_the_bit_whatever_was_computed_before_it():
    # A figure computed twice (the report's alpha and the diagnostics' own) must not depend on
    # whether a bootstrap ran on the stratum first.
    first = stratum("jaccard", many_distinct_bands(90, 500))
    before = point_alpha([first])
    disagreement(first, np.ones((180, 90)))
    assert point_alpha([first]) == before
    second = stratum("jaccard", many_distinct_bands(90, 500))
    disagreement(second, np.ones((180, 90)))
    assert point_alpha([second]) == before
