"""Raters: enrol one and hand them a one-time enrolment code, see who has activated, and issue a
new code to someone who lost their passphrase. The coordinator never sets a passphrase."""

import streamlit as st

from app_pages.common import require_user, session
from fma_bands.errors import FmaBandsError
from fma_bands.users import enrol, list_users, reset

user = require_user("coordinator")
with session() as s:
    raters = list_users(s, role="rater")

st.title("Raters")
if issued := st.session_state.pop("raters:code", None):
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
        "Pseudonym", placeholder="adjudicator-02", help="Public; never a real name."
    )
    specialty = right.text_input("Specialty", placeholder="emergency medicine")
    jurisdiction = left.text_input("Jurisdiction", placeholder="Australia")
    years = right.number_input("Years since registration", min_value=0, max_value=70, step=1)
    submitted = st.form_submit_button("Enrol rater")
if submitted:
    try:
        with session() as s:
            made, code = enrol(
                s,
                actor=user,
                pseudonym=pseudonym.strip(),
                role="rater",
                specialty=specialty,
                jurisdiction=jurisdiction,
                years_post_registration=int(years),
            )
        st.session_state["raters:code"] = {
            "what": f"Enrolled {made.pseudonym}.",
            "code": code,
            "name": made.pseudonym,
            "expires": made.code_expires_at,
        }
        st.rerun()
    except FmaBandsError as exc:
        for field, message in (exc.fields or {"": exc.message}).items():
            st.error(f"{field.replace('_', ' ').capitalize()}: {message}" if field else message)

if raters:
    st.subheader("Enrolled raters")
    st.dataframe(
        [
            {
                "pseudonym": r.pseudonym,
                "specialty": r.specialty,
                "jurisdiction": r.jurisdiction,
                "years since registration": r.years_post_registration,
                "account": ("active" if r.active else "awaiting activation")
                + (" (demo)" if r.demo else ""),
                "signing key": r.keyid,
            }
            for r in raters
        ],
        hide_index=True,
    )
    with st.form("reset"):
        who = st.selectbox(
            "Rater who lost their passphrase", [r.pseudonym for r in raters], index=None
        )
        st.caption(
            "Their passphrase stops working at once. Activating with the new code makes a "
            "new signing key; the old one stays in their public record as retired."
        )
        if st.form_submit_button("Issue a new enrolment code") and who:
            with session() as s:
                code = reset(s, actor=user, pseudonym=who)
                expires = next(u.code_expires_at for u in list_users(s) if u.pseudonym == who)
            st.session_state["raters:code"] = {
                "what": f"{who} was reset.",
                "code": code,
                "name": who,
                "expires": expires,
            }
            st.rerun()
