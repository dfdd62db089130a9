"""Change one's own passphrase: a rater's signing key stays the same, resealed under the new one."""

import streamlit as st

from app_pages.common import escaped, require_user, session
from fma_bands.core.errors import FmaBandsError
from fma_bands.study.users import MIN_PASSPHRASE, change_passphrase, new_passphrase_problem

FIELDS = ("pp:old", "pp:new", "pp:repeat")
user = require_user()

st.title("Change your passphrase")
st.caption(
    "If you hold a signing key (a rater's, a steward's, or the study's root key), it stays the "
    "same: it is resealed under the new passphrase, so your signatures and the study's log are "
    "unchanged."
)
if st.session_state.pop("pp:done", False):
    st.success("Your passphrase is changed. Use the new one from now on.")
with st.form("passphrase"):
    old = st.text_input("Current passphrase", type="password", key="pp:old")
    new = st.text_input(
        "New passphrase",
        type="password",
        key="pp:new",
        help=f"At least {MIN_PASSPHRASE} characters.",
    )
    repeat = st.text_input("Repeat the new passphrase", type="password", key="pp:repeat")
    submitted = st.form_submit_button("Change passphrase", type="primary")

if submitted:
    if problem := new_passphrase_problem(new, repeat):
        st.error(escaped(problem))
        st.stop()
    try:
        with session() as s:
            change_passphrase(s, user.id, old, new)
    except FmaBandsError as exc:
        for message in exc.fields.values() or [exc.message]:
            st.error(escaped(message))
        st.stop()
    # Done: the passphrases leave the screen.
    for name in FIELDS:
        del st.session_state[name]
    st.session_state["pp:done"] = True
    st.rerun()
