"""Activate an account: the enrolment code the coordinator gave, then a passphrase the person
chooses and nobody else ever sees. A rater's or steward's signing key is made here."""

import streamlit as st

from app_pages.common import escaped, session, settings, sign_in_session
from fma_bands.core.errors import FmaBandsError
from fma_bands.study.enrolment import ACTIVATION_FAILED, activate
from fma_bands.study.users import MIN_PASSPHRASE, new_passphrase_problem

st.title("Activate your account")
st.write(
    "Your study coordinator enrolled you and gave you a one-time enrolment code. Enter it here "
    "and choose your passphrase: only you will know it. As a rater it seals the key that signs "
    "your attestations, and as a steward the key that co-signs the study's roster and policy, "
    "so nobody else can sign in your name."
)
with st.form("activate"):
    pseudonym = st.text_input(
        "Your name in the study", placeholder="as the coordinator gave it, e.g. rater-01"
    )
    code = st.text_input("Enrolment code", type="password", placeholder="XXXX-XXXX-...")
    passphrase = st.text_input(
        "Choose a passphrase", type="password", help=f"At least {MIN_PASSPHRASE} characters."
    )
    repeat = st.text_input("Repeat the passphrase", type="password")
    submitted = st.form_submit_button("Activate", type="primary")
st.page_link("app_pages/sign_in.py", label="Already activated? Sign in", icon=":material/login:")

if submitted:
    if problem := new_passphrase_problem(passphrase, repeat):
        st.error(escaped(problem))
        st.stop()
    try:
        with session() as s:
            user = activate(
                s,
                pseudonym=pseudonym,
                code=code,
                passphrase=passphrase,
                folder=settings().attestations,
            )
    except FmaBandsError as exc:
        for message in exc.fields.values() or [exc.message]:
            st.error(escaped(message))
        st.stop()
    if user is None:
        st.error(ACTIVATION_FAILED)
        st.stop()
    sign_in_session(user)
    st.rerun()
