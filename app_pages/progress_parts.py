"""The interactive parts of the Raters' progress page, each a fragment: dealing with a flag, or
ticking the confirmation, reruns that part only, never the whole table of every rater's work."""

import streamlit as st

from app_pages.common import current_user, escaped, plain, session
from fma_bands.core.actions import sub_action
from fma_bands.core.errors import FmaBandsError
from fma_bands.core.labels import case_label
from fma_bands.core.people import UserPublic
from fma_bands.study import marks
from fma_bands.study.rounds import close_round


def _coordinator() -> UserPublic:
    user = current_user()
    assert user is not None and user.is_coordinator, "the progress page is the coordinator's"
    return user


def _deal_with(flag_id: int) -> None:
    with session() as s:
        marks.resolve(s, _coordinator(), flag_id)
    st.session_state.flag_flash = "Flag marked as dealt with."


@st.fragment
def flags(numbers: dict[str, int]) -> None:
    with session() as s:
        waiting = marks.all_flags(s, _coordinator())
    st.subheader(f"Flags for you ({len(waiting)})")
    if flash := st.session_state.pop("flag_flash", None):
        st.success(flash)
    for flag in waiting:
        with st.container(border=True):
            band = f"{case_label(numbers, flag.vignette_id)} ({flag.vignette_id})"
            label = sub_action(flag.sub_action).label
            when = f"{flag.created_at:%Y-%m-%d %H:%M} UTC"
            st.caption(escaped(f"{flag.rater} · {band} · {label} · {when}"))
            plain(flag.note)
            st.button(
                "Mark as dealt with", key=f"flag:{flag.id}", on_click=_deal_with, args=(flag.id,)
            )
    if not waiting:
        st.caption("No rater has flagged a band.")


@st.fragment
def close_phase(number: int) -> None:
    st.markdown(
        f"Closing round {number} **freezes every review** of it: no rater can submit or revise "
        "a review, and no paper hand-back can be imported. It also **ends the blinding** of "
        "this round: raters then see agreement and each other's reviews. The protocol never "
        "reopens a closed round"
        + (": bands still in dispute go to round 2, opened on Study admin." if number == 1 else ".")
    )
    sure = st.checkbox("I understand: close the review phase now", key="close_sure")
    if st.button("Close the review phase", type="primary", disabled=not sure):
        try:
            with session() as s:
                close_round(s, actor=_coordinator())
        except FmaBandsError as exc:  # closed meanwhile, in another tab or by a command
            st.error(escaped(exc.message))
            return
        st.session_state.raters_flash = "The review phase is closed."
        st.rerun(scope="app")
