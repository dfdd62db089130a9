"""The coordinator's view of the raters: progress, pace and share of ACCEPT; flags to deal
with; every submitted review as CSV; and closing the review phase, once confirmed."""

import streamlit as st

from app_pages.common import library, plain, require_user, session
from fma_bands import marks
from fma_bands.actions import sub_action
from fma_bands.labels import case_label, case_numbers
from fma_bands.oversight import progress_table, rater_summaries, reviews_csv
from fma_bands.study import set_phase, study

user = require_user("coordinator")
lib = library()
with session() as s:
    summaries = rater_summaries(s, lib, viewer=user)
    flags = marks.all_flags(s, user)
    phase = study(s).phase
numbers = case_numbers(lib)

st.title("Raters")
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


def _deal_with(flag_id: int) -> None:
    with session() as s:
        marks.resolve(s, user, flag_id)
    st.session_state.raters_flash = "Flag marked as dealt with."


st.subheader(f"Flags for you ({len(flags)})")
for flag in flags:
    with st.container(border=True):
        band = f"{case_label(numbers, flag.vignette_id)} ({flag.vignette_id})"
        st.caption(
            f"{flag.rater} · {band} · {sub_action(flag.sub_action).label} · "
            f"{flag.created_at:%Y-%m-%d %H:%M} UTC"
        )
        plain(flag.note)
        st.button("Mark as dealt with", key=f"flag:{flag.id}", on_click=_deal_with, args=(flag.id,))
if not flags:
    st.caption("No rater has flagged a band.")


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

st.subheader("Close the review phase")
if phase != "open":
    st.info("The review phase is closed: reviews are frozen and agreement is shown to raters.")
    st.stop()
st.markdown(
    "Closing **freezes every review**: no rater can submit or revise a review, and no paper "
    "hand-back can be imported. It also **ends the blinding** of this round: raters then see "
    "agreement and each other's reviews. The protocol never reopens a closed round."
)
sure = st.checkbox("I understand: close the review phase now", key="close_sure")
if st.button("Close the review phase", type="primary", disabled=not sure):
    with session() as s:
        set_phase(s, actor=user, phase="closed")
    st.session_state.raters_flash = "The review phase is closed."
    st.rerun()
