"""The coordinator's desk: the study's rounds (round 2 opened here, once confirmed; a round is
closed on Raters' progress), the review mode, the registry policy, and raters' progress."""

import streamlit as st

from app_pages.admin_parts import registry_policy, review_mode
from app_pages.assignment_parts import assignment
from app_pages.common import escaped, library, require_user, session, settings
from app_pages.round_parts import rounds
from fma_bands.study.state import study
from fma_bands.study.submissions import rater_progress

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
review_mode(user, current.mode)
registry_policy(user)
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
