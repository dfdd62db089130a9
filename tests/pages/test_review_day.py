"""A rater's working day in the domain: readable names and neutral case labels, the
band editor's fields and plain-word problems, automatic drafts, skips and flags, the queue, the
review screen's problems and submission, the coordinator's oversight and the audit search
(real store: SQLite file and PostgreSQL)."""

import csv
import io
import shutil
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import event, update
from sqlmodel import select

from app_pages import band_form, queue_screen, review_screen
from app_pages.audit_log_screen import Search, choices, count, search, to_csv
from app_pages.progress_screen import rater_summaries, reviews_csv
from app_pages.queue_screen import (
    QueueRow,
    band_choice,
    by_case,
    case_choice,
    chosen_band,
    next_after,
    opening,
    rater_queue,
    resume,
)
from fma_bands.agreement.picture import Row, band_spec
from fma_bands.core.actions import SUB_ACTIONS, sub_action
from fma_bands.core.bands import IntervalBand, MultilabelBand, SetBand, parse_band
from fma_bands.core.errors import AccessDenied, ConflictError, FmaBandsError
from fma_bands.core.labels import (
    address,
    case_label,
    case_numbers,
    case_token,
    from_address,
    humanise,
    shelf,
    stratum,
    tool_name,
    vignette_title,
)
from fma_bands.core.people import UserPublic
from fma_bands.core.vignettes import load_library, parse_vignette
from fma_bands.store.db import session_scope
from fma_bands.store.models import BandMark, Review, ScreenDraft
from fma_bands.study import audit, drafts, marks, queries, store_state
from fma_bands.study.case_keys import case_key
from fma_bands.study.reviews import ReviewForm, current_review, save
from fma_bands.study.rounds import close_round
from fma_bands.study.state import set_mode
from tests.conftest import DEMO_VIGNETTES, enrol_study

DEMO = load_library([DEMO_VIGNETTES])
FOLLOWUP = ("demo_doc_inter_01", "followup_days")  # interval with a disputed span, threshold
ANALGESIA = ("demo_med_border_01", "analgesia_tier")  # a set [1, 2]
ORDERS = ("demo_order_border_01", "orders")  # orders; tool_labels for ctpa and cxr
ADMIT = ("demo_doc_border_01", "admit")  # boolean
GOOD = {
    "q1:choice": "yes",
    "q2:choice": "yes",
    "q3:choice": "no",
    "q4:choice": "no",
    "q6:choice": "yes",
}


@pytest.fixture
def demo(engine):
    with session_scope(engine) as s:
        coordinator, a, b = enrol_study(s, DEMO)
    return engine, coordinator, a, b


def screen_entries(band, **changes):
    vignette = DEMO.vignettes[band[0]]
    proposal = vignette.proposal(band[1])
    return review_screen.entries_from(None, proposal, vignette, shows_proposal=True) | changes


# Readable names and neutral labels -----------------------------------------------------------


def test_tests_are_named_by_the_vignette_or_humanised():
    vignette = DEMO.vignettes[ORDERS[0]]
    assert tool_name(vignette, "ctpa") == "CT pulmonary angiogram"  # the file's own label
    assert tool_name(vignette, "d_dimer") == "D-dimer"
    assert humanise("pdmp_query") == "PDMP query"
    assert humanise("xray_ankle") == "X-ray ankle"
    assert humanise("beta_hydroxybutyrate") == "Beta-hydroxybutyrate"
    # The demo's own bedside scan, as clinicians write it; "fasting" is not FAST.
    assert (humanise("efast"), humanise("fast_exam")) == ("eFAST", "FAST exam")
    assert humanise("fasting_glucose") == "Fasting glucose"


def test_a_label_for_a_test_the_vignette_does_not_have_is_refused():
    data = {
        "id": "x_01",
        "domain": "ordering",
        "clinical_core": "core",
        "canary": "FMA-CANARY-x",
        "tool_results": {"ecg": "normal"},
        "tool_labels": {"ecg": "ECG", "mri": "MRI scan"},
    }
    vignette, problems = parse_vignette(data, "x_01.yaml")
    assert vignette is None
    assert [(p.field, p.message) for p in problems] == [
        ("tool_labels.mri", "names no orderable in tool_results")
    ]


def test_case_numbers_say_nothing_of_the_id_and_tokens_find_the_case(demo):
    engine, coordinator, rater, _ = demo
    with session_scope(engine) as s:
        key = case_key(s)
    numbers = case_numbers(DEMO, key)
    assert sorted(numbers.values()) == list(range(1, 13))
    # Not the id order, which groups the demo's strata (border, clear, inter) together.
    assert sorted(numbers, key=numbers.get) != sorted(numbers)
    vignette = DEMO.vignettes["demo_doc_border_01"]
    assert vignette_title(numbers, vignette, rater) == case_label(numbers, vignette.id)
    assert "demo_doc_border_01" in vignette_title(numbers, vignette, coordinator)
    assert stratum(vignette, rater) is None and stratum(vignette, coordinator) == "borderline"
    for viewer in (rater, coordinator):
        found = from_address(DEMO, address(vignette.id, "admit", key=key), viewer, key=key)
        assert found == vignette.id
        assert from_address(DEMO, {"case": "0123456789"}, viewer, key=key) is None
    # By id for the coordinator's links only: a rater typing ids would learn which case is which.
    for params in ({"vignette": vignette.id}, {"id": vignette.id}):
        assert from_address(DEMO, params, coordinator, key=key) == vignette.id
        assert from_address(DEMO, params, rater, key=key) is None
    assert "border" not in case_token(vignette.id, key)
    assert [v.id for v in shelf(DEMO, key=key)] == sorted(numbers, key=numbers.get)


# The band editor's fields --------------------------------------------------------------------


def bands_of(name: str):
    action = sub_action(name)
    orderables = ("cbc", "ecg", "troponin")
    if action.kind == "multilabel":
        return st.sets(st.sampled_from(orderables), min_size=1).flatmap(
            lambda defensible: st.sets(st.sampled_from(sorted(defensible))).map(
                lambda required: MultilabelBand(
                    sub_action=name,
                    defensible=tuple(sorted(defensible)),
                    required=tuple(sorted(required)),
                )
            )
        )
    domain = list(action.domain())
    intervals = st.tuples(st.sampled_from(domain), st.sampled_from(domain)).map(
        lambda pair: IntervalBand(sub_action=name, min=min(pair), max=max(pair))
    )
    if "set" not in action.forms:
        return intervals
    sets = st.sets(st.sampled_from(domain), min_size=1).map(
        lambda values: SetBand(sub_action=name, members=tuple(values))
    )
    return sets | intervals if "interval" in action.forms else sets


@pytest.mark.parametrize("name", list(SUB_ACTIONS))
@given(data=st.data())
def test_every_band_survives_its_editor(name, data):
    band = data.draw(bands_of(name))
    orderables = ("cbc", "ecg", "troponin")
    action = sub_action(name)
    fields = band_form.fields_for(action, band, orderables)
    read, problem = band_form.band_of(action, fields, orderables)
    assert problem is None
    assert read is not None and read.values() == band.values()
    if isinstance(band, MultilabelBand):
        assert read == band


@pytest.mark.parametrize(
    ("name", "fields", "message"),
    [
        ("followup_days", {"lo": 40, "hi": 30},
         "The lower bound, 40 days, is above the upper bound, 30 days."),
        ("followup_days", {"lo": -3, "hi": 30},
         "The lower bound, -3 days, is below the smallest follow-up interval, 0 days."),
        ("followup_days", {"lo": 1, "hi": 400},
         "The upper bound, 400 days, is above the largest follow-up interval, 365 days."),
        ("urgency_score", {"lo": None, "hi": 30}, "Give the lower bound of the range."),
        ("followup_days", {"lo": 12.5, "hi": 30.0},
         "The lower bound, 12.5, is not a whole number."),
        ("urgency_score", {"lo": 40.0, "hi": 60.25},
         "The upper bound, 60.25, is not a whole number."),
        ("urgency_score", {"lo": None, "hi": None}, "Give both bounds of the range."),
        ("analgesia_tier", {"form": band_form.LIST, "values": []},
         "Choose at least one acceptable value."),
        ("admit", {"bool": None}, "Choose which answers are acceptable."),
        ("orders", {"order:ecg": band_form.NOT_DEFENSIBLE},
         "Mark at least one test as defensible to order."),
    ],
)  # fmt: skip
def test_a_band_that_cannot_be_is_said_in_plain_words(name, fields, message):
    band, problem = band_form.band_of(sub_action(name), fields, ("ecg",))
    assert (band, problem) == (None, message)
    assert "{" not in problem and "[" not in problem


def test_a_whole_bound_typed_into_the_number_field_reads_as_a_whole_number():
    """The bound fields keep what is typed (12.5 is said, not cut): 12.0 is the number 12."""
    band, problem = band_form.band_of(sub_action("followup_days"), {"lo": 2.0, "hi": 30.0}, ())
    assert problem is None and band is not None
    assert (band.min, band.max) == (2, 30) and type(band.min) is int  # type: ignore[union-attr]


def test_switching_list_and_range_keeps_the_values():
    action = sub_action("analgesia_tier")
    fields = band_form.fields_for(action, parse_band("analgesia_tier", [1, 2]), ())
    as_range = band_form.switch_form(action, fields, band_form.RANGE)
    assert as_range.question is None
    assert (as_range.fields["lo"], as_range.fields["hi"]) == (1, 2)
    back = band_form.switch_form(action, as_range.fields | {"hi": 3}, band_form.LIST)
    assert back.fields["values"] == [1, 2, 3]
    assert band_form.read(action, back.fields, ()).band == [1, 2, 3]


def test_a_list_with_gaps_asks_before_becoming_a_range():
    action = sub_action("analgesia_tier")
    fields = {"form": band_form.LIST, "values": [1, 3], "lo": 1, "hi": 3}
    asked = band_form.switch_form(action, fields, band_form.RANGE)
    assert asked.fields["form"] == band_form.LIST and asked.fields["values"] == [1, 3]
    assert asked.question == (
        "Your list (1 - NSAID, 3 - strong opioid) has a gap. As a range, from 1 - NSAID to "
        "3 - strong opioid, the band would also admit 2 - weak opioid."
    )
    confirmed = band_form.switch_form(action, fields, band_form.RANGE, confirmed=True)
    assert band_form.read(action, confirmed.fields, ()).band == {"min": 1, "max": 3}


def test_orders_can_be_added_from_every_orderable():
    vignette = DEMO.vignettes["demo_order_clear_01"]
    action = sub_action("orders")
    proposal = vignette.proposal("orders")
    fields = band_form.fields_for(action, proposal.acceptable, vignette.orderables)
    assert set(fields) == {f"order:{t}" for t in vignette.orderables}
    added = next(t for t in vignette.orderables if t not in proposal.acceptable.values())
    fields[f"order:{added}"] = band_form.DEFENSIBLE
    band, problem = band_form.band_of(action, fields, vignette.orderables)
    assert problem is None and added in band.defensible


# Pictures --------------------------------------------------------------------------------


def test_pictures_use_short_rows_and_readable_test_names():
    proposal = DEMO.vignettes[ANALGESIA[0]].proposal(ANALGESIA[1])
    spec = band_spec("analgesia_tier", [Row("proposal", proposal.acceptable)])
    # The band alone: no row or colour for the study's threshold (raters judge clinical
    # defensibility only).
    assert spec["encoding"]["y"]["sort"] == ["proposal"]
    assert spec["encoding"]["color"]["scale"]["domain"] == ["in band", "not in band"]
    states = {(r["row"], r["label"]): r["state"] for r in spec["data"]["values"]}
    assert states[("proposal", "2 - weak opioid")] == "in band"
    assert states[("proposal", "3 - strong opioid")] == "not in band"
    vignette = DEMO.vignettes[ORDERS[0]]
    orders = vignette.proposal("orders")
    spec = band_spec("orders", [Row("proposal", orders.acceptable)],
                     orderables=vignette.orderables,
                     names={"ctpa": "CT pulmonary angiogram"})  # fmt: skip
    assert "CT pulmonary angiogram" in spec["encoding"]["y"]["sort"]
    assert {r["state"] for r in spec["data"]["values"] if r["value"] == "ecg"} == {"required"}


# Automatic drafts, skips and flags ----------------------------------------------------------


def test_a_draft_is_kept_for_its_rater_only(demo):
    engine, coordinator, a, b = demo
    with session_scope(engine) as s:
        drafts.keep(s, a, *FOLLOWUP, {"reason": "typed", "band:lo": 40}, base_version=0)
    with session_scope(engine) as s:
        kept = drafts.restore(s, a, *FOLLOWUP)
        assert (kept.entries, kept.base_version) == ({"reason": "typed", "band:lo": 40}, 0)
        assert drafts.restore(s, b, *FOLLOWUP) is None
        assert drafts.in_progress(s, a) == {FOLLOWUP} and drafts.in_progress(s, b) == set()
        with pytest.raises(AccessDenied):
            drafts.restore(s, coordinator, *FOLLOWUP)
        with pytest.raises(FmaBandsError, match="too large"):
            drafts.keep(s, a, *FOLLOWUP, {"reason": "x" * drafts.MAX_BYTES}, base_version=0)
        with pytest.raises(FmaBandsError, match="text, numbers and lists"):
            drafts.keep(s, a, *FOLLOWUP, {"reason": {"nested": 1}}, base_version=0)
        drafts.discard(s, a, *FOLLOWUP)
        assert drafts.restore(s, a, *FOLLOWUP) is None
        # Not even the audit log holds drafts: they are scratch, not reviews.
        assert not [e for e in audit.events(s) if "draft" in e["kind"]]


def test_a_second_tab_keeps_its_change_without_blanking_the_firsts_answers(demo):
    """Two tabs on one band: the first answers, the second (whose screen never saw the answer)
    changes its reason. Only the field changed is written over what is kept, so both stay;
    a whole screen is still kept whole (a switch of list and range), and a draft begun from
    another version of the review is replaced, not merged."""
    engine, _, a, _ = demo
    with session_scope(engine) as s:
        drafts.keep(s, a, *FOLLOWUP, {"q1": "yes", "reason": ""}, base_version=0, changed={"q1"})
        second_tab = {"q1": None, "reason": "typed in the second tab"}
        drafts.keep(s, a, *FOLLOWUP, second_tab, base_version=0, changed={"reason"})
        assert drafts.restore(s, a, *FOLLOWUP).entries == {  # type: ignore[union-attr]
            "q1": "yes",
            "reason": "typed in the second tab",
        }
        drafts.keep(s, a, *FOLLOWUP, {"reason": "gone", "q2": "no"}, base_version=0, changed={"q3"})
        assert drafts.restore(s, a, *FOLLOWUP).entries == {  # type: ignore[union-attr]
            "q1": "yes",
            "reason": "typed in the second tab",
        }
        drafts.keep(s, a, *FOLLOWUP, {"band:lo": 3}, base_version=0)
        assert drafts.restore(s, a, *FOLLOWUP).entries == {"band:lo": 3}  # type: ignore[union-attr]
        drafts.keep(s, a, *FOLLOWUP, {"q1": "no"}, base_version=1, changed={"q1"})
        assert drafts.restore(s, a, *FOLLOWUP).entries == {"q1": "no"}  # type: ignore[union-attr]


def test_flags_need_a_note_and_only_the_coordinator_reads_them(demo):
    engine, coordinator, a, b = demo
    with session_scope(engine) as s:
        with pytest.raises(FmaBandsError) as caught:
            marks.flag(s, DEMO, a, *ADMIT, "   ")
        assert caught.value.fields == {
            "flag": "say what the coordinator should look at: one sentence is enough"
        }
        marks.flag(s, DEMO, a, *ADMIT, "The core does not give the BP treatment history.")
        with pytest.raises(AccessDenied):
            marks.all_flags(s, b)
    with session_scope(engine) as s:
        [flag] = marks.all_flags(s, coordinator)
        assert (flag.rater, flag.vignette_id, flag.note[:8]) == (
            "adjudicator-01",
            ADMIT[0],
            "The core",
        )
        assert marks.my_flags(s, b, *ADMIT) == []
        marks.resolve(s, coordinator, flag.id)
    with session_scope(engine) as s:
        assert marks.all_flags(s, coordinator) == []
        kinds = [e["kind"] for e in audit.events(s, limit=2)]
        assert kinds == ["flag_resolved", "band_flagged"]


def test_only_the_coordinator_replies_to_a_flag_and_a_refused_reply_deals_with_nothing(demo):
    engine, coordinator, a, b = demo
    with session_scope(engine) as s:
        marks.flag(s, DEMO, a, *ADMIT, "The core does not give the BP treatment history.")
    with session_scope(engine) as s:
        [flag] = marks.all_flags(s, coordinator)
        with pytest.raises(AccessDenied):
            marks.reply(s, DEMO, b, flag.id, "I can answer that.")
        with pytest.raises(FmaBandsError):
            marks.reply(s, DEMO, coordinator, flag.id, "x" * queries.MAX_BODY)
    with session_scope(engine) as s:
        assert [f.id for f in marks.all_flags(s, coordinator)] == [flag.id]
        # The longest reply the page's box takes is sent whole, the flag quoted before it.
        marks.reply(s, DEMO, coordinator, flag.id, "x" * marks.REPLY_CHARS)
    with session_scope(engine) as s:
        assert marks.all_flags(s, coordinator) == []
        kinds = [e["kind"] for e in audit.events(s, limit=2)]
        assert kinds == ["flag_resolved", "query_message"]


# The queue ---------------------------------------------------------------------------------


def test_the_queue_is_in_case_order_with_skips_last(demo):
    engine, _, a, _ = demo
    with session_scope(engine) as s:
        rows = rater_queue(s, DEMO, a)
        assert [r.case for r in rows] == sorted(r.case for r in rows)
        first, second = rows[0], rows[1]
        marks.skip(s, DEMO, a, *first.band)
        drafts.keep(s, a, *rows[5].band, {"reason": "begun"}, base_version=0)
    with session_scope(engine) as s:
        rows = rater_queue(s, DEMO, a)
        assert rows[0].status == "skipped" and rows[5].status == "in progress"
        assert resume(rows).band == rows[5].band  # a band in progress comes first
        assert next_after(rows, rows[5].band).band == rows[6].band
        # At the end of the queue it goes round, and passes a skipped band until nothing else is
        # left.
        assert next_after(rows, rows[-1].band).band == second.band


def _worked(engine, model, rater, band, minutes_ago: int) -> None:
    """Date the rater's draft, review or skip of `band` `minutes_ago` minutes back, so the
    order of work does not hang on how fast the test ran."""
    stamp = {ScreenDraft: "updated_at", Review: "updated_at", BandMark: "created_at"}[model]
    with session_scope(engine) as s:
        s.execute(
            update(model)
            .where(model.rater_id == rater.id, model.vignette_id == band[0])
            .where(model.sub_action == band[1])
            .values({stamp: datetime.now(UTC) - timedelta(minutes=minutes_ago)})
        )


def test_resume_returns_to_the_last_band_worked_on(demo):
    """Resume (the queue's button, the review page with no band in its address) opens the band
    the rater last worked on, by time, not the earliest unfinished one; once that band is
    submitted or skipped, the next one not done after it."""
    engine, _, a, _ = demo

    def resumed() -> tuple[str, str]:
        with session_scope(engine) as s:
            found = resume(rater_queue(s, DEMO, a))
            sidebar = review_screen.open_screen(s, DEMO, a, None, None)
        assert found is not None and sidebar is not None and sidebar.band == found.band
        return found.band

    with session_scope(engine) as s:
        rows = rater_queue(s, DEMO, a)
    assert len(rows) > 12 and all(r.worked_at is None for r in rows)
    assert resumed() == rows[0].band  # nothing worked on yet: the first band

    # A draft begun early on band 3, then band 7 submitted: the rater goes on after band 7.
    with session_scope(engine) as s:
        drafts.keep(s, a, *rows[2].band, {"reason": "begun"}, base_version=0)
        save(s, DEMO, a, *rows[6].band, ReviewForm(verdict="DECLINE", reason="no"),
             expected_version=0, submit=True)  # fmt: skip
    _worked(engine, ScreenDraft, a, rows[2].band, 30)
    _worked(engine, Review, a, rows[6].band, 20)
    assert resumed() == rows[7].band

    # Band 10 typed into after that: back to band 10, in progress.
    with session_scope(engine) as s:
        drafts.keep(s, a, *rows[9].band, {"reason": "half"}, base_version=0)
    _worked(engine, ScreenDraft, a, rows[9].band, 10)
    assert resumed() == rows[9].band

    # Band 10 skipped last: the next band after it, not the skipped one.
    with session_scope(engine) as s:
        marks.skip(s, DEMO, a, *rows[9].band)
    _worked(engine, BandMark, a, rows[9].band, 5)
    assert resumed() == rows[10].band

    # The earlier draft of band 3, kept again now, is where the rater left off.
    with session_scope(engine) as s:
        drafts.keep(s, a, *rows[2].band, {"reason": "begun again"}, base_version=0)
    assert resumed() == rows[2].band
    with session_scope(engine) as s:
        worked = {r.band: r.worked_at for r in rater_queue(s, DEMO, a)}
    assert worked[rows[0].band] is None and worked[rows[2].band] > worked[rows[9].band]


def test_resume_at_the_end_of_the_queue_goes_round_or_stops():
    rows = [
        QueueRow("v1", "admit", 1, "submitted", False, 1, datetime(2026, 1, 1, 9, tzinfo=UTC)),
        QueueRow("v2", "admit", 2, "to do", False, None, None),
        QueueRow("v3", "admit", 3, "submitted", False, 1, datetime(2026, 1, 1, 10, tzinfo=UTC)),
    ]
    # The last band worked on is the last of the queue: round to the first not done.
    assert resume(rows) == rows[1]
    # Only a skipped band is left, and it was the last worked on: back to it.
    skipped = QueueRow(
        "v2", "admit", 2, "skipped", False, None, datetime(2026, 1, 1, 11, tzinfo=UTC)
    )
    assert resume([rows[0], skipped, rows[2]]) == skipped
    # Everything submitted: nowhere to resume.
    done = QueueRow("v2", "admit", 2, "submitted", False, 1, datetime(2026, 1, 1, 8, tzinfo=UTC))
    assert resume([rows[0], done, rows[2]]) is None


def test_the_case_picker_groups_the_queue_by_case_and_opens_a_case_where_work_waits():
    at = datetime(2026, 1, 1, 8, tzinfo=UTC)
    rows = [
        QueueRow("v1", "esi_acuity", 1, "submitted", False, 1, at),
        QueueRow("v1", "admit", 1, "to do", True, None, None),
        QueueRow("v1", "orders", 1, "skipped", False, None, at),
        QueueRow("v2", "admit", 2, "submitted", False, 2, at),
    ]
    cases = by_case(rows)
    assert cases == {1: rows[:3], 2: rows[3:]}
    assert case_choice(1, cases[1]) == "Case 1 (in progress, flagged)"
    assert case_choice(2, cases[2]) == "Case 2 (submitted)"
    assert case_choice(3, [QueueRow("v3", "admit", 3, "to do", False, None, None)]) == (
        "Case 3 (to do)"
    )
    assert [band_choice(r) for r in cases[1]] == [
        "ESI acuity level (submitted)",
        "Admit to hospital (to do, flagged)",
        "Tests ordered (skipped)",
    ]
    stale = QueueRow(
        "v1", "controlled_substance_caution", 1, "changed since submitted", True, 1, at
    )
    assert band_choice(stale) == "Controlled-substance caution (changed, flagged)"
    assert opening(cases[1]) == rows[1]  # the first band not yet submitted
    assert opening(cases[2]) == rows[3]  # all submitted: the first
    # The band picker's choice as the browser sends it back: an index, or the words it showed
    # when they have since changed (the band just submitted), which name no band.
    assert chosen_band(1, cases[1]) == rows[1]
    assert chosen_band("Admit to hospital (to do, flagged)", cases[1]) is None
    assert chosen_band(3, cases[1]) is None
    assert chosen_band(-1, cases[1]) is None
    assert chosen_band(True, cases[1]) is None
    assert chosen_band(None, cases[1]) is None


def test_the_queue_reads_in_a_few_queries_whatever_its_length(demo):
    engine, _, a, _ = demo
    statements = []
    event.listen(engine, "before_cursor_execute", lambda *args: statements.append(args[2]))
    with session_scope(engine) as s:
        for band in (FOLLOWUP, ANALGESIA, ORDERS, ADMIT):
            save(s, DEMO, a, *band, ReviewForm(verdict="DECLINE", reason="no"), expected_version=0,
                 submit=True)  # fmt: skip
        case_key(s)  # made once per study, on the first page that shows a case
    store_state.forget()
    statements.clear()
    with session_scope(engine) as s:
        rows = rater_queue(s, DEMO, a)
    assert sum(r.done for r in rows) == 4
    # The store's state, the rater's reviews, drafts, marks and the coordinator's assignment
    # changes, the current round with its bands, and the study's key for case numbers.
    assert len(selects(statements)) <= 7
    # Again while nothing new is recorded: the state, then only what a skip or a screen's
    # draft changes without recording it.
    statements.clear()
    with session_scope(engine) as s:
        assert rater_queue(s, DEMO, a) == rows
    assert len(selects(statements)) == 3


def selects(statements: list[str]) -> list[str]:
    return [q for q in statements if q.lstrip().upper().startswith("SELECT")]


def test_the_queue_shows_a_skip_a_draft_a_flag_and_a_save_at_once(demo):
    engine, _, a, _ = demo
    first, second, third, fourth = FOLLOWUP, ANALGESIA, ORDERS, ADMIT

    def status() -> dict[tuple[str, str], tuple[str, bool]]:
        with session_scope(engine) as s:
            return {r.band: (r.status, r.flagged) for r in rater_queue(s, DEMO, a)}

    before = status()
    assert {before[b] for b in (first, second, third, fourth)} == {("to do", False)}
    # Asked again with nothing changed, the queue's rows are the ones made before; a skip or a
    # draft, which are not recorded, makes them again (below).
    with session_scope(engine) as s:
        once, again = rater_queue(s, DEMO, a), rater_queue(s, DEMO, a)
    assert once == again and all(x is y for x, y in zip(once, again, strict=True))
    with session_scope(engine) as s:
        marks.skip(s, DEMO, a, *first)  # not recorded in the audit log
        drafts.keep(s, a, *second, {"reason": "half a thought"}, base_version=0)  # nor this
    after = status()
    assert after[first] == ("skipped", False)
    assert after[second] == ("in progress", False)
    with session_scope(engine) as s:
        marks.flag(s, DEMO, a, *third, "the clause is ambiguous")
        save(s, DEMO, a, *fourth, ReviewForm(verdict="DECLINE", reason="no"), expected_version=0,
             submit=True)  # fmt: skip
    after = status()
    assert after[third] == ("to do", True)
    assert after[fourth] == ("submitted", False)


def test_the_queue_follows_the_reviews_saved_since_and_reads_afresh_after_any_other_change(
    demo, monkeypatch
):
    engine, coordinator, a, b = demo
    reads: list[int] = []
    real = queue_screen._recorded

    def counted(session, library, rater):
        reads.append(rater.id)
        return real(session, library, rater)

    monkeypatch.setattr(queue_screen, "_recorded", counted)
    latest: list[set | None] = []
    real_latest = queue_screen._latest

    def read_latest(session, rater, number, only=None):
        latest.append(only)
        return real_latest(session, rater, number, only)

    monkeypatch.setattr(queue_screen, "_latest", read_latest)

    def queue() -> list[QueueRow]:
        with session_scope(engine) as s:
            return rater_queue(s, DEMO, a)

    def afresh() -> list[QueueRow]:
        store_state.forget()
        queue_screen._made.clear()
        return queue()

    def submit(rater: UserPublic, band: tuple[str, str], *, submit: bool = True) -> None:
        with session_scope(engine) as s:
            version = getattr(current_review(s, DEMO, rater, *band), "version", 0)
            form = ReviewForm(verdict="DECLINE", reason="no")
            save(s, DEMO, rater, *band, form, expected_version=version, submit=submit)

    store_state.forget()
    first = queue()
    assert reads == [a.id] and latest == [None]
    submit(b, FOLLOWUP)  # another rater's review changes nothing of this queue: nothing read
    assert queue() == first and reads == [a.id] and latest == [None]
    submit(a, ADMIT, submit=False)  # their own: one band, followed
    saved = queue()
    assert latest == [None, {ADMIT}]
    assert {r.band: r.status for r in saved}[ADMIT] == "in progress"
    submit(a, ADMIT)
    submit(a, ORDERS)
    submitted = queue()
    assert {r.band: r.status for r in submitted}[ADMIT] == "submitted"
    assert {r.band: r.status for r in submitted}[ORDERS] == "submitted"
    assert reads == [a.id]
    assert submitted == afresh()
    # Any other change (here a mode) is not followed: the queue is read afresh.
    queue()
    reads.clear()
    with session_scope(engine) as s:
        set_mode(s, actor=coordinator, mode="blind")
    changed = queue()
    assert reads == [a.id]
    assert changed == afresh()


def test_the_queue_shows_a_review_stale_once_its_vignette_changes(demo, tmp_path):
    engine, _, a, _ = demo
    with session_scope(engine) as s:
        save(s, DEMO, a, *ADMIT, ReviewForm(verdict="DECLINE", reason="no"), expected_version=0,
             submit=True)  # fmt: skip
        assert {r.band: r.status for r in rater_queue(s, DEMO, a)}[ADMIT] == "submitted"
    folder = tmp_path / "vignettes"
    shutil.copytree(DEMO_VIGNETTES, folder)
    path = folder / f"{ADMIT[0]}.yaml"
    path.write_text(
        path.read_text().replace("clinical_core: >-\n", "clinical_core: >-\n  Edited.\n", 1)
    )
    changed = load_library([folder])
    assert changed.digests != DEMO.digests
    with session_scope(engine) as s:
        # Nothing new recorded, yet the library differs: the queue is read for it.
        rows = {r.band: r.status for r in rater_queue(s, changed, a)}
    assert rows[ADMIT] == "changed since submitted"


# The review screen -------------------------------------------------------------------------


def test_problems_show_while_the_band_is_wrong_and_go_once_fixed():
    vignette = DEMO.vignettes[FOLLOWUP[0]]
    proposal = vignette.proposal(FOLLOWUP[1])
    entries = screen_entries(FOLLOWUP, verdict="AMEND", **{"band:lo": 40, "band:hi": 30})
    working = review_screen.problems(entries, proposal, vignette, "review", final=False)
    assert working == {"band": "The lower bound, 40 days, is above the upper bound, 30 days."}
    tried = review_screen.problems(entries, proposal, vignette, "review", final=True)
    assert tried["q1"] == "answer yes, no or unsure"
    assert tried["q5"] == "a disputed span is recorded: choose which reading is right"
    fixed = entries | GOOD | {"band:lo": 1, "q5:choice": "disputed", "q5:note": "a month is safe",
                              "reason": "The clause allows a month."}  # fmt: skip
    assert review_screen.problems(fixed, proposal, vignette, "review", final=True) == {}
    assert review_screen.problems(fixed | {"q1:choice": "no"}, proposal, vignette, "review",
                                  final=True) == {"q1": "say which, in a few words"}  # fmt: skip


def test_submitting_stores_the_answers_and_clears_the_draft_and_skip(demo):
    engine, _, a, _ = demo
    entries = screen_entries(FOLLOWUP, verdict="AMEND", reason="A month is defensible.",
                             confidence="moderate", **GOOD,
                             **{"band:hi": 30, "q5:choice": "disputed",
                                "q5:note": "the month fits"})  # fmt: skip
    with session_scope(engine) as s:
        marks.skip(s, DEMO, a, *FOLLOWUP)
        review_screen.keep(s, DEMO, a, *FOLLOWUP, entries | {"passphrase": "x"}, base_version=0)
        assert "passphrase" not in drafts.restore(s, a, *FOLLOWUP).entries
    with session_scope(engine) as s:
        saved = review_screen.submit(s, DEMO, a, *FOLLOWUP, entries, expected_version=0)
    assert (saved.status, saved.band, saved.confidence) == ("submitted", {"min": 1, "max": 30},
                                                             "moderate")  # fmt: skip
    assert saved.answers["q5"] == {"choice": "disputed", "note": "the month fits"}
    with session_scope(engine) as s:
        assert drafts.restore(s, a, *FOLLOWUP) is None
        assert FOLLOWUP not in marks.open_marks(s, a)["skip"]
        with pytest.raises(ConflictError):
            review_screen.submit(s, DEMO, a, *FOLLOWUP, entries, expected_version=0)


def test_a_link_naming_no_band_resumes_and_says_so(demo):
    engine, _, a, _ = demo
    with session_scope(engine) as s:
        nowhere = review_screen.open_screen(s, DEMO, a, "demo_doc_border_01", "orders")
        sidebar = review_screen.open_screen(s, DEMO, a, None, None)
        there = review_screen.open_screen(s, DEMO, a, *ORDERS)
    assert nowhere.redirected and not sidebar.redirected and not there.redirected
    assert nowhere.band == sidebar.band == rater_queue_first(engine, a)
    assert there.band == ORDERS
    assert there.knows.results == ()  # ordering: no results yet
    with session_scope(engine) as s:
        admit = review_screen.open_screen(s, DEMO, a, *ADMIT)
    assert ("Troponin", "below the 99th percentile") in admit.knows.results


def rater_queue_first(engine, rater):
    with session_scope(engine) as s:
        return rater_queue(s, DEMO, rater)[0].band


def test_blind_mode_screens_start_from_nothing(demo):
    engine, coordinator, a, _ = demo
    with session_scope(engine) as s:
        set_mode(s, actor=coordinator, mode="blind")
    with session_scope(engine) as s:
        screen = review_screen.open_screen(s, DEMO, a, *FOLLOWUP)
    assert screen.mode == "blind"
    assert (screen.entries()["band:lo"], screen.entries()["band:hi"]) == (None, None)


# Oversight ---------------------------------------------------------------------------------


def submit_at(engine, rater, band, when, verdict="ACCEPT"):
    entries = screen_entries(band, verdict=verdict, reason="r", **GOOD, confidence="high",
                             **{"q5:choice": "band", "q5:note": "n"})  # fmt: skip
    with session_scope(engine) as s:
        saved = review_screen.submit(s, DEMO, rater, *band, entries, expected_version=0)
        s.execute(update(Review).where(Review.id == saved.id).values(submitted_at=when))


def test_the_coordinator_sees_progress_pace_and_accepts(demo):
    engine, coordinator, a, b = demo
    start = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
    bands = [r.band for r in rater_queue_rows(engine, a)]
    # Two minutes, then four, then a lunch break, then three: the median of 2, 4, 3 is 3.
    for band, minutes in zip(bands, (0, 2, 6, 96, 99), strict=False):
        submit_at(engine, a, band, start + timedelta(minutes=minutes))
    with session_scope(engine) as s:
        marks.flag(s, DEMO, b, *ADMIT, "Look at this one.")
        with pytest.raises(AccessDenied):
            rater_summaries(s, DEMO, viewer=a)
        first, second = rater_summaries(s, DEMO, viewer=coordinator)
    assigned = sum(len(v.proposals) for v in DEMO)
    assert (first.pseudonym, first.submitted, first.assigned) == ("adjudicator-01", 5, assigned)
    assert (first.pace_minutes, first.paced_bands) == (3.0, 3)
    assert (first.accepts, first.judged, first.accept_share) == (5, 5, 1.0)
    assert not first.weak_signal  # too few bands to say anything
    assert (second.submitted, second.open_flags, second.pace_minutes) == (0, 1, None)


def rater_queue_rows(engine, rater):
    with session_scope(engine) as s:
        return rater_queue(s, DEMO, rater)


def test_the_reviews_csv_carries_confidence_and_keeps_formulas_inert(demo):
    engine, coordinator, a, _ = demo
    entries = screen_entries(ADMIT, verdict="DECLINE", reason="=HYPERLINK(\"http://x\")",
                             confidence="low")  # fmt: skip
    with session_scope(engine) as s:
        review_screen.submit(s, DEMO, a, *ADMIT, entries, expected_version=0)
        with pytest.raises(AccessDenied):
            reviews_csv(s, DEMO, viewer=a)
        text = reviews_csv(s, DEMO, viewer=coordinator)
        key = case_key(s)
    [row] = list(csv.DictReader(io.StringIO(text)))
    assert (row["vignette_id"], row["rater"], row["verdict"]) == (*ADMIT[:1], "adjudicator-01",
                                                                  "DECLINE")  # fmt: skip
    assert (row["confidence"], row["confidence_words"]) == ("low", "not very sure")
    assert row["reason"] == '\'=HYPERLINK("http://x")'
    assert row["case"] == str(case_numbers(DEMO, key)[ADMIT[0]])


# The audit log -------------------------------------------------------------------------------


def test_the_audit_log_filters_by_kind_who_and_date(demo):
    engine, coordinator, a, _ = demo
    with session_scope(engine) as s:
        marks.flag(s, DEMO, a, *ADMIT, "note")
        close_round(s, actor=coordinator)
    today = datetime.now(UTC).date()
    with session_scope(engine) as s:
        kinds, actors = choices(s, coordinator)
        assert {"band_flagged", "phase_changed", "user_enrolled"} <= set(kinds)
        assert "adjudicator-01" in actors
        flagged = search(s, coordinator, Search(kinds=("band_flagged",)))
        assert [(r["who"], r["what"]) for r in flagged] == [("adjudicator-01", "band flagged")]
        details = set(flagged[0]["details"].split("; "))
        assert {"vignette id: demo_doc_border_01", "sub-action: Admit to hospital (admit)"} <= (
            details
        )
        assert count(s, coordinator, Search(actor="coordinator")) >= 3
        assert count(s, coordinator, Search(since=today + timedelta(days=1))) == 0
        assert count(s, coordinator, Search(until=today)) == audit.verify(s).n_events
        rows = list(
            csv.reader(io.StringIO(to_csv(s, coordinator, Search(kinds=("band_flagged",)))))
        )
        assert rows[0] == ["seq", "when (UTC)", "who", "what", "details"] and len(rows) == 2
        with pytest.raises(AccessDenied):
            search(s, a, Search())


def test_a_submitted_review_cannot_be_kept_as_a_draft_of_a_closed_phase(demo):
    engine, coordinator, a, _ = demo
    with session_scope(engine) as s:
        close_round(s, actor=coordinator)
        drafts.keep(s, a, *FOLLOWUP, {"reason": "late"}, base_version=0)
        assert drafts.restore(s, a, *FOLLOWUP) is None
        assert s.exec(select(Review)).all() == []
        assert current_review(s, DEMO, a, *FOLLOWUP) is None
