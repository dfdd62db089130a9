"""The vignette library: every case in the study by domain, ten at a time, with its proposed
bands (raters see neutral case labels; the coordinator also sees ids and strata)."""

import streamlit as st

from app_pages.common import escaped, library, proposals_visible, require_user, settings
from app_pages.vignette_parts import card
from fma_bands.core.labels import case_numbers, shelf

PAGE = 10
user = require_user()
lib = library()
numbers = case_numbers(lib)
show_proposals = proposals_visible(user)
st.title("Vignette library")
st.caption(
    f"{len(lib)} vignettes in the study. Each holds a frozen clinical core; the bands proposed "
    "by the study authors are listed beside it."
)
if lib.problems and user.is_coordinator:
    with st.expander(f"{len(lib.problems)} problem(s) in the vignette files", icon="⚠️"):
        where = escaped(settings().vignettes)
        st.caption(f"From {where}. Files with problems are left out until fixed.")
        st.code("\n".join(str(p) for p in lib.problems), language=None)
if not len(lib):
    st.info("No vignette is loaded yet.")
    st.stop()

domains = sorted({v.domain for v in lib})
domain = st.segmented_control("Domain", domains, format_func=escaped, key="library_domain")
chosen = shelf(lib, user, domain)
number = st.pagination(max(1, -(-len(chosen) // PAGE)), key="library_page")
st.caption(f"{len(chosen)} vignettes, {PAGE} to a page.")
for vignette in chosen[(number - 1) * PAGE : number * PAGE]:
    card(vignette, numbers, user, show_proposals)
