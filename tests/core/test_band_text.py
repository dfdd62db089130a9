"""Bands as text: the hand-back notation read back into bands, and bands in plain words."""

import json

import pytest
from hypothesis import given

from fma_bands.core.band_text import describe, parse_notation
from fma_bands.core.bands import IntervalBand, parse_band, to_harness
from fma_bands.core.errors import FmaBandsError
from tests.core.test_bands import value_bands


def test_notation_of_the_handback():
    assert to_harness(parse_notation("analgesia_tier", "{1, 3}")) == [1, 3]
    assert to_harness(parse_notation("followup_days", '{"min": 1, "max": 30}')) == {
        "min": 1,
        "max": 30,
    }
    assert to_harness(parse_notation("admit", "{false, true}")) == [False, True]
    with pytest.raises(FmaBandsError, match="double quotes"):
        parse_notation("followup_days", "{min: 1, max: 30}")
    with pytest.raises(FmaBandsError, match="cannot read band"):
        parse_notation("esi_acuity", "2 or 3")
    with pytest.raises(FmaBandsError, match="outside the domain"):
        parse_notation("esi_acuity", "{0, 1}")


def test_describe_reads_like_a_clinician_would_say_it():
    assert describe(parse_band("analgesia_tier", [1, 3])) == "1 - NSAID, 3 - strong opioid"
    assert describe(parse_band("followup_days", {"min": 1, "max": 30})) == "1 day to 30 days"
    assert describe(parse_band("admit", [False, True])) == "either (yes or no)"
    # Never a bare "no", which reads as "no band" beside a label.
    assert describe(parse_band("admit", [False])) == "the answer no"
    assert describe(parse_band("controlled_substance_caution", [True])) == "the answer yes"


def notation(band) -> str:
    """How a clinician writes the band on a hand-back line (docs/design.md, The review task)."""
    if isinstance(band, IntervalBand):
        return json.dumps({"min": band.min, "max": band.max})
    return (
        "{"
        + ", ".join(str(v).lower() if isinstance(v, bool) else str(v) for v in band.members)
        + "}"
    )


@given(value_bands())
def test_notation_round_trip(band):
    assert parse_notation(band.sub_action, notation(band)) == band


@pytest.mark.parametrize("digit", ["３", "٣"])
def test_only_ascii_digits_are_numbers(digit):
    """A full-width or Arabic-Indic digit is not read as 3: it is refused as no value."""
    with pytest.raises(FmaBandsError):
        parse_notation("analgesia_tier", f"{{{digit}}}")


@pytest.mark.parametrize(
    "text", ["value <= ３", "value <= " + "9" * 5000, "value <= 1234567890123456789"]
)
def test_a_threshold_is_an_ascii_integer_of_a_sensible_length(text):
    from fma_bands.core.actions import parse_threshold

    with pytest.raises(FmaBandsError, match="cannot read threshold") as refused:
        parse_threshold(text)
    assert len(str(refused.value)) < 300  # the message does not repeat a flood
