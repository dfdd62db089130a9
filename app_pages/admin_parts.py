"""The Study admin page's two settings: the review mode raters work in, and the registry policy
(quorum and specialty scope) saved to attestations/policy.yaml."""

import streamlit as st

from app_pages.common import escaped, session, settings
from fma_bands.core.errors import FmaBandsError
from fma_bands.core.people import UserPublic
from fma_bands.evidence.policy import Policy, read_policy
from fma_bands.study.state import set_mode, set_policy

MODE_LABELS = {
    "review": "review: raters see the proposal, source, clause and reasoning",
    "blind": "blind: raters write each band without seeing the proposal (no ACCEPT)",
}


def review_mode(user: UserPublic, current: str) -> None:
    """The mode the study is in (`current`), changed only by the button under a new choice."""
    st.subheader("Review mode")
    mode = st.radio(
        "Review mode",
        list(MODE_LABELS),
        index=list(MODE_LABELS).index(current),
        format_func=MODE_LABELS.get,
    )
    if mode != current and st.button("Change the review mode"):
        with session() as s:
            set_mode(s, actor=user, mode=mode)
        st.rerun()


def _saved_policy() -> Policy:
    """The policy on file; without one, the default, and a warning that nothing counts yet."""
    try:
        return read_policy(settings().attestations)
    except FmaBandsError as exc:
        st.warning(
            f"{escaped(exc.message)}. Until a policy is saved, nothing is clinician-adjudicated."
        )
        return Policy()


def registry_policy(user: UserPublic) -> None:
    st.subheader("Registry policy")
    policy = _saved_policy()
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
