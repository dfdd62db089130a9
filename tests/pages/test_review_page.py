"""The queue and the review screen under streamlit's AppTest, on FairMedAgent's vignettes: what
the screen shows at each step, problems beside their fields and gone once fixed, every form
keeping its input after an error, automatic drafts surviving a reload, submit and next, skip,
flags, list and range, orders, blind mode and the re-reading of a bad link."""

import base64
import json
import re

import pytest
from streamlit.testing.v1 import AppTest

from app_pages import review_screen
from app_pages.page_script import key_class
from app_pages.queue_screen import rater_queue
from app_pages.review_screen import ReviewState, screen_key
from fma_bands.core.actions import sub_action
from fma_bands.core.errors import FmaBandsError
from fma_bands.core.labels import RESULT_MARK, case_numbers, case_token, knowledge_at
from fma_bands.store.models import Review
from fma_bands.study import drafts, marks
from fma_bands.study.case_keys import case_key
from fma_bands.study.state import set_mode
from tests import page_helpers
from tests.page_helpers import (
    BANDS,
    DOC,
    GOOD_ANSWERS,
    MED,
    ORDER,
    TRIAGE,
    as_read,
    band_params,
    click,
    go,
    key,
    message_beside,
    open_app,
    open_review,
    progress_text,
    resume_button,
    run,
    shown,
    texts,
    title,
)

fresh_caches, app_env, template, study = (
    page_helpers.fresh_caches,
    page_helpers.app_env,
    page_helpers.template,
    page_helpers.study,
)
SUBMIT, SKIP = "Submit and next", "Skip for now"
# The case picker's keys (app_pages/review.py): the case, then the band of the case.
CASE_PICKER, BAND_PICKER = "review_case_picker", "review_band_picker"
METRIC_WORDS = re.compile(r"straddl|within-range|flip|dividing line", re.IGNORECASE)
GOOD = (("q1", "yes"), ("q2", "yes"), ("q3", "no"), ("q4", "no"), ("q6", "yes"))


def answer(at: AppTest, band, *, reading: str | None = None, note: str | None = None) -> None:
    for q, choice in GOOD:
        at.radio(key=key(band, q, "choice")).set_value(choice).run()
    if reading is not None:
        at.radio(key=key(band, "q5", "choice")).set_value(reading).run()
        at.text_input(key=key(band, "q5", "note")).input(note or "").run()


def plain_texts(at: AppTest) -> list[str]:
    return [t.value for t in at.text]


def numbers_of(study: page_helpers.Study) -> dict[str, int]:
    """The case numbers the app shows, keyed with the study's secret as its pages read it."""
    with study.store() as s:
        return case_numbers(study.library, case_key(s))


def band_on_screen(at: AppTest, study: page_helpers.Study) -> tuple[str, str]:
    """The band the screen is on, from what it says: its case and its sub-action."""
    from fma_bands.core.actions import SUB_ACTIONS

    numbers = numbers_of(study)
    case = int(at.caption[0].value.removeprefix("Case ").split(" ", 1)[0])
    [vid] = [v for v, n in numbers.items() if n == case]
    [name] = [n for n, a in SUB_ACTIONS.items() if a.label == title(at)]
    return vid, name


# The queue -----------------------------------------------------------------------------------


def test_queue_counts_submitted_bands_and_offers_a_page_at_a_time(study):
    at = open_app(study.rater)
    assert title(at) == "My queue"
    assert progress_text(at) == "0 of 4 bands submitted"
    study.save(study.rater, MED, submit=True, verdict="DECLINE", reason="out of my scope")
    run(at)
    assert progress_text(at) == "1 of 4 bands submitted"
    links = [link.label for link in at.get("page_link")]
    assert len(links) == 4 and all(label.startswith("Case ") for label in links)
    [status] = [s for s in at.selectbox if s.label == "Show"]
    status.set_value("submitted").run()
    [only] = [link.label for link in at.get("page_link")]
    numbers = numbers_of(study)
    assert only == f"Case {numbers[MED[0]]} of {len(numbers)} · Analgesia tier"
    # Another rater's submission is not this rater's progress.
    assert progress_text(open_app(study.other)) == "0 of 4 bands submitted"


def test_queue_resumes_at_a_band_in_progress(study):
    study.save(study.rater, ORDER, submit=False, verdict="DECLINE")
    at = open_app(study.rater)
    assert resume_button(at).label.startswith("Resume: Case ")
    resume_button(at).click().run()
    assert title(at) == "ESI acuity level"
    assert band_on_screen(at, study) == ORDER
    assert at.radio(key=key(ORDER, "verdict")).value == "DECLINE"
    # Within the round, a draft of one's own is no earlier round's answers.
    assert not [c for c in at.caption if " from round " in c.value]


def test_review_opened_with_every_band_submitted_says_so(study):
    for band in BANDS[:-1]:
        study.save(study.rater, band, submit=True, verdict="DECLINE", reason="out of my scope")
    at = open_app(study.rater, "app_pages/review.py")
    assert not [i for i in at.info if "Every band in your queue is submitted" in i.value]
    study.save(study.rater, BANDS[-1], submit=True, verdict="DECLINE", reason="out of my scope")
    at = open_app(study.rater, "app_pages/review.py")
    [said] = [i.value for i in at.info if "Every band in your queue is submitted" in i.value]
    assert said == (
        "Every band in your queue is submitted: this is the first of them. You may revise any "
        "until the round closes; the coordinator closes it once everyone is done."
    )
    # Once the round is closed, nothing is said of revising.
    from fma_bands.study.rounds import close_round

    with study.store() as s:
        close_round(s, actor=study.coordinator)
    at = open_app(study.rater, "app_pages/review.py")
    [said] = [i.value for i in at.info if "Every band in your queue is submitted" in i.value]
    assert said.endswith("this is the first of them. The round is closed: they stand as submitted.")
    # A band asked for by its address says nothing of the rest.
    at = open_review(study.rater, BANDS[0])
    assert not [i for i in at.info if "Every band in your queue is submitted" in i.value]


# What the screen shows ----------------------------------------------------------------------


def test_review_mode_shows_core_proposal_disputed_span_and_results_as_plain_text(study):
    at = open_review(study.rater, DOC)
    vignette = study.library.vignettes[DOC[0]]
    proposal = vignette.proposal(DOC[1])
    shown_texts = plain_texts(at)
    assert title(at) == "Follow-up interval (days)"
    assert vignette.clinical_core in shown_texts
    assert proposal.clause in shown_texts and proposal.reasoning in shown_texts
    assert "15 days to 30 days" in shown_texts and "1 day to 14 days" in shown_texts
    # Results with readable names, at a step that shows them, each marked as reaching the
    # agent only if it ordered that test; never as markdown.
    marked = [t for t in shown_texts if t.endswith(f"({RESULT_MARK})")]
    assert len(marked) == len(vignette.tool_results)
    assert any(t.startswith("BMP: ") for t in marked)
    assert any(t.startswith("Beta-hydroxybutyrate: ") for t in marked)
    # The heading that claimed the list held only the ordered tests' results is gone; one line
    # says what else the agent holds, which varies by run.
    screen = shown(at)
    assert "only those of tests the agent ordered" not in screen
    [earlier] = [i.value for i in at.info if "vary by run" in i.value]
    assert earlier == (
        "The agent also holds its own earlier triage, orders and disposition (admission, ICU), "
        "which vary by run: the band must hold whatever they were."
    )
    assert not METRIC_WORDS.search(without_file_texts(screen, vignette))
    assert not [m for m in texts(at) if proposal.clause[:40] in m]  # not in any markdown
    # Two columns, the agent's knowledge and the proposal on the left.
    assert len(at.columns) >= 2


def test_each_question_is_one_element_with_its_notes(study):
    """A question, what it asks of the rater and when a note is needed are drawn as one element:
    each element is a message the browser draws again on every move to another band."""
    at = open_review(study.rater, DOC)
    questions = {
        m.value[2]: m.value.replace("\\", "")
        for m in at.markdown
        if re.match(r"\*\*[1-6]\. ", m.value)
    }
    assert sorted(questions) == list("123456")
    assert "band's authors rely on" in questions["1"]
    assert "If no, say which in the note." in questions["1"]
    assert "If yes, say which in the note." in questions["3"]
    assert "the picture shows them in amber" in questions["5"]
    assert not [c for c in at.caption if "say which in the note" in c.value]


@pytest.mark.parametrize("band", [TRIAGE, ORDER], ids=["triage", "ordering"])
def test_triage_shows_no_results_and_no_metric(study, band):
    at = open_review(study.rater, band)
    vignette = study.library.vignettes[band[0]]
    screen = shown(at)
    assert vignette.clinical_core in plain_texts(at)
    for result in vignette.tool_results.values():
        assert result not in screen
    assert RESULT_MARK not in screen and "**Results**" not in texts(at)
    summary = knowledge_at(vignette, "triage").summary
    assert summary.startswith("Triage: the agent holds the clinical core only. No test has")
    assert summary in [c.value for c in at.caption]
    # The proposal's own words (the harness's file) may speak of the study's metrics; the app's
    # never do.
    assert not METRIC_WORDS.search(without_file_texts(screen, vignette))


def without_file_texts(screen: str, vignette) -> str:
    """The screen less the texts the vignette's file gives, which are shown as written."""
    for p in vignette.proposals:
        for text in filter(None, (p.source, p.clause, p.reasoning, p.notes)):
            screen = screen.replace(text, "")
    return screen.replace(vignette.clinical_core, "")


def test_the_screen_names_the_case_never_the_id(study):
    at = open_review(study.rater, DOC)
    numbers = numbers_of(study)
    assert at.caption[0].value.startswith(f"Case {numbers[DOC[0]]} of {len(numbers)} · ")
    assert "draft_documentation_01" not in shown(at)
    with study.store() as s:
        token = case_token(DOC[0], case_key(s))
    assert at.query_params["case"] in (token, [token])
    assert "vignette" not in at.query_params


def test_a_link_naming_no_band_says_so_and_opens_where_the_rater_left_off(study):
    at = open_app(study.rater, "app_pages/review.py", vignette="no_such_case", sub_action="admit")
    [warning] = at.warning
    assert warning.value.startswith("The link you followed names no band in your queue")
    assert band_on_screen(at, study) in BANDS


def test_a_mistyped_case_token_says_so_and_opens_where_the_rater_left_off(study):
    resumed = band_on_screen(open_app(study.rater, "app_pages/review.py"), study)
    at = open_app(study.rater, "app_pages/review.py", case="x")
    [warning] = at.warning
    assert warning.value.startswith("The link you followed names no band in your queue")
    assert band_on_screen(at, study) == resumed


def test_an_address_naming_a_case_by_its_id_opens_nothing_for_a_rater(study):
    """Typing ids would tell a rater which case number is which id (and its stratum): only the
    case's token finds it; the id is said to name no band, and the rater's own place opens."""
    numbers = numbers_of(study)
    resumed = band_on_screen(open_app(study.rater, "app_pages/review.py"), study)
    wanted = next(b for b in BANDS if b != resumed and numbers[b[0]] != 1)
    for name in ("vignette", "id"):
        at = open_app(study.rater, "app_pages/review.py", **{name: wanted[0]}, sub_action=wanted[1])
        [warning] = at.warning
        assert warning.value.startswith("The link you followed names no band in your queue")
        assert band_on_screen(at, study) == resumed
    # The vignette page opens on the first case instead.
    vignette = open_app(study.rater, "app_pages/vignette.py", id=wanted[0])
    assert numbers[vignette.selectbox(key="vignette_id").value] == 1


# Problems beside their fields; every form keeps its input ------------------------------------


def test_problems_stand_beside_their_fields_and_go_once_fixed(study):
    at = open_review(study.rater, DOC)
    at.radio(key=key(DOC, "q3", "choice")).set_value("yes").run()  # a problem flagged, no note
    at.text_input(key=key(DOC, "q1", "note")).input("typed before submitting").run()
    click(at, SUBMIT)

    assert message_beside(at, key(DOC, "verdict")) == "choose a verdict: ACCEPT, AMEND or DECLINE"
    for q in ("q1", "q2", "q4", "q6"):
        assert message_beside(at, key(DOC, q, "note")) == "answer yes, no or unsure", q
    assert message_beside(at, key(DOC, "q3", "note")) == "say which, in a few words"
    assert message_beside(at, key(DOC, "q5", "note")) == (
        "a disputed span is recorded: choose which reading is right"
    )
    # Everything typed is still there, and nothing was stored.
    assert at.text_input(key=key(DOC, "q1", "note")).value == "typed before submitting"
    assert at.radio(key=key(DOC, "q3", "choice")).value == "yes"
    assert study.reviews(study.rater, DOC) == []

    # Answering question 1 takes its message away at once; the others stay until answered.
    at.radio(key=key(DOC, "q1", "choice")).set_value("yes").run()
    assert message_beside(at, key(DOC, "q1", "note")) is None
    assert message_beside(at, key(DOC, "q2", "note")) == "answer yes, no or unsure"
    at.radio(key=key(DOC, "verdict")).set_value("DECLINE").run()
    assert message_beside(at, key(DOC, "verdict")) is None
    assert message_beside(at, key(DOC, "reason")) == "say why you decline: one sentence is enough"


def test_a_wrong_band_is_said_in_words_and_its_picture_stays(study):
    at = open_review(study.rater, DOC)
    at.radio(key=key(DOC, "verdict")).set_value("AMEND").run()
    assert len(at.get("vega_lite_chart")) == 2  # the proposal's, and the rater's own
    at.number_input(key=key(DOC, "band", "lo")).set_value(40).run()
    at.number_input(key=key(DOC, "band", "hi")).set_value(30).run()
    assert message_beside(at, key(DOC, "band", "hi")) == (
        "The lower bound, 40 days, is above the upper bound, 30 days."
    )
    assert len(at.get("vega_lite_chart")) == 2
    assert any("last complete band" in c.value for c in at.caption)
    at.number_input(key=key(DOC, "band", "lo")).set_value(-3).run()
    assert message_beside(at, key(DOC, "band", "hi")) == (
        "The lower bound, -3 days, is below the smallest follow-up interval, 0 days."
    )
    assert at.number_input(key=key(DOC, "band", "lo")).value == -3  # kept, not clamped
    at.number_input(key=key(DOC, "band", "lo")).set_value(1).run()
    assert message_beside(at, key(DOC, "band", "hi")) is None


def test_a_reason_past_its_limit_is_kept_and_refused_beside_the_field(study):
    """The field takes any length (a browser's maxlength would drop a longer paste whole, without
    a word); Submit refuses it beside the field, the text still there to shorten."""
    at = open_review(study.rater, MED)
    reason = at.text_area(key=key(MED, "reason"))
    assert not reason.max_chars and "At most 4,000 characters." in (reason.help or "")
    reason.input("x" * 4001).run()
    click(at, "Submit and next")
    assert message_beside(at, key(MED, "reason")) == "keep the reason under 4000 characters"
    assert at.text_area(key=key(MED, "reason")).value == "x" * 4001


def test_a_flag_without_a_note_keeps_the_form_and_says_why(study):
    at = open_review(study.rater, MED)
    at.text_area(key=key(MED, "reason")).input("half a thought").run()
    click(at, "Send the flag")
    assert "say what the coordinator should look at: one sentence is enough" in [
        as_read(e.value) for e in at.error
    ]
    assert at.text_area(key=key(MED, "reason")).value == "half a thought"
    at.text_area(key=key(MED, "flag_note")).input("The core gives no renal function.").run()
    click(at, "Send the flag")
    assert any(s.value.startswith("Flag sent") for s in at.success)
    with study.store() as s:
        [flag] = marks.all_flags(s, study.coordinator)
    assert (flag.rater, flag.note) == ("rater-01", "The core gives no renal function.")
    assert at.text_area(key=key(MED, "reason")).value == "half a thought"


def amended_med(study) -> AppTest:
    """The analgesia band open, amended to {1, 3} with every question answered and a reason:
    ready to submit."""
    at = open_review(study.rater, MED)
    at.radio(key=key(MED, "verdict")).set_value("AMEND").run()
    at.pills(key=key(MED, "band", "values")).set_value([1, 3]).run()
    answer(at, MED)
    at.text_area(key=key(MED, "reason")).input("NSAID or strong opioid; not weak.").run()
    return at


def test_a_flag_typed_and_not_sent_is_kept_across_bands_and_refuses_submit_and_skip(study):
    """Streamlit forgets a box not drawn, and Submit and next or Skip for now would leave the
    band: a flag's note typed and not sent stays in its box until sent or cleared."""
    at = amended_med(study)
    at.text_area(key=key(MED, "flag_note")).input("The core gives no renal function.").run()
    # Another band and back: the note is in its box again. (The study's case key is drawn
    # afresh, so the band may be the last of the queue: then away is back.)
    away, back = ("Next band →", "← Previous band")
    if at.button(key="review_next").disabled:
        away, back = back, away
    click(at, away)
    assert band_on_screen(at, study) != MED
    click(at, back)
    assert band_on_screen(at, study) == MED
    note = at.text_area(key=key(MED, "flag_note"))
    assert note.value == "The core gives no renal function."
    # Another band's screen tells the page a note is left unsent on this one, and the rater
    # which band it waits on.
    click(at, away)
    assert elsewhere_on_screen(at) == 1
    [waits] = [as_read(w.value) for w in at.warning if "flag is not sent" in w.value]
    assert waits.startswith("Your flag is not sent yet on Case ")
    assert waits.endswith(" · Analgesia tier: open it to send it or clear its box.")
    click(at, back)
    assert elsewhere_on_screen(at) == 0
    assert not [w for w in at.warning if "flag is not sent" in w.value]
    for button, doing in ((SUBMIT, "submit"), (SKIP, "skip this band")):
        click(at, button)
        assert band_on_screen(at, study) == MED
        said = [as_read(e.value) for e in at.error]
        # Beside the box, and above the buttons: the box may have been closed since.
        assert (
            f"Your flag is not sent yet: send it, or clear its box, before you {doing}. "
            "Nothing else was done."
        ) in said
        assert (
            f"Your flag is not sent yet: send it below, or clear its box, before you {doing}."
        ) in said
        assert at.text_area(key=key(MED, "flag_note")).value == "The core gives no renal function."
    assert not [r for r in study.reviews(study.rater, MED) if r.status == "submitted"]
    # Sent, nothing is said of it any more (above the buttons either).
    click(at, "Send the flag")
    assert at.text_area(key=key(MED, "flag_note")).value == ""
    assert not [e for e in at.error if "flag is not sent" in e.value]
    # Typed again and refused, then cleared: the same, and a box of blanks holds nothing back.
    at.text_area(key=key(MED, "flag_note")).input("A second thought.").run()
    click(at, SUBMIT)
    assert [e for e in at.error if "flag is not sent" in e.value]
    at.text_area(key=key(MED, "flag_note")).input("   ").run()
    assert not [e for e in at.error if "flag is not sent" in e.value]
    assert kept_on_screen(at)[key_class(key(MED, "flag_note"))] == "   "
    click(at, SUBMIT)
    assert band_on_screen(at, study) != MED
    [review] = study.reviews(study.rater, MED)
    assert review.status == "submitted"
    with study.store() as s:
        [flag] = marks.all_flags(s, study.coordinator)
    assert flag.note == "The core gives no renal function."


def test_signing_out_asks_first_while_a_flags_note_is_not_sent(study):
    """Signing out forgets what the session holds, a flag's note typed and not sent with it, and
    the browser asks only before a reload: the sidebar asks instead, and says how to keep it."""
    at = amended_med(study)
    at.text_area(key=key(MED, "flag_note")).input("The core gives no renal function.").run()

    def sign_out_button(label: str):
        [button] = [b for b in at.sidebar.button if b.label == label]
        return button

    sign_out_button("Sign out").click().run()
    assert at.session_state["user"] is not None and band_on_screen(at, study) == MED
    [asked] = at.sidebar.warning
    assert asked.value == (
        "The flag's note you typed on Review a band is not sent yet: signing out loses it. "
        "Send, or clear the box, or sign out anyway."
    )
    sign_out_button("Stay signed in").click().run()
    assert not at.sidebar.warning
    assert at.text_area(key=key(MED, "flag_note")).value == "The core gives no renal function."
    # Cleared, nothing is asked.
    sign_out_button("Sign out").click().run()
    assert at.sidebar.warning
    at.text_area(key=key(MED, "flag_note")).input("").run()
    assert not at.sidebar.warning
    at.text_area(key=key(MED, "flag_note")).input("The core gives no renal function.").run()
    sign_out_button("Sign out").click().run()
    sign_out_button("Sign out anyway").click().run()
    assert "user" not in at.session_state and title(at) == "Sign in"


# Automatic drafts -----------------------------------------------------------------------------


def test_what_is_typed_survives_a_reload_without_saving(study):
    at = open_review(study.rater, DOC)
    at.radio(key=key(DOC, "verdict")).set_value("AMEND").run()
    at.number_input(key=key(DOC, "band", "hi")).set_value(21).run()
    at.radio(key=key(DOC, "q1", "choice")).set_value("no").run()
    at.text_input(key=key(DOC, "q1", "note")).input("the clause says one month").run()
    at.text_area(key=key(DOC, "reason")).input("Three weeks at most.").run()
    assert study.reviews(study.rater, DOC) == []  # no review written: only the draft kept

    again = open_review(study.rater, DOC)  # a reload is a new session
    assert again.radio(key=key(DOC, "verdict")).value == "AMEND"
    assert again.number_input(key=key(DOC, "band", "hi")).value == 21
    assert again.radio(key=key(DOC, "q1", "choice")).value == "no"
    assert again.text_input(key=key(DOC, "q1", "note")).value == "the clause says one month"
    assert again.text_area(key=key(DOC, "reason")).value == "Three weeks at most."
    go(again, "app_pages/queue.py")
    assert any("in progress" in c.value for c in again.caption)


def elsewhere_on_screen(at: AppTest) -> int:
    """How many flags' notes left unsent on other bands the form's marker tells the page of."""
    [marker] = [h.proto.body for h in at.get("html") if "<div data-fma-bands-kept=" in h.proto.body]
    found = re.search(r'data-fma-bands-elsewhere="([0-9]+)"', marker)
    assert found, marker
    return int(found.group(1))


def kept_on_screen(at: AppTest) -> dict[str, str | float]:
    """What the form's marker tells the page's script the store keeps of each text field."""
    [marker] = [h.proto.body for h in at.get("html") if "<div data-fma-bands-kept=" in h.proto.body]
    found = re.search(r'data-fma-bands-kept="([A-Za-z0-9+/=]*)"', marker)
    assert found, marker
    return json.loads(base64.b64decode(found.group(1)))


def test_the_page_is_told_what_is_kept_and_not_what_could_not_be(study, monkeypatch):
    at = open_review(study.rater, DOC)
    reason = key_class(key(DOC, "reason"))
    assert kept_on_screen(at)[reason] == ""
    at.radio(key=key(DOC, "verdict")).set_value("DECLINE").run()
    at.text_area(key=key(DOC, "reason")).input("Outside what I judge </div><b>x</b>").run()
    assert kept_on_screen(at)[reason] == "Outside what I judge </div><b>x</b>"

    def refuse(*args, **kwargs):
        raise FmaBandsError("this draft is too large to keep: shorten the notes")

    # Not kept: the page goes on being told the text kept before, so a reload warns.
    monkeypatch.setattr(drafts, "keep", refuse)
    at.text_area(key=key(DOC, "reason")).input("A longer reason, not kept").run()
    assert kept_on_screen(at)[reason] == "Outside what I judge </div><b>x</b>"
    assert at.text_area(key=key(DOC, "reason")).value == "A longer reason, not kept"
    # Nor when the store keeps nothing without a word (a round closed meanwhile).
    monkeypatch.setattr(drafts, "keep", lambda *args, **kwargs: False)
    at.text_area(key=key(DOC, "reason")).input("Typed as the round closed").run()
    assert kept_on_screen(at)[reason] == "Outside what I judge </div><b>x</b>"


def test_the_page_is_told_each_bound_kept_as_a_number(study):
    at = open_review(study.rater, DOC)
    at.radio(key=key(DOC, "verdict")).set_value("AMEND").run()
    high = key_class(key(DOC, "band", "hi"))
    before = kept_on_screen(at)[high]
    at.number_input(key=key(DOC, "band", "hi")).set_value(21).run()
    assert before != 21 and kept_on_screen(at)[high] == 21


def test_the_page_is_told_only_of_the_fields_it_draws(study):
    at = open_review(study.rater, DOC)
    at.radio(key=key(DOC, "verdict")).set_value("AMEND").run()
    clause = key_class(key(DOC, "fix:clause"))
    assert kept_on_screen(at)[clause]  # the proposal's clause, kept in the draft
    # The draft still holds it once the study is blind; the blind screen never sends it.
    with study.store() as s:
        set_mode(s, actor=study.coordinator, mode="blind")
    blind = open_review(study.rater, DOC)
    told = kept_on_screen(blind)
    assert key_class(key(DOC, "reason")) in told
    assert not [name for name in told if "fix" in name]
    # A flag's note is kept only by sending the flag: the page is told nothing of it is kept.
    assert told[key_class(key(DOC, "flag_note"))] == ""


def test_a_radio_the_browser_sends_back_empty_never_empties_the_answer_kept(study):
    """A browser that opens the page again while a run is still drawing it may send a radio
    back empty (seen in chromium): no rater can empty a radio, so the answer kept is put back
    on screen and the draft keeps it, and the next real change keeps every answer."""
    at = open_review(study.rater, DOC)
    at.radio(key=key(DOC, "verdict")).set_value("AMEND").run()
    at.radio(key=key(DOC, "q1", "choice")).set_value("no").run()
    at.radio(key=key(DOC, "q1", "choice")).set_value(None).run()
    at.radio(key=key(DOC, "verdict")).set_value(None).run()
    assert not at.exception
    assert at.radio(key=key(DOC, "q1", "choice")).value == "no"
    assert at.radio(key=key(DOC, "verdict")).value == "AMEND"
    at.text_input(key=key(DOC, "q1", "note")).input("the clause says one month").run()
    again = open_review(study.rater, DOC)  # what the store kept
    assert again.radio(key=key(DOC, "verdict")).value == "AMEND"
    assert again.radio(key=key(DOC, "q1", "choice")).value == "no"
    assert again.text_input(key=key(DOC, "q1", "note")).value == "the clause says one month"


def test_a_hidden_editor_comes_back_with_its_band(study):
    at = open_review(study.rater, DOC)
    at.radio(key=key(DOC, "verdict")).set_value("AMEND").run()
    at.number_input(key=key(DOC, "band", "hi")).set_value(28).run()
    at.radio(key=key(DOC, "verdict")).set_value("DECLINE").run()
    assert not at.number_input
    at.radio(key=key(DOC, "verdict")).set_value("AMEND").run()
    assert at.number_input(key=key(DOC, "band", "hi")).value == 28


def test_a_submitted_review_says_how_often_it_was_revised_in_words(study):
    study.save(study.rater, DOC, submit=True, verdict="ACCEPT", answers=GOOD_ANSWERS)
    at = open_review(study.rater, DOC)
    assert "**Verdict:** ACCEPT" in [m.value for m in at.markdown]
    for times in ("once", "2 times"):
        study.save(study.rater, DOC, submit=True, verdict="ACCEPT", answers=GOOD_ANSWERS)
        at = open_review(study.rater, DOC)
        assert f"**Verdict:** ACCEPT (revised {times})" in [m.value for m in at.markdown]


def test_an_amend_that_changes_nothing_is_said_beside_it_not_refused(study):
    """docs/design.md lets an AMEND keep the values and correct the clause in words alone, so
    an AMEND that keeps the proposal's band and texts is said beside the band, and goes once
    anything is amended."""
    from app_pages.common import escaped
    from fma_bands.study.reviews import AMENDS_NOTHING

    def said(at) -> bool:
        return escaped(AMENDS_NOTHING) in [i.value for i in at.info]

    at = open_review(study.rater, DOC)
    at.radio(key=key(DOC, "verdict")).set_value("AMEND").run()
    assert said(at)
    upper = at.number_input(key=key(DOC, "band", "hi"))
    proposed = upper.value
    upper.set_value(proposed - 1).run()
    assert not said(at)
    at.number_input(key=key(DOC, "band", "hi")).set_value(proposed).run()
    assert said(at)
    at.text_area(key=key(DOC, "fix:clause")).input("The clause, corrected in one place.").run()
    assert not said(at)
    at.radio(key=key(DOC, "verdict")).set_value("ACCEPT").run()
    assert not said(at)


# List and range, orders ------------------------------------------------------------------------


def test_switching_list_and_range_keeps_the_band(study):
    at = open_review(study.rater, MED)
    at.radio(key=key(MED, "verdict")).set_value("AMEND").run()
    assert at.pills(key=key(MED, "band", "values")).value == [1, 2]
    at.radio(key=key(MED, "band", "form")).set_value("a range").run()
    assert at.selectbox(key=key(MED, "band", "lo")).value == 1
    assert at.selectbox(key=key(MED, "band", "hi")).value == 2
    at.selectbox(key=key(MED, "band", "hi")).set_value(3).run()
    at.radio(key=key(MED, "band", "form")).set_value("a list of values").run()
    assert at.pills(key=key(MED, "band", "values")).value == [1, 2, 3]

    # A list with a gap asks first, and stays a list until the rater says so.
    at.pills(key=key(MED, "band", "values")).set_value([1, 3]).run()
    at.radio(key=key(MED, "band", "form")).set_value("a range").run()
    [question] = [as_read(w.value) for w in at.warning if "has a gap" in as_read(w.value)]
    assert "would also admit 2 - weak opioid" in question
    assert at.radio(key=key(MED, "band", "form")).value == "a list of values"
    assert at.pills(key=key(MED, "band", "values")).value == [1, 3]
    click(at, "Make it a range")
    assert at.selectbox(key=key(MED, "band", "lo")).value == 1
    assert at.selectbox(key=key(MED, "band", "hi")).value == 3


def test_a_bound_changed_just_before_switching_to_a_list_is_kept(study):
    """A rater who picks a bound and at once switches to a list, before the page has answered:
    both changes reach the server in one run, and the switch must use the new bound."""
    at = open_review(study.rater, MED)
    at.radio(key=key(MED, "verdict")).set_value("AMEND").run()
    at.radio(key=key(MED, "band", "form")).set_value("a range").run()
    at.selectbox(key=key(MED, "band", "hi")).set_value(3)
    at.radio(key=key(MED, "band", "form")).set_value("a list of values").run()
    assert at.pills(key=key(MED, "band", "values")).value == [1, 2, 3]


def test_a_list_changed_just_before_confirming_the_range_is_the_one_made_a_range(study):
    at = open_review(study.rater, MED)
    at.radio(key=key(MED, "verdict")).set_value("AMEND").run()
    at.pills(key=key(MED, "band", "values")).set_value([1, 3]).run()
    at.radio(key=key(MED, "band", "form")).set_value("a range").run()  # a gap: it asks first
    at.pills(key=key(MED, "band", "values")).set_value([2, 3])  # arrives with the click
    click(at, "Make it a range")
    assert at.selectbox(key=key(MED, "band", "lo")).value == 2
    assert at.selectbox(key=key(MED, "band", "hi")).value == 3


# What the screen holds in a session ------------------------------------------------------------

# The keys a band's widgets and buttons have beside its entries' fields.
BUTTONS = {"submit", "skip", "flag", "flag_note", "passphrase", "reload"}
BUTTONS |= {"band:to_range", "band:keep_list"}


def test_the_screen_holds_a_band_in_one_typed_state_and_a_submission_forgets_it(study):
    """What the screen holds for a band is one BandState in the session's ReviewState: any other
    key of the band is a widget's, named for an entry or a button, never a loose slot."""
    at = open_review(study.rater, MED)
    at.radio(key=key(MED, "verdict")).set_value("AMEND").run()
    at.pills(key=key(MED, "band", "values")).set_value([1, 3]).run()
    at.radio(key=key(MED, "band", "form")).set_value("a range").run()  # a gap: it asks first
    at.text_area(key=key(MED, "reason")).input("NSAID or strong opioid; not weak.").run()

    review = at.session_state["review_screen"]
    assert isinstance(review, ReviewState)
    band = review.bands[key(MED)]
    assert band.entries["band:values"] == [1, 3]
    assert band.entries["band:form"] == "a list of values"
    assert band.entries["reason"] == "NSAID or strong opioid; not weak."
    assert band.question is not None and "has a gap" in band.question
    assert (band.version, band.tried, band.conflict) == (0, False, None)
    prefix = key(MED) + ":"
    mine = {k.removeprefix(prefix) for k in at.session_state if k.startswith(prefix)}
    assert mine and mine <= set(band.entries) | BUTTONS, mine - set(band.entries) - BUTTONS

    click(at, "Make it a range")
    assert (band.entries["band:lo"], band.entries["band:hi"], band.question) == (1, 3, None)
    answer(at, MED)
    click(at, SUBMIT)
    assert key(MED) not in review.bands
    assert not [k for k in at.session_state if k.startswith(prefix)]
    assert at.session_state["review_screen"] is review
    assert review.flash is None and review.goto is None  # said and followed
    [stored] = study.reviews(study.rater, MED)
    assert (stored.verdict, stored.band) == ("AMEND", {"min": 1, "max": 3})


@pytest.fixture
def demo_rater(monkeypatch, tmp_path):
    """The app on the bundled demo study (it has orders bands), with one rater signed up."""
    from fma_bands.core.vignettes import load_library
    from fma_bands.store.db import make_engine, session_scope, upgrade
    from fma_bands.study.enrolment import create_user
    from fma_bands.study.library import sync_vignettes
    from tests.conftest import DEMO_VIGNETTES, ROOT

    url = f"sqlite:///{tmp_path / 'demo.db'}"
    monkeypatch.setenv("FMA_BANDS_DATABASE_URL", url)
    monkeypatch.setenv("FMA_BANDS_ATTESTATIONS", str(tmp_path / "attestations"))
    monkeypatch.setenv("FMA_BANDS_VIGNETTES", str(DEMO_VIGNETTES))
    monkeypatch.chdir(ROOT)
    engine = make_engine(url)
    upgrade(engine)
    with session_scope(engine) as s:
        sync_vignettes(s, load_library([DEMO_VIGNETTES]), actor=None)
        create_user(
            s,
            actor=None,
            pseudonym="coordinator",
            passphrase="coordinator pass",
            role="coordinator",
        )
        rater = create_user(
            s,
            actor="coordinator",
            pseudonym="rater-01",
            passphrase="rater-01 pass",
            root_passphrase="coordinator pass",
            role="rater",
            specialty="emergency medicine",
            jurisdiction="Australia",
            years_post_registration=4,
        )
    engine.dispose()
    return rater, url


def test_an_order_can_be_added_by_its_readable_name_and_submitted(demo_rater):
    rater, url = demo_rater
    band = ("demo_order_border_01", "orders")
    at = open_app(rater, "app_pages/review.py", **band_params(band))
    at.radio(key=key(band, "verdict")).set_value("AMEND").run()
    controls = {
        as_read(c.label): c for c in at.segmented_control if c.key.startswith(key(band, "band"))
    }
    # Every orderable of the vignette, by the name the file gives or its key humanised.
    assert set(controls) == {"ECG", "Chest X-ray", "D-dimer", "CT pulmonary angiogram", "Troponin"}
    assert controls["ECG"].value == "required"
    controls["D-dimer"].set_value("not defensible").run()
    at.segmented_control(key=key(band, "band", "order:troponin")).set_value("required").run()
    answer(at, band)
    at.text_area(key=key(band, "reason")).input("Troponin is needed; D-dimer adds nothing.").run()
    click(at, SUBMIT)
    assert at.success[0].value.startswith("Review submitted (revision 1). That was Case ")
    from fma_bands.store.db import make_engine, session_scope

    engine = make_engine(url)
    with session_scope(engine) as s:
        [review] = s.exec(Review.__table__.select()).mappings().all()
    engine.dispose()
    assert review["band"] == {
        "required": ["ecg", "troponin"],
        "defensible": ["ctpa", "cxr", "ecg", "troponin"],
    }


def test_submit_and_next_opens_the_next_band_and_stores_the_review(study):
    at = amended_med(study)
    at.segmented_control(key=key(MED, "confidence")).set_value("high").run()
    click(at, SUBMIT)
    [submitted] = [s.value for s in at.success]
    assert submitted.startswith("Review submitted (revision 1). That was Case ")
    assert submitted.endswith(" · Analgesia tier; this is the next one.")
    assert band_on_screen(at, study) != MED
    [review] = study.reviews(study.rater, MED)
    assert (review.status, review.verdict, review.band) == ("submitted", "AMEND", [1, 3])
    assert review.confidence == "high"
    with study.store() as s:
        assert drafts.restore(s, study.rater, *MED) is None


def test_a_submission_stands_when_where_to_go_next_cannot_be_read(study, monkeypatch):
    # The next band is read once the submission is committed (the write lock is not held for
    # it); when that read fails, the review is stored all the same, said so, and the queue opens.
    def unreadable(*_args, **_kwargs):
        raise FmaBandsError("the database went away for a moment")

    at = open_review(study.rater, MED)
    at.radio(key=key(MED, "verdict")).set_value("ACCEPT").run()
    answer(at, MED)
    monkeypatch.setattr(review_screen, "after", unreadable)
    click(at, SUBMIT)
    assert not at.exception
    [submitted] = [s.value for s in at.success]
    assert submitted.startswith("Review submitted (revision 1). That was Case ")
    assert submitted.endswith(" · Analgesia tier; your queue lists the bands still to do.")
    assert [h.value for h in at.title] == ["My queue"]
    [review] = study.reviews(study.rater, MED)
    assert (review.status, review.verdict) == ("submitted", "ACCEPT")


def test_revising_a_submitted_review_writes_a_new_revision(study):
    at = open_review(study.rater, DOC)
    at.radio(key=key(DOC, "verdict")).set_value("AMEND").run()
    at.number_input(key=key(DOC, "band", "hi")).set_value(30).run()
    answer(at, DOC, reading="disputed", note="the first month is admitted by the source")
    at.text_area(key=key(DOC, "reason")).input("The clause admits the whole first month.").run()
    click(at, SUBMIT)
    go(at, "app_pages/review.py", **band_params(DOC))
    assert "Your submitted review" in [s.value for s in at.subheader]
    assert "1 day to 30 days" in plain_texts(at)
    click(at, "Revise this review")
    assert at.number_input(key=key(DOC, "band", "hi")).value == 30
    at.text_area(key=key(DOC, "reason")).input("Revised: the first month, not beyond.").run()
    click(at, SUBMIT)
    assert at.success[0].value.startswith("Review submitted (revision 2). That was Case ")
    first, second = study.reviews(study.rater, DOC)
    assert (first.revision, second.revision, second.reason) == (
        1,
        2,
        "Revised: the first month, not beyond.",
    )
    assert second.answers["q5"] == {
        "choice": "disputed",
        "note": "the first month is admitted by the source",
    }


def test_a_revision_begun_says_the_submitted_review_stands_and_can_be_left(study):
    study.save(study.rater, DOC, submit=True, verdict="ACCEPT", answers=GOOD_ANSWERS)
    at = open_review(study.rater, DOC)
    click(at, "Revise this review")
    [said] = [i.value for i in at.info if i.value.startswith("You are revising")]
    assert said.startswith("You are revising your submitted review (ACCEPT). It stands")
    buttons = [b.label for b in at.button]
    # The band is not to do: a skip would say "skipped" beside "submitted".
    assert SKIP not in buttons and "Keep the submitted review" in buttons
    at.radio(key=key(DOC, "verdict")).set_value("DECLINE").run()
    with study.store() as s:
        assert drafts.restore(s, study.rater, *DOC) is not None
    click(at, "Keep the submitted review")
    assert not at.exception
    assert "Your submitted review" in [s.value for s in at.subheader]
    [kept] = [s.value for s in at.success]
    assert kept.endswith("stands as it was: the changes made since Revise were dropped.")
    with study.store() as s:
        assert drafts.restore(s, study.rater, *DOC) is None
    [review] = study.reviews(study.rater, DOC)
    assert (review.status, review.verdict) == ("submitted", "ACCEPT")
    # Opened again, it is the submitted review, not the revision left.
    at = open_review(study.rater, DOC)
    assert "Your submitted review" in [s.value for s in at.subheader]


def test_skipping_the_last_band_left_says_so(study):
    # Every other band submitted: "comes back once the others are done" would name others that
    # are not there.
    with study.store() as s:
        rows = rater_queue(s, study.library, study.rater)
    for row in rows:
        band = (row.vignette_id, row.sub_action)
        if band != TRIAGE:
            study.save(study.rater, band, submit=True, verdict="ACCEPT", answers=GOOD_ANSWERS)
    at = open_review(study.rater, TRIAGE)
    click(at, SKIP)
    [said] = [s.value for s in at.success if s.value.startswith("Skipped for now")]
    assert said.endswith("is the only band left to review: it waits in your queue, marked skipped.")
    assert "once the others are done" not in said


def test_skip_for_now_moves_on_and_the_queue_comes_back_to_it_last(study):
    at = open_review(study.rater, TRIAGE)
    click(at, SKIP)
    assert band_on_screen(at, study) != TRIAGE
    assert any(s.value.startswith("Skipped for now") for s in at.success)
    with study.store() as s:
        assert TRIAGE in marks.open_marks(s, study.rater)["skip"]
    go(at, "app_pages/queue.py")
    assert any(c.value == "skipped" for c in at.caption)
    # Resume passes the skipped band while others are left.
    resume_button(at).click().run()
    assert band_on_screen(at, study) != TRIAGE


def queue_bands(study: page_helpers.Study) -> list[tuple[str, str]]:
    """The rater's bands in the order of their queue (the study's neutral case numbers)."""
    with study.store() as s:
        return [row.band for row in rater_queue(s, study.library, study.rater)]


def test_the_queue_resumes_at_the_band_last_worked_on(study):
    """Resume goes back to the band the rater last worked on, not the earliest unfinished one;
    once that band is submitted, on to the next one after it."""
    first, _, third, fourth = queue_bands(study)
    study.save(study.rater, first, submit=False, verdict="DECLINE")
    study.save(study.rater, third, submit=False, verdict="ACCEPT")
    at = open_app(study.rater)
    resume_button(at).click().run()
    assert band_on_screen(at, study) == third
    study.save(study.rater, third, submit=True, verdict="DECLINE", reason="outside my field")
    at = open_app(study.rater)
    resume_button(at).click().run()
    assert band_on_screen(at, study) == fourth
    # The page with no band in its address opens there too.
    go(at, "app_pages/review.py")
    assert band_on_screen(at, study) == fourth


def test_the_case_picker_lists_the_cases_and_the_bands_of_the_case_on_screen(study):
    """Each case here has one band of the rater's (a case of several: test_review_day and the
    browser test on the demo)."""
    bands = queue_bands(study)
    study.save(study.rater, bands[1], submit=True, verdict="DECLINE", reason="out of my scope")
    at = open_review(study.rater, bands[0])
    numbers = numbers_of(study)
    case_box, band_box = at.selectbox(key=CASE_PICKER), at.selectbox(key=BAND_PICKER)
    assert (case_box.label, band_box.label) == ("Go to a case", "Band of this case")
    assert case_box.options == [
        f"Case {numbers[vid]} ({'submitted' if i == 1 else 'to do'})"
        for i, (vid, _) in enumerate(bands)
    ]
    assert case_box.value == numbers[bands[0][0]]  # the case on screen
    assert band_box.options == [f"{sub_action(bands[0][1]).label} (to do)"]
    assert band_box.value == 0
    case_box.set_value(numbers[bands[2][0]]).run()
    assert not at.exception
    assert band_on_screen(at, study) == bands[2]
    assert at.selectbox(key=CASE_PICKER).value == numbers[bands[2][0]]
    # Previous band: the boxes follow the band on screen.
    click(at, "← Previous band")
    assert band_on_screen(at, study) == bands[1]
    assert at.selectbox(key=CASE_PICKER).value == numbers[bands[1][0]]
    assert at.selectbox(key=BAND_PICKER).options == [f"{sub_action(bands[1][1]).label} (submitted)"]
    assert "Your submitted review" in [s.value for s in at.subheader]


def test_the_keyboard_shortcuts_are_said_and_press_the_screens_own_buttons(study):
    band = queue_bands(study)[1]  # with a band before it and one after it
    at = open_review(study.rater, band)
    assert (
        "Keyboard shortcuts: Alt+S Submit and next · Alt+K Skip for now · Alt+N Next band · "
        "Alt+P Previous band (Option instead of Alt on a Mac)."
    ) in [c.value for c in at.caption]
    [script] = [h.proto.body for h in at.get("html") if "fmaBandsReview" in h.proto.body]
    config = json.loads(re.search(r"const config = (\{.*?\});", script).group(1))
    buttons = {
        "KeyS": key(band, "submit"),
        "KeyK": key(band, "skip"),
        "KeyN": "review_next",
        "KeyP": "review_previous",
    }
    # Each shortcut names the element of a button on screen, by the class Streamlit gives it.
    assert config == {
        "band": screen_key(*band),
        "buttons": {code: key_class(widget) for code, widget in buttons.items()},
        # The buttons that open another band: a click on the band left is stopped meanwhile.
        "moves": [key_class("review_next"), key_class("review_previous")],
    }
    for widget in buttons.values():
        assert at.button(key=widget) is not None
    assert band[0] not in script  # the browser never sees the vignette's id


def test_shortcuts_are_offered_only_for_the_buttons_on_screen(study):
    """The first band has no band before it; a submitted band no Submit or Skip. The buttons
    for either end of the queue are drawn greyed, so the case boxes never move."""
    first = queue_bands(study)[0]
    study.save(study.rater, first, submit=True, verdict="DECLINE", reason="out of my scope")
    at = open_review(study.rater, first)
    assert "Your submitted review" in [s.value for s in at.subheader]
    assert "Keyboard shortcuts: Alt+N Next band (Option instead of Alt on a Mac)." in [
        c.value for c in at.caption
    ]
    [script] = [h.proto.body for h in at.get("html") if "fmaBandsReview" in h.proto.body]
    config = json.loads(re.search(r"const config = (\{.*?\});", script).group(1))
    assert list(config["buttons"]) == ["KeyN"]
    assert at.button(key="review_previous").disabled
    assert not at.button(key="review_next").disabled


def test_a_second_tab_cannot_overwrite_the_first(study):
    tab_a, tab_b = open_review(study.rater, TRIAGE), open_review(study.rater, TRIAGE)
    for tab in (tab_a, tab_b):
        tab.radio(key=key(TRIAGE, "verdict")).set_value("DECLINE").run()
    tab_a.text_area(key=key(TRIAGE, "reason")).input("submitted from tab A").run()
    click(tab_a, SUBMIT)
    assert tab_a.success[0].value.startswith("Review submitted (revision 1). That was Case ")

    tab_b.text_area(key=key(TRIAGE, "reason")).input("typed in tab B").run()
    click(tab_b, SUBMIT)
    assert any("another tab" in e.value for e in tab_b.error)
    assert not tab_b.success
    assert tab_b.text_area(key=key(TRIAGE, "reason")).value == "typed in tab B"
    [review] = study.reviews(study.rater, TRIAGE)
    assert review.reason == "submitted from tab A"


# Blind mode -------------------------------------------------------------------------------------


def test_blind_mode_hides_the_proposal_and_starts_from_nothing(study):
    with study.store() as s:
        set_mode(s, actor=study.coordinator, mode="blind")
    at = open_app(study.rater)
    for band in BANDS:
        go(at, "app_pages/review.py", **band_params(band))
        page = shown(at)
        proposal = study.library.vignettes[band[0]].proposal(band[1])
        for part in (proposal.clause, proposal.reasoning, proposal.source, proposal.notes):
            assert part.split("\n")[0][:60] not in page, (band, part[:40])
        assert "Proposed band" not in page and "Disputed span" not in page
        verdict = at.radio(key=key(band, "verdict"))
        assert verdict.options == ["Submit my band", "DECLINE: I cannot adjudicate this band"]
    go(at, "app_pages/review.py", **band_params(DOC))
    at.radio(key=key(DOC, "verdict")).set_value("AMEND").run()
    assert at.number_input(key=key(DOC, "band", "hi")).value is None
    assert "14 days" not in shown(at)


def test_closed_phase_shows_no_form(study):
    from fma_bands.study.rounds import close_round

    with study.store() as s:
        close_round(s, actor=study.coordinator)
    at = open_review(study.rater, DOC)
    assert [i.value for i in at.info if "vary by run" not in i.value] == [
        "The review phase is closed: reviews can no longer change."
    ]
    assert not [b for b in at.button if b.label in (SUBMIT, SKIP)]


def test_a_click_on_the_band_just_left_that_comes_after_the_move_is_not_kept_there(study):
    """The browser still draws the band left while the next one loads: a click on it that
    reaches the server after the move (the address already names another band) would change
    a band the rater no longer sees. It is refused and said; the band keeps what it had."""
    at = open_review(study.rater, MED)
    at.radio(key=key(MED, "q1", "choice")).set_value("yes")
    run(at)
    # The move has reached the server (the address names another band) but the browser has
    # not drawn that band yet: the old band's radio is clicked.
    for name, value in band_params(DOC).items():
        at.query_params[name] = value
    at.radio(key=key(MED, "q1", "choice")).set_value("no")
    run(at)
    assert band_on_screen(at, study) == DOC
    [late] = [w.value for w in at.warning]
    assert late.replace("\\", "").startswith("A click on Case ")
    assert "came after you had moved on, and was not kept there" in late
    with study.store() as s:
        kept = drafts.restore(s, study.rater, *MED)
    assert kept is not None and kept.entries.get("q1:choice") == "yes"
    # Said once: the next run of the form says nothing of it.
    at.radio(key=key(DOC, "q1", "choice")).set_value("yes")
    run(at)
    assert not at.warning


def test_the_band_left_sent_again_with_a_click_on_the_next_band_changes_nothing_on_screen(study):
    """A click on the next band made before its run has ended reaches the server with every
    value the browser still holds, the band left's too, which the server forgot once that band
    was no longer drawn. Nothing of the band left changed: nothing is said of it, and when it
    opens again its answers are sent to the browser (which forgot them with the band), never
    left to the browser, which would show them empty while the store holds them."""
    at = open_review(study.rater, MED)
    at.radio(key=key(MED, "q1", "choice")).set_value("unsure")
    run(at)
    left = at.radio(key=key(MED, "q1", "choice"))._widget_state  # the browser's copy
    away, back = (
        ("Next band →", "← Previous band")
        if not at.button(key="review_next").disabled
        else ("← Previous band", "Next band →")
    )
    click(at, away)
    there = band_on_screen(at, study)
    assert there != MED
    at.radio(key=key(there, "q1", "choice")).set_value("no")
    # AppTest sends only the widgets on screen: the band left's value is added, as the browser
    # adds it while it has not yet seen the next band's run end.
    sent = at._tree.get_widget_states()
    sent.widgets.append(left)
    at._run(sent)
    assert not at.exception, [e.value for e in at.exception]
    assert not [w.value for w in at.warning if "came after you had moved on" in w.value]
    with study.store() as s:
        kept = drafts.restore(s, study.rater, *there)
    assert kept is not None and kept.entries.get("q1:choice") == "no"
    click(at, back)
    assert band_on_screen(at, study) == MED
    radio = at.radio(key=key(MED, "q1", "choice"))
    assert radio.value == "unsure"
    assert radio.proto.set_value, "the answer kept was not sent: the browser shows it empty"


def test_a_submit_of_the_band_just_left_that_comes_after_the_move_submits_nothing(study):
    at = amended_med(study)
    for name, value in band_params(DOC).items():
        at.query_params[name] = value
    click(at, SUBMIT)
    assert band_on_screen(at, study) == DOC
    assert "came after you had moved on" in " ".join(w.value for w in at.warning)
    assert all(r.status != "submitted" for r in study.reviews(study.rater, MED))


def test_a_change_sent_with_the_move_was_made_before_it_and_is_kept(study):
    """A reason typed and then Next band pressed reach the server together: the reason was the
    band's own before the move, whatever order the two are read in."""
    at = open_review(study.rater, MED)
    away = "Next band →" if not at.button(key="review_next").disabled else "← Previous band"
    at.text_area(key=key(MED, "reason")).input("typed before moving on")
    [button] = [b for b in at.button if b.label == away]
    button.click()
    run(at)
    assert band_on_screen(at, study) != MED
    assert not at.warning
    with study.store() as s:
        kept = drafts.restore(s, study.rater, *MED)
    assert kept is not None and kept.entries.get("reason") == "typed before moving on"


def test_two_tabs_on_one_band_keep_each_others_answers(study):
    """A rater with the band open in two tabs answers in one and types a reason in the other,
    whose screen never saw the answer: the kept draft holds both (only the field changed is
    written), so a reload or Load the saved version loses neither."""
    first, second = open_review(study.rater, MED), open_review(study.rater, MED)
    first.radio(key=key(MED, "q1", "choice")).set_value("yes")
    run(first)
    second.text_area(key=key(MED, "reason")).input("written in the second tab")
    run(second)
    with study.store() as s:
        kept = drafts.restore(s, study.rater, *MED)
    assert kept is not None
    assert kept.entries.get("q1:choice") == "yes"
    assert kept.entries.get("reason") == "written in the second tab"
