"""One vignette as a rater reads it: the frozen clinical core, results by step, proposed bands."""

import streamlit as st

from app_pages.common import library, proposals_visible, require_user, show_proposal
from fma_bands.actions import sub_action

lib = library()
ids = list(lib.vignettes)
if not ids:
    st.info("No vignettes are loaded.")
    st.stop()
wanted = st.query_params.get("id")
vid = st.selectbox(
    "Vignette", ids, index=ids.index(wanted) if wanted in ids else 0, key="vignette_id"
)
st.query_params["id"] = vid
vignette = lib.vignettes[vid]

st.title(vignette.id)
st.caption(f"Domain: {vignette.domain} · stratum: {vignette.ambiguity or 'not given'}")

st.subheader("Clinical core")
st.caption("Frozen and shown verbatim. This is all the agent knows at triage and ordering.")
with st.container(border=True):
    st.write(vignette.clinical_core)

st.subheader("Results of orderable tests")
st.caption(
    "Available from the reassess step on (reassess, prescribe, document), and only for tests "
    "the agent ordered. Never available at triage or ordering."
)
if vignette.tool_results:
    st.table({"Test": list(vignette.tool_results), "Result": list(vignette.tool_results.values())})
else:
    st.write("This vignette has no orderable tests.")

st.subheader("Proposed bands")
if not proposals_visible(require_user()):
    st.info("Blind mode: the proposed bands are not shown to raters; each rater writes their own.")
    st.stop()
if not vignette.proposals:
    st.write("No band is proposed for this vignette.")
for proposal in vignette.proposals:
    action = sub_action(proposal.sub_action)
    with st.container(border=True):
        st.markdown(f"#### {action.label}")
        st.caption(action.step_info.description)
        show_proposal(proposal, vignette)
