"""What a rater signs is true of every review it covers (docs/design.md, Blinding and rounds)."""

from fma_bands.core.protocol import STATEMENT_TEXT, statement_text


def test_round_one_alone_is_signed_as_made_without_seeing_anyone_elses_work():
    assert statement_text([1, 1]) == STATEMENT_TEXT
    assert "without seeing any other rater's work" in STATEMENT_TEXT


def test_a_round_two_review_is_never_signed_as_made_blind():
    only_two = statement_text([2])
    assert "without seeing" not in only_two
    assert "after I saw the anonymised round-1 reviews of the same band" in only_two
    both = statement_text([2, 1])
    assert "those of round 1 made without seeing any other rater's work" in both
    assert "those of round 2 made after I saw the anonymised round-1 reviews" in both
