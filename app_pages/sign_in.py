"""Sign in: one generic message for any failure, so the form tells nobody who is enrolled; failed
attempts are throttled per account and per browser session, and one made too soon is told how
long to wait."""

import secrets

import streamlit as st

from app_pages.common import SIGNED_OUT_NOTE, escaped, session, sign_in_session
from fma_bands.core.errors import FmaBandsError
from fma_bands.study.users import SIGN_IN_FAILED, sign_in

client = st.session_state.setdefault("client", secrets.token_hex(16))

st.title("Sign in")
if note := st.session_state.get(SIGNED_OUT_NOTE):
    st.info(note, icon=":material/schedule:")
st.write("Sign in with your name in the study and the passphrase you chose.")
with st.form("sign_in"):
    pseudonym = st.text_input(
        "Your name in the study", placeholder="as the coordinator gave it, e.g. rater-01"
    )
    passphrase = st.text_input("Passphrase", type="password")
    submitted = st.form_submit_button("Sign in", type="primary")
st.page_link(
    "app_pages/activate.py",
    label="First time here, or given a new enrolment code? Activate your account",
    icon=":material/how_to_reg:",
)

if submitted:
    try:
        with session() as s:
            user = sign_in(s, pseudonym, passphrase, client=client)
    except FmaBandsError as exc:  # too soon after failed attempts: how long to wait
        st.error(escaped(exc.message))
        st.stop()
    if user is None:
        st.error(SIGN_IN_FAILED)
        st.stop()
    sign_in_session(user)
    st.rerun()
