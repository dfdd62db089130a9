"""The Agreement page's parts: which round's figures to show, the alphas of one metric, and
every band's raters beside the consensus, a page of bands at a time."""

import streamlit as st

from app_pages.common import chart, escaped
from fma_bands.agreement.chart import alpha_chart
from fma_bands.agreement.picture import band_spec
from fma_bands.agreement.views import HEADINGS, Screen
from fma_bands.study.ratings import ROUND_LABELS, ROUND_NOTES

PAGE = 20


def chosen_round(rounds_held: int) -> int:
    """The round whose figures are shown: the choice of the one who reads them."""
    if rounds_held <= 1:
        # Until a round 2 is held every figure is round 1's, so there is no round to tell apart.
        return 1
    held = list(range(1, rounds_held + 1))
    number = (
        st.segmented_control("Round", held, default=1, format_func=lambda n: ROUND_LABELS[n]) or 1
    )
    st.caption(ROUND_NOTES[number])
    return number


def alphas(screen: Screen, metric: str, in_round: str) -> None:
    """Krippendorff's alpha of `metric`, as a table, its notes and a chart of the intervals."""
    st.subheader(f"Krippendorff's alpha: {metric}{in_round}")
    st.dataframe(screen.tables[metric], hide_index=True, column_order=HEADINGS)
    for note in screen.notes[metric]:
        st.caption(note)
    if chart_of_alphas := alpha_chart(screen.points[metric]):
        st.altair_chart(chart_of_alphas)


@st.fragment
def bands(screen: Screen) -> None:
    # A page of bands at a time, in a fragment: turning the page redraws only the bands.
    st.subheader("Bands, most disputed first")
    page = st.pagination(max(1, -(-len(screen.agreements) // PAGE)), key="agreement_page")
    st.caption(f"{len(screen.agreements)} bands, {PAGE} to a page.")
    for band in screen.bands((page - 1) * PAGE, page * PAGE):
        with st.container(border=True):
            st.page_link(
                "app_pages/vignette.py", label=escaped(band.title), query_params=band.query
            )
            st.caption(escaped(band.caption))
            if band.rows:
                chart(
                    band_spec(
                        band.sub_action, band.rows, orderables=band.orderables, names=band.names
                    )
                )
            for line in filter(None, (band.consensus, band.disputed)):
                st.text(line)
