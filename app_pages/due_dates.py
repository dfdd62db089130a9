"""The current round's due date as the coordinator sets it on Study admin: `due_date_form(user)`.

A fragment: choosing a day or pressing a button reruns this part only, never the whole of
Study admin."""

from datetime import date

import streamlit as st

from app_pages.common import escaped, for_signed_in, session
from fma_bands.core.errors import FmaBandsError
from fma_bands.core.people import UserPublic
from fma_bands.study.due_dates import clear_due, due_date, long_date, set_due, when_due
from fma_bands.study.state import study

FLASH, ERROR = "due_flash", "due_error"
FIELD = "due:day"
LABEL = "Due on"


@for_signed_in
def _set(user: UserPublic) -> None:
    chosen = st.session_state.get(FIELD)
    try:
        if not isinstance(chosen, date):
            raise FmaBandsError("choose the day the round is due", field="due date")
        with session() as s:
            before = due_date(s, study(s).round)
            due = set_due(s, actor=user, due_on=chosen)
    except FmaBandsError as exc:
        st.session_state[ERROR] = exc.message
        return
    moved = before is None or before.due_on != due.due_on
    st.session_state[FLASH] = (
        f"Round {due.round} is now due on {long_date(due.due_on)}."
        if moved
        else f"Round {due.round} is already due on {long_date(due.due_on)}: choose another "
        "day to move it."
    )


@for_signed_in
def _clear(user: UserPublic) -> None:
    try:
        with session() as s:
            cleared = clear_due(s, actor=user)
            number = study(s).round
    except FmaBandsError as exc:
        st.session_state[ERROR] = exc.message
        return
    st.session_state[FIELD] = None  # the field shows what is recorded: no day
    st.session_state[FLASH] = (
        f"Round {number} has no due date now." if cleared else f"Round {number} had no due date."
    )


@st.fragment
def due_date_form(user: UserPublic) -> None:
    """The current round's due date, and the form that sets, moves or clears it. Each rater's
    queue shows it with the number of their bands left."""
    with session() as s:
        current = study(s)
        due = due_date(s, current.round)
    st.subheader(f"Due date of round {current.round}")
    if flash := st.session_state.pop(FLASH, None):
        st.success(flash, icon=":material/check_circle:")
    if current.phase != "open":
        # A closed round is due no more: its date stays on record, its reminder is gone.
        was = f" (it was due on {long_date(due.due_on)})" if due is not None else ""
        st.caption(
            f"Round {current.round} is closed{was}: a due date is set for an open round only."
        )
        st.session_state.pop(ERROR, None)
        return
    if due is None:
        st.caption(f"Round {current.round} has no due date: raters see no reminder.")
    else:
        st.caption(
            escaped(f"{when_due(due)}; set by {due.set_by}. Each rater's queue reminds them.")
        )
    recorded = due.due_on if due else None
    # The field and its buttons in a block of their own: the browser's guard counts a day typed
    # as set by a button beside it (app_pages/page_script.py).
    with st.container(key="due:form"):
        chosen = st.date_input(
            LABEL,
            value=recorded,
            # No earliest day of our own on the field: one typed before it would be kept back by
            # the browser, shown in red, and Set would set the day on show before it. A day
            # already past is refused in words (due_dates.set_due); an overdue round's date
            # stays on show, to be moved or cleared from here.
            format="YYYY-MM-DD",
            key=FIELD,
        )
        if error := st.session_state.pop(ERROR, None):
            st.error(escaped(error), icon=":material/error:")
        left, right = st.columns(2)
        # Never greyed out for want of a day: a day typed into the field counts only once the
        # field is left, and the click that leaves it is this one (an empty field is refused in
        # words).
        left.button("Set the due date", on_click=_set, args=(user,), key="due:set")
        right.button(
            "Clear the due date",
            on_click=_clear,
            args=(user,),
            disabled=due is None,
            key="due:clear",
        )
        if isinstance(chosen, date) and chosen != recorded:
            # Chosen is not set: leaving the page now would lose it, so the page says so, and
            # the browser asks before leaving while this is on screen. Under the buttons: drawn
            # as the field is left, it moves nothing the pointer may be about to press.
            # Just refused, the day cannot be set as it is: the notice says so rather than
            # asking for the press the page has just refused.
            then = (
                "choose another day, as said above"
                if error
                else f"press Set the due date to make round {current.round} due then"
            )
            with st.container(key=f"unsent:{LABEL}"):
                st.warning(
                    f"{long_date(chosen)} is chosen, not set: {then}.",
                    icon=":material/schedule:",
                )
