"""The audit log: is the hash chain intact, and what happened, by kind of event, by who and by
date, newest first, a page at a time, with the whole of a search as CSV.

The whole chain is checked each time the page is opened, whenever an event has been added since
the last check, and when the coordinator asks; a rerun of the page with nothing added says the
check it made and when (`fma-bands audit verify` always checks it all)."""

import streamlit as st

from app_pages.audit_log_screen import (
    Search,
    accounts,
    check_chain,
    choices,
    count,
    search,
    to_csv,
    who_words,
)
from app_pages.common import for_signed_in, require_user, session
from app_pages.main import opened

PAGE_SIZES = (25, 50, 100)
ROW_PIXELS = 35  # the height of a grid row (and of its header row)
CHECK_KEY = "audit_log_check"


@for_signed_in
def _check_again() -> None:
    st.session_state.pop(CHECK_KEY, None)


user = require_user("coordinator")
with session() as s:
    check = check_chain(s, user, st.session_state.get(CHECK_KEY), opened=opened())
    st.session_state[CHECK_KEY] = check
    kinds, actors = choices(s, user)
    people = accounts(s)

st.title("Audit log")
report = check.report
if report.ok:
    st.success(f"The hash chain is intact: {report.n_events} events checked.")
else:
    st.error(f"The audit log has been tampered with ({len(report.problems)} problem(s)):")
    st.code(str(report), language=None)
said, again = st.columns([5, 1], vertical_alignment="center")
said.caption(
    f"Checked at {check.at:%H:%M:%S} UTC, every event from the first: the chain is checked "
    "again each time this page is opened and whenever an event is added."
)
again.button("Check again", icon=":material/refresh:", on_click=_check_again)


@st.fragment
def events() -> None:
    what, who, since, until, size = st.columns([3, 2, 2, 2, 1])
    # The filters are still set when the coordinator comes back from another page.
    wanted = Search(
        kinds=tuple(
            what.multiselect(
                "What",
                kinds,
                format_func=lambda k: k.replace("_", " "),
                key="audit_what",
                persist_state="session",
            )
        ),
        actor=who.selectbox(
            "Who",
            actors,
            index=None,
            placeholder="anyone",
            format_func=lambda actor: who_words(actor, people),
            key="audit_who",
            persist_state="session",
        ),
        since=since.date_input(
            "From (UTC)", value=None, key="audit_since", persist_state="session"
        ),
        until=until.date_input(
            "Until (UTC)", value=None, key="audit_until", persist_state="session"
        ),
    )
    per_page = size.selectbox("Per page", PAGE_SIZES, key="audit_size", persist_state="session")
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
        backwards = wanted.since and wanted.until and wanted.since > wanted.until
        grid.info(
            "No event matches these filters: the From day is after the Until day."
            if backwards
            else "No event matches these filters."
        )
        return
    grid.caption(
        f"Rows {first + 1}-{first + len(rows)} of {total} matching events, newest first"
        + (f"; page {number} of {pages}." if pages > 1 else ".")
    )
    picked = grid.dataframe(
        rows,
        hide_index=True,
        width="stretch",
        # Tall enough for every row of the page: the grid never scrolls inside itself.
        height=ROW_PIXELS * (len(rows) + 1) + 3,
        column_config={
            "who": st.column_config.TextColumn(width="medium"),  # "coordinator" whole
            "what": st.column_config.TextColumn(width="medium"),  # "chair decision signed" whole
            "details": st.column_config.TextColumn(width="large"),
        },
        on_select="rerun",
        selection_mode="single-row",
        # A row chosen is not chosen on another page or search, nor once newer events have
        # moved the rows down (the selection is a row's place, not its event).
        key=f"audit_grid:{number}:{per_page}:{wanted!r}:{rows[0]['seq']}",
    )
    chosen = picked.selection.rows
    if chosen and chosen[0] < len(rows):
        with session() as s:
            [event] = search(s, user, Search(seq=rows[chosen[0]]["seq"]), whole=True)
        grid.markdown(f"**Event {event['seq']}**, {event['when (UTC)']} UTC")
        # Plain text: what people and files wrote is never read as markup.
        said = event["details"] or "(no details recorded)"
        grid.code(f"{event['who']}: {event['what']}\n{said}", language=None, wrap_lines=True)
    else:
        grid.caption("Choose a row (the box at its left) to read its details whole.")
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
