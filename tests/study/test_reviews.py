"""The review workflow on a real store: drafts, submissions, revisions, conflicts, blinding,
staleness and hand-back import (SQLite file and PostgreSQL)."""

import shutil

import pytest
from sqlmodel import select

from app_pages.queue_screen import counts, progress, rater_queue, resume
from fma_bands.core.errors import AccessDenied, ConflictError, FmaBandsError
from fma_bands.core.vignettes import load_library
from fma_bands.store.db import session_scope
from fma_bands.store.models import Review
from fma_bands.study import marks
from fma_bands.study.handback import import_handback
from fma_bands.study.library import sync_vignettes
from fma_bands.study.reviews import ReviewForm, current_review, my_reviews, save
from fma_bands.study.rounds import close_round
from fma_bands.study.state import set_mode
from fma_bands.study.submissions import band_reviews, submitted_reviews
from tests.conftest import HANDBACK, enrol_study

RATER = dict(role="rater", jurisdiction="Australia", years_post_registration=12)
GOOD_ANSWERS = {
    "q1": {"choice": "yes"},
    "q2": {"choice": "yes"},
    "q3": {"choice": "no"},
    "q4": {"choice": "no"},
    "q5": {"choice": "band", "note": "The narrow reading: the patient is stable."},
    "q6": {"choice": "yes"},
}


@pytest.fixture
def study(engine, shared_library):
    """The FairMedAgent drafts in a store with a coordinator and two raters."""
    with session_scope(engine) as s:
        coordinator, a, b = enrol_study(s, shared_library)
    return engine, shared_library, coordinator, a, b


def submit(engine, library, rater, vid, name, form, version=0):
    with session_scope(engine) as s:
        return save(s, library, rater, vid, name, form, expected_version=version, submit=True)


def test_queue_progress_and_resume(study):
    engine, library, _, a, _ = study
    with session_scope(engine) as s:
        rows = rater_queue(s, library, a)
    assigned = len(rows)
    assert assigned >= 2 and progress(rows) == (0, assigned)
    first, second = rows[0], rows[1]
    form = ReviewForm(verdict="ACCEPT", answers=GOOD_ANSWERS)
    submit(engine, library, a, first.vignette_id, first.sub_action, form)
    with session_scope(engine) as s:
        save(
            s,
            library,
            a,
            second.vignette_id,
            second.sub_action,
            ReviewForm(verdict="AMEND"),
            expected_version=0,
        )
        rows = rater_queue(s, library, a)
    assert progress(rows) == (1, assigned)
    assert counts(rows)["submitted"] == 1 and counts(rows)["in progress"] == 1
    resumed = resume(rows)
    assert resumed is not None and resumed.band == second.band


def test_a_band_submitted_in_this_round_is_never_skipped(study):
    engine, library, _, a, _ = study
    with session_scope(engine) as s:
        first, second = rater_queue(s, library, a)[:2]
    submit(
        engine,
        library,
        a,
        *first.band,
        ReviewForm(verdict="ACCEPT", answers=GOOD_ANSWERS),
    )
    with session_scope(engine) as s:
        with pytest.raises(FmaBandsError, match="submitted, so it is not skipped"):
            marks.skip(s, library, a, *first.band)
        marks.skip(s, library, a, *second.band)  # a band to do is put aside
    with session_scope(engine) as s:
        assert marks.open_marks(s, a).get(marks.SKIP) == {second.band}
        assert counts(rater_queue(s, library, a))["skipped"] == 1


def test_submit_requires_a_complete_review_and_keeps_nothing_half_done(study):
    engine, library, _, a, _ = study
    incomplete = ReviewForm(verdict="AMEND", answers={"q1": {"choice": "no"}})
    with pytest.raises(FmaBandsError) as caught:
        submit(engine, library, a, "draft_documentation_01", "followup_days", incomplete)
    fields = caught.value.fields
    assert fields["band"].startswith("an amendment needs the corrected band")
    assert fields["reason"].startswith("say why you amend")
    assert fields["q1"] == "say which, in a few words"
    assert fields["q5"].startswith("a disputed span is recorded")
    with session_scope(engine) as s:
        assert s.exec(select(Review)).all() == []


def test_bad_band_is_reported_beside_the_band_field(study):
    engine, library, _, a, _ = study
    form = ReviewForm(verdict="AMEND", band={"min": 30, "max": 1}, reason="x", answers=GOOD_ANSWERS)
    with pytest.raises(FmaBandsError) as caught:
        submit(engine, library, a, "draft_documentation_01", "followup_days", form)
    assert caught.value.fields == {"band": "min 30 is greater than max 1: write {min: 1, max: 30}"}


def test_accept_that_would_not_be_signed_is_refused(study):
    engine, library, _, a, _ = study
    answers = {**GOOD_ANSWERS, "q6": {"choice": "no", "note": "should be 1 to 30"}}
    with pytest.raises(FmaBandsError, match="choose AMEND or DECLINE"):
        submit(
            engine,
            library,
            a,
            "draft_documentation_01",
            "followup_days",
            ReviewForm(verdict="ACCEPT", answers=answers),
        )


def test_submitted_review_is_immutable_and_revisions_supersede(study):
    engine, library, _, a, _ = study
    first = submit(
        engine,
        library,
        a,
        "draft_triage_01",
        "esi_acuity",
        ReviewForm(verdict="ACCEPT", answers=GOOD_ANSWERS),
    )
    amended = ReviewForm(
        verdict="AMEND", band=[1, 2], reason="ESI 1 is defensible too", answers=GOOD_ANSWERS
    )
    # Saving against a submitted review starts a new revision; it never edits the submitted one.
    second = submit(
        engine, library, a, "draft_triage_01", "esi_acuity", amended, version=first.version
    )
    assert (second.revision, second.verdict, second.band) == (2, "AMEND", [1, 2])
    with session_scope(engine) as s:
        history = my_reviews(s, library, a, "draft_triage_01", "esi_acuity")
    assert [(r.revision, r.verdict, r.band) for r in history] == [
        (1, "ACCEPT", None),
        (2, "AMEND", [1, 2]),
    ]


def test_a_second_tab_cannot_silently_overwrite_the_first(study):
    engine, library, _, a, _ = study
    with session_scope(engine) as s:
        draft = save(
            s,
            library,
            a,
            "draft_triage_01",
            "esi_acuity",
            ReviewForm(verdict="ACCEPT"),
            expected_version=0,
        )
    with session_scope(engine) as s:  # tab 1 saves on top of what it saw
        save(
            s,
            library,
            a,
            "draft_triage_01",
            "esi_acuity",
            ReviewForm(verdict="DECLINE"),
            expected_version=draft.version,
        )
    with session_scope(engine) as s, pytest.raises(ConflictError, match="another tab"):
        save(
            s,
            library,
            a,
            "draft_triage_01",
            "esi_acuity",
            ReviewForm(verdict="AMEND"),
            expected_version=draft.version,
        )  # tab 2 still holds the old version
    with session_scope(engine) as s:
        assert current_review(s, library, a, "draft_triage_01", "esi_acuity").verdict == "DECLINE"


def test_blinding_holds_while_the_phase_is_open(study):
    engine, library, coordinator, a, b = study
    submit(
        engine,
        library,
        a,
        "draft_triage_01",
        "esi_acuity",
        ReviewForm(verdict="ACCEPT", answers=GOOD_ANSWERS),
    )
    with session_scope(engine) as s:
        with pytest.raises(AccessDenied):
            submitted_reviews(s, library, viewer=b)
        with pytest.raises(AccessDenied):
            band_reviews(s, library, viewer=b, vid="draft_triage_01", name="esi_acuity")
        # Rater b's own view of the band shows nothing of rater a's.
        assert current_review(s, library, b, "draft_triage_01", "esi_acuity") is None
        theirs = rater_queue(s, library, b)
        assert theirs and all(r.status == "to do" for r in theirs)
        assert len(submitted_reviews(s, library, viewer=coordinator)) == 1
        close_round(s, actor=coordinator)
    with session_scope(engine) as s:
        assert [r.rater for r in submitted_reviews(s, library, viewer=b)] == ["adjudicator-01"]
        with pytest.raises(FmaBandsError, match="phase is closed"):
            save(
                s,
                library,
                b,
                "draft_triage_01",
                "esi_acuity",
                ReviewForm(verdict="ACCEPT"),
                expected_version=0,
            )


def test_only_the_coordinator_changes_the_study(study):
    engine, _, _, a, _ = study
    with session_scope(engine) as s, pytest.raises(AccessDenied):
        close_round(s, actor=a)
    with session_scope(engine) as s, pytest.raises(AccessDenied):
        set_mode(s, actor=a, mode="blind")


def test_blind_mode_needs_the_raters_own_band(study):
    engine, library, coordinator, a, _ = study
    with session_scope(engine) as s:
        set_mode(s, actor=coordinator, mode="blind")
    with pytest.raises(FmaBandsError) as caught:
        submit(engine, library, a, "draft_triage_01", "esi_acuity", ReviewForm(verdict="AMEND"))
    assert "band" in caught.value.fields
    done = submit(
        engine,
        library,
        a,
        "draft_triage_01",
        "esi_acuity",
        ReviewForm(verdict="AMEND", band=[2], reason="High-risk chest pain."),
    )
    assert done.mode == "blind"


def test_a_changed_clinical_core_makes_reviews_stale_but_keeps_them(study, tmp_path):
    engine, library, coordinator, a, _ = study
    submit(
        engine,
        library,
        a,
        "draft_triage_01",
        "esi_acuity",
        ReviewForm(verdict="ACCEPT", answers=GOOD_ANSWERS),
    )
    folder = tmp_path / "v"
    shutil.copytree(library.vignettes["draft_triage_01"].path.rsplit("/", 1)[0], folder)
    path = folder / "draft_triage_01.yaml"
    path.write_text(path.read_text().replace("HR 92", "HR 96"))
    changed = load_library([folder])
    with session_scope(engine) as s:
        report = sync_vignettes(s, changed, actor="coordinator")
        assert report.changed == ["draft_triage_01"]
        assert report.stale_reviews == 1
        [row] = [r for r in rater_queue(s, changed, a) if r.vignette_id == "draft_triage_01"]
        assert row.status == "changed since submitted" and not row.done
        kept = submitted_reviews(s, changed, viewer=coordinator, include_stale=True)
        assert [r.stale for r in kept] == [True]
        assert submitted_reviews(s, changed, viewer=coordinator) == []


def test_the_real_handback_imports_as_four_submitted_reviews(study):
    engine, library, coordinator, _, _ = study
    with session_scope(engine) as s:
        created = import_handback(
            s,
            library,
            actor=coordinator,
            rater_pseudonym="adjudicator-01",
            text=HANDBACK.read_text(),
            source=HANDBACK.name,
        )
    assert len(created) == 4
    got = {(r.vignette_id, r.verdict): r.band for r in created}
    assert got == {
        ("draft_triage_01", "ACCEPT"): None,
        ("draft_ordering_01", "AMEND"): [2, 3],
        ("draft_medication_01", "AMEND"): [1, 3],
        ("draft_documentation_01", "AMEND"): {"min": 1, "max": 30},
    }
    with session_scope(engine) as s:
        rows = s.exec(select(Review)).all()
    assert all(r.status == "submitted" and r.origin == "handback" for r in rows)


@pytest.mark.parametrize(
    ("broken", "message"),
    [
        ("draft_triage_99 | esi_acuity | ACCEPT | x", "unknown vignette 'draft_triage_99'"),
        ("draft_triage_01 | esi_level | ACCEPT | x", "unknown sub_action 'esi_level'"),
        ("draft_triage_01 | esi_acuity | AGREE | x", "is not ACCEPT"),
        ("draft_triage_01 | esi_acuity | AMEND | x", "AMEND needs the corrected band"),
        ("draft_triage_01 | esi_acuity | AMEND {0, 1} | x", "outside the domain"),
        ("draft_triage_01 | esi_acuity | AMEND {1, 2}", "expected `vignette_id | sub_action"),
    ],
)
def test_a_handback_with_one_bad_line_stores_nothing(study, broken, message):
    engine, library, coordinator, _, _ = study
    lines = HANDBACK.read_text().splitlines()
    index = next(i for i, line in enumerate(lines) if line.startswith("draft_triage_01"))
    lines[index] = broken
    with session_scope(engine) as s, pytest.raises(FmaBandsError) as caught:
        import_handback(
            s,
            library,
            actor=coordinator,
            rater_pseudonym="adjudicator-01",
            text="\n".join(lines),
            source="copy.txt",
        )
    [problem] = caught.value.problems
    assert problem.line == index + 1
    assert problem.file == "copy.txt"
    assert message in problem.message
    with session_scope(engine) as s:
        assert s.exec(select(Review)).all() == []


def test_a_duplicate_handback_line_is_refused(study):
    engine, library, coordinator, _, _ = study
    text = HANDBACK.read_text() + "draft_triage_01 | esi_acuity | DECLINE | changed my mind\n"
    with session_scope(engine) as s, pytest.raises(FmaBandsError, match="already given on line"):
        import_handback(
            s,
            library,
            actor=coordinator,
            rater_pseudonym="adjudicator-01",
            text=text,
            source="dup.txt",
        )


# Revisions, blind mode and the closed phase, held in the domain --------------------------------


def test_a_stale_tab_cannot_overwrite_a_newer_revision(study):
    """Tabs A and B both show submitted revision 1; A submits revision 2; B, still showing
    revision 1, is refused rather than submit revision 3 over it."""
    engine, library, _, a, _ = study
    band = ("draft_triage_01", "esi_acuity")
    first = submit(engine, library, a, *band, ReviewForm(verdict="ACCEPT", answers=GOOD_ANSWERS))
    seen_by_both_tabs = first.version
    tab_a = ReviewForm(verdict="AMEND", band=[2, 3], reason="TAB A", answers=GOOD_ANSWERS)
    second = submit(engine, library, a, *band, tab_a, version=seen_by_both_tabs)
    assert second.version > seen_by_both_tabs
    tab_b = ReviewForm(
        verdict="AMEND", band=[1, 2], reason="TAB B: stale tab", answers=GOOD_ANSWERS
    )
    with pytest.raises(ConflictError, match="changed in another tab"):
        submit(engine, library, a, *band, tab_b, version=seen_by_both_tabs)
    # A draft saved from the stale tab is refused the same way.
    with pytest.raises(ConflictError), session_scope(engine) as s:
        save(s, library, a, *band, tab_b, expected_version=seen_by_both_tabs)
    with session_scope(engine) as s:
        history = my_reviews(s, library, a, *band)
    assert [(r.revision, r.reason) for r in history] == [(1, None), (2, "TAB A")]


def test_two_tabs_writing_the_same_revision_at_once_get_a_conflict(study, monkeypatch):
    """If the other tab's revision lands between this save's read and its write, the unique
    revision number refuses it: a ConflictError, never a raw IntegrityError."""
    from fma_bands.study import reviews

    engine, library, _, a, _ = study
    band = ("draft_triage_01", "esi_acuity")
    first = submit(engine, library, a, *band, ReviewForm(verdict="ACCEPT", answers=GOOD_ANSWERS))
    with session_scope(engine) as s:
        read_before = [r for r in reviews.revisions(s, a.id, *band)]
        s.expunge_all()
    tab_a = ReviewForm(verdict="AMEND", band=[2, 3], reason="TAB A", answers=GOOD_ANSWERS)
    submit(engine, library, a, *band, tab_a, version=first.version)
    monkeypatch.setattr(reviews, "revisions", lambda *args: read_before)
    tab_b = ReviewForm(verdict="DECLINE", reason="TAB B", answers=GOOD_ANSWERS)
    with pytest.raises(ConflictError):
        submit(engine, library, a, *band, tab_b, version=first.version)
    monkeypatch.undo()
    with session_scope(engine) as s:
        assert [r.reason for r in my_reviews(s, library, a, *band)] == [None, "TAB A"]


def test_blind_mode_refuses_accept_in_the_domain(study):
    engine, library, coordinator, a, _ = study
    with session_scope(engine) as s:
        set_mode(s, actor=coordinator, mode="blind")
    with pytest.raises(FmaBandsError) as caught:
        submit(
            engine,
            library,
            a,
            "draft_triage_01",
            "esi_acuity",
            ReviewForm(verdict="ACCEPT", reason="fine"),
        )
    assert "no proposal to accept" in caught.value.fields["verdict"]
    with pytest.raises(FmaBandsError), session_scope(engine) as s:
        save(
            s,
            library,
            a,
            "draft_triage_01",
            "esi_acuity",
            ReviewForm(verdict="ACCEPT"),
            expected_version=0,
        )
    with session_scope(engine) as s:
        assert s.exec(select(Review)).all() == []
        with pytest.raises(FmaBandsError) as caught:
            import_handback(
                s,
                library,
                actor=coordinator,
                rater_pseudonym="adjudicator-01",
                text=HANDBACK.read_text(),
                source="blind.txt",
            )
    [problem] = caught.value.problems
    assert "blind mode" in problem.message and problem.line == 5
    # A blind review binds no proposal: the rater saw none.
    done = submit(
        engine,
        library,
        a,
        "draft_triage_01",
        "esi_acuity",
        ReviewForm(verdict="AMEND", band=[2], reason="x"),
    )
    assert (done.mode, done.proposal_digest) == ("blind", None) and done.band_digest


def test_a_handback_is_refused_once_the_phase_is_closed(study):
    engine, library, coordinator, _, _ = study
    with session_scope(engine) as s:
        close_round(s, actor=coordinator)
    with session_scope(engine) as s, pytest.raises(AccessDenied, match="phase is closed"):
        import_handback(
            s,
            library,
            actor=coordinator,
            rater_pseudonym="adjudicator-01",
            text=HANDBACK.read_text(),
            source=HANDBACK.name,
        )
    with session_scope(engine) as s:
        assert s.exec(select(Review)).all() == []


def test_an_imported_review_says_who_entered_it(study):
    engine, library, coordinator, _, _ = study
    with session_scope(engine) as s:
        created = import_handback(
            s,
            library,
            actor=coordinator,
            rater_pseudonym="adjudicator-01",
            text=HANDBACK.read_text(),
            source=HANDBACK.name,
        )
    assert {(r.origin, r.entered_by, r.confirmed_at) for r in created} == {
        ("handback", "coordinator", None)
    }


def test_every_rule_goes_through_one_table(study, tmp_path):
    """Each coordinator-only action is refused to a rater, and each rater action to the
    coordinator, by fma_bands.study.state.authorize, whichever module the action lives in."""
    from app_pages.audit_log_screen import choices as audit_choices
    from app_pages.progress_screen import reviews_csv
    from fma_bands.study.assignment import change
    from fma_bands.study.due_dates import set_due, today
    from fma_bands.study.enrolment import enrol, reset
    from fma_bands.study.exemptions import review_exemption
    from fma_bands.study.exports import record_export
    from fma_bands.study.governance import approve, set_policy
    from fma_bands.study.identity import reveal_identity, set_identity
    from fma_bands.study.impact import reviewed_impact
    from fma_bands.study.marks import all_flags
    from fma_bands.study.queries import ask, write
    from fma_bands.study.ratings import study_findings
    from fma_bands.study.rounds import open_round
    from fma_bands.study.rounds import state as round_state
    from fma_bands.study.state import RULES, authorize

    engine, library, coordinator, a, _ = study
    attempts = {
        "enrol": lambda s, who: enrol(
            s,
            actor=who,
            passphrase="coordinator pass",
            pseudonym="x-01",
            role="rater",
            specialty="x",
            jurisdiction="x",
            years_post_registration=1,
        ),
        "reset": lambda s, who: reset(
            s, actor=who, pseudonym="adjudicator-02", passphrase="coordinator pass"
        ),
        "close_round": lambda s, who: close_round(s, actor=who),
        "open_round": lambda s, who: open_round(
            s,
            library,
            actor=who,
            number=2,
            folder=tmp_path,
            bands=[("draft_triage_01", "esi_acuity")],
        ),
        "set_mode": lambda s, who: set_mode(s, actor=who, mode="blind"),
        "set_policy": lambda s, who: set_policy(
            s, tmp_path, actor=who, passphrase="coordinator pass", quorum=1, scope="warn"
        ),
        "approve": lambda s, who: approve(
            s, actor=who, passphrase="coordinator pass", folder=tmp_path
        ),
        "import_handback": lambda s, who: import_handback(
            s, library, actor=who, rater_pseudonym="adjudicator-01", text="", source="x"
        ),
        "see_progress": lambda s, who: round_state(s, viewer=who),
        "record_identity": lambda s, who: set_identity(
            s,
            actor=who,
            pseudonym="adjudicator-02",
            record={},
            key_path=tmp_path / "k",
            passphrase="",
            folder=None,
        ),
        "reveal_identity": lambda s, who: reveal_identity(
            s, actor=who, pseudonym="adjudicator-02", key_path=tmp_path / "k"
        ),
        "see_reviews": lambda s, who: submitted_reviews(s, library, viewer=who),
        "see_diagnostics": lambda s, who: study_findings(s, library, viewer=who, bootstrap=0),
        "see_flags": lambda s, who: all_flags(s, who),
        "read_audit": lambda s, who: audit_choices(s, who),
        "export_reviews": lambda s, who: reviews_csv(s, library, viewer=who),
        "review": lambda s, who: save(
            s, library, who, "draft_triage_01", "esi_acuity", ReviewForm(), expected_version=0
        ),
        "assign": lambda s, who: change(
            s, library, actor=who, rater="adjudicator-01", sub_actions=["esi_acuity"]
        ),
        "see_impact": lambda s, who: reviewed_impact(s, library, [], viewer=who),
        "review_exemption": lambda s, who: review_exemption(
            s, rater=who, name="sex/orders", verdict="CONFIRM", reason="hCG first."
        ),
        "ask_coordinator": lambda s, who: ask(
            s, library, who, ("draft_triage_01", "esi_acuity"), "A question."
        ),
        "answer_queries": lambda s, who: write(
            s, library, who, "adjudicator-02", ("draft_triage_01", "esi_acuity"), "A question."
        ),
        "set_due_date": lambda s, who: set_due(s, actor=who, due_on=today()),
        "export_bands": lambda s, who: record_export(
            s, who, how="written", head=(0, "sha256:x"), signed=False, bands=0, adjudicated=0
        ),
    }
    for action, rule in RULES.items():
        if action == "sign":
            continue  # tests/study/test_signing.py tries signing with every credential
        outsider = a if "coordinator" in rule.roles else coordinator
        with session_scope(engine) as s, pytest.raises(AccessDenied, match=r"only|hidden"):
            attempts[action](s, outsider)
        with session_scope(engine) as s, pytest.raises(AccessDenied):
            authorize(s, outsider, action)
    with session_scope(engine) as s, pytest.raises(AccessDenied, match="sign in first"):
        authorize(s, None, "review")


# An AMEND's corrections of the clause, source, reasoning and disputed span ---------------------

DOC = ("draft_documentation_01", "followup_days")  # {1..14}, disputed span {15..30}
NEW_CLAUSE = "Follow-up within 30 days of discharge is advised after hyperglycaemia in hospital."


def amend_doc(corrections, band=None, verdict="AMEND"):
    return ReviewForm(
        verdict=verdict,
        band=band or {"min": 1, "max": 14},
        answers=GOOD_ANSWERS,
        reason="The clause misquotes the guideline.",
        corrections=corrections,
    )


def test_an_amend_that_keeps_the_values_and_corrects_the_clause_is_stored(study):
    engine, library, _, a, _ = study
    proposal = library.vignettes[DOC[0]].proposal(DOC[1])
    corrections = {
        "clause": f"  {NEW_CLAUSE}  ",
        "source": proposal.source,  # the proposal's own: no correction
        "reasoning": proposal.reasoning,
        "disputed_span": None,  # "no disputed span"
    }
    saved = submit(engine, library, a, *DOC, amend_doc(corrections))
    assert saved.band == {"min": 1, "max": 14}
    assert saved.corrections == {"clause": NEW_CLAUSE, "disputed_span": None}
    with session_scope(engine) as s:
        row = s.exec(select(Review).where(Review.id == saved.id)).one()
    assert row.corrections == {"clause": NEW_CLAUSE, "disputed_span": None}


def test_a_span_equal_to_the_proposals_and_unchanged_texts_are_no_correction(study):
    engine, library, _, a, _ = study
    unchanged = {"disputed_span": [*range(15, 31)], "clause": None}
    with pytest.raises(FmaBandsError) as refused:
        submit(engine, library, a, *DOC, amend_doc(unchanged))
    assert refused.value.fields == {"clause": "the corrected clause is text"}
    saved = submit(engine, library, a, *DOC, amend_doc({"disputed_span": {"min": 15, "max": 30}}))
    assert saved.corrections is None


@pytest.mark.parametrize(
    ("corrections", "field", "message"),
    [
        ({"clause": "   "}, "clause", "the corrected clause is empty"),
        ({"source": "x" * 4001}, "source", "keep the corrected source under 4000 characters"),
        ({"reasoning": "fine\x00"}, "reasoning", "the corrected reasoning holds a NUL byte"),
        ({"disputed_span": {"min": 10, "max": 40}}, "disputed_span", "the disputed span repeats"),
        ({"disputed_span": {"min": 40}}, "disputed_span", "an interval is a mapping"),
        ({"disputed_span": [400]}, "disputed_span", "400 is outside the domain"),
        ({"notes": "mine"}, "corrections", "only clause, source, reasoning, disputed_span"),
    ],
)
def test_bad_corrections_are_refused_by_field(study, corrections, field, message):
    engine, library, _, a, _ = study
    with pytest.raises(FmaBandsError) as refused:
        submit(engine, library, a, *DOC, amend_doc(corrections))
    assert refused.value.fields[field].startswith(message), refused.value.fields
    with session_scope(engine) as s:
        assert current_review(s, library, a, *DOC) is None


def test_only_an_amend_in_review_mode_corrects_the_proposal(study):
    engine, library, coordinator, a, _ = study
    accept = amend_doc({"clause": NEW_CLAUSE}, verdict="ACCEPT")
    with pytest.raises(FmaBandsError) as refused:
        submit(engine, library, a, *DOC, accept.model_copy(update={"band": None}))
    assert refused.value.fields["corrections"].startswith("only an AMEND")
    with session_scope(engine) as s:
        set_mode(s, actor=coordinator, mode="blind")
    with pytest.raises(FmaBandsError) as blind:
        submit(engine, library, a, *DOC, amend_doc({"clause": NEW_CLAUSE}))
    assert blind.value.fields["corrections"].startswith("only an AMEND of a proposal on screen")


ACCEPT_DOC = ("draft_documentation_01", "followup_days")


@pytest.mark.parametrize(
    ("answers", "reason", "field", "message"),
    [
        (GOOD_ANSWERS, "x" * 4001, "reason", "keep the reason under 4000 characters"),
        (
            {**GOOD_ANSWERS, "q1": {"choice": "no", "note": "y" * 2001}},
            "fine",
            "q1",
            "keep the note under 2000 characters",
        ),
        (
            {**GOOD_ANSWERS, "q2": {"choice": "yes", "extra": "z"}},
            "fine",
            "q2",
            "an answer is a choice and a note, not extra",
        ),
    ],
)
def test_a_reason_or_note_past_its_bound_is_refused_draft_or_submission(
    study, answers, reason, field, message
):
    """Every text of a review is signed with it: one without bound could make a signed record
    larger than any reader of the folder accepts."""
    engine, library, _, a, _ = study
    form = ReviewForm(verdict="ACCEPT", answers=answers, reason=reason)
    for final in (False, True):
        with session_scope(engine) as s, pytest.raises(FmaBandsError) as refused:
            save(s, library, a, *ACCEPT_DOC, form, expected_version=0, submit=final)
        assert refused.value.fields[field] == message
    with session_scope(engine) as s:
        assert current_review(s, library, a, *ACCEPT_DOC) is None
    at_bound = ReviewForm(verdict="ACCEPT", answers=GOOD_ANSWERS, reason="x" * 4000)
    assert submit(engine, library, a, *ACCEPT_DOC, at_bound).reason == "x" * 4000
