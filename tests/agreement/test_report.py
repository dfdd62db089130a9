"""The report: values typed by sub-action from the ratings to the JSON (True is never 1), every
metric in every scope with its sizes and reading, the consensus by the one intersection rule,
disputed spans as ranges, and bad ratings refused by name."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fma_bands.agreement import METRICS, POOLED, Rating, agreement_report, report_to_json
from fma_bands.agreement.metrics import (
    ALPHA_FIELDS,
    NEVER_POOLED,
    NOT_APPLICABLE,
    REVIEW_MODE_ONLY,
    TOO_FEW_RATERS,
)
from fma_bands.agreement.panel import band_label
from fma_bands.core.actions import sub_action
from fma_bands.core.bands import consensus, parse_band
from fma_bands.core.errors import FmaBandsError
from tests.agreement.build import rate, raw_band
from tests.memory import peak_of

BAND_KEYS = {
    "vignette_id", "sub_action", "n_raters", "n_declined", "intersection_rule", "consensus",
    "disputed_span", "consensus_text", "disputed_text", "disagreement",
}  # fmt: skip
MIXED = ["analgesia_tier", "controlled_substance_caution", "esi_acuity", "admit", "orders"]


def json_values(sub, entry):
    """The values of a consensus or span as the JSON writes them, back from JSON text."""
    if entry is None:
        return []
    if isinstance(entry, dict) and "min" in entry:
        return [entry["min"], entry["max"]]
    if isinstance(entry, dict):
        return [*entry["required"], *entry["defensible"]]
    return entry


def assert_typed(sub, values):
    expected = sub_action(sub).value_type
    for value in values:
        assert type(value) is expected, (sub, value)


@st.composite
def mixed_arrivals(draw):
    """Boolean, ordinal and orders bands on the same vignettes, in any order of arrival."""
    ratings = []
    for v in range(draw(st.integers(1, 3))):
        for sub in MIXED:
            for r in range(draw(st.integers(1, 3))):
                ratings.append(rate(f"v{v}", sub, f"r{r}", draw(raw_band(sub))))
    return draw(st.permutations(ratings))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mixed_arrivals())
def test_values_keep_their_sub_actions_type_whatever_the_order_of_arrival(ratings):
    report = agreement_report(ratings, bootstrap=0)
    for b in report.bands:
        c = b.consensus
        assert_typed(b.sub_action, c.disputed)
        if c.band is not None:
            assert c.band.sub_action == b.sub_action
            assert_typed(b.sub_action, c.band.values())
        # The one intersection rule, as the registry applies it.
        assert c == consensus([band for _, band in b.bands])
    data = json.loads(json.dumps(report_to_json(report)))
    for entry in data["bands"]:
        for key in ("consensus", "disputed_span"):
            assert_typed(entry["sub_action"], json_values(entry["sub_action"], entry[key]))
    assert report_to_json(agreement_report(sorted(ratings, key=repr), bootstrap=0)) == data


def test_a_boolean_band_and_an_analgesia_band_of_one_are_never_merged():
    # The crash: frozenset({True}) == frozenset({1}) gave the analgesia band the value True.
    ratings = [
        rate("v1", "controlled_substance_caution", "a", [True]),
        rate("v1", "controlled_substance_caution", "b", [True]),
        rate("v1", "analgesia_tier", "a", [1]),
        rate("v1", "analgesia_tier", "b", [1, 2]),
    ]
    for order in (ratings, ratings[::-1]):
        bands = {b.sub_action: b for b in agreement_report(order, bootstrap=0).bands}
        analgesia = bands["analgesia_tier"].consensus.band
        assert analgesia.values() == {1} and type(next(iter(analgesia.values()))) is int
        assert bands["controlled_substance_caution"].consensus.band.values() == {True}
        data = report_to_json(agreement_report(order, bootstrap=0))["bands"]
        by_sub = {b["sub_action"]: b for b in data}
        assert json.dumps(by_sub["analgesia_tier"]["consensus"]) == "[1]"
        assert json.dumps(by_sub["controlled_substance_caution"]["consensus"]) == "[true]"
        assert by_sub["analgesia_tier"]["consensus_text"] == "1 - NSAID"
        assert by_sub["analgesia_tier"]["disputed_text"] == "2 - weak opioid"


def test_json_lists_every_metric_in_every_scope_with_sizes_and_reading():
    ratings = [
        rate("v1", "esi_acuity", "a", [2]),
        rate("v1", "esi_acuity", "b", {"min": 2, "max": 3}),
        rate("v1", "esi_acuity", "c"),
        rate("v1", "orders", "a", {"required": ["ecg"], "defensible": ["ecg", "cbc"]}),
        rate("v2", "esi_acuity", "a", [4]),
        rate("v2", "esi_acuity", "b", [4]),
    ]
    data = json.loads(json.dumps(report_to_json(agreement_report(ratings, bootstrap=50))))
    assert set(data) == {"metrics", "bands"}
    assert set(data["metrics"]) == {"esi_acuity", "orders", POOLED}
    for scope, by_metric in data["metrics"].items():
        assert list(by_metric) == list(METRICS), scope
        for entry in by_metric.values():
            assert tuple(entry) == ALPHA_FIELDS
            assert (entry["alpha"] is None) == (entry["reason"] is not None)
    esi = data["metrics"]["esi_acuity"]
    assert {k: esi["band"][k] for k in ("n_bands", "n_units", "n_raters", "n_pairable")} == {
        "n_bands": 2,
        "n_units": 2,
        "n_raters": 2,
        "n_pairable": 4,
    }
    assert esi["band"]["n_declined"] == 1
    # Membership: each of ESI's five values is a unit of each of the two bands.
    assert (esi["membership"]["n_bands"], esi["membership"]["n_units"]) == (2, 10)
    assert esi["verdict"]["n_pairable"] == 5
    # v2's second review is blind: the modes are reported apart, each scope under its mode.
    mixed = [*ratings[:-1], rate("v2", "esi_acuity", "b", [4], mode="blind")]
    split = report_to_json(agreement_report(mixed, bootstrap=50))["metrics"]
    assert set(split) == {
        f"{mode}:{scope}" for mode in ("review", "blind") for scope in ("esi_acuity", POOLED)
    } | {"review:orders"}
    review, blind = split["review:esi_acuity"], split["blind:esi_acuity"]
    assert (review["band"]["mode"], blind["band"]["mode"]) == ("review", "blind")
    # Verdicts in review mode only: v1 alone pairs; the blind review has no verdict to compare.
    assert (review["verdict"]["n_bands"], review["verdict"]["n_pairable"]) == (1, 3)
    assert blind["verdict"]["reason"] == REVIEW_MODE_ONLY
    assert blind["band"]["reason"] == TOO_FEW_RATERS  # one blind review: nothing pairs
    assert esi["lower"]["level"] == "ordinal"
    assert data["metrics"]["orders"]["membership"]["reason"] == NOT_APPLICABLE["membership"]
    assert data["metrics"]["orders"]["lower"]["reason"] == NOT_APPLICABLE["lower"]
    for metric in ("lower", "upper"):
        assert data["metrics"][POOLED][metric]["reason"] == NEVER_POOLED
    assert all(set(b) == BAND_KEYS for b in data["bands"])
    orders = next(b for b in data["bands"] if b["sub_action"] == "orders")
    assert (orders["n_raters"], orders["intersection_rule"], orders["consensus"]) == (
        1,
        "absent",
        None,
    )


def test_orders_consensus_is_the_union_of_required_inside_the_intersection_of_defensible():
    ratings = [
        rate("v1", "orders", "a", {"required": ["ecg"], "defensible": ["ecg", "cbc", "cxr"]}),
        rate("v1", "orders", "b", {"required": ["cbc"], "defensible": ["ecg", "cbc"]}),
        rate("v2", "orders", "a", {"required": ["cxr"], "defensible": ["cxr", "ecg"]}),
        rate("v2", "orders", "b", {"required": [], "defensible": ["ecg"]}),
    ]
    data = report_to_json(agreement_report(ratings, bootstrap=0))["bands"]
    one, two = data
    assert one["consensus"] == {"required": ["cbc", "ecg"], "defensible": ["cbc", "ecg"]}
    assert one["consensus_text"] == "required: cbc, ecg; defensible: cbc, ecg"
    # cxr is defensible to a only; ecg and cbc are each required by one rater only.
    assert (one["disputed_span"], one["disputed_text"]) == (
        ["cbc", "cxr", "ecg"],
        "required by some raters, not all: cbc, ecg; defensible to some raters, not all: cxr",
    )
    # a requires cxr, which b does not find defensible: no consensus.
    assert (two["intersection_rule"], two["consensus"]) == ("empty", None)


def test_a_required_order_not_every_rater_requires_is_disputed():
    # The audit's case: the same defensible orders, one rater requiring ecg. The consensus
    # requires it (the union), but the raters disagree on it: it is in the disputed span.
    ratings = [
        rate("v1", "orders", "a", {"required": ["ecg"], "defensible": ["ecg", "cbc"]}),
        rate("v1", "orders", "b", {"required": [], "defensible": ["ecg", "cbc"]}),
    ]
    [band] = report_to_json(agreement_report(ratings, bootstrap=0))["bands"]
    assert band["intersection_rule"] == "applied"
    assert band["consensus"] == {"required": ["ecg"], "defensible": ["cbc", "ecg"]}
    assert (band["disputed_span"], band["disputed_text"]) == (
        ["ecg"],
        "required by some raters, not all: ecg",
    )
    assert band["disagreement"] == 0.5


def test_several_raters_with_no_shared_value_are_empty_and_one_rater_is_absent():
    ratings = [
        rate("v1", "esi_acuity", "a", [1]),
        rate("v1", "esi_acuity", "b", [3]),
        rate("v2", "esi_acuity", "a", [2]),
        rate("v2", "esi_acuity", "b"),  # declined: a alone has a band
    ]
    one, two = report_to_json(agreement_report(ratings, bootstrap=0))["bands"]
    assert (one["n_raters"], one["intersection_rule"], one["consensus"]) == (2, "empty", None)
    assert (two["n_raters"], two["intersection_rule"]) == (1, "absent")


def test_disputed_spans_read_as_ranges():
    ratings = [
        rate("v1", "followup_days", "a", {"min": 1, "max": 30}),
        rate("v1", "followup_days", "b", {"min": 7, "max": 14}),
    ]
    [band] = report_to_json(agreement_report(ratings, bootstrap=0))["bands"]
    assert band["consensus"] == {"min": 7, "max": 14}
    assert band["consensus_text"] == "7 to 14 days"
    assert band["disputed_text"] == "1 to 6 and 15 to 30 days"
    assert band["disputed_span"] == [*range(1, 7), *range(15, 31)]  # the harness form


def test_a_yes_no_bands_disputed_span_is_said_as_the_answer_in_dispute():
    ratings = [
        rate("v1", "admit", "a", [True]),
        rate("v1", "admit", "b", [True, False]),
    ]
    [band] = report_to_json(agreement_report(ratings, bootstrap=0))["bands"]
    assert band["consensus_text"] == "the answer yes"
    # A bare "no" would read as "no disputed span".
    assert band["disputed_text"] == "the answer no"
    assert band["disputed_span"] == [False]
    apart = [rate("v1", "admit", "a", [True]), rate("v1", "admit", "b", [False])]
    [band] = report_to_json(agreement_report(apart, bootstrap=0))["bands"]
    assert band["disputed_text"] == "both answers, yes and no"


@pytest.mark.parametrize(
    ("rating", "message"),
    [
        (rate("v1", "esi_acuity", "a", [1], "MAYBE"), "v1 / esi_acuity / a: verdict 'MAYBE'"),
        (rate("v1", "esi_acuity", "a", None, "ACCEPT"), "an ACCEPT rating needs its band"),
        (
            rate("v1", "esi_acuity", "a", [1]).__class__(
                "v1", "esi_acuity", "a", "AMEND", parse_band("analgesia_tier", [1])
            ),
            "its band is for analgesia_tier",
        ),
    ],
)
def test_bad_ratings_are_refused_by_name(rating, message):
    with pytest.raises(FmaBandsError, match=message):
        agreement_report([rating])


def test_a_raters_second_rating_of_a_band_is_refused():
    twice = [rate("v3", "esi_acuity", "b", [1]), rate("v3", "esi_acuity", "b", [2])]
    with pytest.raises(FmaBandsError, match="v3 / esi_acuity / b: the rater has two ratings"):
        agreement_report(twice)


def test_a_rating_holds_no_dictionary_and_equal_bands_share_their_values_and_labels():
    # A study holds a rating per review: each rating's dictionary of what it had computed was
    # most of the 119 MB its ratings took at 1,000 x 20.
    bands = [parse_band("esi_acuity", {"min": 1 + i, "max": 3}) for i in range(3)]
    ids = [f"v{i:05d}" for i in range(5000)]

    def made() -> list[Rating]:
        out = [
            Rating(v, "esi_acuity", "r1", "AMEND", bands[i % 3], proposal=bands[0])
            for i, v in enumerate(ids)
        ]
        assert all(r.values and r.label for r in out)
        return out

    ratings, peak = peak_of(made)
    assert peak / len(ratings) < 200
    assert not hasattr(ratings[0], "__dict__")
    assert [r.unchanged for r in ratings[:3]] == [True, False, False]
    again = parse_band("esi_acuity", {"min": 1, "max": 3})
    assert band_label(again) is ratings[0].label and again.values() is ratings[0].values
    orders = [
        parse_band("orders", {"required": ["ecg"], "defensible": d})
        for d in (["cbc", "ecg"], ["ecg", "cbc"])
    ]
    assert band_label(orders[0]) is band_label(orders[1])
    declined = Rating("v1", "esi_acuity", "r1", "DECLINE", None)
    assert (declined.values, declined.label, declined.unchanged) == (frozenset(), None, False)
