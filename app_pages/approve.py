"""Approve changes: the steward's page. Each change to the roster or the policy that the
coordinator signed waits here for the steward's own signature, and takes effect with it."""

import streamlit as st

from app_pages.common import escaped, require_user, session, settings
from fma_bands.core.errors import FmaBandsError
from fma_bands.study.governance import approve, awaiting

user = require_user("steward")
st.title("Approve changes")
st.caption(
    "You co-sign the study's root: no rater is enrolled or reset, and no registry policy takes "
    "effect, until you sign it too. Check each change with the coordinator before you sign."
)
if done := st.session_state.pop("approve:done", None):
    st.session_state["approve:passphrase"] = ""  # before the field is drawn: not left on screen
    st.success(escaped(done))
with session() as s:
    waiting = awaiting(s, user.pseudonym)
if not waiting:
    st.info("No change awaits your signature.")
    st.stop()
st.dataframe(
    [
        {
            "record": r.sequence,
            "change": {
                "enrolment": "enrol or reset",
                "identity": "rater's identity commitment",
                "policy": "registry policy",
            }.get(r.kind, r.kind),
            "concerns": r.about or "the whole study",
            "signed by": r.signer,
            "file": r.file_name,
        }
        for r in waiting
    ],
    hide_index=True,
)
with st.form("approve"):
    passphrase = st.text_input("Your passphrase, again", type="password", key="approve:passphrase")
    sign = st.form_submit_button(f"Sign my approval of {len(waiting)} change(s)", type="primary")
if sign:
    try:
        with session() as s:
            made = approve(s, actor=user, passphrase=passphrase, folder=settings().attestations)
    except FmaBandsError as exc:
        st.error(escaped(exc.message))
    else:
        st.session_state["approve:done"] = f"Approved {len(made)} change(s)."
        st.rerun()
