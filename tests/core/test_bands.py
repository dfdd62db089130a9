"""Typed bands: harness traps refused, membership, straddling, set algebra, digests."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fma_bands.core.actions import SUB_ACTIONS, Threshold, parse_threshold
from fma_bands.core.bands import (
    IntervalBand,
    MultilabelBand,
    SetBand,
    band_from_values,
    consensus,
    exported_span,
    parse_band,
    rater_span,
    to_file,
    to_harness,
)
from fma_bands.core.errors import FmaBandsError

ESI = SUB_ACTIONS["esi_acuity"].threshold
OPIOID = SUB_ACTIONS["analgesia_tier"].threshold


def test_draft_bands_membership_and_straddling(shared_library):
    bands = {(v.id, p.sub_action): p.acceptable for v in shared_library for p in v.proposals}
    triage = bands[("draft_triage_01", "esi_acuity")]
    ordering = bands[("draft_ordering_01", "esi_acuity")]
    medication = bands[("draft_medication_01", "analgesia_tier")]
    followup = bands[("draft_documentation_01", "followup_days")]

    assert to_harness(triage) == [2]
    assert triage.straddles(ESI) is False
    assert to_harness(ordering) == [2, 3]
    assert ordering.straddles(ESI) is True
    assert to_harness(medication) == [1, 2]
    assert medication.straddles(OPIOID) is True
    assert to_harness(followup) == {"min": 1, "max": 14}
    assert followup.straddles(parse_threshold("value <= 14")) is False
    assert followup.straddles(parse_threshold("value <= 7")) is True

    assert triage.contains(2) and not triage.contains(1) and not triage.contains(3)
    assert followup.contains(1) and followup.contains(14)
    assert not followup.contains(0) and not followup.contains(15)
    # A bool action is never a member of an integer band (the harness raises on it).
    assert not medication.contains(True)


@pytest.mark.parametrize(
    ("name", "raw", "hint"),
    [
        ("esi_acuity", (1, 5), "write a list [1, 5]"),
        ("esi_acuity", range(1, 5), "{min: 1, max: 4}"),
        ("followup_days", {"min": 1}, "lacks max"),
        ("followup_days", {"max": 30}, "lacks min"),
        ("followup_days", {"min": 1, "max": 30, "step": 1}, "extra keys ['step']"),
        ("esi_acuity", [], "band is empty"),
        ("followup_days", {"min": 30, "max": 1}, "{min: 1, max: 30}"),
        ("esi_acuity", [0], "outside the domain"),
        ("analgesia_tier", [4], "outside the domain"),
        ("followup_days", {"min": 0, "max": 366}, "outside the domain"),
        ("esi_acuity", [True], "is a boolean but esi_acuity takes integers"),
        ("followup_days", {"min": True, "max": 3}, "not an accepted value"),
        ("admit", [1], "write true"),
        ("admit", [0, 1], "write false"),
        ("esi_acuity", ["2"], "not a valid esi_acuity value"),
        ("esi_acuity", 2, "write e.g."),
        ("esi_acuity", [2, 2], "listed twice"),
        ("urgency_score", [10, 20], "takes an interval"),
        ("admit", {"min": 0, "max": 1}, "not an interval"),
    ],
)
def test_refused_bands_say_what_to_write(name, raw, hint):
    with pytest.raises(FmaBandsError) as caught:
        parse_band(name, raw)
    assert hint in str(caught.value)


def test_orders_are_checked_against_the_vignette():
    orderables = ["cbc", "lipase", "ct_abdomen"]
    band = parse_band(
        "orders", {"required": ["cbc"], "defensible": ["lipase", "cbc"]}, orderables=orderables
    )
    assert isinstance(band, MultilabelBand)
    assert to_file(band) == {"required": ["cbc"], "defensible": ["cbc", "lipase"]}
    assert to_harness(band) == ["cbc", "lipase"]
    with pytest.raises(FmaBandsError, match="not an orderable of this vignette"):
        parse_band("orders", {"required": [], "defensible": ["mri"]}, orderables=orderables)
    with pytest.raises(FmaBandsError, match="not in defensible"):
        parse_band(
            "orders", {"required": ["ct_abdomen"], "defensible": ["cbc"]}, orderables=orderables
        )
    with pytest.raises(FmaBandsError, match="exactly the keys required and defensible"):
        parse_band("orders", {"defensible": ["cbc"]}, orderables=orderables)


def test_harness_form_is_only_ever_a_list_or_min_max_mapping():
    for name, action in SUB_ACTIONS.items():
        domain = action.domain(("cbc", "ecg"))
        for values in (domain[:1], domain[:2], domain[-2:]):
            band = band_from_values(name, values)
            if band is None:
                continue
            form = to_harness(band)
            assert type(form) in (list, dict)
            if isinstance(form, dict):
                assert set(form) == {"min", "max"}
                assert form["min"] <= form["max"]


def test_consensus_is_what_every_rater_admits():
    a = parse_band("esi_acuity", [1, 2])
    b = parse_band("esi_acuity", [2, 3])
    agreed = consensus([a, b])
    assert (agreed.rule, to_harness(agreed.band), agreed.disputed) == ("applied", [2], {1, 3})
    nothing = consensus([a, parse_band("esi_acuity", [4])])
    assert (nothing.rule, nothing.band, nothing.disputed) == ("empty", None, {1, 2, 4})
    short = parse_band("followup_days", {"min": 1, "max": 14})
    long = parse_band("followup_days", {"min": 7, "max": 30})
    assert to_harness(consensus([short, long]).band) == {"min": 7, "max": 14}
    with pytest.raises(FmaBandsError, match="different sub-actions"):
        consensus([a, parse_band("analgesia_tier", [1])])


def test_one_rater_is_no_consensus():
    alone = consensus([parse_band("esi_acuity", [2])])
    assert (alone.rule, alone.band, alone.disputed, alone.n_raters) == ("absent", None, set(), 1)
    assert consensus([]).rule == "absent"


def test_orders_consensus_unites_required_inside_shared_defensible():
    orderables = ("cbc", "ecg", "troponin")
    one = parse_band(
        "orders", {"required": ["ecg"], "defensible": ["ecg", "troponin"]}, orderables=orderables
    )
    two = parse_band(
        "orders",
        {"required": ["troponin"], "defensible": ["cbc", "ecg", "troponin"]},
        orderables=orderables,
    )
    agreed = consensus([one, two])
    assert agreed.rule == "applied"
    assert agreed.band.required == ("ecg", "troponin")
    assert agreed.band.defensible == ("ecg", "troponin")
    # A required order another rater does not find defensible leaves no consensus.
    three = parse_band("orders", {"required": [], "defensible": ["ecg"]}, orderables=orderables)
    assert consensus([one, two, three]).rule == "empty"


def test_threshold_text():
    t = parse_threshold("value <= 14")
    assert (t.op, t.value) == ("<=", 14) and t.holds(14) and not t.holds(15)
    assert parse_threshold("== true").holds(True)
    assert str(ESI) == "high_acuity: value <= 2"
    with pytest.raises(FmaBandsError, match="write 'value OP N'"):
        parse_threshold("less than 14")


# Properties ---------------------------------------------------------------------------------

ordinal = st.sampled_from(["esi_acuity", "analgesia_tier"])


@st.composite
def value_bands(draw, name=None):
    name = name or draw(ordinal)
    domain = SUB_ACTIONS[name].domain()
    values = draw(st.sets(st.sampled_from(domain), min_size=1))
    as_interval = draw(st.booleans())
    lo, hi = min(values), max(values)
    if as_interval:
        return parse_band(name, {"min": lo, "max": hi})
    return parse_band(name, sorted(values))


@given(value_bands())
def test_harness_round_trip(band):
    again = parse_band(band.sub_action, to_harness(band))
    assert again == band
    assert again.digest() == band.digest()


@given(st.sets(st.integers(1, 5), min_size=1), st.permutations([1, 2, 3, 4, 5]))
def test_digest_ignores_the_order_values_were_written_in(values, order):
    ordered = [v for v in order if v in values]
    assert (
        parse_band("esi_acuity", ordered).digest()
        == parse_band("esi_acuity", sorted(values)).digest()
    )


@given(value_bands(), st.integers(-2, 8))
def test_membership_matches_expansion(band, value):
    assert band.contains(value) == (value in band.values())
    if isinstance(band, IntervalBand):
        assert band.contains(value) == (band.min <= value <= band.max)


@given(st.lists(value_bands("esi_acuity"), min_size=2, max_size=4))
def test_consensus_admits_exactly_the_intersection(bands):
    agreed = consensus(bands)
    expected = frozenset.intersection(*(b.values() for b in bands))
    if not expected:
        assert (agreed.rule, agreed.band) == ("empty", None)
    else:
        assert agreed.band.values() == expected
    assert agreed.disputed == frozenset.union(*(b.values() for b in bands)) - expected


@given(value_bands(), st.sampled_from(["<=", ">=", "<", ">", "=="]), st.integers(0, 5))
def test_straddling_means_values_on_both_sides(band, op, cut):
    threshold = Threshold(op, cut)
    sides = {threshold.holds(v) for v in band.values()}
    assert band.straddles(threshold) is (len(sides) == 2)


@given(st.sets(st.integers(0, 365), min_size=1, max_size=20))
def test_band_from_values_admits_exactly_those_values(values):
    band = band_from_values("followup_days", values)
    assert band.values() == frozenset(values)
    assert isinstance(band, IntervalBand | SetBand)


@given(
    st.recursive(
        st.integers() | st.text() | st.booleans() | st.none(),
        lambda c: st.lists(c) | st.dictionaries(st.text(), c),
        max_leaves=10,
    )
)
def test_canonical_json_is_stable_and_parses_back(obj):
    from fma_bands.core.canonical import canonical_json

    data = canonical_json(obj)
    assert json.loads(data) == obj
    assert canonical_json(json.loads(data)) == data


def test_canonical_json_refuses_floats():
    from fma_bands.core.canonical import canonical_json

    with pytest.raises(TypeError, match=r"\$\.a\[1\]"):
        canonical_json({"a": [1, 2.5]})


# The disputed span of an adjudicated band: one rule for one rater or many ---------------------


def test_each_raters_span_follows_their_amend_then_their_reading_of_question_5():
    proposed = parse_band("followup_days", {"min": 15, "max": 30}, span=True)
    narrow = parse_band("followup_days", {"min": 1, "max": 14})
    wide = parse_band("followup_days", {"min": 1, "max": 20})
    assert rater_span(proposed, narrow, reading="neither") == frozenset(range(15, 31))
    assert rater_span(proposed, narrow, reading="disputed") == frozenset(range(15, 31))
    assert rater_span(proposed, narrow, reading=None) == frozenset(range(15, 31))
    assert rater_span(proposed, wide, reading=None) == frozenset(range(21, 31))  # minus the band
    assert rater_span(proposed, narrow, reading="band") == frozenset()
    # An AMEND that set or cleared the span decides, whatever question 5 said.
    own = parse_band("followup_days", [40, 41], span=True)
    assert rater_span(proposed, narrow, reading="band", amended=True, corrected=own) == {40, 41}
    assert rater_span(proposed, narrow, reading="neither", amended=True) == frozenset()
    assert rater_span(None, narrow, reading="neither") == frozenset()


def test_the_exported_span_is_the_same_rule_for_one_rater_or_many():
    proposed = parse_band("followup_days", {"min": 15, "max": 30}, span=True)
    narrow = parse_band("followup_days", {"min": 1, "max": 14})
    left = rater_span(proposed, narrow, reading="neither")
    one = exported_span("followup_days", narrow, [left], consensus([narrow]).disputed)
    assert one == parse_band("followup_days", {"min": 15, "max": 30})
    # Two raters who each leave the span disputed: the same span, not dropped.
    two = consensus([narrow, narrow])
    assert exported_span("followup_days", two.band, [left, left], two.disputed) == one
    # Two who settled it: none, as for one who did.
    assert exported_span("followup_days", narrow, [frozenset()], frozenset()) is None
    assert exported_span("followup_days", two.band, [frozenset()] * 2, two.disputed) is None
    # What some but not all admit is disputed too, with what any rater leaves disputed.
    wide = parse_band("followup_days", {"min": 1, "max": 20})
    split = consensus([narrow, wide])
    spans = [rater_span(proposed, b, reading="neither") for b in (narrow, wide)]
    span = exported_span("followup_days", split.band, spans, split.disputed)
    assert span is not None and span.values() == frozenset(range(15, 31))


def test_equal_bands_share_one_set_of_values_and_true_is_never_a_tier_of_one():
    # A study's ratings hold the same bands many times over: one set of values each.
    first = parse_band("followup_days", {"min": 1, "max": 30})
    again = parse_band("followup_days", {"min": 1, "max": 30})
    assert first.values() is again.values()
    assert first.values() == frozenset(range(1, 31))
    # True == 1, so (True,) and (1,) are one key unless the sub-action is part of it: a
    # boolean band read after a tier band (or before) keeps its own values' type.
    tier, boolean = parse_band("analgesia_tier", [1]), parse_band("referral", [True])
    assert [type(v) for v in tier.values()] == [int]
    assert [type(v) for v in boolean.values()] == [bool]
    assert [type(v) for v in parse_band("analgesia_tier", [1]).values()] == [int]
