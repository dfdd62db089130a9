"""An AMEND's corrections on the review screen under streamlit's AppTest (issue 22): the clause,
source and reasoning start from the proposal's and say when changed, the disputed span is kept,
cleared or written by the rater with its problems beside it, all of it kept in the automatic
draft and stored with the review; blind mode shows none of it."""

import csv
import io
import json

from app_pages.progress_screen import reviews_csv
from fma_bands.study.state import set_mode
from tests import page_helpers
from tests.page_helpers import DOC, MED, as_read, click, key, message_beside, open_review, texts

fresh_caches, app_env, template, study = (
    page_helpers.fresh_caches,
    page_helpers.app_env,
    page_helpers.template,
    page_helpers.study,
)
GOOD = (("q1", "no"), ("q2", "yes"), ("q3", "no"), ("q4", "no"), ("q6", "yes"))
CLAUSE = "Follow-up within 30 days of discharge is advised after hyperglycaemia in hospital."
CHANGED = "Changed from the proposal's clause."


def answer(at, band) -> None:
    for q, choice in GOOD:
        at.radio(key=key(band, q, "choice")).set_value(choice).run()
    at.text_input(key=key(band, "q1", "note")).input("the clause misquotes the guideline").run()
    at.radio(key=key(band, "q5", "choice")).set_value("neither").run()
    at.text_input(key=key(band, "q5", "note")).input("a month or more is open").run()


def test_an_amend_whose_band_takes_in_the_kept_span_is_told_what_is_left_of_it(study):
    """The proposal's span is 15 to 30 days: an AMEND that widens the band into it, keeping the
    span, is told that the span holds only what the band leaves out (the export's rule), before
    it is submitted; recording its own span or none says nothing more."""

    def said(at) -> list[str]:
        return [i.value.replace("\\", "") for i in at.info if "disputed span also" in i.value]

    at = open_review(study.rater, DOC)
    at.radio(key=key(DOC, "verdict")).set_value("AMEND").run()
    assert said(at) == []
    at.number_input(key=key(DOC, "band", "hi")).set_value(20).run()
    [told] = said(at)
    assert told.startswith("Your band admits 15 to 20 days, which the proposal's disputed span")
    assert "for your review it keeps only 21 to 30 days." in told
    at.number_input(key=key(DOC, "band", "hi")).set_value(30).run()
    [told] = said(at)
    assert "nothing of it is left, so your review records no disputed span" in told
    at.radio(key=key(DOC, "span:choice")).set_value("none").run()
    assert said(at) == []
    # A span of their own, not yet written: its own message says what is missing; this one is
    # not said.
    at.radio(key=key(DOC, "span:choice")).set_value("set").run()
    at.number_input(key=key(DOC, "span:lo")).set_value(None).run()
    assert message_beside(at, key(DOC, "span:hi")) is not None
    assert said(at) == []
    at.radio(key=key(DOC, "span:choice")).set_value("keep").run()
    assert said(at)
    # Question 5 answered with the band's reading: the review leaves nothing disputed (the
    # export's rule), so there is nothing left of the span to speak of.
    at.radio(key=key(DOC, "q5", "choice")).set_value("band").run()
    assert said(at) == []
    at.radio(key=key(DOC, "q5", "choice")).set_value("neither").run()
    assert said(at)


def test_an_amend_corrects_the_clause_and_writes_its_own_disputed_span(study):
    proposal = study.library.vignettes[DOC[0]].proposal(DOC[1])
    at = open_review(study.rater, DOC)
    assert not [w for w in at.text_area if w.key == key(DOC, "fix:clause")]
    at.radio(key=key(DOC, "verdict")).set_value("AMEND").run()
    clause = at.text_area(key=key(DOC, "fix:clause"))
    assert clause.value == proposal.clause
    assert at.text_area(key=key(DOC, "fix:source")).value == proposal.source
    assert CHANGED not in texts(at)
    clause.input(CLAUSE).run()
    assert CHANGED in texts(at)
    span = at.radio(key=key(DOC, "span:choice"))
    assert span.value == "keep"
    span.set_value("set").run()
    at.number_input(key=key(DOC, "span:lo")).set_value(10).run()
    at.number_input(key=key(DOC, "span:hi")).set_value(45).run()
    # Shown as the rater works, beside the span, before any submit.
    assert message_beside(at, key(DOC, "span:hi")) == (
        "the disputed span repeats values already in your band (10 to 14 days): it holds only "
        "what the band leaves out"
    )
    at.number_input(key=key(DOC, "span:lo")).set_value(31).run()
    assert message_beside(at, key(DOC, "span:hi")) is None

    # A reload (a new session) finds everything in the automatic draft.
    at = open_review(study.rater, DOC)
    assert at.text_area(key=key(DOC, "fix:clause")).value == CLAUSE
    assert at.radio(key=key(DOC, "span:choice")).value == "set"
    assert at.number_input(key=key(DOC, "span:lo")).value == 31
    answer(at, DOC)
    at.text_area(key=key(DOC, "reason")).input("The values stand; the clause does not.").run()
    click(at, "Submit and next")
    [review] = study.reviews(study.rater, DOC)
    assert review.band == {"min": 1, "max": 14}
    assert review.corrections == {"clause": CLAUSE, "disputed_span": {"min": 31, "max": 45}}
    # The coordinator's CSV of every review carries them.
    with study.store() as s:
        text = reviews_csv(s, study.library, viewer=study.coordinator)
    [row] = [r for r in csv.DictReader(io.StringIO(text)) if r["vignette_id"] == DOC[0]]
    assert json.loads(row["corrections"]) == review.corrections

    # Opened again, the submitted review shows them; revising starts from them.
    at = open_review(study.rater, DOC)
    assert CLAUSE in [t.value for t in at.text]
    assert "31 days to 45 days" in [t.value for t in at.text]
    click(at, "Revise this review")
    assert at.text_area(key=key(DOC, "fix:clause")).value == CLAUSE
    bounds = [at.number_input(key=key(DOC, f"span:{b}")).value for b in ("lo", "hi")]
    assert bounds == [31, 45]


def test_no_disputed_span_is_a_choice_and_a_list_span_is_values_outside_the_band(study):
    at = open_review(study.rater, MED)  # analgesia {1, 2}, no disputed span recorded
    at.radio(key=key(MED, "verdict")).set_value("AMEND").run()
    span = at.radio(key=key(MED, "span:choice"))
    assert span.options == ["no disputed span", "a disputed span of my own"]
    assert span.value == "none"
    span.set_value("set").run()
    at.pills(key=key(MED, "span:values")).set_value([2, 3]).run()
    assert as_read(message_beside(at, key(MED, "span:values")) or "").startswith(
        "the disputed span repeats values already in your band (2 - weak opioid)"
    )


def test_blind_mode_shows_no_proposal_text_to_correct(study):
    with study.store() as s:
        set_mode(s, actor=study.coordinator, mode="blind")
    at = open_review(study.rater, DOC)
    at.radio(key=key(DOC, "verdict")).set_value("AMEND").run()
    assert not [w for w in at.text_area if str(w.key).endswith(("fix:clause", "fix:reasoning"))]
    assert not [r for r in at.radio if str(r.key).endswith("span:choice")]
