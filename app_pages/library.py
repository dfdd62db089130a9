"""The vignette library: every case in the study by domain, with its stratum and proposed bands."""

import streamlit as st

from app_pages.common import library, proposals_visible, require_user, settings
from fma_bands.actions import sub_action
from fma_bands.bands import describe

st.title("Vignette library")
lib = library()
show_proposals = proposals_visible(require_user())
st.caption(
    f"{len(lib)} vignettes loaded from `{settings().vignettes}`. Each holds a frozen clinical "
    "core; the bands proposed by the study authors are listed beside it."
)
if lib.problems:
    with st.expander(f"{len(lib.problems)} problem(s) in the vignette files", icon="⚠️"):
        st.caption("Files with problems are left out until they are fixed.")
        st.code("\n".join(str(p) for p in lib.problems), language=None)
if not len(lib):
    st.info(f"No vignette files found in `{settings().vignettes}`.")
    st.stop()

for domain in sorted({v.domain for v in lib}):
    st.subheader(domain.capitalize())
    for vignette in (v for v in lib if v.domain == domain):
        with st.container(border=True):
            left, right = st.columns([3, 2])
            left.page_link(
                "app_pages/vignette.py",
                label=vignette.id,
                icon=":material/description:",
                query_params={"id": vignette.id},
            )
            left.caption(f"Stratum: {vignette.ambiguity or 'not given'}")
            left.write(vignette.clinical_core)
            for proposal in vignette.proposals:
                label = sub_action(proposal.sub_action).label
                if show_proposals:
                    right.markdown(f"**{label}**: {describe(proposal.acceptable)}")
                else:
                    right.markdown(f"**{label}**: to be written by each rater (blind mode)")
            if not vignette.proposals:
                right.caption("No band to review.")
