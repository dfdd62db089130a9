"""What a rater signs is true of every review it covers (docs/design.md, Blinding and rounds):
its round and its mode decide what the rater had read when they judged."""

from itertools import combinations

import pytest

from fma_bands.core.protocol import statement_text

KINDS = [(1, "review"), (1, "blind"), (2, "review"), (2, "blind")]
REVIEW = "made after reading the proposed band with its source, clause and reasoning"
BLIND = "written without seeing the proposed band"
ALONE = "without seeing any other rater's work"
PANEL = (
    "after being shown the anonymised round-1 reviews of the same band, if any were made "
    "(no rater named)"
)
SAYS = {
    (1, "review"): f"{REVIEW}, and {ALONE}",
    (1, "blind"): f"{BLIND}, and {ALONE}",
    (2, "review"): f"{REVIEW}, and {PANEL}",
    (2, "blind"): f"{BLIND}, and {PANEL}",
}


@pytest.mark.parametrize("kind", KINDS)
def test_one_kind_says_exactly_what_the_rater_had_read(kind):
    text = statement_text([kind, kind])
    assert text.endswith(f"my own clinical judgement, {SAYS[kind]}.")
    number, mode = kind
    # Nothing false: a round-2 review is never signed as made alone, a blind one never as made
    # after reading the proposal, and the other way round.
    assert (ALONE in text) is (number == 1)
    assert (PANEL in text) is (number == 2)
    assert (REVIEW in text) is (mode == "review")
    assert (BLIND in text) is (mode == "blind")


@pytest.mark.parametrize(
    "mixed", [list(c) for n in (2, 3, 4) for c in combinations(KINDS, n)], ids=str
)
def test_a_mixed_set_says_each_part(mixed):
    text = statement_text(reversed(mixed))  # the order the reviews come in does not matter
    parts = text.split("my own clinical judgement: ", 1)[1].rstrip(".").split("; ")
    assert parts == [
        f"those of round {number} in {mode} mode {SAYS[(number, mode)]}"
        for number, mode in sorted(mixed)
    ]
    assert statement_text(mixed) == text


def test_nothing_to_sign_reads_as_an_independent_review():
    assert statement_text([]) == statement_text([(1, "review")])


def test_an_unknown_round_or_mode_has_no_statement():
    with pytest.raises(ValueError, match="round 3 in review mode"):
        statement_text([(1, "review"), (3, "review")])
    with pytest.raises(ValueError, match="round 1 in guided mode"):
        statement_text([(1, "guided")])


def test_exemption_reviews_alone_are_signed_as_exemptions_never_as_bands():
    text = statement_text([], exemptions=True)
    assert "confounded-pair exemptions" in text and ALONE in text
    assert "band" not in text


@pytest.mark.parametrize("kind", KINDS)
def test_bands_and_exemptions_together_say_both(kind):
    text = statement_text([kind], exemptions=True)
    assert text.startswith(statement_text([kind]) + " ")
    assert text.endswith(statement_text([], exemptions=True))
