"""The audit log: is the hash chain intact, and what happened, newest first."""

import streamlit as st

from app_pages.common import require_user, session
from fma_bands import audit

require_user("coordinator")
with session() as s:
    report = audit.verify(s)
    recent = audit.events(s, limit=200)

st.title("Audit log")
if report.ok:
    st.success(f"The hash chain is intact: {report.n_events} events checked.")
else:
    st.error(f"The audit log has been tampered with ({len(report.problems)} problem(s)):")
    st.code(str(report), language=None)
st.caption(f"The {len(recent)} most recent events, newest first.")
st.dataframe(
    [
        {
            "seq": e["seq"],
            "when (UTC)": e["at"],
            "who": e["actor"],
            "what": e["kind"],
            "details": e["payload"],
        }
        for e in recent
    ],
    hide_index=True,
)
