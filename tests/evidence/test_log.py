"""The folder's digests, the key the Band registry page keeps its decision under: a file is read
once until written again, and one too large for any reader is never read at all."""

import hashlib
import os
from typing import Any

import pytest

from fma_bands.evidence import log
from fma_bands.evidence.log import folder_digests


def test_a_file_is_hashed_once_until_written_again_and_a_huge_one_never(tmp_path, monkeypatch):
    read: list[int] = []
    real = hashlib.file_digest

    def counted(handle, digest):  # type: ignore[no-untyped-def]
        read.append(os.fstat(handle.fileno()).st_size)
        return real(handle, digest)

    monkeypatch.setattr(log.hashlib, "file_digest", counted)
    record = tmp_path / "000001-x.dsse.json"
    record.write_text("{}")
    with (tmp_path / "huge.dsse.json").open("wb") as handle:
        handle.truncate(64 * 1024 * 1024)  # sparse: no disk, and no reader's limit takes it
    first = folder_digests(tmp_path)
    assert dict(first)["000001-x.dsse.json"] == hashlib.sha256(b"{}").hexdigest()
    assert dict(first)["huge.dsse.json"] == f"too large: {64 * 1024 * 1024} bytes"
    assert folder_digests(tmp_path) == first
    assert read == [2]  # the record once; the huge file never
    # The same size, written again: another digest.
    record.write_text("[]")
    assert dict(folder_digests(tmp_path))["000001-x.dsse.json"] == hashlib.sha256(b"[]").hexdigest()
    assert read == [2, 2]


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
    assert log._review_well_formed(review) is well_formed


@pytest.mark.parametrize(
    "missing", ["vignette_id", "sub_action", "band_digest", "context_digest", "verdict"]
)
def test_a_signed_review_without_its_band_digests_or_verdict_is_refused(missing):
    review = {k: v for k, v in GOOD_REVIEW.items() if k != missing}
    assert log._review_well_formed(review) is False


@pytest.mark.parametrize(
    "optional", ["proposal_digest", "mode", "reason", "answers", "corrections", "origin", "round"]
)
def test_what_else_a_signed_review_holds_may_be_left_out(optional):
    review = {k: v for k, v in GOOD_REVIEW.items() if k != optional}
    assert log._review_well_formed(review) is True


@pytest.mark.parametrize("review", [None, [], "a review", [("verdict", "ACCEPT")]])
def test_a_signed_review_that_is_no_mapping_is_refused(review):
    assert log._review_well_formed(review) is False


GOOD_EXEMPTION_REVIEW = {
    "attribute": "sex",
    "sub_action": "orders",
    "entry_digest": "sha256:" + "0" * 64,
    "verdict": "AMEND",
    "direction": "fewer",
    "round": 1,
}


@pytest.mark.parametrize(
    ("direction", "well_formed"),
    [("fewer", True), (None, True), (["fewer"], False), ({"a": 1}, False), (5, False)],
)
def test_a_signed_exemption_reviews_direction_is_text_if_given(direction, well_formed):
    """The decision compares the directions the raters gave (a set of them): anything but
    text is no direction, and the record holding it is refused whole."""
    review = {**GOOD_EXEMPTION_REVIEW, "direction": direction}
    assert log._exemption_reviews_well_formed([review]) is well_formed
    without = {k: v for k, v in GOOD_EXEMPTION_REVIEW.items() if k != "direction"}
    assert log._exemption_reviews_well_formed([without]) is True


@pytest.mark.parametrize(
    ("reason", "well_formed"), [("too rare here", True), (None, True), (["x"], False), (3, False)]
)
def test_a_signed_exemption_reviews_reason_is_text_if_given(reason, well_formed):
    review = {**GOOD_EXEMPTION_REVIEW, "reason": reason}
    assert log._exemption_reviews_well_formed([review]) is well_formed
