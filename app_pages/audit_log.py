"""The audit log: is the hash chain intact, and what happened, by kind of event, by who and by
date, newest first, a page at a time, with the whole of a search as CSV."""

import streamlit as st

from app_pages.audit_log_screen import Search, choices, count, search, to_csv
from app_pages.common import require_user, session
from fma_bands.study import audit

PAGE = 50
user = require_user("coordinator")
with session() as s:
    report = audit.verify(s)  # on opening the page only: filtering below reruns the table alone
    kinds, actors = choices(s, user)

st.title("Audit log")
if report.ok:
    st.success(f"The hash chain is intact: {report.n_events} events checked.")
else:
    st.error(f"The audit log has been tampered with ({len(report.problems)} problem(s)):")
    st.code(str(report), language=None)


@st.fragment
def events() -> None:
    what, who, since, until = st.columns([3, 2, 2, 2])
    wanted = Search(
        kinds=tuple(what.multiselect("What", kinds, format_func=lambda k: k.replace("_", " "))),
        actor=who.selectbox("Who", actors, index=None, placeholder="anyone"),
        since=since.date_input("From (UTC)", value=None),
        until=until.date_input("Until (UTC)", value=None),
    )
    with session() as s:
        total = count(s, user, wanted)
        number = st.pagination(max(1, -(-total // PAGE)), key="audit_page")
        rows = search(s, user, wanted, limit=PAGE, offset=(number - 1) * PAGE)
    st.caption(f"{total} matching events, newest first; {PAGE} to a page.")
    st.dataframe(rows, hide_index=True, width="stretch")
    st.download_button(
        "Download these events (CSV)",
        data=lambda: _csv(wanted),
        file_name="audit-log.csv",
        mime="text/csv",
        on_click="ignore",
        icon=":material/download:",
    )


def _csv(wanted: Search) -> str:
    with session() as s:
        return to_csv(s, user, wanted)


events()
