"""One vignette as a rater reads it: the frozen clinical core, results by step, proposed bands."""

import streamlit as st

from app_pages.common import library, proposals_visible, require_user
from fma_bands.actions import sub_action
from fma_bands.bands import describe, to_harness

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
    threshold = proposal.effective_threshold
    straddles = proposal.acceptable.straddles(threshold)
    with st.container(border=True):
        st.markdown(f"#### {action.label} · `{action.name}`")
        st.caption(f"{action.step_info.description} Provenance: {proposal.provenance}.")
        st.markdown(f"**Acceptable:** {describe(proposal.acceptable)}")
        st.caption(f"Harness form: `{to_harness(proposal.acceptable)}`")
        if proposal.disputed_span is not None:
            st.markdown(f"**Disputed span:** {describe(proposal.disputed_span)}")
        if threshold is None:
            st.caption("No threshold is pre-registered for this sub-action.")
        elif straddles:
            st.markdown(f"Straddles the threshold `{threshold}`: it admits values on both sides.")
        else:
            st.markdown(f"Does not straddle `{threshold}`: every value is on one side.")
        for label, text in (
            ("Source", proposal.source),
            ("Clause", proposal.clause),
            ("Reasoning", proposal.reasoning),
            ("Notes", proposal.notes),
        ):
            if text:
                st.markdown(f"**{label}.** {text}")
