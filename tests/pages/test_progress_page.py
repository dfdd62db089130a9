"""The coordinator's day under streamlit's AppTest: the Raters' progress page (progress, pace,
share of ACCEPT, flags, closing the phase only once confirmed) and the audit log's filters."""

from fma_bands.study import audit, marks
from fma_bands.study.rounds import close_round
from fma_bands.study.state import study as study_settings
from tests import page_helpers
from tests.page_helpers import (
    DOC,
    GOOD_ANSWERS,
    MED,
    TRIAGE,
    as_read,
    click,
    go,
    open_app,
    run,
    title,
)

fresh_caches, app_env, template, study = (
    page_helpers.fresh_caches,
    page_helpers.app_env,
    page_helpers.template,
    page_helpers.study,
)


def rows_of(at) -> dict[str, dict]:
    table = at.dataframe[0].value  # the raters' table comes first
    return {row["rater"]: row for row in table.to_dict("records")}


def test_the_progress_page_shows_each_raters_progress_and_flags(study):
    study.save(study.rater, DOC, submit=True, verdict="ACCEPT", answers=GOOD_ANSWERS)
    study.save(study.rater, MED, submit=True, verdict="DECLINE", reason="out of scope")
    study.save(study.other, TRIAGE, submit=False, verdict="DECLINE")
    with study.store() as s:
        marks.flag(s, study.library, study.other, *TRIAGE, "The vignette lacks an ECG time.")
    at = open_app(study.coordinator, "app_pages/progress.py")
    assert title(at) == "Raters' progress"
    rows = rows_of(at)
    assert rows["rater-01"]["submitted"] == "2 of 4"
    assert rows["rater-01"]["ACCEPT"] == "50% of 2"
    assert (rows["rater-02"]["submitted"], rows["rater-02"]["in progress"]) == ("0 of 4", 1)
    assert any(h.value == "Flags for you (1)" for h in at.subheader)
    assert "The vignette lacks an ECG time." in [t.value for t in at.text]
    click(at, "Mark as dealt with")
    assert [s.value for s in at.success] == ["Flag marked as dealt with."]
    assert any(h.value == "Flags for you (0)" for h in at.subheader)
    assert any(c.value == "No rater has flagged a band." for c in at.caption)


def test_the_progress_page_is_the_coordinators_alone(study):
    at = open_app(study.rater)
    try:
        at.switch_page("app_pages/progress.py")
    except ValueError:
        return  # not even in a rater's navigation
    run(at)
    assert not at.dataframe


def test_closing_the_phase_asks_first_and_says_what_it_does(study):
    at = open_app(study.coordinator, "app_pages/progress.py")
    assert any("freezes every review" in m.value for m in at.markdown)
    [close] = [b for b in at.button if b.label == "Close the review phase"]
    assert close.disabled
    with study.store() as s:
        assert study_settings(s).phase == "open"
    at.checkbox(key="close_sure").check().run()
    click(at, "Close the review phase")
    with study.store() as s:
        assert study_settings(s).phase == "closed"
    assert [s.value for s in at.success] == ["The review phase is closed."]
    assert not [b for b in at.button if b.label == "Close the review phase"]


def test_a_round_closed_meanwhile_is_said_so_not_closed_twice(study, monkeypatch):
    at = open_app(study.coordinator, "app_pages/progress.py")
    at.checkbox(key="close_sure").check().run()
    with study.store() as s:
        seen = study_settings(s)  # round 1 open, as the page was drawn
        close_round(s, actor=study.coordinator)  # another coordinator closes it meanwhile
    # A browser reruns only the button's fragment, which has not read the round since; AppTest
    # reruns the whole page, so the page is made to read what it read before.
    monkeypatch.setattr("fma_bands.study.state.study", lambda session: seen)
    click(at, "Close the review phase")
    assert [as_read(e.value) for e in at.error] == [
        "round 1 is closed already: its reviews are frozen, and a closed round is never reopened"
    ]
    with study.store() as s:
        assert len(audit.events(s, kinds=["phase_changed"])) == 1


def test_the_audit_log_filters_by_kind_and_who(study):
    study.save(study.rater, DOC, submit=True, verdict="ACCEPT", answers=GOOD_ANSWERS)
    at = open_app(study.coordinator, "app_pages/audit_log.py")
    [what] = [m for m in at.multiselect if m.label == "What"]
    what.set_value(["review_submitted"]).run()
    [frame] = at.dataframe
    table = frame.value
    assert list(table["what"]) == ["review submitted"]
    assert list(table["who"]) == ["rater-01"]
    assert "verdict: ACCEPT" in table["details"][0]
    [who] = [s for s in at.selectbox if s.label == "Who"]
    who.set_value("coordinator").run()
    assert at.dataframe[0].value.empty
    assert any(c.value.startswith("0 matching events") for c in at.caption)
    go(at, "app_pages/progress.py")
    go(at, "app_pages/audit_log.py")
    assert len(at.dataframe[0].value) > 1  # a new visit starts from every event
