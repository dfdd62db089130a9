"""The vignette library: every case in the study by domain, ten at a time, with its proposed
bands (raters see neutral case labels; the coordinator also sees ids and strata)."""

import streamlit as st

from app_pages.case_links import case_key
from app_pages.common import escaped, library, plain, proposals_visible, require_user, settings
from fma_bands.core.actions import sub_action
from fma_bands.core.labels import (
    case_numbers,
    describe_band,
    shelf,
    stratum,
    tool_names,
    vignette_address,
    vignette_title,
)
from fma_bands.core.people import UserPublic
from fma_bands.core.vignettes import Vignette

PAGE = 10


def card(
    vignette: Vignette,
    numbers: dict[str, int],
    user: UserPublic,
    show_proposals: bool,
    token_key: bytes,
) -> None:
    """The vignette's link and clinical core beside its bands: as written when the user may see
    proposals (`show_proposals`), else a note that each rater writes their own (blind mode)."""
    with st.container(border=True):
        left, right = st.columns([3, 2])
        left.page_link(
            "app_pages/vignette.py",
            label=escaped(vignette_title(numbers, vignette, user)),
            icon=":material/description:",
            query_params=vignette_address(vignette.id, user, key=token_key),
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


user = require_user()
lib = library()
token_key = case_key()
numbers = case_numbers(lib, token_key)
show_proposals = proposals_visible(user)
st.title("Vignette library")
st.caption(
    f"{len(lib)} vignettes in the study. Each holds a frozen clinical core; the bands proposed "
    "by the study authors are listed beside it."
)
if lib.problems and user.is_coordinator:
    with st.expander(f"{len(lib.problems)} problem(s) in the vignette files", icon="⚠️"):
        where = escaped(settings().vignettes)
        st.caption(
            f"From {where}. Each file named below cannot be read, so it is left out: its "
            "vignette is not in the study and raters do not see it; the other vignettes work as "
            "usual. Fix or remove each file (`fma-bands vignettes check` lists the same "
            "problems); a fixed file is read again at the next page load, and its reviews are "
            "kept."
        )
        st.code("\n".join(str(p) for p in lib.problems), language=None)
if lib.warnings and user.is_coordinator:
    with st.expander(f"{len(lib.warnings)} warning(s) about what raters read", icon="🔎"):
        st.caption(
            "These files load and are in the study, but a clinical core states a demographic "
            "fact the harness varies between conditions, or a proposal's text tells raters what "
            "the band does to the study's figures. Raters read both as written: correct the file "
            "before the round opens (`fma-bands vignettes check` lists the same warnings)."
        )
        st.code("\n".join(str(w) for w in lib.warnings), language=None)
domains = sorted({v.domain for v in lib})
domain = st.segmented_control("Domain", domains, format_func=escaped, key="library_domain")
chosen = shelf(lib, domain, key=token_key)
number = st.pagination(max(1, -(-len(chosen) // PAGE)), key="library_page")
st.caption(f"{len(chosen)} vignettes, {PAGE} to a page.")
for vignette in chosen[(number - 1) * PAGE : number * PAGE]:
    card(vignette, numbers, user, show_proposals, token_key)
