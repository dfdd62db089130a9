"""The rater's side of the review screen, top to bottom: the six questions (when the proposal is
on screen), the verdict, their own band in the band editor with its picture, the reason and how
sure they are, then Submit and next, Skip for now, or a flag for the coordinator.

Drawn as a fragment, so a click reruns this column only. What the screen holds for a band is a
BandState in the session's ReviewState (app_pages.review_screen): its entries stand beside the
widgets (Streamlit forgets a widget's value once it is not drawn) and are kept in the store on
every change, so neither a hidden editor, a page left, a reload nor a closed tab loses anything
sent. Streamlit sends a text field's text when the field loses focus (or on Enter); until then
the page's script (app_pages.page_script) warns before a reload or a closed tab. Problems are
worked out afresh on every run, so each message goes as soon as its field is fixed."""

from collections.abc import Callable
from typing import Any

import streamlit as st
from sqlalchemy.exc import SQLAlchemyError
from streamlit.delta_generator import DeltaGenerator

from app_pages import band_form, review_screen
from app_pages.case_links import case_key
from app_pages.common import (
    chart,
    current_user,
    escaped,
    for_signed_in,
    label_words,
    library,
    plain,
    renew_cookie_in_fragment,
    session,
    settings,
    show_errors,
)
from app_pages.page_script import FORM_KEY, kept_marker, refused_script
from app_pages.queue_screen import QueueRow
from app_pages.review_screen import CONFIDENCES, BandState, ReviewState, Screen
from fma_bands.agreement.picture import Row, band_spec
from fma_bands.core.band_text import describe
from fma_bands.core.bands import AnyBand, parse_band
from fma_bands.core.errors import ConflictError, FmaBandsError
from fma_bands.core.labels import (
    CONFIDENCE_WORDS,
    QUESTION_WORDS,
    READING_WORDS,
    address,
    describe_band,
    flagged_by,
    tool_names,
)
from fma_bands.core.people import UserPublic
from fma_bands.core.protocol import CHOICES, CORRECTION_LABELS, QUESTIONS, READINGS
from fma_bands.core.vignettes import Library
from fma_bands.study import drafts, marks
from fma_bands.study.reviews import MAX_CORRECTION, MAX_NOTE, MAX_REASON
from fma_bands.study.state import verdicts_for

VERDICT_WORDS = {
    "ACCEPT": "ACCEPT: the band stands as written",
    "AMEND": "AMEND: correct the band or its clause",
    "DECLINE": "DECLINE: I cannot adjudicate this band",
}
# With no proposal on screen there is nothing to amend: the rater's own band is their answer.
OWN_BAND_WORDS = "Submit my band"


def _user() -> UserPublic:
    user = current_user()
    assert user is not None, "the review page lets only a signed-in rater this far"
    return user


def follow(review: ReviewState) -> None:
    """Go where Submit and next or Skip for now sent the rater. Called by the page and by this
    fragment alike: a click inside the fragment reruns only the fragment."""
    review.moving = False  # every callback of the run has run: a move is behind us
    goto = review.take_goto()
    if goto == "queue":
        st.switch_page("app_pages/queue.py")
    if goto is not None:
        # This page again, at the next band's address: a rerun of the page, whose elements the
        # browser redraws in place (a switch of page, even to this one, draws them all anew).
        st.query_params.from_dict(address(*goto, key=case_key()))
        st.rerun(scope="app")


@st.fragment
def review_form(screen: Screen, review: ReviewState, signed: bool, notice: DeltaGenerator) -> None:
    """The rater's column; `signed`: their signed attestation covers the band; `notice`: the
    place under the band's title for its place in the queue and the last action's
    confirmation."""
    follow(review)
    # The form never runs the whole page while the rater works: a box left during a run of
    # the page comes back empty in the browser, its words lost (a reason typed just after the
    # verdict was). The line under the title follows the form at once (it is written from
    # here); the case and band boxes above, the page's, say the band's new status at the
    # page's next run.
    # A rater may work here for long without a run of the page: the session's cookie is kept
    # alive from here too (the save asked who is signed in, and so renewed it).
    renew_cookie_in_fragment()
    with st.container(key=FORM_KEY):
        _form(screen, review, signed, notice)


def _form(screen: Screen, review: ReviewState, signed: bool, notice: DeltaGenerator) -> None:
    band = review.open(screen)
    band.drawn = set()
    _notice_conflict(screen, band)
    errors = (
        review_screen.problems(
            band.entries,
            screen.proposal,
            screen.vignette,
            screen.mode,
            final=band.tried,
            round=screen.round,
        )
        | band.failed
    )
    _conflict(screen, review, band)
    if screen.submitted_here and screen.current is not None:
        times = screen.revised
        revised = f", revised {'once' if times == 1 else f'{times} times'}" if times else ""
        st.info(
            f"You are revising your submitted review ({screen.current.verdict}{revised}). It "
            "stands, and is the one that counts, until you submit this revision; **Keep the "
            "submitted review** drops the changes made here.",
            icon=":material/edit:",
        )
    if screen.shows_proposal:
        _questions(screen, review, band, errors)
    _verdict(screen, review, band, errors)
    if band.entries.get("verdict") == "AMEND":
        _own_band(screen, review, band, errors)
        if screen.shows_proposal:
            _corrections(screen, review, band, errors)
        for notice_text in review_screen.amendment_notices(
            band.entries, screen.proposal, screen.vignette, screen.mode
        ):
            st.info(escaped(notice_text), icon=":material/edit_note:")
    _reason_and_confidence(screen, review, band, errors)
    if signed:
        _passphrase(band, errors)
    _actions(screen, review, band, errors, signed)
    if band.refusals > band.refusals_shown:
        band.refusals_shown = band.refusals
        # The last band's "Review submitted" beside a Submit just refused would read as this
        # band's; and a Submit pressed from the keyboard may leave the messages out of view.
        review.shown = None
        refused_script(band.refusals)
    notice.caption(screen.place(kept=band.kept, flagged=band.flagged))
    # Only the fields drawn: a draft begun in review mode holds the proposal's texts, which a
    # blind screen never sends.
    kept: dict[str, str | float] = {}
    for name in band.drawn:
        value = band.stored.get(name)
        if isinstance(value, int | float) and not isinstance(value, bool):
            kept[band.widget(name)] = value  # a bound: the page compares it as a number
        elif isinstance(value, str | None):
            kept[band.widget(name)] = value or ""
    # A flag's note is kept only by sending the flag: any text left in its box is lost on a
    # reload, so the page warns of it as of text not yet kept (a box of blanks holds nothing).
    note = st.session_state.get(band.widget("flag_note")) or ""
    kept[band.widget("flag_note")] = note if not note.strip() else ""
    # And so is one left in the box of another band opened in this session, which the screen
    # names: that band's Submit and Skip wait for it, this one's do not.
    waiting = [
        other.title
        for key, other in review.bands.items()
        if key != screen.key and other.flag_note.strip()
    ]
    kept_marker(kept, elsewhere=len(waiting))
    if review.shown:
        notice.success(review.shown, icon=":material/check_circle:")
    if waiting:
        notice.warning(
            escaped(f"{UNSENT_FLAG} on {', '.join(waiting)}: open it to send it or clear its box."),
            icon=":material/flag:",
        )
    if review.late:
        notice.warning(escaped(review.late), icon=":material/warning:")
        review.late = None


# Widgets and what their changes do ------------------------------------------------------------


def _widget(
    screen: Screen,
    review: ReviewState,
    band: BandState,
    draw: Callable,
    name: str,
    label: str,
    **options,
):
    """Draw the widget for entry `name`, starting from the entries when it was not drawn."""
    key = band.widget(name)
    band.drawn.add(name)
    if key not in st.session_state:
        st.session_state[key] = band.entries.get(name)
    # A radio's choice, once made, cannot be taken back: nothing a rater does empties one.
    fixed = draw is st.radio
    return draw(label, key=key, on_change=_changed, args=(screen, review, name, fixed), **options)


@for_signed_in
def _changed(screen: Screen, review: ReviewState, name: str, fixed: bool = False) -> None:
    """A widget changed: its value into the entries, a form switched, the entries kept; `fixed`:
    the widget is one a rater cannot empty once chosen (a radio)."""
    band = review.bands.get(screen.key)
    if band is None:
        # A click on a band already submitted, still drawn while the next one loads: its
        # review is stored and its entries gone, so there is nothing to change.
        return
    value = st.session_state.get(band.widget(name))
    # A value the band already holds is no click. With a click on the next band made before its
    # run has ended, the browser sends every value it still holds, the band left's too, which
    # the server forgot once that band was no longer drawn: each looks changed.
    if _left(screen, review, said=value != band.entries.get(name)):
        _put_back(band, name)
        return
    if fixed and value is None and band.entries.get(name) is not None:
        # An emptied radio is the browser's copy of a form it had not finished drawing (the page
        # opened again mid-run), never the rater's act: the answer kept is put back on screen
        # and nothing kept is overwritten with the blank.
        _put_back(band, name)
        return
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # a bound field gives 21.0 for the 21 it shows; kept as it shows
    band.entries[name] = value
    if name == "band:form":
        _switch(screen, band, band.entries[name], confirmed=False)
        _keep(screen, band)  # a switch rewrites the band's fields: all of them are kept
    else:
        # Only this field over what is kept: another tab on the band keeps its own answers.
        _keep(screen, band, changed={name})


def _put_back(band: BandState, name: str) -> None:
    """Show entry `name` as the band holds it: its widget's value is dropped, so the widget's
    next draw (in this run, or when the band opens again) starts from the entries and sends
    them to the browser. A value set here instead stays in session state when the widget is
    not drawn in this run (the band left, or a move in the same run); the band opened again
    then sends nothing, and the browser, which forgot the widget with the band, shows it
    empty while the store holds the answer."""
    st.session_state.pop(band.widget(name), None)


def _left(screen: Screen, review: ReviewState, *, said: bool = True) -> bool:
    """Whether this click is on the band just left, still drawn while the next one loads:
    the address names another band, and no move came with the click. The rater meant the band
    they were moving to, so the click would change (or submit, skip or flag) one they no
    longer see: nothing is done, and the next screen says so (`said`: the click would have
    changed something)."""
    if review.moving or st.query_params.to_dict() == address(*screen.band, key=case_key()):
        return False
    if not said:
        return True
    review.late = (
        f"A click on {screen.case} · {screen.action.label} came after you had moved on, and "
        "was not kept there: nothing of that band changed. Give it again here if you meant "
        "this band."
    )
    return True


def _keep(screen: Screen, band: BandState, changed: set[str] | None = None) -> None:
    try:
        with session() as s:
            kept = review_screen.keep(
                s,
                library(),
                _user(),
                screen.vignette.id,
                screen.name,
                band.entries,
                base_version=band.version,
                changed=changed,
            )
        band.keep_error = None
        band.kept = True
        # What a reload brings back: not a draft that was not kept (a closed round), nor one
        # begun from a version since replaced (another tab submitted: the reload shows that).
        if kept and band.version == screen.version:
            band.stored = dict(band.entries)
    except FmaBandsError as exc:
        band.keep_error = exc.message


def _switch(screen: Screen, band: BandState, to: str, *, confirmed: bool) -> None:
    """Write the band as a list or as a range (band_form.switch_form), widgets and entries."""
    mine = band.entries
    # Changes made just before the switch may arrive in this same run, their callbacks after
    # this one: read every band widget as it is now, so the switch uses them.
    for field in [f for f in mine if f.startswith("band:")]:
        if band.widget(field) in st.session_state:
            mine[field] = st.session_state[band.widget(field)]
    fields = review_screen.band_fields(mine)
    switched = band_form.switch_form(screen.action, fields, to, confirmed=confirmed)
    for field, value in switched.fields.items():
        mine[f"band:{field}"] = value
        st.session_state[band.widget(f"band:{field}")] = value
    band.question = switched.question


@for_signed_in
def _confirm(screen: Screen, review: ReviewState, to_range: bool) -> None:
    """The answer to the question a list with gaps asks before it becomes a range."""
    band = review.bands.get(screen.key)
    if band is None:
        return  # the band was submitted meanwhile (see _changed)
    _switch(screen, band, band_form.RANGE if to_range else band_form.LIST, confirmed=True)
    band.question = None
    _keep(screen, band)


# The form, top to bottom ----------------------------------------------------------------------


def _notice_conflict(screen: Screen, band: BandState) -> None:
    """The store's version moved on since this session began the review: say so, once."""
    if band.version != screen.version and not band.conflict:
        band.conflict = (
            "This review was changed in another tab or window since you began here. What you "
            "entered here is still on screen, but it cannot be submitted over the newer version."
        )


def _conflict(screen: Screen, review: ReviewState, band: BandState) -> None:
    if band.conflict:
        st.error(escaped(band.conflict), icon=":material/sync_problem:")
        st.button(
            "Load the saved version (discards what is on this screen)",
            key=band.widget("reload"),
            on_click=_reload,
            args=(screen, review),
        )


@for_signed_in
def _reload(screen: Screen, review: ReviewState) -> None:
    with session() as s:
        drafts.discard(s, _user(), screen.vignette.id, screen.name)
    review.forget(screen.key, st.session_state)


def _questions(screen: Screen, review: ReviewState, band: BandState, errors: dict) -> None:
    st.subheader("The six protocol questions")
    if screen.carried is not None:
        st.caption(
            f"Your answers from round {screen.carried} start these questions: read each again "
            "against the panel's bands before you submit."
        )
    for number, question in enumerate(QUESTIONS, start=1):
        q = question["key"]
        words, explained = QUESTION_WORDS[q]
        unasked = q == "q5" and screen.proposal.disputed_span is None
        if unasked:
            notes = [
                "The proposal records no disputed span for this band: nothing to answer here."
                + (
                    " Where round 1's raters differed is in the panel's bands, under what the "
                    "agent knows (below it, on a narrow screen)."
                    if screen.panel is not None
                    else ""
                )
            ]
        else:
            notes = [explained, "" if q == "q5" else flagged_by(question["problem"])]
        # One element for the question and its notes: every element is a message the browser
        # draws on each move to another band.
        st.markdown(
            "  \n".join(
                [f"**{number}. {words}**", *(f":small[:gray[{escaped(n)}]]" for n in notes if n)]
            )
        )
        if unasked:
            continue
        if q == "q5":
            _widget(
                screen,
                review,
                band,
                st.radio,
                f"{q}:choice",
                f"Answer to question {number}",
                options=READINGS,
                format_func=READING_WORDS.get,
                index=None,
                horizontal=True,
            )
        else:
            _widget(
                screen,
                review,
                band,
                st.radio,
                f"{q}:choice",
                f"Answer to question {number}",
                options=CHOICES,
                index=None,
                horizontal=True,
                label_visibility="collapsed",
            )
        hint = "Why that reading, for this patient" if q == "q5" else "Which, and why"
        _widget(
            screen,
            review,
            band,
            st.text_input,
            f"{q}:note",
            f"Note for question {number}",
            placeholder=hint,
            help=f"At most {MAX_NOTE:,} characters.",
        )
        show_errors(errors, q)


def _verdict(screen: Screen, review: ReviewState, band: BandState, errors: dict) -> None:
    st.subheader("Your verdict")
    if screen.carried is not None:
        st.caption(f"Your verdict from round {screen.carried} starts here: keep it or change it.")

    def words(verdict: str) -> str:
        own = verdict == "AMEND" and not screen.shows_proposal
        return OWN_BAND_WORDS if own else VERDICT_WORDS[verdict]

    _widget(
        screen,
        review,
        band,
        st.radio,
        "verdict",
        "Verdict",
        options=list(verdicts_for(screen.mode)),
        format_func=words,
        index=None,
    )
    show_errors(errors, "verdict")


def _own_band(screen: Screen, review: ReviewState, band: BandState, errors: dict) -> None:
    """The band the rater amends to, and its picture (the last valid one while it is not)."""
    if screen.current is not None and screen.current.band is not None:
        starts = " (it starts from the band you last gave)"
    elif screen.shows_proposal:
        starts = " (it starts from the proposal)"
    else:
        starts = ""
    st.markdown(f"**Your band**{starts}")
    _band_editor(screen, review, band)
    show_errors(errors, "band")
    drawn, _ = band_form.band_of(
        screen.action, review_screen.band_fields(band.entries), screen.vignette.orderables
    )
    if drawn is not None:
        band.last_band = drawn
    _picture(screen, drawn, band.last_band)


def _band_editor(screen: Screen, review: ReviewState, band: BandState) -> None:
    """One widget per field of app_pages.band_form, for the band's kind."""
    action = screen.action

    def widget(draw: Callable, name: str, label: str, **options) -> None:
        _widget(screen, review, band, draw, f"band:{name}", label, **options)

    if action.kind == "multilabel":
        names = tool_names(screen.vignette)
        st.caption("For each test: not defensible, defensible to order, or required.")
        for test in screen.vignette.orderables:
            widget(
                st.segmented_control,
                band_form.order_field(test),
                label_words(names[test]),
                options=band_form.ORDER_STATES,
                required=True,
            )
        return
    if action.kind == "boolean":
        widget(
            st.radio,
            "bool",
            "Acceptable answers",
            options=list(band_form.BOOLEAN),
            horizontal=True,
            index=None,
        )
        return
    if len(action.forms) > 1:
        widget(st.radio, "form", "Write the band as", options=band_form.FORMS, horizontal=True)
        _question(screen, review, band)
    if action.forms != ("interval",) and band.entries.get("band:form") != band_form.RANGE:
        widget(
            st.pills,
            "values",
            "Acceptable values",
            options=list(action.domain()),
            selection_mode="multi",
            format_func=action.label_for,
        )
        return
    low, high = st.columns(2)
    if action.bounds is None:  # an ordinal range: choose from its levels
        for column, name, label in ((low, "lo", "Lowest"), (high, "hi", "Highest")):
            with column:
                widget(
                    st.selectbox,
                    name,
                    f"{label} acceptable",
                    options=list(action.domain()),
                    index=None,
                    format_func=action.label_for,
                )
        return
    unit = f" ({action.unit})" if action.unit else ""
    # No min_value or max_value: a bound outside the domain is said in words, not clamped.
    with low:
        widget(st.number_input, "lo", f"Lower bound{unit}", **band_form.BOUND_INPUT)
    with high:
        widget(st.number_input, "hi", f"Upper bound{unit}", **band_form.BOUND_INPUT)


# What an AMEND may correct besides the band: the proposal's texts and its disputed span.
SPAN_WORDS = {
    band_form.KEEP_SPAN: "keep the proposal's disputed span",
    band_form.NO_SPAN: "no disputed span",
    band_form.OWN_SPAN: "a disputed span of my own",
}


def _corrections(screen: Screen, review: ReviewState, band: BandState, errors: dict) -> None:
    """The proposal's clause, source and reasoning, each the rater may correct (an AMEND may
    keep the values and only correct the clause), and the disputed span they may set or clear."""
    st.markdown("**The proposal's clause, source and reasoning** (correct any that is wrong)")
    proposal = screen.proposal
    for key, label in CORRECTION_LABELS.items():
        _widget(
            screen,
            review,
            band,
            st.text_area,
            f"fix:{key}",
            label,
            height=100,
            help=f"At most {MAX_CORRECTION:,} characters.",
        )
        now = (band.entries.get(f"fix:{key}") or "").strip()
        if now != (getattr(proposal, key) or "").strip():
            st.caption(f"Changed from the proposal's {key}.")
        show_errors(errors, key)
    st.markdown("**Disputed span** (values outside your band that remain open)")
    proposed = proposal.disputed_span
    words = dict(SPAN_WORDS)
    if proposed is not None:
        words[band_form.KEEP_SPAN] += f" ({escaped(describe(proposed))})"
    _widget(
        screen,
        review,
        band,
        st.radio,
        "span:choice",
        "Disputed span",
        options=list(band_form.span_choices(proposed)),
        format_func=words.get,
        label_visibility="collapsed",
    )
    if band.entries.get("span:choice") == band_form.OWN_SPAN:
        _span_editor(screen, review, band)
    show_errors(errors, "disputed_span")
    show_errors(errors, "corrections")


def submitted_corrections(screen: Screen, corrections: dict) -> None:
    """A submitted AMEND's corrections of the proposal, as the rater wrote them."""
    for key, label in CORRECTION_LABELS.items():
        if key in corrections:
            plain(corrections[key], label=f"Your corrected {label.lower()}")
    if "disputed_span" in corrections:
        raw = corrections["disputed_span"]
        span = None if raw is None else parse_band(screen.name, raw, span=True)
        words = "none" if span is None else describe_band(span, tool_names(screen.vignette))
        plain(words, label="Your disputed span")


def _span_editor(screen: Screen, review: ReviewState, band: BandState) -> None:
    """The rater's own disputed span: values (or a range, for a score or a count of days)."""
    action = screen.action
    if action.forms == ("interval",):
        unit = f" ({action.unit})" if action.unit else ""
        low, high = st.columns(2)
        for column, name, label in ((low, "lo", "Lowest"), (high, "hi", "Highest")):
            with column:
                _widget(
                    screen,
                    review,
                    band,
                    st.number_input,
                    f"span:{name}",
                    f"{label} disputed{unit}",
                    **band_form.BOUND_INPUT,
                )
        return
    names = tool_names(screen.vignette)

    def label_of(value: Any) -> str:
        return label_words(names[value]) if action.kind == "multilabel" else action.label_for(value)

    options = list(action.domain(screen.vignette.orderables))
    _widget(
        screen,
        review,
        band,
        st.pills,
        "span:values",
        "Disputed values",
        options=options,
        selection_mode="multi",
        format_func=label_of,
    )


def _question(screen: Screen, review: ReviewState, band: BandState) -> None:
    """A list with gaps asks before it becomes a range."""
    if not band.question:
        return
    st.warning(escaped(band.question), icon=":material/help:")
    yes, no = st.columns(2)
    yes.button(
        "Make it a range",
        key=band.widget("band:to_range"),
        on_click=_confirm,
        args=(screen, review, True),
    )
    no.button(
        "Keep the list",
        key=band.widget("band:keep_list"),
        on_click=_confirm,
        args=(screen, review, False),
    )


def _picture(screen: Screen, drawn: AnyBand | None, last: AnyBand | None) -> None:
    """The rater's band beside the proposal (when it is on screen), never what it means for the
    study's metrics; while the band on screen is incomplete or wrong, the last complete one stays
    drawn."""
    shown = drawn or last
    if shown is None:
        return
    rows = [Row("your band", shown)]
    if screen.shows_proposal:
        proposal = screen.proposal
        rows.insert(0, Row("proposal", proposal.acceptable, proposal.disputed_span))
    names = tool_names(screen.vignette)
    chart(band_spec(screen.name, rows, orderables=screen.vignette.orderables, names=names))
    if drawn is None:
        st.caption("The picture shows your last complete band until the problem above is fixed.")


def _reason_and_confidence(
    screen: Screen, review: ReviewState, band: BandState, errors: dict
) -> None:
    _widget(
        screen,
        review,
        band,
        st.text_area,
        "reason",
        "Reason",
        # No max_chars: the browser would drop a longer paste whole; the domain refuses it
        # beside the field instead, the text still there to shorten.
        help=(
            "One sentence: why you accept, amend or decline."
            if screen.round == 1
            else f"Round {screen.round}, required: why you keep or revise your band after the "
            "panel."
        )
        + f" At most {MAX_REASON:,} characters.",
    )
    show_errors(errors, "reason")
    _widget(
        screen,
        review,
        band,
        st.segmented_control,
        "confidence",
        "How sure are you of this review? (optional)",
        options=CONFIDENCES,
        format_func=CONFIDENCE_WORDS.get,
    )


def _passphrase(band: BandState, errors: dict) -> None:
    st.info(
        "Your signed attestation covers this band. Submitting here, changed or not, signs "
        "your attestation again, over your reviews as they then stand, with the declarations "
        "you made before; the new signature supersedes the old one for this band. Nothing is "
        "signed until you submit."
    )
    st.text_input("Your passphrase, to sign again", type="password", key=band.widget("passphrase"))
    show_errors(errors, "passphrase")


def _actions(
    screen: Screen, review: ReviewState, band: BandState, errors: dict, signed: bool
) -> None:
    if band.tried and errors:
        st.error("Some answers need attention: see the messages beside them.")
    if band.failed_message:
        st.error(escaped(band.failed_message))
    submit, skip = st.columns(2)
    submit.button(
        "Submit and next",
        type="primary",
        icon=":material/send:",
        key=band.widget("submit"),
        on_click=_submit,
        args=(screen, review, signed),
    )
    if screen.submitted_here:
        skip.button(
            "Keep the submitted review",
            icon=":material/undo:",
            key=band.widget("keep_submitted"),
            on_click=_keep_submitted,
            args=(screen, review),
        )
    else:
        skip.button(
            "Skip for now",
            icon=":material/skip_next:",
            key=band.widget("skip"),
            on_click=_skip,
            args=(screen, review),
        )
    if band.keep_error:
        st.warning(f"Your last change could not be kept yet: {escaped(band.keep_error)}")
    else:
        st.caption(
            "What you enter is kept as soon as you leave a field (or press Enter; Ctrl+Enter in "
            "a text box): you can leave and come back. The page warns you before a reload "
            "would lose text you are still typing."
        )
    _flag_box(screen, review, band, _user())


@for_signed_in
def _submit(screen: Screen, review: ReviewState, signed: bool) -> None:
    band = review.bands.get(screen.key)
    if band is None:
        return  # a second click on a band already submitted (see _changed)
    if _left(screen, review):
        return
    band.failed, band.failed_message = {}, None
    if _unsent_flag(band, "submit"):
        band.refusals += 1
        return
    user, lib = _user(), library()
    band.tried = True
    passphrase = st.session_state.get(band.widget("passphrase")) or ""
    try:
        with session() as s:
            # A wrong passphrase fails the signing below, which rolls the submission back too.
            saved = review_screen.submit(
                s,
                lib,
                user,
                screen.vignette.id,
                screen.name,
                band.entries,
                expected_version=band.version,
            )
            if signed:
                folder = settings().attestations
                review_screen.sign_again(
                    s, lib, user, screen.band, passphrase=passphrase, folder=folder
                )
    except ConflictError as exc:
        band.conflict = str(exc)
        band.refusals += 1
        return
    except FmaBandsError as exc:
        band.refusals += 1
        if exc.fields:
            band.failed = {k: v for k, v in exc.fields.items() if k == "passphrase"}
        else:
            band.failed_message = f"Not submitted: {exc.message}"
        return
    following, known = _next_band(lib, user, screen.band)
    review.forget(screen.key, st.session_state)
    again = " and your attestation signed again" if signed else ""
    # The band it was for is named: the message stays above the next band while its own form
    # is worked on, and must not read as that band's.
    if following:
        then = "this is the next one"
    elif known:
        then = "every band in your queue is now submitted"
    else:
        then = "your queue lists the bands still to do"
    # From round 2 the stored revisions run on from round 1's, which a rater did not revise.
    which = f"revision {saved.revision}" if saved.round == 1 else f"round {saved.round}"
    review.flash = (
        f"Review submitted ({which}){again}. "
        f"That was {screen.case} · {screen.action.label}; {then}."
    )
    review.goto = following.band if following else "queue"


def _next_band(
    lib: Library, user: UserPublic, band: tuple[str, str]
) -> tuple[QueueRow | None, bool]:
    """The band to open after `band`, read once its submission or skip is committed (the
    study's write lock is not held while the queue is read again), and whether that could be
    read: when not, what was done stands and the queue says where the rest are."""
    try:
        with session() as s:
            return review_screen.after(s, lib, user, band), True
    except (FmaBandsError, SQLAlchemyError):
        return None, False


@for_signed_in
def _skip(screen: Screen, review: ReviewState) -> None:
    if _left(screen, review):
        return
    band = review.bands.get(screen.key)
    if band is not None:
        band.failed_message = None
        if _unsent_flag(band, "skip this band"):
            band.refusals += 1
            return
    lib, user = library(), _user()
    try:
        with session() as s:
            marks.skip(s, lib, user, screen.vignette.id, screen.name)
    except FmaBandsError as exc:
        if band is not None:
            band.failed_message = f"Not skipped: {exc.message}."
        return
    following, _ = _next_band(lib, user, screen.band)
    if following is None or following.band == screen.band:
        # No other band is left to come back after: said so, never "once the others are done".
        review.flash = (
            f"Skipped for now: {screen.case} · {screen.action.label} is the only band left to "
            "review: it waits in your queue, marked skipped."
        )
    else:
        review.flash = (
            f"Skipped for now: {screen.case} · {screen.action.label} comes back once the "
            "others are done."
        )
    review.goto = following.band if following else "queue"


@for_signed_in
def _keep_submitted(screen: Screen, review: ReviewState) -> None:
    """Leave a revision begun: its entries are dropped, and the submitted review shows again."""
    if _left(screen, review):
        return
    band = review.bands.get(screen.key)
    if band is not None and _unsent_flag(band, "leave this revision"):
        band.refusals += 1
        return
    with session() as s:
        drafts.discard(s, _user(), *screen.band)
    review.forget(screen.key, st.session_state)
    review.flash = (
        f"Your submitted review of {screen.case} · {screen.action.label} stands as it was: "
        "the changes made since Revise were dropped."
    )
    # The page, not this fragment alone, shows the submitted review again.
    review.goto = screen.band


# A flag for the coordinator -------------------------------------------------------------------


def _flag_box(screen: Screen, review: ReviewState, band: BandState, rater: UserPublic) -> None:
    """The rater's flag of this band (a problem with the vignette, the proposal or their scope),
    with the flags they sent on it still open."""
    with session() as s:
        mine = [f for f in marks.my_flags(s, rater, *screen.band) if f.cleared_at is None]
    with st.expander(
        "Flag this band for the coordinator",
        icon=":material/flag:",
        expanded=bool(band.flag_error),
    ):
        for flag in mine:
            st.caption(f"You flagged this band on {flag.created_at:%d %b %Y, %H:%M} UTC:")
            st.text(flag.note)
        note = band.widget("flag_note")
        if note not in st.session_state:
            st.session_state[note] = band.flag_note  # typed before the rater went elsewhere
        st.text_area(
            "What should the coordinator look at?",
            key=note,
            help="A problem with the vignette, the proposal, or your scope.",
            on_change=_flag_typed,
            args=(band,),
        )
        if band.flag_error:
            st.error(escaped(band.flag_error), icon=":material/error:")
        st.button(
            "Send the flag", key=band.widget("flag"), on_click=_flag, args=(screen, review, rater)
        )
    # A question rather than a problem: a thread with the coordinator, the band chosen there.
    st.page_link(
        "app_pages/queries.py",
        label="Ask the coordinator about this band",
        query_params=address(*screen.band, key=case_key()),
        icon=":material/forum:",
    )
    if sent := band.flag_sent:
        band.flag_sent = None
        st.success(sent, icon=":material/flag:")


@for_signed_in
def _flag_typed(band: BandState) -> None:
    band.flag_note = st.session_state.get(band.widget("flag_note")) or ""
    if not band.flag_note.strip():
        # Cleared: nothing holds Submit back any more, and nothing is said of it.
        band.flag_error = None
        if band.failed_message and band.failed_message.startswith(UNSENT_FLAG):
            band.failed_message = None


UNSENT_FLAG = "Your flag is not sent yet"


def _unsent_flag(band: BandState, doing: str) -> bool:
    """Whether the flag's box holds a note not yet sent, which `doing` would lose: it is then
    refused, said beside the box and above the buttons (the box may have been closed since)."""
    if not (st.session_state.get(band.widget("flag_note")) or "").strip():
        band.flag_error = None
        return False
    band.flag_error = (
        f"{UNSENT_FLAG}: send it, or clear its box, before you {doing}. Nothing else was done."
    )
    band.failed_message = f"{UNSENT_FLAG}: send it below, or clear its box, before you {doing}."
    return True


@for_signed_in
def _flag(screen: Screen, review: ReviewState, rater: UserPublic) -> None:
    band = review.bands.get(screen.key)
    if band is None or _left(screen, review):
        return  # the band was submitted meanwhile, or left (see _changed)
    note = st.session_state.get(band.widget("flag_note")) or ""
    try:
        with session() as s:
            marks.flag(s, library(), rater, screen.vignette.id, screen.name, note)
    except FmaBandsError as exc:
        band.flag_error = exc.message
        return
    band.flag_error = None
    if band.failed_message and band.failed_message.startswith(UNSENT_FLAG):
        band.failed_message = None  # sent: nothing holds Submit back any more
    band.flagged = True
    st.session_state[band.widget("flag_note")] = band.flag_note = ""
    band.flag_sent = "Flag sent: the coordinator sees it on the Raters' progress page."
