"""A table of bands with one band's details on demand, as the Band registry and Agreement pages
open: a row chosen in the table, or a band chosen by name below it, is the one whose details the
page draws."""

from collections.abc import Mapping, Sequence

import streamlit as st

PLACEHOLDER = "Choose a band to read its details"
ROW = 35  # pixels: Streamlit's default row height
# The grid wraps a cell's text only in rows taller than 64 pixels; a line of text is 20 pixels
# high, and a column holds about 13 characters a line in 100 pixels. Every row is as tall as
# the tallest (the grid has one height for all), so at most three lines: a longer text (an
# orders band) is whole in the band's details under the table.
SHORTEST_WRAPPING_ROW, LINE, CHARACTERS_PER_PIXEL, MAX_LINES = 66, 20, 0.13, 3


IN_SIGHT = 10  # rows a table shows at a time, unless a page says otherwise

# The Agreement page's band table, in pixels: together what the main column of a 1280-pixel
# window holds beside the open sidebar (as the Band registry's), so that a consensus or a
# disputed span longer than its column wraps within it rather than being cut short; its rows
# are then up to three lines tall, so fewer are in sight.
AGREEMENT_WIDTHS = {
    "case": 180,  # "12 · demo_triage_border_01" on one line: an id has no space to wrap at
    "sub-action": 150,  # "Controlled-substance" on one line
    "outcome": 105,
    "raters": 95,
    "consensus": 125,
    "disputed span": 125,
}
AGREEMENT_IN_SIGHT = 6


def count_words(shown: int, total: int, purpose: str, in_sight: int = IN_SIGHT) -> str:
    """The line above a table: how many bands it lists, that it scrolls inside itself when it
    holds more than it shows (the grid's own scroll bar is easy to miss), and what choosing a
    band does (`purpose`, "to ...")."""
    scrolls = (
        f" The table shows {in_sight} at a time: scroll inside it for the rest."
        if shown > in_sight
        else ""
    )
    return f"{shown} of {total} bands.{scrolls} Choose a row, or a band below, {purpose}."


def row_height(
    cells: Sequence[Mapping[str, object]],
    widths: Mapping[str, int],
    *,
    fewest: int = 1,
    most: int = MAX_LINES,
) -> int:
    """A row as tall as the longest cell needs (at least `fewest` lines, at most `most`),
    wrapped within its column's width; a table whose every cell fits on one line keeps the
    default height."""
    lines = fewest
    for row in cells:
        for name, text in row.items():
            if name in widths:
                per_line = max(1, int(widths[name] * CHARACTERS_PER_PIXEL))
                lines = max(lines, -(-len(str(text)) // per_line))
    lines = min(lines, most)
    return ROW if lines == 1 else max(SHORTEST_WRAPPING_ROW, LINE * lines + 16)


def chosen_band(
    cells: Sequence[Mapping[str, str]],
    titles: Sequence[str],
    *,
    key: str,
    columns: Sequence[str],
    label: str = "Details of one band",
    in_sight: int = IN_SIGHT,
    widths: Mapping[str, int] | None = None,
) -> int | None:
    """Draw the table of `cells` (one row per band, headed `columns`) and, under it, a choice of
    band by its title; return the index of the chosen band, or None.

    A row newly selected in the table becomes the chosen band; a band a filter has since hidden
    is no longer chosen, so no stale details stay on screen. `key` names both widgets; the table
    shows `in_sight` rows at a time and scrolls the rest inside itself. With `widths` (pixels by
    column), each column is that wide and every cell's text wraps within it, whole."""
    table, chosen, last = f"{key}:table", f"{key}:band", f"{key}:selected"
    widths = widths or {}
    height = row_height(cells, widths)
    event = st.dataframe(
        list(cells),
        hide_index=True,
        width="stretch",
        # The rows in sight, the header (35 pixels) and two of border.
        row_height=height,
        height=height * min(len(cells), in_sight) + ROW + 2,
        column_config={name: st.column_config.Column(width=w) for name, w in widths.items()},
        column_order=list(columns),
        on_select="rerun",
        selection_mode="single-row",
        key=table,
    )
    rows = list(event.selection.rows) if event is not None else []
    selected = titles[rows[0]] if rows and rows[0] < len(titles) else None
    if selected is not None and st.session_state.get(last) != selected:
        st.session_state[chosen] = selected
    st.session_state[last] = selected
    if st.session_state.get(chosen) not in titles:
        st.session_state[chosen] = None
    title = st.selectbox(label, list(titles), index=None, placeholder=PLACEHOLDER, key=chosen)
    return None if title is None else list(titles).index(title)
