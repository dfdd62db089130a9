"""The registry's codes in people's words (issue 24, point 5): every reason and warning code the
registry writes has a few words for a table and a sentence for a screen, and a code the words do
not know yet still reads as a sentence; the harness's limits are said without its own terms."""

import re

from fma_bands.core.labels import (
    HARNESS_WORDS,
    REASON_WORDS,
    WARNING_WORDS,
    code_sentence,
    code_words,
)
from fma_bands.evidence.provenance import REASONS, WARNINGS
from fma_bands.evidence.registry import CHAIR_REASONS

DEVELOPER_WORDS = re.compile(r"TypeError|in_band|x_required|dichotomy|\b[a-z]+_[a-z_]+\b")


def test_every_code_the_registry_writes_has_its_words():
    chair_warning = {"chair_decision", "chair_rated"}  # the chair codes a granted band carries
    assert set(REASONS) | (set(CHAIR_REASONS) - chair_warning) == set(REASON_WORDS)
    assert set(WARNINGS) | chair_warning == set(WARNING_WORDS)


def test_the_words_are_plain_short_where_short_and_whole_sentences():
    for words in (*REASON_WORDS.values(), *WARNING_WORDS.values(), *HARNESS_WORDS.values()):
        assert 0 < len(words.short.split()) <= 5, words.short
        assert words.short == words.short.lower(), words.short
        assert words.sentence[0].isupper() and words.sentence.endswith("."), words.sentence
        assert not DEVELOPER_WORDS.search(words.short + " " + words.sentence), words


def test_a_code_is_shown_beside_its_sentence():
    said = code_sentence("no_attestation", REASON_WORDS)
    assert said == f"{REASON_WORDS['no_attestation'].sentence} (code: no_attestation)"


def test_a_code_without_words_still_reads_as_words():
    words = code_words("brand_new_code", REASON_WORDS)
    assert words.short == "brand new code" and words.sentence == "Brand new code."
    assert code_sentence("brand_new_code", REASON_WORDS).endswith("(code: brand_new_code)")


def test_a_band_signed_only_on_another_case_is_said_as_still_needing_its_own():
    """Not as a mistake someone made: nobody signed the wrong case, the signature just does not
    carry over."""
    words = REASON_WORDS["wrong_subject"]
    assert words.short == "same band signed elsewhere"
    assert "still needs its own" in words.sentence


def test_an_orders_band_names_each_test_once_where_it_stands():
    from fma_bands.core.bands import MultilabelBand
    from fma_bands.core.labels import describe_band

    def orders(required: tuple[str, ...], defensible: tuple[str, ...]) -> str:
        band = MultilabelBand(sub_action="orders", required=required, defensible=defensible)
        return describe_band(band, {"ecg": "ECG", "troponin": "Troponin", "cbc": "CBC"})

    assert (
        orders(("ecg",), ("cbc", "ecg", "troponin"))
        == "required: ECG; also defensible: CBC, Troponin"
    )
    assert orders(("ecg",), ("ecg",)) == "required: ECG; nothing else defensible"
    assert orders((), ("ecg", "troponin")) == "defensible to order: ECG, Troponin; none required"
