"""The foot of the review form: the rater's flag of a band for the coordinator (a problem with
the vignette, the proposal or their scope), with the flags they sent on it still open."""

import streamlit as st

from app_pages.common import escaped, library, session
from app_pages.review_screen import Screen
from fma_bands.core.errors import FmaBandsError
from fma_bands.core.people import UserPublic
from fma_bands.study import marks


def flag_box(screen: Screen, rater: UserPublic) -> None:
    key = screen.key
    with session() as s:
        mine = [f for f in marks.my_flags(s, rater, *screen.band) if f.cleared_at is None]
    with st.expander(
        "Flag this band for the coordinator",
        icon=":material/flag:",
        expanded=bool(st.session_state.get(f"{key}:flag_error")),
    ):
        for flag in mine:
            st.caption(f"You flagged this band on {flag.created_at:%d %b %Y, %H:%M} UTC:")
            st.text(flag.note)
        st.text_area(
            "What should the coordinator look at?",
            key=f"{key}:flag_note",
            help="A problem with the vignette, the proposal, or your scope.",
        )
        if error := st.session_state.get(f"{key}:flag_error"):
            st.error(escaped(error), icon=":material/error:")
        st.button("Send the flag", key=f"{key}:flag", on_click=_flag, args=(screen, rater))
    if sent := st.session_state.pop(f"{key}:flag_sent", None):
        st.success(sent, icon=":material/flag:")


def _flag(screen: Screen, rater: UserPublic) -> None:
    state, key = st.session_state, screen.key
    try:
        with session() as s:
            marks.flag(
                s,
                library(),
                rater,
                screen.vignette.id,
                screen.name,
                state.get(f"{key}:flag_note") or "",
            )
    except FmaBandsError as exc:
        state[f"{key}:flag_error"] = exc.message
        return
    state[f"{key}:flag_error"] = None
    state[f"{key}:flag_note"] = ""
    state[f"{key}:flag_sent"] = "Flag sent: the coordinator sees it on the Raters' progress page."
