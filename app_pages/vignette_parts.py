"""A vignette as the pages draw it: its card on the library's shelf, and its proposed bands on
its own page."""

import streamlit as st

from app_pages.common import escaped, plain, show_proposal
from fma_bands.core.actions import sub_action
from fma_bands.core.labels import (
    describe_band,
    stratum,
    tool_names,
    vignette_address,
    vignette_title,
)
from fma_bands.core.people import UserPublic
from fma_bands.core.vignettes import Vignette


def card(
    vignette: Vignette, numbers: dict[str, int], user: UserPublic, show_proposals: bool
) -> None:
    """The vignette's link and clinical core beside its bands: as written when the user may see
    proposals (`show_proposals`), else a note that each rater writes their own (blind mode)."""
    with st.container(border=True):
        left, right = st.columns([3, 2])
        left.page_link(
            "app_pages/vignette.py",
            label=escaped(vignette_title(numbers, vignette, user)),
            icon=":material/description:",
            query_params=vignette_address(vignette.id, user),
        )
        if (found := stratum(vignette, user)) is not None:
            left.caption(escaped(f"{vignette.domain} · stratum: {found}"))
        with left:
            plain(vignette.clinical_core)
        with right:
            for proposal in vignette.proposals:
                text = describe_band(proposal.acceptable, tool_names(vignette))
                blind = "to be written by each rater (blind mode)"
                label = sub_action(proposal.sub_action).label
                plain(text if show_proposals else blind, label=label)
            if not vignette.proposals:
                st.caption("No band to review.")


def proposed_bands(vignette: Vignette) -> None:
    """Each proposal in full, under the sub-action it bands and the step that sub-action is at."""
    if not vignette.proposals:
        st.write("No band is proposed for this vignette.")
    for proposal in vignette.proposals:
        action = sub_action(proposal.sub_action)
        with st.container(border=True):
            st.markdown(f"#### {action.label}")
            st.caption(action.step_info.description)
            show_proposal(proposal, vignette)
