"""Per-rater diagnostics, alpha by ambiguity stratum and the JSON of both
(fma_bands/agreement/diagnostics.py; docs/statistics.md, What a reviewer asks for): each figure
against a plain recomputation from the ratings."""

import gc
from itertools import permutations

import pytest
from hypothesis import HealthCheck, given, settings

from fma_bands.agreement import agreement_report, metric_alpha
from fma_bands.agreement.diagnostics import (
    UNSTATED,
    alphas_by_stratum,
    diagnostics,
    diagnostics_json,
    mode_bands,
    planning_rows,
    rater_diagnostics,
    rater_rows,
    stratum_rows,
)
from fma_bands.agreement.engine import Stratum
from fma_bands.agreement.metrics import POOLED, report_key
from fma_bands.core.errors import FmaBandsError
from tests.agreement.build import rate, studies

SUBS = ("esi_acuity", "orders", "admit", "followup_days")
SOME = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def close(a, b, tol=1e-9):
    return (a is None and b is None) or (a is not None and b is not None and abs(a - b) <= tol)


def jaccard(a, b):
    """1 - |A n B| / |A u B|, two empty sets at distance 0: the band metric's distance."""
    union = set(a) | set(b)
    return 0.0 if not union else 1 - len(set(a) & set(b)) / len(union)


def distance(x, y):
    if x.band.sub_action == "orders":
        return (
            jaccard(x.band.required, y.band.required)
            + jaccard(x.band.defensible, y.band.defensible)
        ) / 2
    return jaccard(x.band.values(), y.band.values())


def same(x, y):
    if x.band.sub_action == "orders":
        return set(x.band.required) == set(y.band.required) and x.values == y.values
    return x.values == y.values


def plain_pairs(ratings, rater, mode):
    """(pairs, same band, summed distance) of `rater` with every other rater on each band, in
    plain Python: ratings that are not DECLINE, in one mode."""
    bands = {}
    for r in ratings:
        if r.mode == mode and r.values:
            bands.setdefault((r.vignette_id, r.sub_action), []).append(r)
    n, agree, total = 0, 0, 0.0
    for group in bands.values():
        for x, y in permutations(group, 2):
            if x.rater == rater:
                n += 1
                agree += same(x, y)
                total += distance(x, y)
    return n, agree, total


@SOME
@given(studies(SUBS, modes=("review", "blind"), max_raters=5, max_vignettes=6))
def test_each_rater_against_a_plain_recomputation(ratings):
    found = rater_diagnostics(mode_bands(ratings))
    modes = [m for m in ("review", "blind") if any(r.mode == m for r in ratings)]
    assert sorted({(d.mode, d.rater) for d in found}) == sorted(
        {(r.mode, r.rater) for r in ratings}
    )
    for d in found:
        mine = [r for r in ratings if r.mode == d.mode and r.rater == d.rater]
        assert d.n_bands == len(mine)
        assert d.n_declined == sum(r.verdict == "DECLINE" for r in mine)
        n, agree, total = plain_pairs(ratings, d.rater, d.mode)
        assert d.n_pairs == n
        assert close(d.exact_agreement, agree / n if n else None)
        assert close(d.mean_distance, total / n if n else None)
        # The figure the brief fixes: the pooled band alpha of the mode without this rater.
        in_mode = [r for r in ratings if r.mode == d.mode]
        without = metric_alpha(
            "band", [r for r in in_mode if r.rater != d.rater], bootstrap=0
        ).alpha
        everyone = metric_alpha("band", in_mode, bootstrap=0).alpha
        assert close(d.alpha_without, without)
        assert close(
            d.alpha_without_change, None if None in (without, everyone) else without - everyone
        )
    assert [d.mode for d in found] == sorted([d.mode for d in found], key=modes.index)


@SOME
@given(studies(SUBS, modes=("review", "blind"), max_raters=5, max_vignettes=6))
def test_the_reports_alphas_without_each_rater_give_the_same_figures(ratings):
    """The command passes the report's pooled band alphas (each holding the alpha without every
    rater): the figures are those computed here from the ratings."""
    report = agreement_report(ratings, bootstrap=0)
    pooled = {
        mode: a
        for mode in report.modes
        if (a := report.metrics.get(report_key(mode, POOLED, report.modes), {}).get("band"))
    }
    bands = mode_bands(ratings)
    assert rater_diagnostics(bands, pooled) == rater_diagnostics(bands)


def test_two_raters_by_hand():
    """Three ESI bands: the same band, {1, 2} beside {2} (distance 1/2), {3} beside {4}
    (distance 1); a third rater only declines."""
    ratings = [
        rate("v1", "esi_acuity", "a", [2]),
        rate("v1", "esi_acuity", "b", [2]),
        rate("v2", "esi_acuity", "a", [1, 2]),
        rate("v2", "esi_acuity", "b", [2]),
        rate("v3", "esi_acuity", "a", [3]),
        rate("v3", "esi_acuity", "b", [4]),
        rate("v3", "esi_acuity", "c"),
    ]
    a, b, c = rater_diagnostics(mode_bands(ratings))
    assert (a.rater, a.n_bands, a.n_declined, a.n_pairs) == ("a", 3, 0, 3)
    assert a.exact_agreement == pytest.approx(1 / 3)
    assert a.mean_distance == pytest.approx(0.5)
    assert (b.exact_agreement, b.mean_distance) == (a.exact_agreement, a.mean_distance)
    # Without a, b has no one to pair with: undefined, never 0.
    assert a.alpha_without is None and a.alpha_without_change is None
    everyone = metric_alpha("band", ratings, bootstrap=0).alpha
    # c gave no band: without c, alpha is as it was.
    assert (c.n_bands, c.n_declined, c.n_pairs) == (1, 1, 0)
    assert (c.exact_agreement, c.mean_distance) == (None, None)
    assert c.alpha_without == everyone and c.alpha_without_change == 0.0


def test_a_rater_twice_on_one_band_is_refused_by_name():
    ratings = [rate("v1", "admit", "a", [True]), rate("v1", "admit", "a", [False])]
    with pytest.raises(FmaBandsError, match="v1 / admit / a"):
        mode_bands(ratings)


def ambiguous_study():
    """Twelve vignettes, three raters, two sub-actions; vignettes in every stratum and none."""
    strata = ["clear", "intermediate", "borderline", None]
    ratings, ambiguity = [], {}
    for v in range(12):
        vid = f"v{v:02d}"
        ambiguity[vid] = strata[v % 4]
        for i, rater in enumerate(("a", "b", "c")):
            ratings.append(rate(vid, "esi_acuity", rater, [1 + (v + (i == 2) * (v % 3)) % 5]))
            ratings.append(rate(vid, "admit", rater, [bool((v + i * (v % 2)) % 2)]))
    return ratings, ambiguity


def test_alpha_by_stratum_is_the_alpha_of_each_strata_vignettes():
    ratings, ambiguity = ambiguous_study()
    del ambiguity["v11"]  # a vignette the mapping does not know is unstated too
    found = alphas_by_stratum(ratings, ambiguity, bootstrap=50, seed=3)
    assert list(found) == ["clear", "intermediate", "borderline", UNSTATED]
    for name, a in found.items():
        chosen = [r for r in ratings if (ambiguity.get(r.vignette_id) or UNSTATED) == name]
        assert a == metric_alpha("band", chosen, bootstrap=50, seed=3)
        assert a.scope == POOLED and a.n_vignettes == 3
    assert sum(a.n_pairable for a in found.values()) == metric_alpha("band", ratings).n_pairable


def test_alpha_by_stratum_refuses_both_modes_at_once():
    ratings, ambiguity = ambiguous_study()
    ratings[0] = rate("v00", "esi_acuity", "a", [1], mode="blind")
    with pytest.raises(FmaBandsError, match="never pooled"):
        alphas_by_stratum(ratings, ambiguity, bootstrap=0)


def test_the_json_keys_and_undefined_is_none():
    ratings, ambiguity = ambiguous_study()
    ratings = [*ratings, rate("v99", "admit", "d", [True])]  # d pairs with no one
    found = diagnostics(ratings, ambiguity, bootstrap=40, seed=1, simulations=50)
    data = diagnostics_json(found)
    assert set(data) == {"raters", "by_stratum", "planning"}
    assert [r["rater"] for r in data["raters"]] == ["a", "b", "c", "d"]
    assert set(data["raters"][0]) == {
        "rater", "mode", "n_bands", "n_declined", "n_pairs", "exact_agreement", "mean_distance",
        "alpha_without", "alpha_without_change",
    }  # fmt: skip
    d = data["raters"][3]
    assert (d["n_pairs"], d["exact_agreement"], d["mean_distance"]) == (0, None, None)
    assert [s["stratum"] for s in data["by_stratum"]] == [
        "clear", "intermediate", "borderline", UNSTATED,
    ]  # fmt: skip
    assert all(s["metric"] == "band" and s["scope"] == POOLED for s in data["by_stratum"])
    assert data["planning"]["width"] == 0.1
    assert [p["scope"] for p in data["planning"]["plans"]] == [POOLED, "admit", "esi_acuity"]
    # The rows the page and the table show carry the same figures, undefined as "-".
    rows = rater_rows(found.raters)
    assert rows[3]["same band"] == "-" and rows[3]["mean distance"] == "-"
    assert [r["stratum"] for r in stratum_rows(found.by_stratum)] == [
        s["stratum"] for s in data["by_stratum"]
    ]
    plan = planning_rows(found.planning)[0]
    assert plan["sub-action"] == "pooled (stratified by sub-action)"
    assert set(plan) >= {"10", "1000", "vignettes needed"}


def test_no_planning_without_intervals():
    ratings, ambiguity = ambiguous_study()
    found = diagnostics(ratings, ambiguity, bootstrap=0)
    assert found.planning == ()
    assert all(s.alpha.ci_low is None for s in found.by_stratum)
    assert sum(r.n_bands for r in found.raters) == len(ratings)  # each rating: one band


def test_one_stratum_holding_every_rating_is_the_reports_pooled_band_alpha():
    """A study whose vignettes state no ambiguity has one stratum, all of it: the report's
    pooled band alpha stands for it, the very alpha computed afresh."""
    ratings, _ = ambiguous_study()
    report = agreement_report(ratings, bootstrap=60, seed=4)
    pooled = {"review": report.metrics[POOLED]["band"]}
    found = diagnostics(ratings, {}, pooled=pooled, bootstrap=60, seed=4, simulations=20)
    ((name, a),) = [(s.stratum, s.alpha) for s in found.by_stratum]
    assert name == UNSTATED and a == metric_alpha("band", ratings, bootstrap=60, seed=4)


def test_the_raters_strata_are_let_go_before_the_alphas_by_ambiguity_make_theirs(monkeypatch):
    # At 1,000 x 20 an orders band stratum's distances alone are 50 MB: the per-rater strata
    # held while each ambiguity stratum made its own were the peak of `agreement`.
    ratings, ambiguity = ambiguous_study()
    alive = []

    def counting(*args, **kwargs):
        gc.collect()
        alive.append(sum(isinstance(o, Stratum) for o in gc.get_objects()))
        return alphas_by_stratum(*args, **kwargs)

    monkeypatch.setattr("fma_bands.agreement.diagnostics.alphas_by_stratum", counting)
    found = diagnostics(ratings, ambiguity, bootstrap=40, seed=4, simulations=20)
    assert alive and alive == [0] * len(alive)
    assert found.raters and found.by_stratum and found.planning
