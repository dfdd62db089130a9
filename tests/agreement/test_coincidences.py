"""Coincidence matrices (fma_bands/agreement/coincidences.py): a hand-computed example,
Krippendorff's margins (rows sum to n_c, the total is n), nominal alpha read back from the
matrix, and the CSV with its values in words."""

import csv
import io
import zipfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from fma_bands.agreement import metric_alpha, metric_strata
from fma_bands.agreement.coincidences import (
    coincidence_csv,
    coincidence_matrix,
    coincidence_rows,
    coincidence_tables,
    coincidences_zip,
    file_name,
)
from fma_bands.agreement.engine import DECLINED, stratum
from fma_bands.agreement.metrics import level
from tests.agreement.build import rate, studies

SUBS = ("esi_acuity", "orders", "admit", "followup_days", "analgesia_tier")
SOME = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_two_raters_by_hand():
    """Lower ESI end, two raters: units (1, 1), (1, 2), (2, 2), and a lone 3 that pairs with
    nothing. Each two-value unit adds 1 / (2 - 1) to each ordered pair of its values from two
    raters: o = [[2, 1], [1, 2]], n_c = (3, 3), n = 6."""
    ratings = [
        rate("v1", "esi_acuity", "a", [1]),
        rate("v1", "esi_acuity", "b", [1]),
        rate("v2", "esi_acuity", "a", [1]),
        rate("v2", "esi_acuity", "b", [2, 3]),
        rate("v3", "esi_acuity", "a", [2]),
        rate("v3", "esi_acuity", "b", [2]),
        rate("v4", "esi_acuity", "a", [3]),
    ]
    lower = next(c for c in coincidence_tables(ratings) if c.metric == "lower")
    assert lower.labels == ("1 - resuscitation", "2 - emergent")
    assert lower.matrix == ((2.0, 1.0), (1.0, 2.0))
    assert lower.value_counts == (3.0, 3.0) and lower.n_pairable == 6.0
    assert file_name(lower) == "review-lower-esi_acuity.csv"
    band = next(c for c in coincidence_tables(ratings) if c.metric == "band")
    assert band.labels == ("1 - resuscitation", "2 - emergent", "2 - emergent to 3 - urgent")
    assert band.matrix == ((2.0, 0.0, 1.0), (0.0, 2.0, 0.0), (1.0, 0.0, 0.0))


def test_three_raters_weigh_each_pair_by_one_over_m_minus_one():
    """One unit with values 1, 1, 2: pairs (1, 1) twice, (1, 2) twice, (2, 1) twice, each 1/2."""
    s = stratum("nominal", [("v1", {"a": 1, "b": 1, "c": 2})])
    assert coincidence_matrix(s).tolist() == [[1.0, 1.0], [1.0, 0.0]]
    with pytest.raises(ValueError, match="DECLINE"):
        coincidence_matrix(stratum("nominal", [("v1", {"a": 1, "b": 2, "c": DECLINED})]))


@SOME
@given(studies(SUBS, max_raters=6, max_vignettes=6))
def test_margins_are_the_value_counts_and_n(ratings):
    for metric in ("band", "membership", "lower", "upper", "verdict"):
        for s in metric_strata(metric, ratings):
            o = coincidence_matrix(s)
            np.testing.assert_allclose(o, o.T, atol=1e-12)
            np.testing.assert_allclose(o.sum(axis=1), s.unit_counts.sum(axis=0), atol=1e-9)
            assert o.sum() == pytest.approx(s.n_pairable)


@SOME
@given(studies(("admit", "esi_acuity", "analgesia_tier"), max_raters=6, max_vignettes=6))
def test_nominal_alpha_read_from_the_matrix(ratings):
    """Krippendorff (2011): nominal alpha = 1 - (n - 1) sum_{c != k} o_ck / sum_{c != k} n_c n_k,
    from the matrix alone, equals the metric's own alpha for each sub-action."""
    for c in coincidence_tables(ratings):
        if c.metric not in ("membership", "verdict"):
            continue
        o = np.array(c.matrix)
        counts = o.sum(axis=1)
        n = counts.sum()
        off = ~np.eye(len(counts), dtype=bool)
        expected = (np.outer(counts, counts) * off).sum()
        chosen = [r for r in ratings if r.sub_action == c.sub_action]
        alpha = metric_alpha(c.metric, chosen, bootstrap=0).alpha
        if expected == 0:
            assert alpha is None
        else:
            assert alpha == pytest.approx(1 - (n - 1) * (o * off).sum() / expected, abs=1e-9)


def test_every_mode_metric_and_sub_action_with_pairable_values_has_a_matrix():
    ratings = [
        rate("v1", "admit", "a", [True], "ACCEPT"),
        rate("v1", "admit", "b", [False, True]),
        rate("v1", "followup_days", "a", {"min": 7, "max": 14}),
        rate("v1", "followup_days", "b", {"min": 10, "max": 14}),
        rate("v2", "esi_acuity", "a", [2], mode="blind"),
        rate("v2", "esi_acuity", "b", [3], mode="blind"),
        rate("v3", "orders", "a", {"required": ["ecg"], "defensible": ["ecg", "cbc"]}),
        rate("v3", "orders", "b"),  # a DECLINE: missing for the band, a category for verdicts
    ]
    found = {(c.mode, c.metric, c.sub_action): c for c in coincidence_tables(ratings)}
    assert list(found) == [
        ("review", "band", "admit"),
        ("review", "band", "followup_days"),
        ("review", "membership", "admit"),
        ("review", "lower", "followup_days"),
        ("review", "upper", "followup_days"),
        ("review", "verdict", "admit"),
        ("review", "verdict", "followup_days"),
        ("review", "verdict", "orders"),
        ("blind", "band", "esi_acuity"),
        ("blind", "membership", "esi_acuity"),
        ("blind", "lower", "esi_acuity"),
        ("blind", "upper", "esi_acuity"),
    ]
    assert found["review", "band", "admit"].labels == ("either (yes or no)", "yes")
    assert found["review", "band", "followup_days"].labels == ("7 to 14 days", "10 to 14 days")
    assert found["review", "lower", "followup_days"].labels == ("7 days", "10 days")
    assert found["review", "membership", "admit"].labels == ("out of the band", "in the band")
    assert found["review", "verdict", "orders"].labels == ("AMEND", "DECLINE")
    assert all(level(m, s) is not None for _, m, s in found)


def test_orders_bands_are_written_with_their_required_orders():
    ratings = [
        rate("v1", "orders", "a", {"required": ["ecg"], "defensible": ["cbc", "ecg"]}),
        rate("v1", "orders", "b", {"required": [], "defensible": ["ecg"]}),
    ]
    band = next(c for c in coincidence_tables(ratings) if c.metric == "band")
    assert band.labels == ("required: none; defensible: ecg", "required: ecg; defensible: cbc, ecg")


def test_the_csv_has_a_header_of_values_in_words_and_reads_back():
    ratings = [
        rate("v1", "esi_acuity", "a", [1]),
        rate("v1", "esi_acuity", "b", [1]),
        rate("v1", "esi_acuity", "c", [2]),
        rate("v2", "esi_acuity", "a", [2]),
        rate("v2", "esi_acuity", "b", [2]),
    ]
    lower = next(c for c in coincidence_tables(ratings) if c.metric == "lower")
    rows = list(csv.reader(io.StringIO(coincidence_csv(lower))))
    assert rows == coincidence_rows(lower)
    assert rows[0] == [
        "lower on esi_acuity (review mode)",
        "1 - resuscitation",
        "2 - emergent",
        "n_c",
    ]
    body = [[float(x) for x in row[1:]] for row in rows[1:]]
    assert [row[0] for row in rows[1:]] == ["1 - resuscitation", "2 - emergent"]
    # v1 (three values): o_11 = 2 * 1 / 2, o_12 = o_21 = 2 / 2; v2 (two): o_22 += 2.
    assert body == [[1.0, 1.0, 2.0], [1.0, 2.0, 3.0]]


def test_one_archive_holds_every_csv_and_is_the_same_each_time():
    ratings = [
        rate("v1", "admit", "a", [True], "ACCEPT"),
        rate("v1", "admit", "b", [False]),
        rate("v2", "esi_acuity", "a", [2]),
        rate("v2", "esi_acuity", "b", [2, 3]),
    ]
    tables = coincidence_tables(ratings)
    data = coincidences_zip(tables)
    assert data == coincidences_zip(coincidence_tables(ratings))
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert archive.namelist() == [file_name(c) for c in tables]
        for c in tables:
            assert archive.read(file_name(c)).decode() == coincidence_csv(c)
