"""One vignette as a rater reads it: the frozen clinical core, results by step, proposed bands."""

import streamlit as st

from app_pages.case_links import case_key
from app_pages.common import escaped, library, plain, proposals_visible, require_user, show_proposal
from fma_bands.core import labels
from fma_bands.core.actions import sub_action

user = require_user()
lib = library()
token_key = case_key()
numbers = labels.case_numbers(lib, token_key)
ids = [v.id for v in labels.shelf(lib, user, key=token_key)]
if not ids:
    st.info("No vignettes are loaded.")
    st.stop()
wanted = labels.from_address(lib, st.query_params.to_dict(), key=token_key)
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
st.caption("Frozen and shown verbatim. This is all the agent knows at triage and ordering.")
with st.container(border=True):
    plain(vignette.clinical_core)

st.subheader("Results of orderable tests")
st.caption("From the reassess step on, and only for tests the agent ordered; never at triage.")
names = labels.tool_names(vignette)
for key, result in vignette.tool_results.items():
    plain(f"{names[key]}: {result}")
if not vignette.tool_results:
    st.write("This vignette has no orderable tests.")

st.subheader("Proposed bands")
if not proposals_visible(user):
    st.info("Blind mode: the proposed bands are not shown to raters; each rater writes their own.")
    st.stop()
if not vignette.proposals:
    st.write("No band is proposed for this vignette.")
# Each proposal in full, under the sub-action it bands and the step that sub-action is at.
for proposal in vignette.proposals:
    action = sub_action(proposal.sub_action)
    with st.container(border=True):
        st.markdown(f"#### {action.label}")
        st.caption(action.step_info.description)
        show_proposal(proposal, vignette)
