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
