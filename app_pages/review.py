"""Review one band. At the top, the way through the queue. Left: from round 2 round 1's
anonymised panel first, then what the agent knew at that step and the proposal when the rater
sees it (review mode). Right: the rater's form (app_pages.review_form), or their review already
submitted. On a narrow screen the two columns stack.

What the screen holds in a session is one ReviewState (app_pages.review_screen), taken at the
top of the page and handed to every part that reads or changes it."""

import time
from dataclasses import replace

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from app_pages.case_links import case_key
from app_pages.common import (
    chart,
    for_signed_in,
    library,
    plain,
    require_user,
    session,
    show_knowledge,
    show_proposal,
    signed_bands,
    stack_below,
)
from app_pages.page_script import Shortcut, review_script, shortcut_words, top_script
from app_pages.queue_screen import (
    QueueRow,
    band_choice,
    by_case,
    case_choice,
    chosen_band,
    opening,
)
from app_pages.review_form import follow, review_form, submitted_corrections
from app_pages.review_screen import (
    ReviewState,
    Screen,
    entries_from,
    keep,
    open_screen,
    widget_key,
)
from fma_bands.agreement.picture import Row, band_spec
from fma_bands.core.actions import sub_action
from fma_bands.core.band_text import DECLINED_BAND
from fma_bands.core.bands import parse_band
from fma_bands.core.labels import (
    QUESTION_WORDS,
    READING_WORDS,
    address,
    describe_band,
    from_address,
    tool_names,
)
from fma_bands.core.people import UserPublic
from fma_bands.core.protocol import QUESTIONS

CASE_PICKER_KEY, BAND_PICKER_KEY = "review_case_picker", "review_band_picker"
NEXT_KEY, PREVIOUS_KEY = "review_next", "review_previous"


def heading(screen: Screen, review: ReviewState, form: bool) -> DeltaGenerator:
    """The band's title and place, the last action's confirmation and the way through the
    queue; `form`: the rater's form is on screen (Submit and Skip with it), which then draws the
    place and the confirmation into the container returned: the place as the form changes it,
    the confirmation until a Submit of its own is refused."""
    st.title(screen.action.label)
    flash = review.take_flash()
    above = st.container()
    review.shown = flash if form else None
    if not form:
        above.caption(screen.place())
        if flash:
            above.success(flash, icon=":material/check_circle:")
            # The same band again (a revision left): opened at its top, the confirmation in view.
            top_script(f"{flash} {time.monotonic_ns()}")
    if screen.all_submitted and not flash:
        then = (
            "You may revise any until the round closes; the coordinator closes it once everyone "
            "is done."
            if screen.phase == "open"
            else "The round is closed: they stand as submitted."
        )
        st.info(
            f"Every band in your queue is submitted: this is the first of them. {then}",
            icon=":material/task_alt:",
        )
    if screen.redirected:
        st.warning(
            "The link you followed names no band in your queue, so this is where you left off.",
            icon=":material/link_off:",
        )
    # The boxes as wide as their longest choices need at a laptop's 1280 pixels, the buttons
    # under them (tests/browser: all of it fits, on one line each).
    case, band = st.columns([50, 87])
    case_picker(screen, case, band)
    moves = st.container(horizontal=True, gap="small")
    back = forward = moves
    for column, other, label, key in (
        (back, screen.previous, "← Previous band", PREVIOUS_KEY),
        (forward, screen.following, "Next band →", NEXT_KEY),
    ):
        # Greyed at either end of the queue rather than left out, so the boxes never move.
        column.button(
            label,
            key=key,
            help=sub_action(other.sub_action).label if other else "No band that way",
            disabled=other is None,
            on_click=_go if other else None,
            args=(other.band,) if other else None,
        )
    if found := shortcuts(screen, form):
        st.caption(shortcut_words(found))
    return above


@for_signed_in
def _go(band: tuple[str, str]) -> None:
    """Before the run the click starts: the address names the band, so that run opens it (one
    run, where switching page took two) and a reload or a shared link opens it too."""
    ReviewState.of(st.session_state).moving = True
    st.query_params.from_dict(address(*band, key=case_key()))


def case_picker(screen: Screen, case: DeltaGenerator, band: DeltaGenerator) -> None:
    """Jump to any case of the queue by its number (typing it keeps the cases that hold it),
    each with how far along it is, and to any band of the case on screen with its status. Each box
    always shows the case and band on screen, whichever was last used. The queue is listed by
    case, not by band: every run sends the list (a band each made the page's largest message)."""
    cases = by_case(screen.queue)
    here = screen.queue[screen.position - 1]
    st.session_state[CASE_PICKER_KEY] = here.case
    case.selectbox(
        "Go to a case",
        options=list(cases),
        format_func=lambda number: case_choice(number, cases[number]),
        # Typing "12" keeps Case 12, 112, 120 ... in that order (a fuzzy match ranked Case 6
        # first for "1"): Enter opens the case typed.
        filter_mode="contains",
        key=CASE_PICKER_KEY,
        on_change=_pick_case,
        args=(cases,),
    )
    bands = cases[here.case]
    st.session_state[BAND_PICKER_KEY] = bands.index(here)
    band.selectbox(
        "Band of this case",
        options=range(len(bands)),
        format_func=lambda at: band_choice(bands[at]),
        key=BAND_PICKER_KEY,
        on_change=_pick_band,
        args=(bands,),
    )


@for_signed_in
def _pick_case(cases: dict[int, list[QueueRow]]) -> None:
    """The case chosen opens on its first band not yet submitted, in the run this choice
    starts."""
    chosen = st.session_state.get(CASE_PICKER_KEY)
    if chosen in cases:
        _go(opening(cases[chosen]).band)


@for_signed_in
def _pick_band(bands: list[QueueRow]) -> None:
    chosen = chosen_band(st.session_state.get(BAND_PICKER_KEY), bands)
    if chosen is not None:
        _go(chosen.band)


def shortcuts(screen: Screen, form: bool) -> list[Shortcut]:
    """The screen's keyboard shortcuts, for the buttons it has: pressing one presses its
    button."""
    found = []
    if form:
        found.append(Shortcut("S", "Submit and next", widget_key(screen.key, "submit")))
        # A revision of a submitted review has no Skip: the band is not to do.
        if not screen.submitted_here:
            found.append(Shortcut("K", "Skip for now", widget_key(screen.key, "skip")))
    if screen.following:
        found.append(Shortcut("N", "Next band", NEXT_KEY))
    if screen.previous:
        found.append(Shortcut("P", "Previous band", PREVIOUS_KEY))
    return found


def what_the_agent_knows(screen: Screen) -> None:
    """The left column: the agent's knowledge at this step, and the proposal if it is shown."""
    st.subheader("What the agent knows at this step")
    show_knowledge(screen.vignette, screen.knows)
    if screen.shows_proposal:
        st.subheader("Proposed band")
        with st.container(border=True):
            show_proposal(screen.proposal, screen.vignette)


def panel(screen: Screen) -> None:
    """Round 1's answers for this band as Rater A, B, C: the bands one above the other, how
    many admit each value, and the reasons, never a name."""
    found = screen.panel
    if found is None:
        return
    st.subheader(f"Round {found.round}: the panel's bands")
    then = (
        "Keep or revise your band in the light of them, and say why."
        if screen.phase == "open"
        else f"Round {screen.round} is closed: your review of it stands as submitted."
    )
    st.caption(
        f"Every round-{found.round} review of this band, yours among them, as Rater A, B, C: "
        f"the letters follow the answers, not who gave them, and are drawn afresh for each "
        f"band. {then}"
    )
    if not found.entries:
        st.caption(f"No rater submitted a review of this band in round {found.round}.")
        return
    names = tool_names(screen.vignette)
    rows = [Row(e.letter, e.band) for e in found.entries if e.band is not None]
    if rows:
        chart(band_spec(screen.name, rows, orderables=screen.vignette.orderables, names=names))
    for line in found.counts:
        st.text(line)
    for entry in found.entries:
        with st.container(border=True):
            said = DECLINED_BAND if entry.band is None else describe_band(entry.band, names)
            plain(said, label=f"{entry.letter}: {entry.verdict}")
            plain(entry.reason or "(no reason given)")


def submitted(screen: Screen, rater: UserPublic) -> None:
    """The rater's submitted review, and the way to revise it while the phase is open."""
    stored = screen.current
    assert stored is not None
    st.subheader("Your submitted review")
    if screen.status == "changed since submitted":
        st.warning("The vignette or its proposal changed after you submitted: please revise.")
    times = screen.revised
    revised = f" (revised {'once' if times == 1 else f'{times} times'})" if times else ""
    st.markdown(f"**Verdict:** {stored.verdict}{revised}")
    if stored.band is not None:
        mine = parse_band(screen.name, stored.band, orderables=screen.vignette.orderables)
        plain(describe_band(mine, tool_names(screen.vignette)), label="Your band")
    submitted_corrections(screen, stored.corrections or {})
    plain(stored.reason or "(none given)", label="Reason")
    for number, question in enumerate(QUESTIONS, start=1):
        answer = stored.answers.get(question["key"])
        if answer:
            choice = answer.get("choice")
            shown = READING_WORDS.get(choice, choice) if question["key"] == "q5" else choice
            words = QUESTION_WORDS[question["key"]][0]
            plain(
                " · ".join(v for v in (shown, answer.get("note")) if v), label=f"{number}. {words}"
            )
    if screen.phase == "open":
        st.button(
            "Revise this review", icon=":material/edit:", on_click=_revise, args=(screen, rater)
        )
    else:
        st.info("The review phase is closed: reviews can no longer change.")


@for_signed_in
def _revise(screen: Screen, rater: UserPublic) -> None:
    """Open the submitted review for revision: its entries become the screen's draft."""
    start = entries_from(screen.current, screen.proposal, screen.vignette, screen.shows_proposal)
    with session() as s:
        keep(s, library(), rater, *screen.band, start, base_version=screen.version)


user = require_user("rater")
review = ReviewState.of(st.session_state)
follow(review)
lib = library()
params = st.query_params.to_dict()
token_key = case_key()
wanted = from_address(lib, params, user, key=token_key)
with session() as s:
    screen = open_screen(s, lib, user, wanted, params.get("sub_action"))
if screen is None:
    st.info("No band is waiting for review.")
    st.stop()
if params.get("case") and wanted is None:
    # A case token that names no case of the study (mistyped, or of another study): said, as a
    # link to a band outside the queue is.
    screen = replace(screen, redirected=True)
# The address names the case by a neutral token, never by the id (which may give away its
# stratum), so a reload or a shared link opens this band.
if params != address(*screen.band, key=token_key):
    st.query_params.from_dict(address(*screen.band, key=token_key))
# Entries opened in this session stay on screen even if another tab has since submitted the
# band: what was typed here is never swept away.
editing = screen.editing or screen.key in review.bands
form = editing and screen.phase == "open"
notice = heading(screen, review, form)

stack_below(1100, "review_columns")
with st.container(key="review_columns"):
    left, right = st.columns([5, 6], gap="large")
with left:
    # From round 2 the panel first: beside the form it is weighed against, not below a long
    # clinical core.
    panel(screen)
    what_the_agent_knows(screen)
with right:
    if not editing:
        submitted(screen, user)
    elif not form:
        st.info("The review phase is closed: reviews can no longer change.")
    else:
        review_form(screen, review, screen.band in signed_bands(user.pseudonym), notice)
# Last on the page, once the band's elements are drawn: open it at its top, the shortcuts, and
# the warning before a reload would lose text not yet kept.
review_script(screen.key, shortcuts(screen, form), [NEXT_KEY, PREVIOUS_KEY])
