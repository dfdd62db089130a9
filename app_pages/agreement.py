"""Agreement between raters: Krippendorff's alpha per sub-action and pooled, with intervals and
readings, and every band's raters beside the consensus, one round at a time (round 1 is the
reliability figure, round 2 consensus-building). Raters see it once the round closes."""

import streamlit as st

from app_pages.common import chart, engine, escaped, library, require_user, session
from fma_bands.agreement import METRICS
from fma_bands.agreement.chart import alpha_chart
from fma_bands.agreement.picture import band_spec
from fma_bands.agreement.views import HEADINGS, METRIC_LABELS, Screen
from fma_bands.core.errors import FmaBandsError
from fma_bands.study.ratings import ROUND_LABELS, ROUND_NOTES, reviews_fingerprint, study_screen
from fma_bands.study.state import study

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


user = require_user()
lib = library()
st.title("Agreement")
with session() as s:
    current, fingerprint = study(s), reviews_fingerprint(s)
if not user.is_coordinator and current.phase == "open":
    st.info("Agreement between raters is shown once the coordinator closes the review phase.")
    st.stop()
number = chosen_round(current.round)
metric = st.segmented_control(
    "Metric", METRICS, default="band", format_func=METRIC_LABELS.__getitem__
)
metric = metric or "band"


# A resource, not data: the screen is read-only, and unpickling a copy of its 2,700 bands on
# every rerun would cost more than the rerun. Cached until a review changes (fingerprint) or a
# vignette file changes (files), per round.
@st.cache_resource(show_spinner=False, max_entries=8)
def _screen(url: str, fingerprint: tuple, files: tuple, viewer: str, number: int):
    with session() as s:
        return study_screen(s, lib, viewer=user, round=number)


try:
    with st.spinner("Computing alpha with a 1000-resample bootstrap…"):
        screen = _screen(str(engine().url), fingerprint, lib.digests, user.pseudonym, number)
except FmaBandsError as exc:
    st.error(escaped(exc))
    st.stop()
if not screen.agreements:
    st.info("No submitted review yet: there is nothing to compare.")
    st.stop()

in_round = f", round {number}" if current.round > 1 else ""
st.subheader(f"Krippendorff's alpha: {metric}{in_round}")
st.dataframe(screen.tables[metric], hide_index=True, column_order=HEADINGS)
for note in screen.notes[metric]:
    st.caption(note)
if chart_of_alphas := alpha_chart(screen.points[metric]):
    st.altair_chart(chart_of_alphas)
bands(screen)
