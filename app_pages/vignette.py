"""One vignette as a rater reads it: the frozen clinical core, then its proposed bands in two
parts, triage and ordering before any result, and from reassessment on the results (each
marked as reaching the agent only if it ordered that test) with the bands of those steps."""

import streamlit as st

from app_pages.case_links import case_key
from app_pages.common import escaped, library, plain, proposals_visible, require_user, show_proposal
from fma_bands.core import labels
from fma_bands.core.actions import sub_action
from fma_bands.core.vignettes import Proposal, Vignette


def band(proposal: Proposal, vignette: Vignette) -> None:
    """One proposed band under its sub-action, with what the agent holds at its step."""
    action = sub_action(proposal.sub_action)
    knows = labels.knowledge_at(vignette, action.step)
    with st.container(border=True):
        st.markdown(f"#### {action.label}")
        st.caption(knows.summary)
        if knows.earlier:
            st.caption(knows.earlier)
        show_proposal(proposal, vignette)


user = require_user()
lib = library()
token_key = case_key()
numbers = labels.case_numbers(lib, token_key)
ids = [v.id for v in labels.shelf(lib, key=token_key)]
if not ids:
    st.info("No vignettes are loaded.")
    st.stop()
wanted = labels.from_address(lib, st.query_params.to_dict(), user, key=token_key)
vid = st.selectbox(
    "Vignette",
    ids,
    index=ids.index(wanted) if wanted in ids else 0,
    format_func=lambda v: labels.vignette_title(numbers, lib.vignettes[v], user),
    key="vignette_id",
)
st.query_params.from_dict(labels.vignette_address(vid, user, key=token_key))
vignette = lib.vignettes[vid]

st.title(escaped(labels.vignette_title(numbers, vignette, user)))
found = labels.stratum(vignette, user)
st.caption(escaped(f"Domain: {vignette.domain}" + (f" · stratum: {found}" if found else "")))

st.subheader("Clinical core")
st.caption("Frozen and shown verbatim. The agent holds it at every step.")
with st.container(border=True):
    plain(vignette.clinical_core)

visible = proposals_visible(user)
if not visible:
    st.info("Blind mode: the proposed bands are not shown to raters; each rater writes their own.")
elif not vignette.proposals:
    st.write("No band is proposed for this vignette.")


# Results appear only in the part for the steps that see them, never beside a triage or ordering
# band: a rater judging triage must not read what the tests later showed.
before = [p for p in vignette.proposals if not sub_action(p.sub_action).step_info.shows_results]
after = [p for p in vignette.proposals if sub_action(p.sub_action).step_info.shows_results]
if before and visible:
    st.subheader("Triage and ordering: before any result")
    for proposal in before:
        band(proposal, vignette)
if after:
    st.subheader("Reassessment, prescribing and documentation: after the results")
    knows = labels.knowledge_at(vignette, sub_action(after[0].sub_action).step)
    if knows.results:
        with st.container(border=True):
            st.markdown("**Results**")
            for line in knows.result_lines():
                plain(line)
    else:
        st.caption("This vignette has no orderable tests.")
    for proposal in after if visible else []:
        band(proposal, vignette)
