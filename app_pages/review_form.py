"""The rater's side of the review screen: the six questions, the verdict, their own band, the
reason and how sure they are, then Submit and next, Skip for now, or a flag for the
coordinator (app_pages.flag_parts).

Drawn as a fragment, so a click reruns this column only. The screen's entries live in session
state beside the widgets (Streamlit forgets a widget's value once it is not drawn) and are kept
in the store on every change, so neither a hidden editor, a page left, a reload nor a closed
tab loses anything entered. Problems are worked out afresh on every run, so each message goes
as soon as its field is fixed."""

from collections.abc import Callable

import streamlit as st

from app_pages import band_editor, band_form, review_screen
from app_pages.common import current_user, escaped, library, session, settings, show_errors
from app_pages.flag_parts import flag_box
from app_pages.review_screen import CONFIDENCES, Screen
from fma_bands.core.errors import ConflictError, FmaBandsError
from fma_bands.core.labels import (
    CONFIDENCE_WORDS,
    QUESTION_WORDS,
    READING_WORDS,
    address,
    flagged_by,
)
from fma_bands.core.protocol import CHOICES, QUESTIONS, READINGS
from fma_bands.study import drafts, marks

GOTO, FLASH = "review:goto", "review:flash"
VERDICT_WORDS = {
    "review": {
        "ACCEPT": "ACCEPT: the band stands as written",
        "AMEND": "AMEND: correct the band or its clause",
        "DECLINE": "DECLINE: I cannot adjudicate this band",
    },
    "blind": {"AMEND": "Submit my band", "DECLINE": "DECLINE: I cannot adjudicate this band"},
}


def entries(screen: Screen) -> dict:
    """The screen's entries for this band, loaded once a session from the store."""
    state, key = st.session_state, screen.key
    if f"{key}:entries" not in state:
        state[f"{key}:entries"] = screen.entries()
        state[f"{key}:version"] = screen.version
    return state[f"{key}:entries"]


def open_here(screen: Screen) -> bool:
    """This session holds entries for the band (typed here, perhaps not yet kept in the
    store): they stay on screen even if another tab has since submitted the band."""
    return f"{screen.key}:entries" in st.session_state


def forget(key: str) -> None:
    """Drop everything the screen holds for one band, so the store's version shows again."""
    for name in [k for k in st.session_state if str(k).startswith(f"{key}:")]:
        del st.session_state[name]


def _keep(screen: Screen) -> None:
    state, key = st.session_state, screen.key
    try:
        with session() as s:
            review_screen.keep(
                s,
                library(),
                _user(),
                screen.vignette.id,
                screen.name,
                state[f"{key}:entries"],
                base_version=state[f"{key}:version"],
            )
        state[f"{key}:keep_error"] = None
    except FmaBandsError as exc:
        state[f"{key}:keep_error"] = exc.message


def _changed(screen: Screen, name: str) -> None:
    """A widget changed: its value into the entries, a form switched, the entries kept."""
    state, key = st.session_state, screen.key
    mine = state.get(f"{key}:entries")
    if mine is None:
        # A click on a band already submitted, still drawn while the next one loads: its
        # review is stored and its entries gone, so there is nothing to change.
        return
    mine[name] = state.get(f"{key}:{name}")
    if name == "band:form":
        _switch(screen, mine[name], confirmed=False)
    _keep(screen)


def _switch(screen: Screen, to: str, *, confirmed: bool) -> None:
    state, key = st.session_state, screen.key
    mine = state[f"{key}:entries"]
    # Changes made just before the switch may arrive in this same run, their callbacks after
    # this one: read every band widget as it is now, so the switch uses them.
    for field in [f for f in mine if f.startswith("band:") and f != "band:question"]:
        if f"{key}:{field}" in state:
            mine[field] = state[f"{key}:{field}"]
    fields = review_screen.band_fields(mine)
    switched = band_form.switch_form(screen.action, fields, to, confirmed=confirmed)
    for field, value in switched.fields.items():
        mine[f"band:{field}"] = value
        state[f"{key}:band:{field}"] = value
    state[f"{key}:band:question"] = switched.question


def _confirm(screen: Screen, to_range: bool) -> None:
    if f"{screen.key}:entries" not in st.session_state:
        return  # the band was submitted meanwhile (see _changed)
    _switch(screen, band_form.RANGE if to_range else band_form.LIST, confirmed=True)
    st.session_state[f"{screen.key}:band:question"] = None
    _keep(screen)


def _widget(screen: Screen, draw: Callable, name: str, label: str, **options):
    key = f"{screen.key}:{name}"
    if key not in st.session_state:
        st.session_state[key] = entries(screen).get(name)
    return draw(label, key=key, on_change=_changed, args=(screen, name), **options)


def _user():
    user = current_user()
    assert user is not None, "the review page lets only a signed-in rater this far"
    return user


def follow() -> None:
    """Go where Submit and next or Skip for now sent the rater. Called by the page and by this
    fragment alike: a click inside the fragment reruns only the fragment."""
    goto = st.session_state.pop(GOTO, None)
    if goto == "queue":
        st.switch_page("app_pages/queue.py")
    if goto is not None:
        st.switch_page("app_pages/review.py", query_params=address(*goto))


@st.fragment
def review_form(screen: Screen, signed: bool) -> None:
    """The rater's column, top to bottom; `signed`: their signed attestation covers the band."""
    follow()
    mine = entries(screen)
    tried = bool(st.session_state.get(f"{screen.key}:tried"))
    _notice_conflict(screen)
    errors = review_screen.problems(
        mine, screen.proposal, screen.vignette, screen.mode, final=tried, round=screen.round
    ) | (st.session_state.get(f"{screen.key}:failed") or {})
    _conflict(screen)
    if screen.mode == "review":
        _questions(screen, errors)
    _verdict(screen, errors)
    if mine.get("verdict") == "AMEND":
        _own_band(screen, mine, errors)
    _reason_and_confidence(screen, errors)
    if signed:
        _passphrase(screen, errors)
    _actions(screen, errors, tried, signed)


def _notice_conflict(screen: Screen) -> None:
    """The store's version moved on since this session began the review: say so, once."""
    state, key = st.session_state, screen.key
    if state[f"{key}:version"] != screen.version and not state.get(f"{key}:conflict"):
        state[f"{key}:conflict"] = (
            "This review was changed in another tab or window since you began here. What you "
            "entered here is still on screen, but it cannot be submitted over the newer version."
        )


def _verdict(screen: Screen, errors: dict[str, str]) -> None:
    st.subheader("Your verdict")
    words = VERDICT_WORDS[screen.mode]
    _widget(
        screen,
        st.radio,
        "verdict",
        "Verdict",
        options=list(words),
        format_func=words.get,
        index=None,
    )
    show_errors(errors, "verdict")


def _own_band(screen: Screen, mine: dict, errors: dict[str, str]) -> None:
    """The band the rater amends to, and its picture (the last valid one while it is not)."""
    state, key = st.session_state, screen.key
    starts = " (it starts from the proposal)" if screen.mode == "review" else ""
    st.markdown(f"**Your band**{starts}")
    band_editor.edit(screen, mine, _changed_of(screen), _confirm_of(screen), errors)
    band, _ = band_form.band_of(
        screen.action, review_screen.band_fields(mine), screen.vignette.orderables
    )
    if band is not None:
        state[f"{key}:last_band"] = band
    band_editor.picture(screen, band, state.get(f"{key}:last_band"))


def _reason_and_confidence(screen: Screen, errors: dict[str, str]) -> None:
    _widget(
        screen,
        st.text_area,
        "reason",
        "Reason",
        help="One sentence: why you accept, amend or decline."
        if screen.round == 1
        else f"Round {screen.round}, required: why you keep or revise your band after the panel.",
    )
    show_errors(errors, "reason")
    _widget(
        screen,
        st.segmented_control,
        "confidence",
        "How sure are you of this review? (optional)",
        options=CONFIDENCES,
        format_func=CONFIDENCE_WORDS.get,
    )


def _passphrase(screen: Screen, errors: dict[str, str]) -> None:
    st.info(
        "Your signed attestation covers this band. Submitting a change signs your "
        "attestation again, over your reviews as they now stand, with the declarations you "
        "made before; the new signature supersedes the old one for this band."
    )
    st.text_input("Your passphrase, to sign again", type="password", key=f"{screen.key}:passphrase")
    show_errors(errors, "passphrase")


def _changed_of(screen: Screen) -> Callable:
    return lambda name: _changed(screen, name)


def _confirm_of(screen: Screen) -> Callable:
    return lambda to_range: _confirm(screen, to_range)


def _questions(screen: Screen, errors: dict[str, str]) -> None:
    st.subheader("The six protocol questions")
    for number, question in enumerate(QUESTIONS, start=1):
        q = question["key"]
        words, explained = QUESTION_WORDS[q]
        st.markdown(f"**{number}. {words}**")
        if q == "q5" and screen.proposal.disputed_span is None:
            st.caption("No disputed span is recorded for this band.")
            continue
        if explained:
            st.caption(explained)
        if q == "q5":
            _widget(
                screen,
                st.radio,
                f"{q}:choice",
                f"Answer to question {number}",
                options=READINGS,
                format_func=READING_WORDS.get,
                index=None,
                horizontal=True,
            )
        else:
            st.caption(flagged_by(question["problem"]))
            _widget(
                screen,
                st.radio,
                f"{q}:choice",
                f"Answer to question {number}",
                options=CHOICES,
                index=None,
                horizontal=True,
                label_visibility="collapsed",
            )
        hint = "Why that reading, for this patient" if q == "q5" else "Which, and why"
        _widget(screen, st.text_input, f"{q}:note", f"Note for question {number}", placeholder=hint)
        show_errors(errors, q)


def _conflict(screen: Screen) -> None:
    message = st.session_state.get(f"{screen.key}:conflict")
    if message:
        st.error(escaped(message), icon=":material/sync_problem:")
        st.button(
            "Load the saved version (discards what is on this screen)",
            key=f"{screen.key}:reload",
            on_click=_reload,
            args=(screen,),
        )


def _reload(screen: Screen) -> None:
    with session() as s:
        drafts.discard(s, _user(), screen.vignette.id, screen.name)
    forget(screen.key)


def _actions(screen: Screen, errors: dict, tried: bool, signed: bool) -> None:
    key = screen.key
    if tried and errors:
        st.error("Some answers need attention: see the messages beside them.")
    if failed := st.session_state.get(f"{key}:failed_message"):
        st.error(escaped(failed))
    submit, skip = st.columns(2)
    submit.button(
        "Submit and next",
        type="primary",
        icon=":material/send:",
        key=f"{key}:submit",
        on_click=_submit,
        args=(screen, signed),
    )
    skip.button(
        "Skip for now",
        icon=":material/skip_next:",
        key=f"{key}:skip",
        on_click=_skip,
        args=(screen,),
    )
    kept = st.session_state.get(f"{key}:keep_error")
    if kept:
        st.warning(f"Your last change could not be kept yet: {escaped(kept)}")
    else:
        st.caption("Everything you enter is kept as you work: you can leave and come back.")
    flag_box(screen, _user())


def _submit(screen: Screen, signed: bool) -> None:
    state, key, user, lib = st.session_state, screen.key, _user(), library()
    if f"{key}:entries" not in state:
        return  # a second click on a band already submitted (see _changed)
    state[f"{key}:tried"] = True
    state[f"{key}:failed"] = state[f"{key}:failed_message"] = None
    passphrase = state.get(f"{key}:passphrase") or ""
    try:
        with session() as s:
            # A wrong passphrase fails the signing below, which rolls the submission back too.
            saved = review_screen.submit(
                s,
                lib,
                user,
                screen.vignette.id,
                screen.name,
                state[f"{key}:entries"],
                expected_version=state[f"{key}:version"],
            )
            if signed:
                folder = settings().attestations
                review_screen.sign_again(
                    s, lib, user, screen.band, passphrase=passphrase, folder=folder
                )
            following = review_screen.after(s, lib, user, (screen.vignette.id, screen.name))
    except ConflictError as exc:
        state[f"{key}:conflict"] = str(exc)
        return
    except FmaBandsError as exc:
        if exc.fields:
            state[f"{key}:failed"] = {k: v for k, v in exc.fields.items() if k == "passphrase"}
        else:
            state[f"{key}:failed_message"] = f"Not submitted: {exc.message}"
        return
    forget(key)
    again = " and your attestation signed again" if signed else ""
    done = "" if following else " Every band in your queue is now submitted."
    state[FLASH] = f"Review submitted (revision {saved.revision}){again}.{done}"
    state[GOTO] = following.band if following else "queue"


def _skip(screen: Screen) -> None:
    lib, user = library(), _user()
    with session() as s:
        marks.skip(s, lib, user, screen.vignette.id, screen.name)
        following = review_screen.after(s, lib, user, (screen.vignette.id, screen.name))
    st.session_state[FLASH] = "Skipped for now: this band comes back once the others are done."
    st.session_state[GOTO] = following.band if following else "queue"
