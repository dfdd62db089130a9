"""Raters: enrol one and hand them a one-time enrolment code, see who has activated, and issue a
new code to someone who lost their passphrase. The coordinator never sets a passphrase."""

import streamlit as st

from app_pages.common import escaped, require_user, session, settings
from fma_bands.core.errors import FmaBandsError
from fma_bands.core.people import UserPublic
from fma_bands.study.enrolment import enrol, reset
from fma_bands.study.users import get_user, list_users, roster

EMPTY = {
    "enrol:pseudonym": "",
    "enrol:specialty": "",
    "enrol:jurisdiction": "",
    "enrol:years": 0,
    "enrol:passphrase": "",
    "reset:passphrase": "",
}
ISSUED = "raters:code"


def _handed_over(what: str, name: str, code: str) -> None:
    """Show the code on the next run only, and empty the form for the next rater."""
    with session() as s:
        expires = get_user(s, name).code_expires_at  # type: ignore[union-attr]
    st.session_state[ISSUED] = {"what": what, "name": name, "code": code, "expires": expires}
    st.session_state["enrol:done"] = True
    st.rerun()


def enrol_rater(
    user: UserPublic,
    *,
    pseudonym: str,
    specialty: str,
    jurisdiction: str,
    years: float,
    passphrase: str,
) -> None:
    """Enrol the rater the form describes; what is wrong with it shows by field, in words."""
    try:
        with session() as s:
            made, code = enrol(
                s,
                actor=user,
                passphrase=passphrase,
                folder=settings().attestations,
                pseudonym=pseudonym.strip(),
                role="rater",
                specialty=specialty,
                jurisdiction=jurisdiction,
                years_post_registration=int(years),
            )
    except FmaBandsError as exc:
        for field, message in (exc.fields or {"": exc.message}).items():
            words = f"{field.replace('_', ' ').capitalize()}: {message}" if field else message
            st.error(escaped(words))
    else:
        _handed_over(f"Enrolled {made.pseudonym}.", made.pseudonym, code)


user = require_user("coordinator")
if st.session_state.pop("enrol:done", False):
    st.session_state.update(EMPTY)  # the form is empty again, ready for the next rater
with session() as s:
    raters = list_users(s, role="rater")

st.title("Raters")
# The code just issued, shown this once (the state that held it is gone after this run).
if issued := st.session_state.pop(ISSUED, None):
    st.success(
        f"{issued['what']} Give {issued['name']} this enrolment code privately; it is shown "
        f"this once, works once, and expires on {issued['expires']:%d %b %Y}. They activate "
        "their account with it on the sign-in page and choose their own passphrase."
    )
    st.code(issued["code"], language=None)

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
    enrol_passphrase = st.text_input(
        "Your passphrase (it unlocks the study's root key, which signs the enrolment)",
        type="password",
        key="enrol:passphrase",
    )
    submitted = st.form_submit_button("Enrol rater")
if submitted:
    enrol_rater(
        user,
        pseudonym=pseudonym,
        specialty=specialty,
        jurisdiction=jurisdiction,
        years=years,
        passphrase=enrol_passphrase,
    )

if raters:
    st.subheader("Enrolled raters")
    # Widths that fit the main column of a laptop's 1280 pixels beside the sidebar: a signing
    # key is cut at its column's edge (a double click on its cell shows it whole, as the
    # column's help says), never the table.
    st.dataframe(
        roster(raters),
        hide_index=True,
        width="stretch",
        column_config={
            "pseudonym": st.column_config.Column(width=100),
            "specialty": st.column_config.Column(width=120),
            "jurisdiction": st.column_config.Column(width=100),
            "years since registration": st.column_config.Column(
                "years", width=50, help="Years since registration"
            ),
            "account": st.column_config.Column(width=170),
            "signing key": st.column_config.Column(
                width=140,
                help="The fingerprint of the rater's signing key: double-click a cell to read it "
                "whole.",
            ),
        },
    )
    with st.form("reset"):
        who = st.selectbox(
            "Rater who lost their passphrase", [r.pseudonym for r in raters], index=None
        )
        st.caption(
            "Their passphrase stops working at once. Activating with the new code makes a "
            "new signing key; the old one stops counting from the new enrolment on, and "
            "older signatures stay valid."
        )
        reset_passphrase = st.text_input(
            "Your passphrase (it unlocks the study's root key, which signs the new enrolment)",
            type="password",
            key="reset:passphrase",
        )
        if st.form_submit_button("Issue a new enrolment code") and who:
            try:
                with session() as s:
                    code = reset(
                        s,
                        actor=user,
                        pseudonym=who,
                        passphrase=reset_passphrase,
                        folder=settings().attestations,
                    )
            except FmaBandsError as exc:
                st.error(escaped(exc.message))
            else:
                _handed_over(f"{who} was reset.", who, code)
