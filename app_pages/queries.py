"""Queries: threads between the coordinator and one rater about one band. A rater asks about a
band of their queue and reads only their own threads; the coordinator asks any rater about any
band, replies, and closes a thread once it is settled.

Every box is a form: typing reruns nothing, and a message refused (empty, too long) keeps what
was typed and says why beside it."""

from typing import Any

import streamlit as st

from app_pages import queue_screen
from app_pages.case_links import case_key
from app_pages.common import escaped, for_signed_in, library, plain, require_user, session
from fma_bands.core.actions import sub_action
from fma_bands.core.errors import FmaBandsError
from fma_bands.core.labels import address, case_label, case_numbers, case_token
from fma_bands.core.people import UserPublic
from fma_bands.study import queries
from fma_bands.study.queries import MAX_BODY, Band, Message, Thread
from fma_bands.study.users import list_users

FLASH, ERRORS = "queries_flash", "queries_errors"
START = "queries:start"


def band_words(numbers: dict[str, int], band: Band, viewer: UserPublic) -> str:
    """A band as this person reads it: the case label and the sub-action, and for the
    coordinator the vignette id as well (a rater never sees ids)."""
    vid, name = band
    case = case_label(numbers, vid)
    if viewer.is_coordinator:
        case = f"{case} ({vid})"
    return f"{case} · {sub_action(name).label}"


@for_signed_in
def _send(action: str, user: UserPublic, field: str, band: Band | None, rater: str | None) -> None:
    """Send what the box `field` holds (a callback: it runs before the page draws again)."""
    body = st.session_state.get(field, "")
    try:
        if band is None:
            message = "choose the band your message is about"
            raise FmaBandsError(message, field="band")
        if action != "ask" and not rater:
            message = "choose the rater your message is for"
            raise FmaBandsError(message, field="rater")
        with session() as s:
            if action == "ask":
                queries.ask(s, library(), user, band, body)
            elif action == "close":
                queries.close(s, user, rater or "", band, body)
            else:
                queries.write(s, library(), user, rater or "", band, body)
    except FmaBandsError as exc:
        st.session_state[ERRORS] = {field: next(iter(exc.fields.values()), None) or exc.message}
        return
    st.session_state[field] = ""
    st.session_state[FLASH] = {
        "ask": "Your message is sent to the study coordinator.",
        "write": f"Your message is sent to {rater}.",
        "close": "The query is closed.",
    }[action]


def _error(field: str) -> None:
    found = st.session_state.get(ERRORS, {}).get(field)
    if found:
        st.error(escaped(found), icon=":material/error:")


def _author(message: Message, thread: Thread, viewer: UserPublic) -> str:
    if message.author == viewer.pseudonym:
        return "You"
    if message.by_rater:
        return thread.rater
    return message.author if viewer.is_coordinator else "The study coordinator"


def _state(thread: Thread, viewer: UserPublic) -> str:
    if not thread.is_open:
        return "Closed"
    mine = "coordinator" if viewer.is_coordinator else "rater"
    if thread.awaits == mine:
        # A rater owes the coordinator nothing: the coordinator's last word may be an answer.
        if viewer.is_coordinator:
            return "Open · awaiting your reply"
        return "Open · the coordinator wrote last: reply if you need to (the coordinator closes it)"
    if viewer.is_coordinator:
        return f"Open · you wrote last: {thread.rater} may reply; close it once it is settled"
    return "Open · awaiting the coordinator's reply"


def show_thread(thread: Thread, numbers: dict[str, int], viewer: UserPublic, key: bytes) -> None:
    token = f"{case_token(thread.vignette_id, key)}-{thread.sub_action}-{thread.rater_id}"
    with st.container(border=True, key=f"query-{token}"):
        title = band_words(numbers, thread.band, viewer)
        if viewer.is_coordinator:
            title = f"{title} · with {thread.rater}"
        st.markdown(f"**{escaped(title)}**")
        st.caption(_state(thread, viewer))
        for message in thread.messages:
            when = f"{message.created_at:%Y-%m-%d %H:%M} UTC"
            closed = " · closed the query" if message.closes else ""
            st.caption(escaped(f"{_author(message, thread, viewer)} · {when}{closed}"))
            if message.body:
                plain(message.body)
        if not viewer.is_coordinator:
            st.page_link(
                "app_pages/review.py",
                label="Open this band",
                query_params=address(*thread.band, key=key),
                icon=":material/rate_review:",
            )
        if not thread.is_open and not viewer.is_coordinator:
            return  # a rater asks again from "Ask about a band"
        field = f"reply:{token}"
        with st.form(f"form:{token}", border=False):
            st.text_area("Your reply", key=field, max_chars=MAX_BODY, height=90)
            _error(field)
            send, close = st.columns(2)
            action = "write" if viewer.is_coordinator else "ask"
            send.form_submit_button(
                "Send the reply",
                on_click=_send,
                args=(action, viewer, field, thread.band, thread.rater),
            )
            if viewer.is_coordinator and thread.is_open:
                close.form_submit_button(
                    "Close the query",
                    help="Ends the thread; anything typed above goes with it as a last word.",
                    on_click=_send,
                    args=("close", viewer, field, thread.band, thread.rater),
                )


def band_choices(bands: list[Band], key: bytes) -> dict[str, Band]:
    """The bands a form offers, each named by its case token and sub-action: the widget holds
    no vignette id, which a rater must never see."""
    return {f"{case_token(vid, key)}/{name}": (vid, name) for vid, name in bands}


def _band_box(
    where: Any,
    choices: dict[str, Band],
    numbers: dict[str, int],
    user: UserPublic,
    placeholder: str,
) -> None:
    where.selectbox(
        "Band",
        list(choices),
        index=None,
        format_func=lambda c: band_words(numbers, choices[c], user),
        placeholder=placeholder,
        key=f"{START}:band",
    )


def _message_box(label: str) -> None:
    st.text_area(label, key=f"{START}:body", max_chars=MAX_BODY, height=110)
    _error(f"{START}:body")


def start_as_rater(
    user: UserPublic, numbers: dict[str, int], bands: list[Band], key: bytes
) -> None:
    st.subheader("Ask about a band")
    if not bands:
        st.caption("Your queue has no band to ask about.")
        return
    choices = band_choices(bands, key)
    _from_address(choices)
    with st.form(START, border=True):
        _band_box(st.container(), choices, numbers, user, "choose a band of your queue")
        _message_box("Your question")
        st.form_submit_button(
            "Send the question",
            type="primary",
            on_click=lambda: _send("ask", user, f"{START}:body", _chosen(choices), None),
        )


def start_as_coordinator(
    user: UserPublic, numbers: dict[str, int], bands: list[Band], key: bytes
) -> None:
    st.subheader("Ask a rater about a band")
    with session() as s:
        raters = [u.pseudonym for u in list_users(s, "rater")]
    if not raters:
        st.caption("No rater is enrolled yet.")
        return
    choices = band_choices(bands, key)
    with st.form(START, border=True):
        who, which = st.columns([1, 2])
        who.selectbox(
            "Rater", raters, index=None, placeholder="choose a rater", key=f"{START}:rater"
        )
        _band_box(which, choices, numbers, user, "choose a band")
        _message_box("Your message")
        st.form_submit_button(
            "Send to the rater",
            type="primary",
            on_click=lambda: _send(
                "write",
                user,
                f"{START}:body",
                _chosen(choices),
                st.session_state.get(f"{START}:rater"),
            ),
        )


def _from_address(choices: dict[str, Band]) -> None:
    """The band the address names (the review screen's "Ask the coordinator about this band"),
    chosen in the form once, if it is one the form offers."""
    params = st.query_params.to_dict()
    wanted = f"{params.get('case')}/{params.get('sub_action')}"
    if wanted in choices and st.session_state.get(ADDRESSED) != wanted:
        st.session_state[f"{START}:band"] = wanted
        st.session_state[ADDRESSED] = wanted


ADDRESSED = "queries:addressed"


def _chosen(choices: dict[str, Band]) -> Band | None:
    return choices.get(st.session_state.get(f"{START}:band") or "")


user = require_user()
if user.role not in ("rater", "coordinator"):
    st.error("This page is not available to you.")
    st.stop()
lib = library()
token_key = case_key()
numbers = case_numbers(lib, token_key)
with session() as s:
    found = queries.threads(s, user)
    if user.is_coordinator:
        bands = [(v.id, p.sub_action) for v in lib for p in v.proposals]
    else:
        bands = [r.band for r in queue_screen.rater_queue(s, lib, user)]

st.title("Queries")
if user.is_coordinator:
    st.caption(
        "A query is a thread between you and one rater about one band. The rater sees only "
        "their own queries, never another rater's, and no query shows anyone's review."
    )
else:
    st.caption(
        "A question to the study coordinator about one band of your queue. Only you and the "
        "coordinator read it: no other rater sees your queries."
    )
if flash := st.session_state.pop(FLASH, None):
    st.success(escaped(flash), icon=":material/check_circle:")  # it names a rater
mine = "coordinator" if user.is_coordinator else "rater"
waiting = sum(t.awaits == mine for t in found)
if waiting:
    st.info(f"{queries.awaiting_words(waiting, mine)}.", icon=":material/forum:")
if user.is_coordinator:
    start_as_coordinator(user, numbers, bands, token_key)
else:
    start_as_rater(user, numbers, bands, token_key)

open_ones = [t for t in found if t.is_open]
closed = [t for t in found if not t.is_open]
st.subheader(f"Open queries ({len(open_ones)})")
for thread in open_ones:
    show_thread(thread, numbers, user, token_key)
if not open_ones:
    st.caption("No query is open.")
if closed:
    with st.expander(f"Closed queries ({len(closed)})"):
        for thread in closed:
            show_thread(thread, numbers, user, token_key)
st.session_state.pop(ERRORS, None)
