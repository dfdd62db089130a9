"""The coordinator's day under streamlit's AppTest: the Raters' progress page (progress, pace,
share of ACCEPT, flags, closing the phase only once confirmed) and the audit log's filters."""

import csv
import io
import json
import re
from datetime import date

from fma_bands.study import audit, marks
from fma_bands.study.rounds import close_round
from fma_bands.study.state import study as study_settings
from tests import page_helpers
from tests.page_helpers import (
    DOC,
    GOOD_ANSWERS,
    MED,
    ORDER,
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
    click(at, "Mark as dealt with, no reply")
    assert [s.value for s in at.success] == ["Flag marked as dealt with."]
    assert any(h.value == "Flags for you (0)" for h in at.subheader)
    assert any(c.value == "No flag waits for you: 1 flag dealt with." for c in at.caption)
    assert not any(c.value == "No rater has flagged a band." for c in at.caption)


def test_a_reply_to_a_flag_reaches_its_rater_alone_as_a_query_they_can_answer(study):
    from fma_bands.study import queries

    with study.store() as s:
        marks.flag(s, study.library, study.other, *TRIAGE, "The vignette lacks an ECG time.")
    at = open_app(study.coordinator, "app_pages/progress.py")
    [box] = [t for t in at.text_area if t.label.startswith("Reply to rater-02 ")]
    # Nothing typed: said beside the box, and the flag still waits.
    click(at, "Reply and mark as dealt with")
    assert "write the message first: one sentence is enough" in [
        e.value.replace("\\", "") for e in at.error
    ]
    assert any(h.value == "Flags for you (1)" for h in at.subheader)
    [box] = [t for t in at.text_area if t.label.startswith("Reply to rater-02 ")]
    box.input("The ECG time is in the results at this step: 10:42.")
    click(at, "Reply and mark as dealt with")
    assert [s.value for s in at.success] == [
        "Your reply is sent to rater-02 (under Queries, where they can answer), and the flag "
        "is marked as dealt with."
    ]
    assert any(h.value == "Flags for you (0)" for h in at.subheader)
    assert not at.error
    with study.store() as s:
        [thread] = queries.threads(s, study.other)
        assert queries.threads(s, study.rater) == []
        assert queries.awaiting(s, study.other) == 1
    assert thread.band == TRIAGE
    [message] = thread.messages
    assert message.body.startswith(marks.FLAG_REPLY + " ")
    # The flag answered is quoted: the thread holds only what its two sides wrote.
    assert message.body.endswith(
        ' UTC, "The vignette lacks an ECG time.": The ECG time is in the results at this step: '
        "10:42."
    )


def test_the_figures_follow_a_save_and_what_is_not_recorded_too(study):
    """Reviews are read once per state of the store (store_state): a save is recorded, so the
    next run counts it; a skip and a screen's unsaved draft are not recorded, and are read on
    every run all the same."""
    from fma_bands.study import drafts

    at = open_app(study.coordinator, "app_pages/progress.py")
    assert rows_of(at)["rater-01"]["submitted"] == "0 of 4"
    run(at)  # nothing new: the same figures
    assert rows_of(at)["rater-01"]["submitted"] == "0 of 4"
    study.save(study.rater, DOC, submit=True, verdict="ACCEPT", answers=GOOD_ANSWERS)
    run(at)
    assert rows_of(at)["rater-01"]["submitted"] == "1 of 4"
    with study.store() as s:
        marks.skip(s, study.library, study.rater, *MED)
        drafts.keep(s, study.rater, *TRIAGE, {"verdict": "DECLINE"}, base_version=0)
    run(at)
    assert (rows_of(at)["rater-01"]["skipped"], rows_of(at)["rater-01"]["in progress"]) == (1, 1)
    # A revision begun on a submitted band and left unsent: the band stays submitted, as the
    # rater's own queue says it is, never work in progress as well.
    with study.store() as s:
        drafts.keep(s, study.rater, *DOC, {"verdict": "DECLINE"}, base_version=1)
    run(at)
    assert (rows_of(at)["rater-01"]["submitted"], rows_of(at)["rater-01"]["in progress"]) == (
        "1 of 4",
        1,
    )
    # A band skipped for now with a draft of it kept, on screen or saved, is skipped, as the
    # rater's queue says: never in progress as well (1 + 1 + 2 of 4 would read as 5 of 4).
    with study.store() as s:
        drafts.keep(s, study.rater, *MED, {"verdict": "DECLINE"}, base_version=0)
    study.save(study.rater, ORDER, submit=False, verdict="DECLINE")
    with study.store() as s:
        marks.skip(s, study.library, study.rater, *ORDER)
    run(at)
    row = rows_of(at)["rater-01"]
    assert (row["submitted"], row["in progress"], row["skipped"]) == ("1 of 4", 1, 2)


def test_the_progress_page_is_the_coordinators_alone(study):
    at = open_app(study.rater)
    try:
        at.switch_page("app_pages/progress.py")
    except ValueError:
        return  # not even in a rater's navigation
    run(at)
    assert not at.dataframe


def test_closing_the_phase_asks_first_and_says_what_it_does(study):
    study.save(study.rater, DOC, submit=True, verdict="ACCEPT", answers=GOOD_ANSWERS)
    at = open_app(study.coordinator, "app_pages/progress.py")
    # Work left undone is said before the round freezes it, by rater, with what is left.
    [undone] = [as_read(w.value) for w in at.warning if "Not every rater is done" in w.value]
    left = dict(re.findall(r"(rater-0\d), (\d+) of \d+ bands", undone))
    assert set(left) == {"rater-01", "rater-02"}
    assert int(left["rater-01"]) + 1 == int(left["rater-02"])  # rater-01 submitted one
    assert undone.endswith("a closed round is never reopened.")
    [closing] = [m.value for m in at.markdown if "freezes every review" in m.value]
    assert "and in round 2 each band's raters see round 1's answers beside it" in closing
    assert closing.endswith(": bands still in dispute go to round 2, opened on Study admin.")
    [close] = [b for b in at.button if b.label == "Close round 1"]
    assert close.disabled
    with study.store() as s:
        assert study_settings(s).phase == "open"
    at.checkbox(key="close_sure").check().run()
    click(at, "Close round 1")
    with study.store() as s:
        assert study_settings(s).phase == "closed"
    assert [s.value for s in at.success] == ["Round 1 is closed: its reviews are frozen."]
    assert not [b for b in at.button if b.label == "Close round 1"]


def test_a_round_closed_meanwhile_is_said_so_not_closed_twice(study, monkeypatch):
    at = open_app(study.coordinator, "app_pages/progress.py")
    at.checkbox(key="close_sure").check().run()
    with study.store() as s:
        seen = study_settings(s)  # round 1 open, as the page was drawn
        close_round(s, actor=study.coordinator)  # another coordinator closes it meanwhile
    # A browser reruns only the button's fragment, which has not read the round since; AppTest
    # reruns the whole page, so the page is made to read what it read before.
    monkeypatch.setattr("fma_bands.study.state.study", lambda session: seen)
    click(at, "Close round 1")
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
    assert not at.dataframe  # no empty table: a sentence says so
    assert [i.value for i in at.info] == ["No event matches these filters."]
    who.set_value(None)
    [since] = [d for d in at.date_input if d.label == "From (UTC)"]
    [until] = [d for d in at.date_input if d.label == "Until (UTC)"]
    since.set_value(date(2026, 3, 2))
    until.set_value(date(2026, 3, 1)).run()
    assert [i.value for i in at.info] == [
        "No event matches these filters: the From day is after the Until day."
    ]
    go(at, "app_pages/progress.py")
    go(at, "app_pages/audit_log.py")
    # Back from another page, the filters are as the coordinator left them (for the session).
    assert [i.value for i in at.info] == [
        "No event matches these filters: the From day is after the Until day."
    ]


def csv_rows(study) -> list[dict[str, str]]:
    from app_pages.progress_screen import reviews_csv

    with study.store() as s:
        text = reviews_csv(s, study.library, viewer=study.coordinator)
    return list(csv.DictReader(io.StringIO(text)))


def test_the_reviews_csv_gives_the_round_and_the_band_in_words_and_harness_values(study):
    study.save(study.rater, DOC, submit=True, verdict="ACCEPT", answers=GOOD_ANSWERS)
    study.save(
        study.rater,
        MED,
        submit=True,
        verdict="AMEND",
        band=[1, 3],
        answers=GOOD_ANSWERS,
        reason="=HYPERLINK(x) tier 2 alone is too narrow",
    )
    study.save(study.other, TRIAGE, submit=True, verdict="DECLINE", reason="cannot say")
    study.save(
        study.other,
        DOC,
        submit=True,
        verdict="AMEND",
        band={"min": 1, "max": 14},
        answers=GOOD_ANSWERS | {"q5": {"choice": "neither", "note": "For this patient."}},
        reason="The span runs longer.",
        corrections={"clause": "Review at two weeks.", "disputed_span": {"min": 15, "max": 60}},
    )
    rows = csv_rows(study)
    by_band = {(r["vignette_id"], r["sub_action"], r["rater"]): r for r in rows}
    accepted = by_band[(*DOC, "rater-01")]
    # ACCEPT: the rater's band is the proposal's, written out on the row, never left empty.
    assert accepted["round"] == "1"
    assert accepted["band"] == "1 day to 14 days"
    assert accepted["band_harness"] == "acceptable: {min: 1, max: 14}"
    assert accepted["sub_action_name"] == "Follow-up interval (days)"
    # Question 5's code, and the words the screen gave the rater for it.
    assert (accepted["q5_choice"], accepted["q5_reading_words"]) == ("band", "the band's reading")
    amended = by_band[(*MED, "rater-01")]
    assert amended["band"] == "1 - NSAID, 3 - strong opioid"
    assert amended["band_harness"] == "acceptable: [1, 3]"
    # The spreadsheet guard still holds: a formula is text.
    assert amended["reason"] == "'=HYPERLINK(x) tier 2 alone is too narrow"
    # An AMEND's corrections: as JSON for a script, and in the words the review page uses.
    corrected = by_band[(*DOC, "rater-02")]
    assert json.loads(corrected["corrections"])["clause"] == "Review at two weeks."
    assert corrected["corrections_words"] == (
        "Corrected clause: Review at two weeks. · Disputed span: 15 days to 60 days"
    )
    assert accepted["corrections_words"] == ""
    declined = by_band[(*TRIAGE, "rater-02")]
    assert (declined["band"], declined["band_harness"]) == ("none (declined)", "")
    assert all("{" not in r["band"] and '"' not in r["band_harness"] for r in rows)
    # In case order.
    cases = [int(r["case"]) for r in rows]
    assert cases == sorted(cases)


def test_the_reviews_csv_keeps_each_rounds_review_under_its_round(study, tmp_path):
    from fma_bands.study.rounds import open_round

    study.save(study.rater, DOC, submit=True, verdict="ACCEPT", answers=GOOD_ANSWERS)
    with study.store() as s:
        close_round(s, actor=study.coordinator)
        open_round(
            s, study.library, actor=study.coordinator, number=2, folder=tmp_path, bands=[DOC]
        )
    study.save(
        study.rater,
        DOC,
        submit=True,
        verdict="AMEND",
        band={"min": 1, "max": 30},
        answers=GOOD_ANSWERS,
        reason="the panel convinced me",
    )
    rows = [r for r in csv_rows(study) if (r["vignette_id"], r["rater"]) == (DOC[0], "rater-01")]
    assert [(r["round"], r["verdict"], r["band_harness"]) for r in rows] == [
        ("1", "ACCEPT", "acceptable: {min: 1, max: 14}"),
        ("2", "AMEND", "acceptable: {min: 1, max: 30}"),
    ]


def quorum_table(at):
    [table] = [f.value for f in at.dataframe if "status" in f.value.columns]
    return table


def test_in_round_two_the_figures_are_round_twos_alone(study, tmp_path):
    from fma_bands.study.rounds import open_round

    for band in (DOC, MED, TRIAGE):
        study.save(study.rater, band, submit=True, verdict="ACCEPT", answers=GOOD_ANSWERS)
    study.save(study.other, DOC, submit=True, verdict="ACCEPT", answers=GOOD_ANSWERS)
    with study.store() as s:
        close_round(s, actor=study.coordinator)
        open_round(
            s, study.library, actor=study.coordinator, number=2, folder=tmp_path, bands=[DOC]
        )
    at = open_app(study.coordinator, "app_pages/progress.py")
    assert any(h.value == "Round 2 (open)" for h in at.subheader)
    # Closing round 2 says what it ends: nothing of a round after it.
    [closing] = [m.value for m in at.markdown if "freezes every review" in m.value]
    assert "Closing round 2 **freezes every review**" in closing
    assert "in round 2 each band's raters see" not in closing
    assert closing.endswith(
        "raters see the Agreement page. The protocol never reopens a closed round."
    )
    assert any(c.value.startswith("Every figure on this page is of round 2") for c in at.caption)
    rows = rows_of(at)
    # Round 2 re-reviews one band with each rater, and nobody has reviewed it in round 2 yet.
    assert rows["rater-01"]["submitted"] == "0 of 1"
    assert rows["rater-01"]["ACCEPT"] == "not yet"
    bands = quorum_table(at)
    assert list(bands["vignette"]) == [DOC[0]]
    assert (bands.iloc[0]["assigned"], bands.iloc[0]["submitted"]) == (2, 0)
    study.save(
        study.rater, DOC, submit=True, verdict="ACCEPT", answers=GOOD_ANSWERS, reason="as before"
    )
    at = open_app(study.coordinator, "app_pages/progress.py")
    assert rows_of(at)["rater-01"]["submitted"] == "1 of 1"
    assert rows_of(at)["rater-01"]["ACCEPT"] == "100% of 1"
    # Round 1's figures stay to be read, its round closed.
    at.radio(key="progress:round").set_value(1).run()
    assert any(h.value == "Round 1 (closed)" for h in at.subheader)
    assert (rows_of(at)["rater-01"]["submitted"], rows_of(at)["rater-02"]["submitted"]) == (
        "3 of 4",
        "1 of 4",
    )
    assert set(quorum_table(at)["vignette"]) >= {MED[0], TRIAGE[0]}


def test_no_band_short_of_the_quorum_is_said_in_a_sentence_not_an_empty_table(
    study, tmp_path, monkeypatch
):
    monkeypatch.setenv("FMA_BANDS_ATTESTATIONS", str(tmp_path / "att"))
    study.set_policy(tmp_path / "att", quorum=1)
    for band in (DOC, MED, ORDER, TRIAGE):
        study.save(study.rater, band, submit=True, verdict="ACCEPT", answers=GOOD_ANSWERS)
    at = open_app(study.coordinator, "app_pages/progress.py")
    assert [i.value for i in at.info] == ["No band of round 1 is short of the quorum."]
    assert not [f for f in at.dataframe if "status" in f.value.columns]
    at.toggle(key="quorum:short").set_value(False).run()
    assert set(quorum_table(at)["status"]) == {"quorum reached"}
    assert all(not f.value.empty for f in at.dataframe)


def test_with_no_policy_no_band_is_counted_short_of_a_quorum_there_is_not(study, monkeypatch):
    """No policy, no quorum: the bands are listed with their reviews, none said short of it
    (nor "0 of 4 have a quorum"), and there is no filter for bands short of it."""
    study.save(study.rater, DOC, submit=True, verdict="ACCEPT", answers=GOOD_ANSWERS)
    at = open_app(study.coordinator, "app_pages/progress.py")
    [said] = [c.value for c in at.caption if "quorum" in c.value]
    assert said.startswith("No registry policy is signed yet, so there is no quorum to count")
    assert " of 4 bands have current reviews" not in said
    assert not [t for t in at.toggle if t.key == "quorum:short"]
    bands = quorum_table(at)
    assert len(bands) == 4 and set(bands["status"]) == {"no policy: quorum unknown"}
    assert list(bands["case"]) == sorted(bands["case"])  # in case order, as raters read them
    assert not [c for c in at.caption if "scroll" in c.value]  # four rows: all in sight
    # More rows than the table shows: the line above it says that it scrolls.
    monkeypatch.setattr("app_pages.band_table.IN_SIGHT", 3)
    at = open_app(study.coordinator, "app_pages/progress.py")
    assert (
        "4 bands, in case order: the table shows 3 at a time; scroll inside it for the rest."
        in [c.value for c in at.caption]
    )
    assert dict(zip(bands["vignette"], bands["submitted"], strict=True))[DOC[0]] == 1


def test_once_the_round_is_closed_a_short_band_says_what_it_came_to(study, tmp_path, monkeypatch):
    monkeypatch.setenv("FMA_BANDS_ATTESTATIONS", str(tmp_path / "att"))
    study.set_policy(tmp_path / "att", quorum=2)
    study.save(study.rater, DOC, submit=True, verdict="ACCEPT", answers=GOOD_ANSWERS)
    at = open_app(study.coordinator, "app_pages/progress.py")
    open_status = quorum_table(at).set_index("vignette")["status"]
    assert open_status[DOC[0]] == "needs 1 more"
    with study.store() as s:
        close_round(s, actor=study.coordinator)
    at = open_app(study.coordinator, "app_pages/progress.py")
    closed_status = quorum_table(at).set_index("vignette")["status"]
    assert closed_status[DOC[0]] == "round closed, 1 short of the quorum"
    assert closed_status[TRIAGE[0]] == "round closed, 2 short of the quorum"
    # Each column as wide as set for a 1280-pixel window, and a status longer than its column
    # wraps onto a taller row rather than being cut short.
    from app_pages.band_table import ROW, SHORTEST_WRAPPING_ROW

    [grid] = [f for f in at.dataframe if "status" in f.value.columns]
    widths = {n: c["width"] for n, c in json.loads(grid.proto.columns).items() if "width" in c}
    assert set(widths) == set(grid.value.columns)
    assert sum(widths.values()) <= 780  # the main column beside the open sidebar
    assert grid.proto.row_height == SHORTEST_WRAPPING_ROW > ROW  # two lines: it wraps


def test_the_audit_log_shows_a_whole_page_of_rows_and_counts_them(study, monkeypatch):
    from streamlit.delta_generator import DeltaGenerator

    heights = []
    drawn = DeltaGenerator.dataframe

    def dataframe(self, data=None, *args, **kwargs):
        heights.append((len(data), kwargs.get("height")))
        return drawn(self, data, *args, **kwargs)

    monkeypatch.setattr(DeltaGenerator, "dataframe", dataframe)
    with study.store() as s:
        for n in range(60):
            audit.record(s, kind="note_made", actor="coordinator", payload={"n": n})
        total = len(audit.events(s))
    at = open_app(study.coordinator, "app_pages/audit_log.py")
    [frame] = at.dataframe
    assert len(frame.value) == 25
    # Every row of the page is drawn without scrolling inside the grid: 25 rows and a header.
    assert heights[-1] == (25, 35 * 26 + 3)
    pages = -(-total // 25)
    assert f"Rows 1-25 of {total} matching events, newest first; page 1 of {pages}." in [
        c.value for c in at.caption
    ]
    at.session_state["audit_page"] = 2
    at.run()
    assert f"Rows 26-50 of {total} matching events, newest first; page 2 of {pages}." in [
        c.value for c in at.caption
    ]
    assert at.dataframe[0].value["seq"].iloc[0] == total - 25
    at.selectbox(key="audit_size").set_value(100).run()
    assert len(at.dataframe[0].value) == total
    assert f"Rows 1-{total} of {total} matching events, newest first." in [
        c.value for c in at.caption
    ]


def test_no_warning_once_every_rater_is_done():
    from app_pages.progress_screen import RaterSummary, unfinished_words

    def rater(submitted: int, assigned: int) -> RaterSummary:
        return RaterSummary("rater-01", None, submitted, assigned, 0, 0, 0, None, 0, 0, 0, None)

    assert unfinished_words(1, [rater(3, 3)]) is None
    assert unfinished_words(2, [rater(0, 1)]) == (
        "Not every rater is done: bands not yet submitted (or changed since submitted) in round "
        "2: rater-01, 1 of 1 band. Closing the round now leaves them without those reviews, for "
        "good: a closed round is never reopened."
    )
