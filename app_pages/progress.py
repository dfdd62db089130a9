"""Raters' progress, the coordinator's view of the raters: progress, pace and share of ACCEPT;
each band against the quorum; flags to deal with; every submitted review as CSV; and closing
the current round, once confirmed (it is never reopened).

The quorum table, the flags and the closing are fragments: dealing with a flag, or ticking the
confirmation, reruns that part only, never the whole table of every rater's work."""

import streamlit as st

from app_pages.band_table import IN_SIGHT, ROW, row_height
from app_pages.case_links import case_key
from app_pages.common import escaped, for_signed_in, library, plain, require_user, session, settings
from app_pages.progress_screen import (
    RaterSummary,
    progress_table,
    rater_summaries,
    reviews_csv,
    round_band_progress,
    unfinished_words,
)
from fma_bands.core.actions import sub_action
from fma_bands.core.errors import FmaBandsError
from fma_bands.core.labels import case_label, case_numbers
from fma_bands.core.people import UserPublic
from fma_bands.core.vignettes import Library
from fma_bands.study import marks
from fma_bands.study.coverage import BandProgress, study_quorum
from fma_bands.study.rounds import close_round
from fma_bands.study.state import study

# Pixels, together what the main column of a 1280-pixel window holds beside the open sidebar;
# a status longer than its column wraps within it (band_table.row_height), never cut short.
QUORUM_WIDTHS = {
    "case": 55,
    "vignette": 170,
    "sub-action": 150,
    "assigned": 75,
    "submitted": 80,
    "declined": 70,
    "status": 180,
}


def status_words(row: BandProgress, closed: bool) -> str:
    """The band's status, which once its round is closed says what it came to, not what is
    still to do: nobody can add a review to a closed round."""
    if closed and row.needed:
        return f"round closed, {row.needed} short of the quorum"
    return row.status


@st.fragment
def quorum_progress(lib: Library, user: UserPublic, number: int, closed: bool) -> None:
    """Round `number`'s bands against the quorum (`closed`: no review can be added to it)."""
    with session() as s:
        quorum = study_quorum(s)
        rows = round_band_progress(s, lib, viewer=user, quorum=quorum, round=number)
    st.subheader("Bands against the quorum")
    which = "every band" if number == 1 else "the bands it re-reviews"
    counted = (
        f"Submitted: raters' latest submitted reviews of round {number}, still current; "
        "a DECLINE counts for nothing; the registry later counts only signed ones."
    )
    if quorum is None:
        # No quorum to count against: no band is short of it, nor has it (None, never 0).
        st.caption(
            f"No registry policy is signed yet, so there is no quorum to count against: the "
            f"bands of round {number} ({which}) with their reviews so far. {counted}"
        )
        shown = rows
    else:
        short = [r for r in rows if r.needed != 0]
        st.caption(
            f"{len(rows) - len(short)} of {len(rows)} bands have current reviews from enough "
            f"raters for the quorum of {quorum}, in round {number} ({which}). {counted}"
        )
        only = st.toggle("Only bands short of the quorum", value=True, key="quorum:short")
        shown = short if only else rows
    if not shown:
        st.info(
            f"No band of round {number} is short of the quorum."
            if rows
            else f"Round {number} has no band to review."
        )
        return
    numbers = case_numbers(lib, case_key())  # the case as raters read it, beside its id
    shown = sorted(shown, key=lambda r: (numbers.get(r.vignette_id, 0), r.vignette_id))
    if len(shown) > IN_SIGHT:
        st.caption(
            f"{len(shown)} bands, in case order: the table shows {IN_SIGHT} at a time; scroll "
            "inside it for the rest."
        )
    cells = [
        {
            "case": numbers.get(r.vignette_id),
            "vignette": r.vignette_id,
            "sub-action": sub_action(r.sub_action).label,
            "assigned": r.assigned,
            "submitted": r.submitted,
            "declined": r.declined,
            "status": status_words(r, closed),
        }
        for r in shown
    ]
    height = row_height(cells, QUORUM_WIDTHS)
    st.dataframe(
        cells,
        hide_index=True,
        width="stretch",
        row_height=height,
        # IN_SIGHT rows, the header and the border: as many as the line above says.
        height=height * min(len(shown), IN_SIGHT) + ROW + 2,
        column_config={n: st.column_config.Column(width=w) for n, w in QUORUM_WIDTHS.items()},
    )


@for_signed_in
def _deal_with(user: UserPublic, flag_id: int) -> None:
    with session() as s:
        marks.resolve(s, user, flag_id)
    st.session_state.flag_flash = "Flag marked as dealt with."


@for_signed_in
def _reply(user: UserPublic, flag: marks.Flag) -> None:
    """Send the reply typed for `flag` to its rater as a query, and deal with the flag; a reply
    refused (empty, too long) stays in its box with the reason beside it."""
    field = f"flag-reply:{flag.id}"
    try:
        with session() as s:
            marks.reply(s, library(), user, flag.id, st.session_state.get(field, ""))
    except FmaBandsError as exc:
        st.session_state[FLAG_ERRORS] = {flag.id: next(iter(exc.fields.values()), exc.message)}
        return
    st.session_state[field] = ""
    st.session_state.get(FLAG_ERRORS, {}).pop(flag.id, None)
    st.session_state.flag_flash = (
        f"Your reply is sent to {flag.rater} (under Queries, where they can answer), and the "
        "flag is marked as dealt with."
    )


FLAG_ERRORS = "flag_errors"


@st.fragment
def flags(numbers: dict[str, int], user: UserPublic) -> None:
    with session() as s:
        raised = marks.all_flags(s, user, open_only=False)
    waiting = [f for f in raised if f.cleared_at is None]
    st.subheader(f"Flags for you ({len(waiting)})")
    if flash := st.session_state.pop("flag_flash", None):
        st.success(flash)
    for flag in waiting:
        with st.container(border=True):
            band = f"{case_label(numbers, flag.vignette_id)} ({flag.vignette_id})"
            label = sub_action(flag.sub_action).label
            when = f"{flag.created_at:%Y-%m-%d %H:%M} UTC"
            st.caption(escaped(f"{flag.rater} · {band} · {label} · {when}"))
            plain(flag.note)
            with st.form(f"flag-form:{flag.id}", border=False):
                st.text_area(
                    f"Reply to {flag.rater} (a query on this band, which only they read)",
                    key=f"flag-reply:{flag.id}",
                    max_chars=marks.REPLY_CHARS,
                    height=80,
                )
                if error := st.session_state.get(FLAG_ERRORS, {}).get(flag.id):
                    st.error(escaped(error), icon=":material/error:")
                send, done = st.columns(2)
                send.form_submit_button(
                    "Reply and mark as dealt with", on_click=_reply, args=(user, flag)
                )
                done.form_submit_button(
                    "Mark as dealt with, no reply",
                    key=f"flag:{flag.id}",
                    on_click=_deal_with,
                    args=(user, flag.id),
                )
    if raised and not waiting:
        dealt = f"{len(raised)} flag" if len(raised) == 1 else f"{len(raised)} flags"
        st.caption(f"No flag waits for you: {dealt} dealt with.")
    elif not raised:
        st.caption("No rater has flagged a band.")


@st.fragment
def close_phase(number: int, user: UserPublic, summaries: list[RaterSummary]) -> None:
    """Close the round, once confirmed; `summaries`: the round's raters, so that work left
    undone is said before the round freezes it."""
    if warning := unfinished_words(number, summaries):
        st.warning(escaped(warning), icon=":material/pending_actions:")
    st.markdown(
        f"Closing round {number} **freezes every review** of it: no rater can submit or revise "
        "a review, and no paper hand-back can be imported. It also **ends the blinding** of "
        "this round: while no round is open, raters see the Agreement page"
        + (
            ", and in round 2 each band's raters see round 1's answers beside it, anonymised"
            if number == 1
            else ""
        )
        + ". The protocol never reopens a closed round"
        + (": bands still in dispute go to round 2, opened on Study admin." if number == 1 else ".")
    )
    sure = st.checkbox(f"I understand: close round {number} now", key="close_sure")
    if st.button(f"Close round {number}", type="primary", disabled=not sure):
        try:
            with session() as s:
                close_round(s, actor=user, folder=settings().attestations)
        except FmaBandsError as exc:  # closed meanwhile, in another tab or by a command
            st.error(escaped(exc.message))
            return
        st.session_state.raters_flash = f"Round {number} is closed: its reviews are frozen."
        st.rerun(scope="app")


user = require_user("coordinator")
lib = library()
with session() as s:
    current = study(s)

st.title("Raters' progress")
if flash := st.session_state.pop("raters_flash", None):
    st.success(flash)
shown_round = current.round
if current.round > 1:
    # An earlier round's figures stay to be read: they are what its reliability rests on.
    # The choices' words never change with the phase (the heading below says it): changed,
    # they made another widget of the same key, which the browser then showed with no choice
    # marked once the round was closed.
    shown_round = st.radio(
        "Round shown",
        list(range(current.round, 0, -1)),
        format_func=lambda n: f"Round {n}",
        horizontal=True,
        key="progress:round",
    )
shown_phase = current.phase if shown_round == current.round else "closed"
with session() as s:
    summaries = rater_summaries(s, lib, viewer=user, round=shown_round)
st.subheader(f"Round {shown_round} ({shown_phase})")
st.caption(
    f"Every figure on this page is of round {shown_round}: "
    + (
        "the bands assigned to each rater and the reviews made in round 1."
        if shown_round == 1
        else f"the bands round {shown_round} re-reviews with each rater and the reviews made "
        "in it, never an earlier round's (those are kept, and in the CSV below)."
    )
)
st.dataframe(progress_table(summaries), hide_index=True, width="stretch")
st.caption(
    "Submitted: bands submitted and still current. Minutes per band: the median time between "
    "one submission and the next, pauses of over 30 minutes left out. ACCEPT: the share of "
    "current reviews in review mode that accept the proposal as written."
)
for r in (r for r in summaries if r.weak_signal):
    st.info(
        f"{r.pseudonym} accepts {r.accept_share:.0%} of {r.judged} bands as written. Accepting "
        "nearly everything is a weak signal worth a conversation, never a penalty."
    )
quorum_progress(lib, user, shown_round, shown_phase == "closed")
flags(case_numbers(lib, case_key()), user)


def _reviews() -> str:
    with session() as s:
        return reviews_csv(s, lib, viewer=user)


st.subheader("Every submitted review")
st.download_button(
    "Download the submitted reviews (CSV)",
    data=_reviews,
    file_name="submitted-reviews.csv",
    mime="text/csv",
    on_click="ignore",
    icon=":material/download:",
)
st.caption(
    "Each rater's latest submitted review of each band in each round, with its round, the band "
    "in words and as the harness values bands.yaml writes (the proposal's band for an ACCEPT), "
    "an AMEND's corrections, answers and confidence (as stored, and in the screen's words "
    "beside them)."
)
st.subheader(f"Close round {current.round}")
if current.phase == "open":
    if shown_round != current.round:
        with session() as s:
            summaries = rater_summaries(s, lib, viewer=user, round=current.round)
    close_phase(current.round, user, summaries)
else:
    st.info(
        f"The review phase is closed (round {current.round}): reviews are frozen and agreement "
        "is shown to raters."
    )
