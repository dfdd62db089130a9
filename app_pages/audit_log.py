"""The audit log: is the hash chain intact, and what happened, by kind of event, by who and by
date, newest first, a page at a time, with the whole of a search as CSV."""

import streamlit as st

from app_pages.audit_log_screen import Search, choices, count, search, to_csv
from app_pages.common import require_user, session
from fma_bands.study import audit

PAGE_SIZES = (25, 50, 100)
ROW_PIXELS = 35  # the height of a grid row (and of its header row)
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
    what, who, since, until, size = st.columns([3, 2, 2, 2, 1])
    wanted = Search(
        kinds=tuple(what.multiselect("What", kinds, format_func=lambda k: k.replace("_", " "))),
        actor=who.selectbox("Who", actors, index=None, placeholder="anyone"),
        since=since.date_input("From (UTC)", value=None),
        until=until.date_input("Until (UTC)", value=None),
    )
    per_page = size.selectbox("Rows to a page", PAGE_SIZES, key="audit_size")
    with session() as s:
        total = count(s, user, wanted)
        pages = max(1, -(-total // per_page))
        if st.session_state.get("audit_page", 1) > pages:  # fewer pages since the last filter
            st.session_state["audit_page"] = 1
        grid = st.container()  # above the page picker, filled once the page is known
        number = st.pagination(pages, key="audit_page") if pages > 1 else 1
        first = (number - 1) * per_page
        rows = search(s, user, wanted, limit=per_page, offset=first)
    if not rows:
        grid.info("No event matches these filters.")
        return
    grid.caption(
        f"Rows {first + 1}-{first + len(rows)} of {total} matching events, newest first"
        + (f"; page {number} of {pages}." if pages > 1 else ".")
    )
    grid.dataframe(
        rows,
        hide_index=True,
        width="stretch",
        # Tall enough for every row of the page: the grid never scrolls inside itself.
        height=ROW_PIXELS * (len(rows) + 1) + 3,
        column_config={"details": st.column_config.TextColumn(width="large")},
    )
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
