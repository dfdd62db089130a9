"""First run: the database has no user yet, so the first person here becomes the coordinator."""

import streamlit as st

from app_pages.common import escaped, session, settings, sign_in_session
from fma_bands.core.errors import FmaBandsError
from fma_bands.study.enrolment import create_first_coordinator
from fma_bands.study.users import MIN_PASSPHRASE, new_passphrase_problem

st.title("Set up fma-bands")
st.write(
    "No account exists yet. Create the study coordinator's account: the coordinator loads "
    "vignettes, enrols raters, opens and closes the review phase and exports the bands."
)
with st.form("first_run"):
    pseudonym = st.text_input(
        "Coordinator name", value="coordinator", help="Shown in the audit log."
    )
    passphrase = st.text_input(
        "Passphrase",
        type="password",
        help=f"At least {MIN_PASSPHRASE} characters; only you know it.",
    )
    repeat = st.text_input("Repeat the passphrase", type="password")
    create = st.form_submit_button("Create coordinator account", type="primary")

if create:
    if problem := new_passphrase_problem(passphrase, repeat):
        st.error(escaped(problem))
        st.stop()
    try:
        with session() as s:
            user = create_first_coordinator(
                s,
                pseudonym=pseudonym.strip(),
                passphrase=passphrase,
                folder=settings().attestations,
            )
    except FmaBandsError as exc:
        for message in exc.fields.values() or [str(exc)]:
            st.error(escaped(message))
        st.stop()
    sign_in_session(user)
    st.rerun()
