"""A rater's queue: how far they are, where to resume, and their bands a page at a time, by
status and sub-action."""

import time

import streamlit as st

from app_pages import queue_screen
from app_pages.case_links import case_key
from app_pages.common import library, require_user, session
from app_pages.page_script import top_script
from app_pages.review_screen import ReviewState
from fma_bands.core.actions import SUB_ACTIONS, sub_action
from fma_bands.core.labels import address, case_numbers
from fma_bands.study.due_dates import due_date, overdue, reminder
from fma_bands.study.queries import awaiting, awaiting_words
from fma_bands.study.state import sees_proposals, study

user = require_user("rater")
lib = library()
with session() as s:
    rows = queue_screen.rater_queue(s, lib, user)
    settings = study(s)
    waiting = awaiting(s, user)
    due = due_date(s, settings.round)
token_key = case_key()
numbers = case_numbers(lib, token_key)

st.title("My queue")
if flash := ReviewState.of(st.session_state).take_flash():
    st.success(flash, icon=":material/check_circle:")
mode = "you see each proposed band" if sees_proposals(settings, user) else "you write each band"
if settings.phase == "open":
    st.caption(f"Round {settings.round} is open; {settings.mode} mode: {mode}.")
else:
    st.caption(
        f"Round {settings.round} is closed: your reviews can be read, no longer changed; "
        f"{settings.mode} mode: {mode}."
    )
if settings.round > 1:
    st.caption(
        f"Round {settings.round}: the bands you re-review after round 1's anonymised panel. "
        "Your other reviews are frozen as round 1 left them."
    )
if waiting:
    # Only then: a question to the coordinator starts from Queries in the menu.
    st.info(f"{awaiting_words(waiting, 'rater')}.", icon=":material/forum:")
    st.page_link(
        "app_pages/queries.py", label="Read and answer your queries", icon=":material/forum:"
    )
if not rows:
    st.info("No band is waiting for review in this study.")
    st.stop()
done, assigned = queue_screen.progress(rows)
st.progress(done / assigned, text=f"{done} of {assigned} bands submitted")
if due is not None and settings.phase == "open":
    line = reminder(due, assigned - done)
    if overdue(due) and done < assigned:
        st.warning(line, icon=":material/event_busy:")
    else:
        st.info(line, icon=":material/event:")
st.caption(" · ".join(f"{status}: {n}" for status, n in queue_screen.counts(rows).items() if n))
resume = queue_screen.resume(rows)
if resume is not None and settings.phase == "open":
    label = "Resume" if done or any(r.status != "to do" for r in rows) else "Start reviewing"
    band = f"Case {resume.case} of {len(numbers)} · {sub_action(resume.sub_action).label}"
    if st.button(f"{label}: {band}", type="primary", icon=":material/play_arrow:"):
        st.switch_page("app_pages/review.py", query_params=address(*resume.band, key=token_key))

st.subheader("Bands")
show, which = st.columns(2)
status = show.selectbox("Show", queue_screen.STATUSES, index=None, placeholder="every status")
name = which.selectbox(
    "Sub-action",
    list(SUB_ACTIONS),
    index=None,
    format_func=lambda n: sub_action(n).label,
    placeholder="every sub-action",
)
chosen = queue_screen.select_rows(rows, status=status, sub_action=name)
number = st.pagination(queue_screen.pages(chosen), key="queue_page") if chosen else 1
for row in queue_screen.page(chosen, number):
    left, right = st.columns([3, 2])
    left.page_link(
        "app_pages/review.py",
        label=f"Case {row.case} of {len(numbers)} · {sub_action(row.sub_action).label}",
        query_params=address(*row.band, key=token_key),
    )
    right.caption(row.status + (" · flagged for the coordinator" if row.flagged else ""))
if not chosen:
    st.caption("No band has this status.")
if flash:
    # Come from the review page's last band: opened at its top, the confirmation in view.
    top_script(f"queue {time.monotonic_ns()}")
