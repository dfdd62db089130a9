"""The table of bands the Band registry and Agreement pages open on (app_pages/band_table.py):
each column as wide as the page gives it, and a row as tall as its longest cell needs (up to
three lines); a table whose every cell fits on a line keeps the default rows."""

from app_pages.band_table import (
    CHARACTERS_PER_PIXEL,
    LINE,
    MAX_LINES,
    ROW,
    SHORTEST_WRAPPING_ROW,
    row_height,
)

WIDTHS = {"case": 140, "status": 170}


def test_rows_that_fit_on_a_line_keep_the_default_height():
    assert (
        row_height([{"case": "3 · demo_doc_01", "status": "clinician-adjudicated"}], WIDTHS) == ROW
    )
    assert row_height([], WIDTHS) == ROW


def test_a_long_cell_makes_every_row_tall_enough_for_its_lines():
    status = "not adjudicated: no signed review, same band signed elsewhere"  # 62 characters
    per_line = int(170 * CHARACTERS_PER_PIXEL)
    lines = -(-len(status) // per_line)
    assert lines == 3
    height = row_height([{"case": "1", "status": "ok"}, {"case": "2", "status": status}], WIDTHS)
    assert height == max(SHORTEST_WRAPPING_ROW, LINE * lines + 16)
    # A cell of a column the widths leave out is not measured (the grid sizes it itself).
    assert row_height([{"raters": "x" * 500}], WIDTHS) == ROW
    # Every row is as tall as the tallest: three lines at most, the rest in the details.
    assert row_height([{"status": "x" * 500}], WIDTHS) == LINE * MAX_LINES + 16


def test_a_table_may_ask_for_more_lines_and_fewer_at_least():
    # The Sign page's reviews: three lines at least (a sub-action's name wraps), up to eight.
    assert row_height([{"case": "1"}], WIDTHS, fewest=3, most=8) == LINE * 3 + 16
    assert row_height([{"status": "x" * 500}], WIDTHS, fewest=3, most=8) == LINE * 8 + 16
    five = "x" * (int(170 * CHARACTERS_PER_PIXEL) * 5)
    assert row_height([{"status": five}], WIDTHS, fewest=3, most=8) == LINE * 5 + 16
