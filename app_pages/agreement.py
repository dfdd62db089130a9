"""Agreement between raters: Krippendorff's alpha per sub-action and pooled, one short row each
(interval, reading, sizes in words), the cautions and every other field on demand, the rules in
one place, and a table of every band's outcome with filters, one band's raters beside the
consensus on demand; one round at a time (round 1 is the reliability figure, round 2
consensus-building). Raters see it once the round closes; the coordinator sees it while the
round is open, marked provisional."""

import streamlit as st

from app_pages.band_table import AGREEMENT_IN_SIGHT, AGREEMENT_WIDTHS, chosen_band, count_words
from app_pages.common import cache_key, chart, engine, escaped, library, require_user, session
from fma_bands.agreement import METRICS
from fma_bands.agreement.chart import alpha_chart
from fma_bands.agreement.coincidences import coincidence_tables, coincidences_zip
from fma_bands.agreement.diagnostics import (
    RATER_NOTE,
    STRATUM_NOTE,
    planning_note,
    planning_rows,
    rater_rows,
    stratum_rows,
)
from fma_bands.agreement.picture import band_spec
from fma_bands.agreement.planning import DEFAULT_WIDTH
from fma_bands.agreement.views import (
    BAND_COLUMNS,
    CONSENSUS_SCOPE_NOTE,
    METRIC_LABELS,
    OUTCOMES,
    SHARE_NOTE,
    SUMMARY,
    BandView,
    Detail,
    Screen,
    absent_text,
    rules,
    table_csv,
)
from fma_bands.core.actions import sub_action
from fma_bands.core.errors import FmaBandsError
from fma_bands.study.methods_facts import study_methods_report
from fma_bands.study.ratings import (
    ROUND_LABELS,
    ROUND_NOTES,
    reviews_fingerprint,
    study_findings,
    study_ratings,
    study_screen,
)
from fma_bands.study.state import study

# The short table's columns in pixels: together 815, what the main column of a 1280-pixel window
# holds beside the open sidebar, so that none is cut off at the right. Long cells wrap.
WIDTHS = {
    "sub-action": 145,
    "alpha": 80,
    "95% interval": 110,
    "reading": 140,
    "sizes": 160,
    "left as proposed": 105,
    "cautions": 75,
}
HELP = {"left as proposed": SHARE_NOTE}
# Three lines of text to a row: streamlit wraps a cell's text only in rows taller than 4rem.
ROW_HEIGHT = 66
PROVISIONAL = (
    "Round open: provisional figures. Reviews still to come change them, and raters see none "
    "of them until the round closes."
)


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
    # Filters, the table and the chosen band rerun only this part of the page.
    # Beside the heading, on demand: the page must fit a screen (tests/browser).
    st.subheader("Bands, most disputed first", help=escaped(CONSENSUS_SCOPE_NOTE))
    rows = screen.rows()
    left, right = st.columns(2)
    with left:
        found = [o for o in OUTCOMES if any(r.outcome == o for r in rows)]
        outcomes = st.multiselect("Outcome", found, placeholder="Every outcome")
    with right:
        names = list(dict.fromkeys(r.sub_action for r in rows))
        actions = st.multiselect(
            "Sub-actions",
            names,
            placeholder="All sub-actions",
            format_func=lambda n: sub_action(n).label,
        )
    shown = [
        r
        for r in rows
        if (not outcomes or r.outcome in outcomes) and (not actions or r.sub_action in actions)
    ]
    st.caption(
        count_words(
            len(shown),
            len(rows),
            "to see each rater's band beside the consensus",
            AGREEMENT_IN_SIGHT,
        )
    )
    index = chosen_band(
        [r.cells() for r in shown],
        [r.title for r in shown],
        key="agreement",
        columns=BAND_COLUMNS,
        in_sight=AGREEMENT_IN_SIGHT,
        widths=AGREEMENT_WIDTHS,
    )
    if index is not None:
        [band] = screen.bands(shown[index].index, shown[index].index + 1)
        with st.container(border=True):
            box(band)


def box(band: BandView) -> None:
    """One band: a link to its case, its raters and rule, each rater's band pictured beside
    the consensus, and the consensus and disputed span in words."""
    st.page_link("app_pages/vignette.py", label=escaped(band.title), query_params=band.query)
    st.caption(escaped(band.caption))
    if band.rows:
        chart(band_spec(band.sub_action, band.rows, orderables=band.orderables, names=band.names))
    for line in filter(None, (band.consensus, band.disputed)):
        st.text(line)


def alpha_table(rows: list[dict[str, str]]) -> None:
    st.dataframe(
        rows,
        height="content",  # every row in sight: no scrolling inside the table
        hide_index=True,
        column_order=SUMMARY,
        column_config={
            h: st.column_config.TextColumn(h, width=WIDTHS[h], help=HELP.get(h)) for h in SUMMARY
        },
        row_height=ROW_HEIGHT,
    )


def cautions_and_details(details: list[Detail]) -> None:
    with st.expander("Details and cautions"):
        for d in details:
            st.markdown(f"**{escaped(d.scope)}**")
            if d.cautions:
                st.markdown("\n".join(f"- Caution: {escaped(c)}" for c in d.cautions))
            if d.facts:
                st.caption(escaped(" · ".join(d.facts)))


def how_computed(metric: str) -> None:
    with st.expander("How these are computed"):
        for rule in rules(metric):
            st.caption(escaped(rule))


def downloads(screen: Screen, metric: str, number: int) -> bool:
    """What a reader takes away: the table with every field; for the coordinator, the methods
    report and the coincidence matrices, each made only when its button is pressed, and the
    switch to each rater's figures (True when on). They stand in a row, wrapping only when the
    window is narrow: the page stays short."""
    with st.container(horizontal=True, vertical_alignment="center"):
        _downloads(screen, metric, number)
        if not user.is_coordinator:
            return False
        return st.toggle("Show each rater, the strata and the planning", key="diagnostics")


def _downloads(screen: Screen, metric: str, number: int) -> None:
    st.download_button(
        "Download the table (CSV)",
        data=table_csv(screen.tables[metric]),
        file_name=f"agreement-round-{number}-{metric}.csv",
        mime="text/csv",
        on_click="ignore",
        icon=":material/download:",
    )
    if not user.is_coordinator:
        return

    # Made on the click, in a thread of its own: a refusal becomes the file's one line, since
    # nothing drawn there reaches the page.
    def methods_report() -> str:
        try:
            with session() as s:
                return study_methods_report(s, lib, viewer=user, round=number)
        except FmaBandsError as exc:
            return f"The methods report could not be made: {exc}\n"

    def matrices() -> bytes:
        with session() as s:
            ratings = study_ratings(s, lib, viewer=user, round=number)
        return coincidences_zip(coincidence_tables(ratings))

    st.download_button(
        "Download the methods report (markdown)",
        data=methods_report,
        file_name=f"methods-round-{number}.md",
        mime="text/markdown",
        on_click="ignore",
        icon=":material/description:",
    )
    st.download_button(
        "Download the coincidence matrices (ZIP of CSV)",
        data=matrices,
        file_name=f"coincidences-round-{number}.zip",
        mime="application/zip",
        on_click="ignore",
        icon=":material/grid_on:",
    )


def diagnostics(number: int) -> None:
    """The coordinator's per-rater diagnostics, alpha by ambiguity stratum and the planning,
    computed when asked (seconds on a large study), and never shown to a rater."""
    try:
        with st.spinner("Computing each rater's figures…"), session() as s:
            found = study_findings(s, lib, viewer=user, round=number).diagnostics
    except FmaBandsError as exc:
        st.error(escaped(exc))
        return
    st.subheader("Each rater")
    st.dataframe(rater_rows(found.raters), hide_index=True)
    st.caption(escaped(RATER_NOTE))
    st.subheader("Alpha by ambiguity stratum")
    st.dataframe(stratum_rows(found.by_stratum), hide_index=True)
    st.caption(escaped(STRATUM_NOTE))
    st.subheader("Vignettes needed")
    st.dataframe(planning_rows(found.planning), hide_index=True)
    st.caption(escaped(planning_note(DEFAULT_WIDTH)))


user = require_user()
lib = library()
st.title("Agreement")
with session() as s:
    current, fingerprint = study(s), reviews_fingerprint(s)
if not user.is_coordinator and current.phase == "open":
    st.info(
        f"Round {current.round} is open: agreement between raters is shown once the "
        "coordinator closes it."
    )
    st.stop()
number = chosen_round(current.round)
if user.is_coordinator and current.phase == "open" and number == current.round:
    st.warning(PROVISIONAL)
metric = st.segmented_control(
    "Metric", METRICS, default="band", format_func=METRIC_LABELS.__getitem__
)
metric = metric or "band"


# A resource, not data: the screen is read-only, and unpickling a copy of its 2,700 bands on
# every rerun would cost more than the rerun. Cached until a review changes (fingerprint) or a
# vignette file changes (the library's digests), per round, under the SHA-256 of those
# (common.cache_key).
@st.cache_resource(show_spinner=False, max_entries=8)
def _screen(url: str, key: str, viewer: str, number: int):
    with session() as s:
        return study_screen(s, lib, viewer=user, round=number)


try:
    with st.spinner("Computing alpha with a 1000-resample bootstrap…"):
        key = cache_key(fingerprint, lib.digests)
        screen = _screen(str(engine().url), key, user.pseudonym, number)
except FmaBandsError as exc:
    st.error(escaped(exc))
    st.stop()
if not screen.agreements:
    st.info("No submitted review yet: there is nothing to compare.")
    st.stop()


# Always the round: "band" alone reads as the whole study, and round 1 is what it is over.
st.subheader(f"Krippendorff's alpha: {metric}, round {number}")
if screen.summaries[metric]:
    alpha_table(screen.summaries[metric])
    # One caption: each element more is a gap more on a page that must fit a screen.
    st.caption(
        "Sizes: the bands and vignettes the reading counts, the raters with a value in them, "
        "and the DECLINE ratings among the reviews of every band of the row, read or not. "
        "Each row's cautions and other fields are under Details. " + escaped(SHARE_NOTE)
    )
else:
    st.info(absent_text(metric))
# Side by side, both collapsed: one line of the page for what a reader opens on demand.
details_column, rules_column = st.columns(2)
if screen.summaries[metric]:
    with details_column:
        cautions_and_details(screen.details[metric])
with rules_column:
    how_computed(metric)
if downloads(screen, metric, number):
    diagnostics(number)
if chart_of_alphas := alpha_chart(screen.points[metric]):
    st.altair_chart(chart_of_alphas)
bands(screen)
