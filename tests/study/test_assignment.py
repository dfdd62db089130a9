"""Who reviews what (docs/design.md), on a real store: bands assigned by signed specialty against
the scope table, the coordinator's additions and removals per band, vignette and sub-action,
a queue of assigned bands only, the review refused elsewhere, and the bands flagged before a
round and counted against the quorum during it."""

import pytest
from sqlalchemy import event

from app_pages.queue_screen import rater_queue
from app_pages.review_screen import open_screen
from fma_bands.core.errors import AccessDenied, FmaBandsError
from fma_bands.core.vignettes import load_library
from fma_bands.evidence.policy import Policy
from fma_bands.store.db import session_scope
from fma_bands.study import audit
from fma_bands.study.assignment import (
    NOT_ASSIGNED,
    assigned_bands,
    assigned_raters,
    assignment_table,
    change,
    load,
    parse_band_ref,
)
from fma_bands.study.coverage import QUORUM, SCOPE, band_coverage, band_progress, coverage, explain
from fma_bands.study.enrolment import create_user, enrol
from fma_bands.study.reviews import ReviewForm, save
from tests.conftest import DEMO_VIGNETTES, RATER_DETAILS, enrol_study

DEMO = load_library([DEMO_VIGNETTES])
SCOPED = {"esi_acuity", "analgesia_tier", "followup_days", "referral"}
ANSWERS = {
    "q1": {"choice": "yes"},
    "q2": {"choice": "yes"},
    "q3": {"choice": "no"},
    "q4": {"choice": "no"},
    "q5": {"choice": "band", "note": "the narrow reading fits"},
    "q6": {"choice": "yes"},
}


def study_of(engine, library):
    with session_scope(engine) as s:
        return enrol_study(s, library, assign_everything=False)  # coordinator, two raters


def queue_bands(engine, library, rater):
    with session_scope(engine) as s:
        return {(r.vignette_id, r.sub_action) for r in rater_queue(s, library, rater)}


def of(library, *names):
    return {(v.id, p.sub_action) for v in library for p in v.proposals if p.sub_action in names}


def accept(engine, library, rater, band):
    with session_scope(engine) as s:
        return save(
            s,
            library,
            rater,
            *band,
            ReviewForm(verdict="ACCEPT", answers=ANSWERS, reason="as the clause says"),
            expected_version=0,
            submit=True,
        )


def test_the_fairmedagent_bands_go_by_specialty_scope(engine, shared_library):
    _, geriatrician, emergency = study_of(engine, shared_library)
    # The harness's one adjudicator is a geriatrician: follow-up is hers, ESI and analgesia not.
    assert queue_bands(engine, shared_library, geriatrician) == {
        ("draft_documentation_01", "followup_days")
    }
    assert queue_bands(engine, shared_library, emergency) == of(
        shared_library, "esi_acuity", "analgesia_tier"
    )
    with session_scope(engine) as s:
        assert assigned_raters(s, "draft_triage_01", "esi_acuity") == {"adjudicator-02"}
        assert assigned_raters(s, "draft_documentation_01", "followup_days") == {"adjudicator-01"}


def test_a_geriatrician_reviews_follow_up_and_referral_not_esi_or_analgesia(engine):
    _, geriatrician, emergency = study_of(engine, DEMO)
    mine = queue_bands(engine, DEMO, geriatrician)
    assert of(DEMO, "followup_days", "referral") <= mine
    assert not mine & of(DEMO, "esi_acuity", "analgesia_tier")
    # Sub-actions the harness gives no scope rule go to every rater.
    assert of(DEMO, "admit", "orders", "urgency_score") <= mine
    everything = {(v.id, p.sub_action) for v in DEMO for p in v.proposals}
    assert mine == everything - of(DEMO, "esi_acuity", "analgesia_tier")
    theirs = queue_bands(engine, DEMO, emergency)
    assert of(DEMO, "esi_acuity", "analgesia_tier", "referral") <= theirs
    assert not theirs & of(DEMO, "followup_days")


def test_the_coordinator_adds_and_removes_per_band_vignette_and_sub_action(engine):
    coordinator, geriatrician, _ = study_of(engine, DEMO)
    esi = sorted(of(DEMO, "esi_acuity"))
    with session_scope(engine) as s:
        change(s, DEMO, actor=coordinator, rater="adjudicator-01", bands=[esi[0]])
    assert queue_bands(engine, DEMO, geriatrician) & of(DEMO, "esi_acuity") == {esi[0]}
    with session_scope(engine) as s:
        change(s, DEMO, actor=coordinator, rater="adjudicator-01", sub_actions=["esi_acuity"])
    assert of(DEMO, "esi_acuity") <= queue_bands(engine, DEMO, geriatrician)
    # The latest change covering a band decides it: removing one vignette leaves the others.
    vignette = esi[1][0]
    with session_scope(engine) as s:
        change(
            s, DEMO, actor=coordinator, rater="adjudicator-01", vignettes=[vignette], assigned=False
        )
    mine = queue_bands(engine, DEMO, geriatrician)
    assert not any(vid == vignette for vid, _ in mine)
    assert of(DEMO, "esi_acuity") - {esi[1]} <= mine
    # ...and adding that band back, later, brings it back alone.
    with session_scope(engine) as s:
        change(s, DEMO, actor=coordinator, rater="adjudicator-01", bands=[esi[1]])
    assert {b for b in queue_bands(engine, DEMO, geriatrician) if b[0] == vignette} == {esi[1]}
    with session_scope(engine) as s:
        change(
            s,
            DEMO,
            actor=coordinator,
            rater="adjudicator-01",
            sub_actions=["esi_acuity"],
            assigned=False,
        )
        found = load(s)
    assert not queue_bands(engine, DEMO, geriatrician) & of(DEMO, "esi_acuity")
    # The same target again replaces the earlier change instead of piling up.
    assert [(c.rater, c.target, c.assigned) for c in found.changes] == [
        ("adjudicator-01", f"band {esi[0][0]} · ESI acuity level", True),
        ("adjudicator-01", f"every band of vignette {vignette}", False),
        ("adjudicator-01", f"band {vignette} · ESI acuity level", True),
        ("adjudicator-01", "every ESI acuity level band", False),
    ]


def test_every_change_is_audited_and_only_the_coordinator_makes_it(engine):
    coordinator, geriatrician, _ = study_of(engine, DEMO)
    denied = pytest.raises(AccessDenied, match="only the study coordinator can assign")
    with session_scope(engine) as s, denied:
        change(s, DEMO, actor=geriatrician, rater="adjudicator-01", sub_actions=["esi_acuity"])
    with session_scope(engine) as s:
        change(
            s,
            DEMO,
            actor=coordinator,
            rater="adjudicator-01",
            bands=[("demo_triage_border_01", "esi_acuity")],
            sub_actions=["analgesia_tier"],
        )
        events = [e for e in audit.events(s) if e["kind"] == "assignment_changed"]
    assert [(e["actor"], e["payload"]) for e in events] == [
        (
            "coordinator",
            {
                "rater": "adjudicator-01",
                "change": "added",
                "bands": ["demo_triage_border_01:esi_acuity"],
                "vignettes": [],
                "sub_actions": ["analgesia_tier"],
            },
        )
    ]


@pytest.mark.parametrize(
    ("targets", "message"),
    [
        ({"rater": "nobody"}, "no rater named 'nobody' is enrolled"),
        ({"rater": "coordinator"}, "coordinator is the study's coordinator, not a rater"),
        ({"bands": [("demo_nowhere_01", "esi_acuity")]}, "no vignette 'demo_nowhere_01'"),
        ({"bands": [("demo_triage_border_01", "esi")]}, "unknown sub_action 'esi'"),
        ({"bands": [("demo_triage_border_01", "referral")]}, "proposes no referral band"),
        ({"vignettes": ["demo_nowhere_01"]}, "no vignette 'demo_nowhere_01'"),
        ({"sub_actions": ["triage"]}, "unknown sub_action 'triage'"),
        ({}, "say which bands"),
    ],
)
def test_a_bad_change_is_refused_whole(engine, targets, message):
    coordinator, _geriatrician, _ = study_of(engine, DEMO)
    fields = {"rater": "adjudicator-01", **targets}
    with session_scope(engine) as s, pytest.raises(FmaBandsError, match=message):
        change(s, DEMO, actor=coordinator, **fields)
    with session_scope(engine) as s:
        assert load(s).changes == []


def test_a_band_is_named_vignette_colon_sub_action():
    assert parse_band_ref("draft_triage_01:esi_acuity") == ("draft_triage_01", "esi_acuity")
    for bad in ("draft_triage_01", "a:b:c", ":esi_acuity", "draft_triage_01:", ""):
        with pytest.raises(FmaBandsError, match="VIGNETTE:SUB_ACTION"):
            parse_band_ref(bad)


def test_an_unassigned_band_is_refused_in_the_domain(engine):
    coordinator, geriatrician, emergency = study_of(engine, DEMO)
    esi = ("demo_triage_border_01", "esi_acuity")
    with pytest.raises(AccessDenied) as refused:
        accept(engine, DEMO, geriatrician, esi)
    assert refused.value.message == NOT_ASSIGNED
    # The review screen never opens it either: the address leads to her own queue, said so.
    with session_scope(engine) as s:
        screen = open_screen(s, DEMO, geriatrician, *esi)
    assert screen.redirected and screen.band != esi
    assert accept(engine, DEMO, emergency, esi).verdict == "ACCEPT"
    with session_scope(engine) as s:
        change(s, DEMO, actor=coordinator, rater="adjudicator-01", bands=[esi])
    assert accept(engine, DEMO, geriatrician, esi).verdict == "ACCEPT"
    with session_scope(engine) as s:
        assert not open_screen(s, DEMO, geriatrician, *esi).redirected


def test_bands_that_cannot_reach_quorum_or_scope_are_flagged_with_their_assignment(engine):
    coordinator, geriatrician, _emergency = study_of(engine, DEMO)
    with session_scope(engine) as s:
        rows = {
            (r.vignette_id, r.sub_action): r
            for r in coverage(s, DEMO, viewer=coordinator, quorum=2)
        }
    followup = rows[("demo_doc_inter_01", "followup_days")]
    assert followup.raters == ("adjudicator-01",) and followup.problems == (QUORUM,)
    admit = rows[("demo_doc_border_01", "admit")]
    assert admit.raters == ("adjudicator-01", "adjudicator-02") and admit.problems == ()
    assert admit.in_scope is None  # the harness has no scope rule for admit
    # Removing the one emergency physician from an ESI band leaves nobody in scope.
    esi = ("demo_triage_border_01", "esi_acuity")
    with session_scope(engine) as s:
        change(s, DEMO, actor=coordinator, rater="adjudicator-02", bands=[esi], assigned=False)
        change(s, DEMO, actor=coordinator, rater="adjudicator-01", bands=[esi])
        row = {
            (r.vignette_id, r.sub_action): r
            for r in coverage(s, DEMO, viewer=coordinator, quorum=1)
        }[esi]
    assert row.raters == ("adjudicator-01",) and row.in_scope == 0
    assert row.problems == (SCOPE,)
    assert "no activated assigned rater's specialty covers ESI acuity level" in explain(row)
    with session_scope(engine) as s, pytest.raises(AccessDenied):
        coverage(s, DEMO, viewer=geriatrician, quorum=1)


def test_under_a_required_scope_too_few_raters_in_scope_is_flagged(engine):
    """The registry counts no one outside a required scope (Policy.counts): an ESI band with a
    geriatrician and an emergency physician assigned cannot reach a quorum of 2 there, while
    under a scope only warned about it can."""
    coordinator, _geriatrician, _emergency = study_of(engine, DEMO)
    esi = ("demo_triage_border_01", "esi_acuity")
    with session_scope(engine) as s:
        change(s, DEMO, actor=coordinator, rater="adjudicator-01", bands=[esi])
        found = load(s)
    warned = {(r.vignette_id, r.sub_action): r for r in band_coverage(found, DEMO, 2)}[esi]
    assert (warned.able, warned.in_scope, warned.problems) == (2, 1, ())
    required = band_coverage(found, DEMO, 2, Policy(quorum=2, scope="require"))
    row = {(r.vignette_id, r.sub_action): r for r in required}[esi]
    assert row.problems == (SCOPE,) and row.as_dict()["scope_required"] is True
    assert explain(row) == (
        "1 activated assigned rater(s) whose specialty covers ESI acuity level, too few for "
        "the quorum of 2: the policy counts no one outside the scope"
    )


def test_a_rater_awaiting_activation_cannot_count_yet(engine):
    coordinator, *_ = study_of(engine, DEMO)
    with session_scope(engine) as s:
        enrol(
            s,
            actor=coordinator,
            passphrase="coordinator pass",
            pseudonym="adjudicator-03",
            specialty="geriatric medicine",
            **RATER_DETAILS,
        )
        rows = {
            (r.vignette_id, r.sub_action): r
            for r in coverage(s, DEMO, viewer=coordinator, quorum=2)
        }
    row = rows[("demo_doc_inter_01", "followup_days")]
    assert row.raters == ("adjudicator-01", "adjudicator-03")
    assert row.waiting == ("adjudicator-03",) and row.able == 1
    assert row.problems == (QUORUM,)
    assert explain(row) == (
        "1 activated rater(s) assigned, too few for the quorum of 2; "
        "awaiting activation: adjudicator-03"
    )
    # Without a policy the quorum is unknown: only a band nobody can sign is flagged.
    with session_scope(engine) as s:
        unknown = band_coverage(load(s), DEMO, None)
    assert all(r.quorum is None and QUORUM not in r.problems for r in unknown)


def test_progress_counts_current_reviews_against_the_quorum(engine):
    coordinator, geriatrician, emergency = study_of(engine, DEMO)
    admit = ("demo_doc_border_01", "admit")
    followup = ("demo_doc_inter_01", "followup_days")
    accept(engine, DEMO, geriatrician, admit)
    with session_scope(engine) as s:
        save(
            s,
            DEMO,
            emergency,
            *admit,
            ReviewForm(verdict="DECLINE", answers=ANSWERS, reason="cannot say"),
            expected_version=0,
            submit=True,
        )
        rows = {
            (r.vignette_id, r.sub_action): r
            for r in band_progress(s, DEMO, viewer=coordinator, quorum=2)
        }
    row = rows[admit]
    assert (row.assigned, row.submitted, row.declined, row.needed) == (2, 2, 1, 1)
    assert row.status == "cannot reach quorum: needs 1 more, 0 to come"
    assert rows[followup].status == "cannot reach quorum: needs 2 more, 1 to come"
    accept(engine, DEMO, geriatrician, followup)
    with session_scope(engine) as s:
        rows = {
            (r.vignette_id, r.sub_action): r
            for r in band_progress(s, DEMO, viewer=coordinator, quorum=1)
        }
        assert rows[followup].status == "quorum reached"
        assert rows[admit].status == "quorum reached"
        unknown = band_progress(s, DEMO, viewer=coordinator, quorum=None)
        with pytest.raises(AccessDenied):
            band_progress(s, DEMO, viewer=emergency, quorum=1)
    assert {r.needed for r in unknown} == {None}


def test_the_whole_table_takes_two_queries_whatever_the_study(engine):
    coordinator, geriatrician, _ = study_of(engine, DEMO)
    with session_scope(engine) as s:
        change(s, DEMO, actor=coordinator, rater="adjudicator-01", sub_actions=["esi_acuity"])
    statements = []
    listener = lambda *args: statements.append(args[2])  # noqa: E731
    event.listen(engine, "before_cursor_execute", listener)
    try:
        with session_scope(engine) as s:
            statements.clear()
            table = assignment_table(s, DEMO)
            assert len(statements) == 2
            statements.clear()
            mine = assigned_bands(s, DEMO, geriatrician)
            assert len(statements) == 1  # the rater is known: only their changes are read
    finally:
        event.remove(engine, "before_cursor_execute", listener)
    assert len(table) == sum(len(v.proposals) for v in DEMO)
    assert mine == {band for band, names in table.items() if "adjudicator-01" in names}
    with session_scope(engine) as s:
        for band, names in table.items():
            assert assigned_raters(s, *band) == set(names)


def test_raters_enrolled_later_are_assigned_by_their_specialty(engine):
    _coordinator, *_ = study_of(engine, DEMO)
    with session_scope(engine) as s:
        pain = create_user(
            s,
            actor="coordinator",
            pseudonym="adjudicator-04",
            passphrase="passphrase four",
            root_passphrase="coordinator pass",
            specialty="Pain Medicine",
            **RATER_DETAILS,
        )
    mine = queue_bands(engine, DEMO, pain)
    assert of(DEMO, "analgesia_tier") <= mine
    assert not mine & of(DEMO, "esi_acuity", "followup_days", "referral")
