"""Review one band: what the agent knew at that step, the proposal (review mode), the rater's own
band, the six protocol questions, and the verdict."""

import streamlit as st

from app_pages import band_editor
from app_pages.common import (
    library,
    require_user,
    session,
    show_errors,
    show_proposal,
    signed_bands,
)
from app_pages.common import settings as settings_of_app
from fma_bands.actions import STEPS, sub_action
from fma_bands.attestations import resign
from fma_bands.bands import describe, parse_band
from fma_bands.errors import ConflictError, FmaBandsError
from fma_bands.picture import Row, band_chart, straddle_sentence
from fma_bands.protocol import CHOICES, QUESTIONS
from fma_bands.reviews import ReviewForm, current_review, next_item, queue, save
from fma_bands.study import study, verdicts_for

user = require_user("rater")
lib = library()
with session() as s:
    items = queue(s, lib, user)
    settings = study(s)
params = st.query_params
vid, name = params.get("vignette"), params.get("sub_action")
if (vid, name) not in {(i.vignette_id, i.sub_action) for i in items}:
    resume = next_item(items) or (items[0] if items else None)
    if resume is None:
        st.info("No band is waiting for review.")
        st.stop()
    vid, name = resume.vignette_id, resume.sub_action
    st.query_params.update({"vignette": vid, "sub_action": name})
assert vid is not None and name is not None  # a band of the queue, just checked
vignette = lib.vignettes[vid]
proposal = vignette.proposal(name)
assert proposal is not None
action = sub_action(name)
step = STEPS[action.step]
key = f"{vid}:{name}"
with session() as s:
    current = current_review(s, lib, user, vid, name)

st.title(f"{action.label}")
st.caption(f"Vignette **{vid}** · {vignette.domain} · step: {step.name} · {settings.mode} mode")
position = [(i.vignette_id, i.sub_action) for i in items].index((vid, name))
back, forward = st.columns(2)
for column, offset, label in ((back, -1, "← Previous band"), (forward, 1, "Next band →")):
    if 0 <= position + offset < len(items):
        other = items[position + offset]
        # A button that switches page moves the address too, so a reload or a shared link
        # opens the band on screen (a link to the page already open would not).
        if column.button(label, help=f"{other.vignette_id} · {sub_action(other.sub_action).label}"):
            st.switch_page(
                "app_pages/review.py",
                query_params={"vignette": other.vignette_id, "sub_action": other.sub_action},
            )
st.caption(f"Band {position + 1} of {len(items)} in your queue.")

st.subheader("What the agent knows at this step")
st.caption(step.description)
with st.container(border=True):
    st.markdown("**Clinical core** (frozen, verbatim)")
    st.write(vignette.clinical_core)
    if step.shows_results and vignette.tool_results:
        st.markdown("**Results** (available at this step only for the tests the agent ordered)")
        st.table(
            {"Test": list(vignette.tool_results), "Result": list(vignette.tool_results.values())}
        )
    elif vignette.tool_results:
        st.caption("No test results exist yet at this step: they come back after ordering.")

threshold = proposal.effective_threshold
if settings.mode == "review":
    st.subheader("Proposed band")
    with st.container(border=True):
        show_proposal(proposal, vignette)

flash = st.session_state.pop(f"{key}:flash", None)
if flash:
    st.success(flash, icon=":material/check_circle:")
if st.session_state.get(f"{key}:conflict"):
    st.error(st.session_state[f"{key}:conflict"])
    if st.button("Load the saved version (discards what is on this screen)"):
        band_editor.forget(key)
        st.rerun()


editing = current is None or current.status == "draft" or st.session_state.get(f"{key}:revise")
if current is not None and current.status == "submitted" and not editing:
    st.subheader("Your submitted review")
    if current.stale:
        st.warning("The vignette or its proposal changed after you submitted: please revise.")
    revised = f" (revised {current.revision - 1} time(s))" if current.revision > 1 else ""
    st.markdown(f"**Verdict:** {current.verdict}{revised}")
    if current.band is not None:
        mine = parse_band(name, current.band, orderables=vignette.orderables)
        st.markdown(f"**Your band:** {describe(mine)}")
    st.markdown(f"**Reason:** {current.reason or '(none given)'}")
    for number, question in enumerate(QUESTIONS, start=1):
        answer = current.answers.get(question["key"])
        if answer:
            shown = " · ".join(v for v in (answer.get("choice"), answer.get("note")) if v)
            st.markdown(f"{number}. {question['text']} **{shown}**")
    if settings.phase == "open" and st.button("Revise this review", icon=":material/edit:"):
        st.session_state[f"{key}:revise"] = True
        band_editor.load(key, current, proposal, settings.mode)
        st.rerun()
    st.stop()

if settings.phase != "open":
    st.info("The review phase is closed: reviews can no longer change.")
    st.stop()

band_editor.load(key, current, proposal, settings.mode)
errors = st.session_state.get(f"{key}:errors", {})

if settings.mode == "review":
    st.subheader("The six protocol questions")
    for number, question in enumerate(QUESTIONS, start=1):
        q = question["key"]
        st.markdown(f"**{number}. {question['text']}**")
        if q == "q5" and proposal.disputed_span is None:
            st.caption("No disputed span is recorded for this band.")
            continue
        if q != "q5":
            flags = "no" if question["problem"] == "no" else "yes"
            st.caption(f"If {flags}, say which in the note.")
            st.radio(
                f"Answer to question {number}",
                CHOICES,
                key=f"{key}:{q}:choice",
                index=None,
                horizontal=True,
                label_visibility="collapsed",
            )
        st.text_input(
            f"Note for question {number}",
            key=f"{key}:{q}:note",
            placeholder="Which reading is right for this patient, and why"
            if q == "q5"
            else "Which, and why (needed when you flag a problem)",
        )
        show_errors(errors, q)

st.subheader("Your verdict")
verdicts = list(verdicts_for(settings.mode))
labels = {
    "ACCEPT": "ACCEPT: the band stands as written",
    "AMEND": "AMEND: correct the band or its clause"
    if settings.mode == "review"
    else "Submit my band",
    "DECLINE": "DECLINE: I cannot adjudicate this band",
}
verdict = st.radio("Verdict", verdicts, format_func=labels.get, key=f"{key}:verdict", index=None)
show_errors(errors, "verdict")

own_band = None
if verdict == "AMEND":
    st.markdown(
        "**Your band**" + (" (starts from the proposal)" if settings.mode == "review" else "")
    )
    raw = band_editor.edit(key, action, vignette.orderables)
    try:
        own_band = (
            parse_band(name, raw, orderables=vignette.orderables) if raw is not None else None
        )
    except FmaBandsError as exc:
        st.error(str(exc), icon=":material/error:")
    show_errors(errors, "band")

if own_band is not None:
    rows = [Row("your band", own_band)]
    if settings.mode == "review":
        rows.insert(0, Row("proposal", proposal.acceptable, proposal.disputed_span))
    st.altair_chart(band_chart(name, rows, threshold=threshold, orderables=vignette.orderables))
    st.markdown(f"**Your band.** {straddle_sentence(own_band, threshold)}")

st.text_area("Reason", key=f"{key}:reason", help="One sentence: why you accept, amend or decline.")
show_errors(errors, "reason")

# A change to a signed review must not leave the old signature standing in its place.
signed = (vid, name) in signed_bands(user.pseudonym)
if signed:
    st.info(
        "Your signed attestation covers this band. Submitting a change signs your attestation "
        "again, with the declarations you made before: it covers exactly what you signed before "
        "plus this change (nothing imported for you since), and supersedes the old signature for "
        "this band."
    )
    st.text_input("Your passphrase, to sign again", type="password", key=f"{key}:passphrase")
    show_errors(errors, "passphrase")


def resign_after_change(s, passphrase: str) -> None:
    resign(
        s,
        lib,
        rater=user,
        passphrase=passphrase,
        bands=[(vignette.id, action.name)],
        folder=settings_of_app().attestations,
    )


def _save(submit: bool) -> None:
    state = st.session_state
    form = ReviewForm(
        verdict=state.get(f"{key}:verdict"),
        band=band_editor.read(key, action) if state.get(f"{key}:verdict") == "AMEND" else None,
        answers={
            q["key"]: {
                k: v
                for k in ("choice", "note")
                if (v := state.get(f"{key}:{q['key']}:{k}")) not in (None, "")
            }
            for q in QUESTIONS
        },
        reason=state.get(f"{key}:reason"),
    )
    form.answers = {k: v for k, v in form.answers.items() if v}
    sign_again = submit and signed
    passphrase = state.get(f"{key}:passphrase") or ""
    try:
        with session() as s:
            saved = save(
                s,
                lib,
                user,
                vignette.id,
                action.name,
                form,
                expected_version=state.get(f"{key}:version", 0),
                submit=submit,
            )
            if sign_again:
                try:
                    resign_after_change(s, passphrase)
                except FmaBandsError as exc:
                    message = f"{exc.message}; nothing was submitted"
                    raise FmaBandsError(message, fields={"passphrase": message}) from None
    except ConflictError as exc:
        state[f"{key}:conflict"] = str(exc)
        return
    except FmaBandsError as exc:
        state[f"{key}:errors"] = exc.fields or {"verdict": exc.message}
        state[f"{key}:flash"] = None
        return
    state[f"{key}:errors"] = {}
    state[f"{key}:conflict"] = None
    state[f"{key}:version"] = saved.version
    if submit:
        band_editor.forget(key)
        again = " and your attestation signed again" if sign_again else ""
        state[f"{key}:flash"] = f"Review submitted (revision {saved.revision}){again}."
    else:
        state[f"{key}:flash"] = "Draft saved."


if errors:
    st.error("Some answers need attention: see the messages beside them.")
left, right = st.columns(2)
left.button("Save draft", on_click=_save, args=(False,), icon=":material/save:")
right.button("Submit review", on_click=_save, args=(True,), type="primary", icon=":material/send:")
