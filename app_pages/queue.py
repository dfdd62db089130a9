"""A rater's queue: every band to review, progress by domain and sub-action, and where to resume."""

import streamlit as st

from app_pages.common import library, require_user, session
from fma_bands.actions import sub_action
from fma_bands.reviews import next_item, progress, queue
from fma_bands.study import study

user = require_user("rater")
lib = library()
with session() as s:
    items = queue(s, lib, user)
    settings = study(s)

st.title("My queue")
mode = (
    "review mode: you see each proposed band"
    if settings.mode == "review"
    else ("blind mode: you write each band yourself, without seeing the proposal")
)
st.caption(f"Review phase {settings.phase}; {mode}.")
if not items:
    st.info("No band is waiting for review in this study.")
    st.stop()

summary = progress(items)
done, assigned = summary["all"]["all"]
st.progress(done / assigned, text=f"{done} of {assigned} bands submitted")
resume = next_item(items)
if resume is not None and settings.phase == "open":
    label = "Resume" if any(i.status != "to do" for i in items) else "Start reviewing"
    band = f"{resume.vignette_id} · {sub_action(resume.sub_action).label}"
    if st.button(f"{label}: {band}", type="primary", icon=":material/play_arrow:"):
        st.switch_page(
            "app_pages/review.py",
            query_params={"vignette": resume.vignette_id, "sub_action": resume.sub_action},
        )

by_domain, by_action = st.columns(2)
by_domain.markdown("**By domain** (submitted / assigned)")
by_domain.table({k.capitalize(): f"{d} / {a}" for k, (d, a) in summary["domain"].items()})
by_action.markdown("**By sub-action** (submitted / assigned)")
by_action.table({sub_action(k).label: f"{d} / {a}" for k, (d, a) in summary["sub_action"].items()})

st.subheader("Bands")
for item in items:
    status = item.status + (
        " (stale: the vignette changed since you submitted)" if item.stale else ""
    )
    left, right = st.columns([3, 2])
    left.page_link(
        "app_pages/review.py",
        label=f"{item.vignette_id} · {sub_action(item.sub_action).label}",
        query_params={"vignette": item.vignette_id, "sub_action": item.sub_action},
    )
    badge = {
        "to do": ":material/radio_button_unchecked:",
        "draft": ":material/edit_note:",
        "submitted": ":material/check_circle:",
    }[item.status]
    right.markdown(f"{badge} {status} · {item.domain}")
