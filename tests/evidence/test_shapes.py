"""The shapes the registry reads in a signed record's content: a review and an exemption review
are read only whole and of the right kinds; what a record's content lacks is worked out with its
parse and kept with it, and the walk refuses the record for it only after its signer's key."""

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from fma_bands.evidence import shapes
from fma_bands.evidence.dsse import IN_TOTO_PAYLOAD_TYPE, STATEMENT_TYPE
from fma_bands.evidence.envelope import TYPE_OF, envelope_from_bytes

GOOD_REVIEW = {
    "vignette_id": "v1",
    "sub_action": "followup_days",
    "band_digest": "sha256:ab",
    "context_digest": "sha256:cd",
    "proposal_digest": "sha256:ef",
    "verdict": "AMEND",
    "mode": "review",
    "reason": "a reason",
    "answers": {"q1": {"choice": "yes"}, "q5": {"choice": "band", "note": "fits"}},
    "corrections": {},
    "origin": "app",
    "round": 2,
    "attested_band": {"min": 1, "max": 3},
    "anything": ["else", 1],  # what the registry does not read may be anything
}

# Each change to the good review, and whether the review it makes is still well formed.
SHAPES: list[tuple[str, Any, bool]] = [
    ("verdict", "DECLINE", True),
    ("proposal_digest", None, True),
    ("reason", None, True),
    ("round", 1, True),
    ("answers", {}, True),
    ("verdict", "accept", False),
    ("verdict", None, False),
    ("verdict", ["ACCEPT"], False),
    ("vignette_id", 7, False),
    ("sub_action", None, False),
    ("band_digest", b"sha256:ab", False),
    ("context_digest", {"sha256": "cd"}, False),
    ("proposal_digest", 5, False),
    ("mode", None, False),
    ("reason", ["a", "reason"], False),
    ("answers", [], False),
    ("answers", None, False),
    ("answers", {"q1": "yes"}, False),
    ("answers", {"q1": {"choice": "yes"}, "q2": None}, False),
    ("corrections", "none", False),
    ("origin", 1, False),
    ("round", 0, False),
    ("round", True, False),
    ("round", "2", False),
    ("round", 2.0, False),
]


@pytest.mark.parametrize(("key", "value", "well_formed"), SHAPES)
def test_a_signed_review_is_read_only_in_the_shape_the_registry_reads(key, value, well_formed):
    review = {**GOOD_REVIEW, key: value}
    assert shapes.review_well_formed(review) is well_formed


@pytest.mark.parametrize(
    "missing", ["vignette_id", "sub_action", "band_digest", "context_digest", "verdict"]
)
def test_a_signed_review_without_its_band_digests_or_verdict_is_refused(missing):
    review = {k: v for k, v in GOOD_REVIEW.items() if k != missing}
    assert shapes.review_well_formed(review) is False


@pytest.mark.parametrize(
    "optional", ["proposal_digest", "mode", "reason", "answers", "corrections", "origin", "round"]
)
def test_what_else_a_signed_review_holds_may_be_left_out(optional):
    review = {k: v for k, v in GOOD_REVIEW.items() if k != optional}
    assert shapes.review_well_formed(review) is True


@pytest.mark.parametrize("review", [None, [], "a review", [("verdict", "ACCEPT")]])
def test_a_signed_review_that_is_no_mapping_is_refused(review):
    assert shapes.review_well_formed(review) is False


GOOD_EXEMPTION_REVIEW = {
    "attribute": "sex",
    "sub_action": "orders",
    "entry_digest": "sha256:" + "0" * 64,
    "verdict": "AMEND",
    "direction": "fewer",
    "round": 1,
}


@pytest.mark.parametrize(
    ("verdict", "direction", "well_formed"),
    [
        ("AMEND", "fewer", True),
        ("AMEND", "away_from_nsaid", True),
        ("AMEND", None, False),
        ("AMEND", "", False),
        ("AMEND", "Fewer!", False),
        ("AMEND", "fewer\n", False),
        ("AMEND", "x" * 41, False),
        ("CONFIRM", None, True),
        ("REJECT", None, True),
        ("CONFIRM", "fewer", False),
        ("REJECT", "Fewer!", False),
        ("CONFIRM", ["fewer"], False),
        ("AMEND", ["fewer"], False),
        ("AMEND", {"a": 1}, False),
        ("AMEND", 5, False),
    ],
)
def test_a_signed_exemption_reviews_direction_is_text_and_an_amends_a_harness_word(
    verdict, direction, well_formed
):
    """The decision compares the verdicts and directions the raters gave (a set of them), and
    the export writes an AMEND's for the harness, which compares it as a word: a direction
    on a CONFIRM or a REJECT, or an AMEND's that is no word, refuses the record whole."""
    review = {**GOOD_EXEMPTION_REVIEW, "verdict": verdict, "direction": direction}
    assert shapes.exemption_reviews_well_formed([review]) is well_formed
    without = {k: v for k, v in review.items() if k != "direction"}
    assert shapes.exemption_reviews_well_formed([without]) is (verdict != "AMEND")


@pytest.mark.parametrize(
    ("round_", "well_formed"),
    [(1, True), (2, True), (0, False), (-1, False), (True, False), (1.0, False), ("1", False)],
)
def test_a_signed_exemption_reviews_round_is_a_round(round_, well_formed):
    """As a band review's: 1 or more, an integer and not a truth value."""
    review = {**GOOD_EXEMPTION_REVIEW, "round": round_}
    assert shapes.exemption_reviews_well_formed([review]) is well_formed


@pytest.mark.parametrize(
    ("reason", "well_formed"), [("too rare here", True), (None, True), (["x"], False), (3, False)]
)
def test_a_signed_exemption_reviews_reason_is_text_if_given(reason, well_formed):
    review = {**GOOD_EXEMPTION_REVIEW, "reason": reason}
    assert shapes.exemption_reviews_well_formed([review]) is well_formed


@pytest.mark.parametrize(
    ("predicate", "lacks"),
    [
        ({"reviews": [GOOD_REVIEW]}, None),
        ({"reviews": [GOOD_REVIEW], "exemption_reviews": [GOOD_EXEMPTION_REVIEW]}, None),
        ({"reviews": []}, None),
        ({}, shapes.NOT_REVIEWS),
        ({"reviews": {"0": GOOD_REVIEW}}, shapes.NOT_REVIEWS),
        ({"reviews": [GOOD_REVIEW, {**GOOD_REVIEW, "verdict": "MAYBE"}]}, shapes.NOT_REVIEWS),
        ({"reviews": [GOOD_REVIEW], "exemption_reviews": {}}, shapes.NOT_EXEMPTION_REVIEWS),
        (
            {
                "reviews": [GOOD_REVIEW],
                "exemption_reviews": [{**GOOD_EXEMPTION_REVIEW, "round": True}],
            },
            shapes.NOT_EXEMPTION_REVIEWS,
        ),
        (
            {
                "reviews": [],
                "exemption_reviews": [{**GOOD_EXEMPTION_REVIEW, "direction": "Fewer!"}],
            },
            shapes.NOT_EXEMPTION_REVIEWS,
        ),
        (
            {
                "reviews": [],
                "exemption_reviews": [
                    {**GOOD_EXEMPTION_REVIEW, "verdict": "CONFIRM", "direction": "zzz"}
                ],
            },
            shapes.NOT_EXEMPTION_REVIEWS,
        ),
    ],
)
def test_what_an_adjudication_lacks_is_named_by_the_first_part_that_lacks_its_shape(
    predicate, lacks
):
    assert shapes.adjudication_lacks(predicate) == lacks


def test_a_parse_carries_what_an_adjudications_content_lacks_and_no_other_kind_lacks_any():
    def record(kind: str, predicate: dict) -> bytes:
        statement = {
            "_type": STATEMENT_TYPE,
            "predicateType": TYPE_OF[kind],
            "subject": [],
            "predicate": {"log": {}, **predicate},
        }
        payload = base64.b64encode(json.dumps(statement).encode()).decode()
        # Never checked here: what a record lacks is known before any signature is.
        unchecked = {"keyid": "sha256:00", "sig": base64.b64encode(bytes(64)).decode()}
        return json.dumps(
            {"payload": payload, "payloadType": IN_TOTO_PAYLOAD_TYPE, "signatures": [unchecked]}
        ).encode()

    bad = {"reviews": [{**GOOD_REVIEW, "answers": []}]}
    assert envelope_from_bytes(Path("a"), record("adjudication", bad)).lacks == shapes.NOT_REVIEWS
    good = {"reviews": [GOOD_REVIEW]}
    assert envelope_from_bytes(Path("b"), record("adjudication", good)).lacks is None
    assert envelope_from_bytes(Path("c"), record("revocation", bad)).lacks is None
