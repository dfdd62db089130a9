"""Raters: enrol one and hand them a one-time enrolment code, see who has activated, and issue a
new code to someone who lost their passphrase. The coordinator never sets a passphrase."""

import streamlit as st

from app_pages.common import require_user, session
from app_pages.raters_parts import enrol_rater, issued_code, new_code
from fma_bands.study.users import list_users, roster

EMPTY = {"enrol:pseudonym": "", "enrol:specialty": "", "enrol:jurisdiction": "", "enrol:years": 0}
user = require_user("coordinator")
if st.session_state.pop("enrol:done", False):
    st.session_state.update(EMPTY)  # the form is empty again, ready for the next rater
with session() as s:
    raters = list_users(s, role="rater")

st.title("Raters")
issued_code()

st.subheader("Enrol a rater")
with st.form("enrol"):
    left, right = st.columns(2)
    pseudonym = left.text_input(
        "Pseudonym",
        key="enrol:pseudonym",
        placeholder="adjudicator-02",
        help="Public; never a real name.",
    )
    specialty = right.text_input(
        "Specialty", key="enrol:specialty", placeholder="emergency medicine"
    )
    jurisdiction = left.text_input(
        "Jurisdiction", key="enrol:jurisdiction", placeholder="Australia"
    )
    years = right.number_input(
        "Years since registration", key="enrol:years", min_value=0, max_value=70, step=1
    )
    submitted = st.form_submit_button("Enrol rater")
if submitted:
    enrol_rater(
        user, pseudonym=pseudonym, specialty=specialty, jurisdiction=jurisdiction, years=years
    )

if raters:
    st.subheader("Enrolled raters")
    st.dataframe(roster(raters), hide_index=True)
    with st.form("reset"):
        who = st.selectbox(
            "Rater who lost their passphrase", [r.pseudonym for r in raters], index=None
        )
        st.caption(
            "Their passphrase stops working at once. Activating with the new code makes a "
            "new signing key; the old one stays in their public record as retired."
        )
        if st.form_submit_button("Issue a new enrolment code") and who:
            new_code(user, who)
