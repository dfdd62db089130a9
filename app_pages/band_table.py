"""A table of bands with one band's details on demand, as the Band registry and Agreement pages
open: a row chosen in the table, or a band chosen by name below it, is the one whose details the
page draws."""

from collections.abc import Mapping, Sequence

import streamlit as st

PLACEHOLDER = "Choose a band to read its details"
ROW = 35  # pixels: Streamlit's default row height


def chosen_band(
    cells: Sequence[Mapping[str, str]],
    titles: Sequence[str],
    *,
    key: str,
    columns: Sequence[str],
    label: str = "Details of one band",
    in_sight: int = 10,
) -> int | None:
    """Draw the table of `cells` (one row per band, headed `columns`) and, under it, a choice of
    band by its title; return the index of the chosen band, or None.

    A row newly selected in the table becomes the chosen band; a band a filter has since hidden
    is no longer chosen, so no stale details stay on screen. `key` names both widgets; the table
    shows `in_sight` rows at a time and scrolls the rest inside itself."""
    table, chosen, last = f"{key}:table", f"{key}:band", f"{key}:selected"
    event = st.dataframe(
        list(cells),
        hide_index=True,
        width="stretch",
        # A row is 35 pixels, the header as much, and two of border.
        height=ROW * (min(len(cells), in_sight) + 1) + 2,
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
