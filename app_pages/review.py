"""Review one band. Left: what the agent knew at that step, and the proposal (review mode).
Right: the six questions, the verdict, the rater's own band, Submit and next. On a narrow
screen the two columns stack."""

import streamlit as st

from app_pages.common import library, require_user, session, signed_bands, stack_below
from app_pages.review_form import follow, open_here, review_form
from app_pages.review_parts import heading, panel, submitted, what_the_agent_knows
from app_pages.review_screen import open_screen
from fma_bands.core.labels import address, from_address

user = require_user("rater")
follow()
lib = library()
params = st.query_params.to_dict()
with session() as s:
    screen = open_screen(s, lib, user, from_address(lib, params), params.get("sub_action"))
if screen is None:
    st.info("No band is waiting for review.")
    st.stop()
# The address names the case by a neutral token, never by the id (which may give away its
# stratum), so a reload or a shared link opens this band.
if params != address(*screen.band):
    st.query_params.from_dict(address(*screen.band))
heading(screen)

stack_below(1100, "review_columns")
with st.container(key="review_columns"):
    left, right = st.columns([5, 6], gap="large")
with left:
    what_the_agent_knows(screen)
    panel(screen)
with right:
    if not (screen.editing or open_here(screen)):
        submitted(screen)
    elif screen.phase != "open":
        st.info("The review phase is closed: reviews can no longer change.")
    else:
        review_form(screen, screen.band in signed_bands(user.pseudonym))
