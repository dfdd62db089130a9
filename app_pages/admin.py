"""The coordinator's desk: the study's rounds (round 2 opened here, once confirmed; a round is
closed on Raters' progress), the review mode, the registry policy, and raters' progress."""

import streamlit as st

from app_pages.assignment_parts import assignment
from app_pages.common import escaped, library, require_user, session, settings
from app_pages.round_parts import rounds
from fma_bands.errors import FmaBandsError
from fma_bands.policy import Policy, read_policy
from fma_bands.study import set_mode, set_policy, study
from fma_bands.submissions import rater_progress

user = require_user("coordinator")
lib = library()
with session() as s:
    current = study(s)
    progress = rater_progress(s, lib, viewer=user)

st.title("Study admin")
where = escaped(settings().vignettes)
st.caption(f"{len(lib)} vignettes from {where}; {len(progress)} raters enrolled.")
if lib.problems:
    with st.expander(f"{len(lib.problems)} problem(s) in the vignette files", icon="⚠️"):
        st.code("\n".join(str(p) for p in lib.problems), language=None)

rounds()

st.subheader("Review mode")
labels = {
    "review": "review: raters see the proposal, source, clause and reasoning",
    "blind": "blind: raters write each band without seeing the proposal (no ACCEPT)",
}
mode = st.radio(
    "Review mode", list(labels), index=list(labels).index(current.mode), format_func=labels.get
)
if mode != current.mode and st.button("Change the review mode"):
    with session() as s:
        set_mode(s, actor=user, mode=mode)
    st.rerun()

st.subheader("Registry policy")
try:
    policy = read_policy(settings().attestations)
except FmaBandsError as exc:
    st.warning(
        f"{escaped(exc.message)}. Until a policy is saved, nothing is clinician-adjudicated."
    )
    policy = Policy()
with st.form("policy"):
    left, right = st.columns(2)
    quorum = left.number_input(
        "Quorum: attesting adjudicators a band needs", min_value=1, value=policy.quorum, step=1
    )
    scope = right.radio(
        "Specialty scope rule",
        ["warn", "require"],
        index=["warn", "require"].index(policy.scope),
        horizontal=True,
    )
    if st.form_submit_button("Save policy"):
        with session() as s:
            set_policy(s, settings().attestations, actor=user, quorum=int(quorum), scope=scope)
        st.success(
            f"Policy saved to attestations/policy.yaml: quorum {int(quorum)}, scope {scope}."
        )

assignment(lib)

st.subheader("Progress by rater")
if progress:
    st.dataframe(progress, hide_index=True)
    st.caption(
        "Of each rater's assigned bands: those submitted and current, drafts open, submitted "
        "reviews made stale by a changed vignette, and how many are assigned."
    )
else:
    st.write("No rater is enrolled yet: enrol them on the Raters page.")
