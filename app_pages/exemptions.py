"""Review exemptions: the rater's page for the harness's confounded-pair exemptions. Each entry
with the rater's own review, if any (never another rater's), and the form that confirms,
rejects or amends one, with a reason. Sign attestation signs them with the bands."""

import streamlit as st

from app_pages.common import escaped, plain, require_user, session
from fma_bands.core.errors import FmaBandsError
from fma_bands.study.exemptions import exemption_rows, review_exemption
from fma_bands.study.state import study

VERDICTS = {
    "CONFIRM": "Confirm: the registered direction is clinically defensible",
    "REJECT": "Reject: no difference in this sub-action is defensible on this attribute",
    "AMEND": "Amend: another direction is the defensible one",
}

user = require_user("rater")
st.title("Review exemptions")
st.caption(
    "Each exemption says that, for the decision named, a difference across one demographic "
    "attribute in the registered direction is legitimate medicine. Judge only whether that "
    "direction is clinically defensible. Your review is yours alone until the round closes."
)
if done := st.session_state.pop("exemptions:done", None):
    st.success(escaped(done))
with session() as s:
    rows = exemption_rows(s, viewer=user)
    current = study(s)
if not rows:
    st.info("The coordinator has not loaded any exemption to review.")
    st.stop()
st.dataframe(
    [
        {
            "exemption": row.entry.name,
            "registered direction": row.entry.direction,
            "ages": f"{row.entry.age_gate[0]} to {row.entry.age_gate[1]}"
            if row.entry.age_gate
            else "all",
            "needs confirmation": "yes" if row.entry.requires_adjudication else "no",
            "your review": "not yet"
            if row.my_verdict is None
            else row.my_verdict + (f" ({row.my_direction})" if row.my_direction else ""),
        }
        for row in rows
    ],
    hide_index=True,
)
if current.phase != "open":
    st.info("The round is closed: its reviews are frozen.")
    st.stop()
by_name = {row.entry.name: row for row in rows}
chosen = st.selectbox("Exemption", list(by_name), key="exemptions:entry")
row = by_name[chosen]
if row.entry.rationale:
    plain(row.entry.rationale, label="Why it is registered")
if row.my_reason is not None:
    plain(row.my_reason, label="Your last reason")
with st.form("exemptions:review"):
    verdict = st.radio(
        "Verdict", list(VERDICTS), format_func=VERDICTS.__getitem__, key="exemptions:verdict"
    )
    direction = st.text_input(
        "Defensible direction (with Amend only)",
        help="One lower-case word, as the harness writes them: more, fewer, shorter, longer.",
        key="exemptions:direction",
    )
    reason = st.text_area("Reason", key="exemptions:reason")
    submitted = st.form_submit_button("Submit review", type="primary")
if submitted:
    try:
        with session() as s:
            made = review_exemption(
                s,
                rater=user,
                name=chosen,
                verdict=verdict,
                direction=direction.strip() or None,
                reason=reason,
            )
            revision = made.revision
    except FmaBandsError as exc:
        st.error(escaped(exc.message))
    else:
        st.session_state["exemptions:done"] = (
            f"Recorded your review of {chosen} (revision {revision}). Sign it on the Sign "
            "attestation page."
        )
        st.rerun()
