"""Sign in: one generic message for any failure, so the form tells nobody who is enrolled."""

import streamlit as st

from app_pages.common import session
from fma_bands.users import SIGN_IN_FAILED, sign_in

st.title("Sign in")
st.write("Sign in with the name and passphrase your study coordinator gave you.")
with st.form("sign_in"):
    pseudonym = st.text_input("Name", placeholder="your study name, e.g. rater-01")
    passphrase = st.text_input("Passphrase", type="password")
    submitted = st.form_submit_button("Sign in", type="primary")

if submitted:
    with session() as s:
        user = sign_in(s, pseudonym, passphrase)
    if user is None:
        st.error(SIGN_IN_FAILED)
        st.stop()
    st.session_state.user = user.model_dump()
    st.rerun()
