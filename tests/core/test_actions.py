"""The action catalogue's cuts: the registered ones by name, a proposal's own as the primary, and
the study-wide ones carried on every band of their sub-action."""

import pytest

from fma_bands.core.actions import (
    PROPOSAL_CUT,
    SUB_ACTIONS,
    Threshold,
    parse_threshold,
    registered_cut,
)
from fma_bands.core.errors import FmaBandsError


def names(cuts: tuple[Threshold, ...]) -> list[str | None]:
    return [c.name for c in cuts]


def test_every_sub_action_carries_its_registered_default_cuts():
    expected = {
        "esi_acuity": ["high_acuity"],
        "urgency_score": [],
        "orders": [],
        "admit": ["admit"],
        "escalate_icu": ["escalate_icu"],
        "analgesia_tier": ["any_opioid", "strong_opioid"],
        "controlled_substance_caution": ["controlled_substance_caution"],
        "referral": ["referral"],
        # Registered, but carried only where a proposal names it.
        "followup_days": [],
    }
    assert {n: names(SUB_ACTIONS[n].cuts()) for n in expected} == expected
    assert str(SUB_ACTIONS["analgesia_tier"].cuts()[1]) == "strong_opioid: value == 3"
    assert names(SUB_ACTIONS["followup_days"].registered_cuts) == ["followup_within_14"]


def test_registered_names_are_unique_across_the_catalogue():
    every = [c.name for a in SUB_ACTIONS.values() for c in a.registered_cuts]
    assert len(every) == len(set(every)) and None not in every


@pytest.mark.parametrize(
    "text", ["followup_within_14", "followup_within_14: value <= 14", "value <= 14", "<= 14"]
)
def test_the_follow_up_cut_is_named_by_its_name_or_its_expression(text):
    followup = SUB_ACTIONS["followup_days"]
    [cut] = followup.cuts(parse_threshold(text))
    assert (cut.name, cut.expression()) == ("followup_within_14", "value <= 14")


def test_a_proposals_own_cut_is_the_primary_and_the_study_wide_cuts_stay():
    analgesia = SUB_ACTIONS["analgesia_tier"]
    own = analgesia.cuts(parse_threshold("value >= 1"))
    assert [str(c) for c in own] == [
        f"{PROPOSAL_CUT}: value >= 1",
        "any_opioid: value >= 2",
        "strong_opioid: value == 3",
    ]
    # Naming a registered cut makes it the primary, once.
    assert names(analgesia.cuts(parse_threshold("value == 3"))) == ["strong_opioid", "any_opioid"]
    assert names(analgesia.cuts(parse_threshold("strong_opioid"))) == [
        "strong_opioid",
        "any_opioid",
    ]
    # A cut of the author's own name keeps it, even where its line is a registered one's.
    esi = SUB_ACTIONS["esi_acuity"]
    assert [str(c) for c in esi.cuts(parse_threshold("emergent: value <= 2"))] == [
        "emergent: value <= 2",
        "high_acuity: value <= 2",
    ]
    assert names(SUB_ACTIONS["followup_days"].cuts(parse_threshold("value <= 7"))) == [PROPOSAL_CUT]


def test_true_is_never_the_integer_one_when_a_cut_is_matched():
    assert not Threshold("==", True).same_cut(Threshold("==", 1))
    admit = SUB_ACTIONS["admit"]
    assert names(admit.cuts(parse_threshold("value == true"))) == ["admit"]
    assert names(admit.cuts(parse_threshold("value == false"))) == [PROPOSAL_CUT, "admit"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("any_opioid: value >= 3", "any_opioid is the registered cut 'value >= 2'"),
        ("opioids", "no registered cut is named 'opioids'"),
        ("two weeks: value <= 14", "a cut's name is a word of letters, digits and underscores"),
    ],
)
def test_a_registered_name_means_its_own_cut_and_nothing_else(text, message):
    with pytest.raises(FmaBandsError, match=message):
        parse_threshold(text)


def test_registered_cut_finds_a_cut_by_name_on_any_sub_action():
    assert registered_cut("strong_opioid") == Threshold("==", 3, "strong_opioid")
    assert registered_cut("followup_within_14") == Threshold("<=", 14, "followup_within_14")
    assert registered_cut("nothing") is None
