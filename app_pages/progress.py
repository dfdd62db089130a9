"""Raters' progress, the coordinator's view of the raters: progress, pace and share of ACCEPT;
flags to deal with; every submitted review as CSV; and closing the current round, once
confirmed (it is never reopened)."""

import streamlit as st

from app_pages.assignment_parts import quorum_progress
from app_pages.common import library, require_user, session
from app_pages.progress_parts import close_phase, flags
from app_pages.progress_screen import progress_table, rater_summaries, reviews_csv
from fma_bands.core.labels import case_numbers
from fma_bands.study.state import study

user = require_user("coordinator")
lib = library()
with session() as s:
    summaries = rater_summaries(s, lib, viewer=user)
    current = study(s)

st.title("Raters' progress")
if flash := st.session_state.pop("raters_flash", None):
    st.success(flash)
st.dataframe(progress_table(summaries), hide_index=True, width="stretch")
st.caption(
    "Submitted: bands submitted and still current. Minutes per band: the median time between "
    "one submission and the next, pauses of over 30 minutes left out. ACCEPT: the share of "
    "current reviews in review mode that accept the proposal as written."
)
for r in (r for r in summaries if r.weak_signal):
    st.info(
        f"{r.pseudonym} accepts {r.accept_share:.0%} of {r.judged} bands as written. Accepting "
        "nearly everything is a weak signal worth a conversation, never a penalty."
    )
quorum_progress(lib)
flags(case_numbers(lib))


def _reviews() -> str:
    with session() as s:
        return reviews_csv(s, lib, viewer=user)


st.subheader("Every submitted review")
st.download_button(
    "Download the submitted reviews (CSV)",
    data=_reviews,
    file_name="submitted-reviews.csv",
    mime="text/csv",
    on_click="ignore",
    icon=":material/download:",
)
st.caption("Each rater's latest submitted review of each band, with answers and confidence.")
st.subheader(f"Close round {current.round}")
if current.phase == "open":
    close_phase(current.round)
else:
    st.info(
        f"The review phase is closed (round {current.round}): reviews are frozen and agreement "
        "is shown to raters."
    )
