"""The CSV guard against formulas (CSV injection): a cell a spreadsheet would run as a formula
starts with an apostrophe, whatever follows its first character; a number, a range of two
numbers and the dash for none are written as they are, so that R and pandas read them as data."""

import csv
import io

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fma_bands.core.spreadsheet import cell, csv_text

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


@pytest.mark.parametrize(
    "data",
    ["-", "-3.857", "-12", "-0.250", "-4.5%", "-3.857 to 0.847", "-0.328 to -0.022", "0.5"],
)
def test_numbers_and_ranges_of_numbers_are_written_as_data(data):
    assert cell(data) == data


@pytest.mark.parametrize(
    "formula",
    [
        "=1+1",
        "+1",
        "@SUM(1+1)",
        "-2+3+cmd|' /C calc'!A0",  # a minus, then a number, then the attack
        "-1 to 2+cmd|' /C calc'!A0",
        "-3.857 to 0.847)",
        "-0.095, -0.288 to 0.069: unreliable",  # text that starts with a number is still text
        '-HYPERLINK("http://x")',
        "--1",
        "- 1",
        "-1e3",
        "-١٢",  # digits of another script are no number to a spreadsheet's parser here
        "-1\n=2",
        "\t-1",
        "\r-1",
    ],
)
def test_text_that_could_be_a_formula_is_guarded(formula):
    assert cell(formula) == "'" + formula


def test_other_values():
    assert (cell(None), cell(True), cell(-3), cell(-0.5), cell("plain")) == (
        "",
        "true",
        "-3",
        "-0.5",
        "plain",
    )


@given(st.text())
def test_a_guarded_cell_is_the_text_after_one_apostrophe_and_nothing_runs(text):
    written = cell(text)
    assert written in (text, "'" + text)
    if written == text and text.startswith(FORMULA_STARTS):
        # Unguarded only as a number, a range of two, or the dash: no letter but "to", no
        # operator but a leading minus, nothing to call or refer to.
        assert set(text.replace(" to ", "")) <= set("-0123456789.%"), text
        assert "+" not in text and "(" not in text and "|" not in text


@given(st.floats(-1e6, 1e6), st.floats(0, 1))  # alpha is at least 2 - n
def test_figures_as_the_app_writes_them_are_never_guarded(low, high):
    for text in (f"{low:.3f}", f"{low:.1%}", f"{low:.3f} to {high:.3f}"):
        assert cell(text) == text


def test_the_csv_round_trips_data_and_guards_formulas():
    rows = [{"alpha": "-0.250", "interval": "-3.857 to 0.847", "note": "=1+1"}]
    [read] = csv.DictReader(io.StringIO(csv_text(("alpha", "interval", "note"), rows)))
    assert float(read["alpha"]) == -0.25
    assert [float(x) for x in read["interval"].split(" to ")] == [-3.857, 0.847]
    assert read["note"] == "'=1+1"
