"""Rounds on a real store (docs/design.md, Blinding and rounds; Who reviews what): round 1 frozen
once closed and never reopened, round 2 for round 1's candidates (what the registry would refuse
and what the Agreement page shows as disputed) with the anonymised panel,
agreement per round, and the round carried into attestations, the registry and the export."""

import shutil

import pytest
from sqlmodel import select

from app_pages.queue_screen import rater_queue
from fma_bands.agreement import report_to_json
from fma_bands.core.bands import parse_band
from fma_bands.core.errors import AccessDenied, FmaBandsError
from fma_bands.core.protocol import DECLARATIONS, statement_text
from fma_bands.core.vignettes import load_library
from fma_bands.evidence.export import export_document
from fma_bands.evidence.log import read_evidence
from fma_bands.evidence.registry import decide
from fma_bands.store.db import session_scope
from fma_bands.store.models import LogRecord, Review
from fma_bands.study import audit, drafts
from fma_bands.study.enrolment import create_user
from fma_bands.study.governance import set_policy
from fma_bands.study.handback import import_handback
from fma_bands.study.identity import set_identity
from fma_bands.study.ratings import study_report
from fma_bands.study.reviews import ReviewForm, current_review, save
from fma_bands.study.round_panel import _counts, build, panel
from fma_bands.study.rounds import (
    REASONS,
    choose,
    close_round,
    open_round,
    round_two_candidates,
    round_two_raters,
    state,
)
from fma_bands.study.signing import attest, on_file
from fma_bands.study.state import study
from fma_bands.study.submissions import submitted_reviews
from tests.conftest import DEMO_VIGNETTES

VID = "demo_triage_border_01"
ESI = (VID, "esi_acuity")  # proposed [2, 3]
URGENCY = (VID, "urgency_score")  # proposed {min: 55, max: 85}, no scope rule
ANSWERS = {q: {"choice": c} for q, c in (("q1", "yes"), ("q2", "yes"), ("q3", "no"))} | {
    "q4": {"choice": "no"},
    "q6": {"choice": "yes"},
}
RATERS = ("rater-a1", "rater-b2", "rater-c3")
ROOT_PASS = "coordinator pass"
IDENTITY = {
    "full_name": "Person Zeta",
    "primary_qualification": "MBBS Zeta",
    "postgraduate_qualification": "FACEM Zeta",
    "registration_number": "MED000000",
    "registering_body": "Zeta Board",
    "institution": "Zeta Infirmary",
    "email": "zeta@example.org",
}
# Round 1 on the ESI band: three bands with no value in common ({2}, {3} and {1}).
ROUND_ONE = {
    "rater-a1": ("AMEND", [2], "chest pain with normal vitals: emergent"),
    "rater-b2": ("AMEND", [3], "stable, two resources: urgent"),
    "rater-c3": ("AMEND", [1], "could deteriorate at any moment"),
}


def make_library(tmp_path):
    """One demo vignette (two bands) in tmp_path/vignettes."""
    folder = tmp_path / "vignettes"
    folder.mkdir()
    shutil.copy(DEMO_VIGNETTES / f"{VID}.yaml", folder)
    return load_library([folder])


@pytest.fixture
def library(tmp_path):
    return make_library(tmp_path)


def enrol(engine, library, folder, order=RATERS):
    from fma_bands.study.library import sync_vignettes

    with session_scope(engine) as s:
        sync_vignettes(s, library, actor="test")
        coordinator = create_user(
            s,
            actor=None,
            pseudonym="coordinator",
            passphrase=ROOT_PASS,
            role="coordinator",
            folder=folder,
        )
        raters = {
            name: create_user(
                s,
                actor="coordinator",
                pseudonym=name,
                passphrase=f"{name} passphrase",
                root_passphrase=ROOT_PASS,
                role="rater",
                specialty="emergency medicine",
                jurisdiction="Australia",
                years_post_registration=10,
                folder=folder,
            )
            for name in order
        }
        policy(s, folder, coordinator, quorum=2)
    return coordinator, raters


def policy(s, folder, coordinator, *, quorum, scope="warn"):
    """The coordinator signs a policy record with the root key (it reaches `folder` on commit)."""
    return set_policy(
        s, folder, actor=coordinator, passphrase=ROOT_PASS, quorum=quorum, scope=scope
    )


def identify(engine, coordinator, folder, names=RATERS):
    with session_scope(engine) as s:
        for name in names:
            set_identity(
                s,
                actor=coordinator,
                pseudonym=name,
                record=IDENTITY | {"email": f"{name}@example.org"},
                key_path=folder.parent / "identity.key",
                passphrase=ROOT_PASS,
                folder=folder,
            )


def sign(engine, library, rater, folder):
    """The rater signs what they submitted; the receipt is theirs at once."""
    with session_scope(engine) as s:
        return attest(
            s,
            library,
            rater=rater,
            passphrase=f"{rater.pseudonym} passphrase",
            meaning="adjudication",
            declarations=list(DECLARATIONS),
            folder=folder,
        )


def adjudication_files(folder):
    return sorted(p.name for p in folder.glob("*-adjudication-*.dsse.json"))


def review(engine, library, rater, band, verdict, values=None, reason=None):
    with session_scope(engine) as s:
        latest = current_review(s, library, rater, *band)
        form = ReviewForm(verdict=verdict, band=values, answers=ANSWERS, reason=reason)
        version = latest.version if latest else 0
        return save(s, library, rater, *band, form, expected_version=version, submit=True)


@pytest.fixture
def closed(engine, library, tmp_path):
    """Round 1 done and closed: the ESI band has an empty intersection, urgency a consensus."""
    folder = tmp_path / "attestations"
    coordinator, raters = enrol(engine, library, folder)
    for name, (verdict, values, reason) in ROUND_ONE.items():
        review(engine, library, raters[name], ESI, verdict, values, reason)
        review(engine, library, raters[name], URGENCY, "ACCEPT")
    with session_scope(engine) as s:
        close_round(s, actor=coordinator, folder=folder)
    return engine, library, folder, coordinator, raters


@pytest.fixture
def second(closed):
    engine, library, folder, coordinator, _ = closed
    with session_scope(engine) as s:
        open_round(s, library, actor=coordinator, number=2, folder=folder)
    return closed


def test_closing_a_round_is_the_coordinators_audited_and_done_once(engine, library, tmp_path):
    coordinator, raters = enrol(engine, library, tmp_path / "attestations")
    with session_scope(engine) as s, pytest.raises(AccessDenied, match="only the study coord"):
        close_round(s, actor=raters["rater-a1"])
    with session_scope(engine) as s:
        closed = close_round(s, actor=coordinator)
        assert (study(s).round, study(s).phase) == (1, "closed")
    assert (closed.number, closed.phase) == (1, "closed")
    with session_scope(engine) as s, pytest.raises(AccessDenied, match="closed already"):
        close_round(s, actor=coordinator)
    with session_scope(engine) as s:
        [event] = audit.events(s, kinds=["phase_changed"])
    assert (event["actor"], event["payload"]) == (
        "coordinator",
        {"from": "open", "to": "closed", "round": 1},
    )


def test_a_closed_round_is_frozen_and_never_reopened(closed):
    engine, library, _, coordinator, raters = closed
    with session_scope(engine) as s, pytest.raises(AccessDenied, match="never reopened"):
        close_round(s, actor=coordinator)
    with session_scope(engine) as s:
        assert (study(s).round, study(s).phase) == (1, "closed")
    with pytest.raises(AccessDenied, match="phase is closed"):
        review(engine, library, raters["rater-a1"], ESI, "ACCEPT", reason="changed my mind")
    with session_scope(engine) as s, pytest.raises(AccessDenied, match="phase is closed"):
        import_handback(
            s,
            library,
            actor=coordinator,
            rater_pseudonym="rater-a1",
            text=f"{VID} | esi_acuity | ACCEPT | on paper\n",
            source="paper.txt",
        )


def test_the_candidates_are_those_the_registry_would_refuse(closed):
    engine, library, folder, coordinator, _ = closed
    with session_scope(engine) as s:
        found = round_two_candidates(s, library, viewer=coordinator)
    assert [(c.band, c.reasons, c.n_raters) for c in found] == [(ESI, ("no_consensus",), 3)]
    [candidate] = found
    assert candidate.label.endswith(f" · {VID} · ESI acuity level")
    assert candidate.label.startswith("Case 1 of 1")
    # With no consensus, everything the raters admit is in dispute, said in words.
    assert candidate.disputed == "1 - resuscitation to 3 - urgent"
    assert candidate.as_json() == {
        "vignette_id": VID,
        "sub_action": "esi_acuity",
        "reasons": ["no_consensus"],
        "label": candidate.label,
        "reason_text": [REASONS["no_consensus"].sentence],
        "n_raters": 3,
        "n_counted": 3,
        "disputed_text": "1 - resuscitation to 3 - urgent",
    }
    # The quorum is the signed policy record's in force, read from the store.
    with session_scope(engine) as s:
        policy(s, folder, coordinator, quorum=4)
    with session_scope(engine) as s:
        found = round_two_candidates(s, library, viewer=coordinator)
    assert {c.band: c.reasons for c in found} == {
        ESI: ("quorum_not_met", "no_consensus"),
        URGENCY: ("quorum_not_met",),
    }
    assert choose(found, reasons=["no_consensus"]) == [ESI]
    assert choose(found, reasons=["quorum_not_met"]) == [ESI, URGENCY]
    assert choose(found, sub_actions=["urgency_score"]) == [URGENCY]
    assert choose(found) == [ESI, URGENCY]


def test_a_consensus_with_a_disputed_span_is_a_candidate_as_the_agreement_page_shows_it(
    engine, library, tmp_path
):
    """The raters meet in a consensus (ESI 2) but one also admits 3: the registry would grant
    the band, yet the Agreement page shows a disputed span, so round 2 lists it, for that
    reason and that one only."""
    from fma_bands.agreement.views import band_view

    folder = tmp_path / "attestations"
    coordinator, raters = enrol(engine, library, folder)
    for name, values in (("rater-a1", [2]), ("rater-b2", [2]), ("rater-c3", [2, 3])):
        review(engine, library, raters[name], ESI, "AMEND", values, "my reading")
        review(engine, library, raters[name], URGENCY, "ACCEPT")
    with session_scope(engine) as s:
        close_round(s, actor=coordinator, folder=folder)
        found = round_two_candidates(s, library, viewer=coordinator)
        report = study_report(s, library, viewer=coordinator, bootstrap=0, round=1)
    [shown] = [band_view(b, ()) for b in report.bands if (b.vignette_id, b.sub_action) == ESI]
    assert (shown.consensus, shown.disputed) == (
        "Consensus: 2 - emergent",
        "Disputed span: 3 - urgent",
    )
    assert [(c.band, c.reasons, c.n_raters, c.disputed) for c in found] == [
        (ESI, ("disputed_span",), 3, "3 - urgent")
    ]
    [candidate] = found
    assert candidate.short() == "disputed span"
    assert candidate.sentences() == [REASONS["disputed_span"].sentence]
    # Round 2 opens for it by default: no hand-picking.
    with session_scope(engine) as s:
        opened = open_round(s, library, actor=coordinator, number=2, folder=folder)
    assert [(b.vignette_id, b.sub_action) for b in opened.bands] == [ESI]
    assert opened.describe().startswith("round 2 open: 1 band re-reviewed")


def test_without_any_candidate_round_two_must_be_given_its_bands(engine, library, tmp_path):
    folder = tmp_path / "attestations"
    coordinator, raters = enrol(engine, library, folder)
    for name in RATERS:
        review(engine, library, raters[name], ESI, "ACCEPT")
        review(engine, library, raters[name], URGENCY, "ACCEPT")
    with session_scope(engine) as s:
        close_round(s, actor=coordinator, folder=folder)
        assert round_two_candidates(s, library, viewer=coordinator) == []
    with (
        session_scope(engine) as s,
        pytest.raises(FmaBandsError, match="no band reviewed in round 1 is a candidate"),
    ):
        open_round(s, library, actor=coordinator, number=2, folder=folder)


def test_orders_in_dispute_are_named_as_the_vignette_names_the_tests(engine, tmp_path):
    """An orders band whose raters meet in a consensus but differ on what is required: the
    candidate's disputed orders read as test names (the vignette's labels, else humanised)."""
    folder = tmp_path / "vignettes"
    folder.mkdir()
    shutil.copy(DEMO_VIGNETTES / "demo_order_border_01.yaml", folder)
    library = load_library([folder])
    orders = ("demo_order_border_01", "orders")
    attestations = tmp_path / "attestations"
    coordinator, raters = enrol(engine, library, attestations)
    every = ["ecg", "cxr", "d_dimer", "ctpa", "troponin"]
    wider = {"required": ["ecg", "cxr"], "defensible": every}
    for name in RATERS:
        values = wider if name == "rater-c3" else {"required": ["ecg"], "defensible": every}
        review(engine, library, raters[name], orders, "AMEND", values, "my reading")
    with session_scope(engine) as s:
        close_round(s, actor=coordinator, folder=attestations)
        found = round_two_candidates(s, library, viewer=coordinator)
    [candidate] = [c for c in found if c.band == orders]
    assert candidate.reasons == ("disputed_span",)
    # Every rater finds it defensible; only some require it: said so, not "admitted by some".
    assert candidate.disputed == "required by some raters, not all: Chest X-ray"
    # The round-2 panel counts the orders by the same names, never by their keys.
    with session_scope(engine) as s:
        open_round(s, library, actor=coordinator, number=2, folder=attestations, bands=[orders])
        shown = panel(s, library, viewer=raters["rater-a1"], vid=orders[0], name="orders")
    assert shown is not None
    # Each rater's test once, where it stands for them: CXR required by one, merely defensible
    # for the two others; ECG required by all, so never said again as merely defensible.
    assert shown.counts == (
        "Required by 3 of 3: ECG",
        "Required by 1 of 3: Chest X-ray",
        "Defensible, not required, for 3 of 3: CT pulmonary angiogram, D-dimer, Troponin",
        "Defensible, not required, for 2 of 3: Chest X-ray",
    )
    assert not any(key in line for line in shown.counts for key in ("cxr", "ctpa", "d_dimer"))


def test_round_two_opens_for_the_discordant_bands_only_once_round_one_is_closed(closed):
    engine, library, folder, coordinator, raters = closed
    with session_scope(engine) as s, pytest.raises(AccessDenied, match="only the study coord"):
        open_round(s, library, actor=raters["rater-a1"], number=2, folder=folder)
    with session_scope(engine) as s, pytest.raises(FmaBandsError, match="only round that"):
        open_round(s, library, actor=coordinator, number=3, folder=folder)
    with session_scope(engine) as s, pytest.raises(FmaBandsError, match="no such band"):
        open_round(s, library, actor=coordinator, number=2, folder=folder, bands=[(VID, "admit")])
    with session_scope(engine) as s:
        opened = open_round(s, library, actor=coordinator, number=2, folder=folder)
        assert round_two_raters(s, library, [ESI]) == {ESI: list(raters.values())}
    assert (opened.number, opened.phase) == (2, "open")
    assert [(b.vignette_id, b.sub_action, b.raters) for b in opened.bands] == [(*ESI, RATERS)]
    with session_scope(engine) as s:
        [event] = audit.events(s, kinds=["round_opened"])
        assert event["payload"]["round"] == 2
        with pytest.raises(AccessDenied, match="still open"):
            open_round(s, library, actor=coordinator, number=2, folder=folder)
    with session_scope(engine) as s:
        close_round(s, actor=coordinator)
        # After round 2, only its own bands can still be in dispute: urgency keeps round 1.
        after = round_two_candidates(s, library, viewer=coordinator, round=2)
    # No one reviewed it in round 2: it is listed as such, and chosen only by that reason.
    assert [(c.band, c.reasons) for c in after] == [(ESI, ("quorum_not_met", "not_reviewed"))]
    assert choose(after) == [] and choose(after, reasons=["not_reviewed"]) == [ESI]
    with session_scope(engine) as s, pytest.raises(AccessDenied, match="no round follows"):
        open_round(s, library, actor=coordinator, number=2, folder=folder)
    with (
        session_scope(engine) as s,
        pytest.raises(AccessDenied, match="round 2 is closed already"),
    ):
        close_round(s, actor=coordinator)


def test_in_round_two_only_its_bands_take_reviews_and_each_needs_a_reason(second):
    engine, library, _, coordinator, raters = second
    a = raters["rater-a1"]
    with session_scope(engine) as s:
        rows = rater_queue(s, library, a)
    assert [(r.band, r.status) for r in rows] == [(ESI, "to do")]
    with pytest.raises(AccessDenied, match="not one of this rater's"):
        review(engine, library, a, URGENCY, "ACCEPT", reason="still fine")
    with pytest.raises(FmaBandsError, match="keep or revise"):
        review(engine, library, a, ESI, "AMEND", [2])
    kept = review(engine, library, a, ESI, "AMEND", [2, 3], reason="the panel convinced me")
    assert (kept.round, kept.revision) == (2, 2)
    with session_scope(engine) as s:
        assert [(r.band, r.status) for r in rater_queue(s, library, a)] == [(ESI, "submitted")]
        # The round-1 review is kept as it was: a new revision of round 2 supersedes it.
        rows = s.exec(select(Review).where(Review.rater_id == a.id).order_by(Review.id)).all()
    assert [(r.sub_action, r.round, r.band) for r in rows if r.sub_action == "esi_acuity"] == [
        ("esi_acuity", 1, [2]),
        ("esi_acuity", 2, [2, 3]),
    ]
    with session_scope(engine) as s, pytest.raises(FmaBandsError, match="not one of this rater"):
        import_handback(
            s,
            library,
            actor=coordinator,
            rater_pseudonym="rater-b2",
            text=f"{VID} | urgency_score | ACCEPT | on paper\n",
            source="paper.txt",
        )
    with session_scope(engine) as s:
        [imported] = import_handback(
            s,
            library,
            actor=coordinator,
            rater_pseudonym="rater-b2",
            text=f"{VID} | esi_acuity | AMEND {{2, 3}} | on paper, after the panel\n",
            source="paper.txt",
        )
    assert (imported.round, imported.origin) == (2, "handback")


def test_the_panel_is_anonymous_and_holds_round_one_only(second):
    engine, library, _, coordinator, raters = second
    a, b = raters["rater-a1"], raters["rater-b2"]
    with session_scope(engine) as s:
        before = panel(s, library, viewer=b, vid=VID, name="esi_acuity")
        assert panel(s, library, viewer=coordinator, vid=VID, name="esi_acuity") == before
        with pytest.raises(AccessDenied, match="only to its round-2 raters"):
            panel(s, library, viewer=b, vid=VID, name="urgency_score")
    assert before is not None and before.round == 1
    assert [e.letter for e in before.entries] == ["Rater A", "Rater B", "Rater C"]
    assert sorted(e.reason for e in before.entries) == sorted(r for _, _, r in ROUND_ONE.values())
    assert before.counts == ("Each admitted by 1 of 3: 1 - resuscitation to 3 - urgent",)
    text = repr(before)
    assert not any(name in text for name in (*RATERS, "coordinator"))
    # rater-a1 revises in round 2: rater-b2's panel does not change, and shows none of it.
    review(engine, library, a, ESI, "AMEND", [2, 3], reason="a secret second-round reason")
    with session_scope(engine) as s:
        after = panel(s, library, viewer=b, vid=VID, name="esi_acuity")
    assert after == before
    assert "secret second-round" not in repr(after)
    # Nor do other raters' reviews reach b through the reviews of the round, while it is open.
    with session_scope(engine) as s, pytest.raises(AccessDenied, match="stay hidden"):
        submitted_reviews(s, library, viewer=b, round=2)


def test_the_panel_letters_follow_the_answers_not_who_gave_them(engine, library, tmp_path):
    """The same answers from raters enrolled, and submitting, in the opposite order: the same
    letters for the same answers."""
    folder = tmp_path / "attestations"
    coordinator, raters = enrol(engine, library, folder, order=tuple(reversed(RATERS)))
    for name in reversed(RATERS):
        verdict, values, reason = ROUND_ONE[name]
        review(engine, library, raters[name], ESI, verdict, values, reason)
    with session_scope(engine) as s:
        close_round(s, actor=coordinator)
        open_round(s, library, actor=coordinator, number=2, folder=folder, bands=[ESI])
        reversed_panel = panel(s, library, viewer=coordinator, vid=VID, name="esi_acuity")
        reviews = submitted_reviews(s, library, viewer=coordinator, round=1)
    assert reversed_panel is not None
    # Built straight from the reviews in id order, and in the reverse of it: the same panel.
    pairs = [(r.model_copy(update={"rater": ""}), r.band) for r in reviews]
    pairs = [(r, parse_band("esi_acuity", band)) for r, band in pairs]
    assert build(VID, "esi_acuity", 1, pairs).entries == reversed_panel.entries
    assert build(VID, "esi_acuity", 1, pairs[::-1]).entries == reversed_panel.entries
    letters = {e.reason: e.letter for e in reversed_panel.entries}
    by_name = sorted(RATERS, key=lambda n: letters[ROUND_ONE[n][2]])
    # Whatever the order, it is a fixed function of the answers: here it is neither the
    # enrolment, submission or name order (the digest puts b2 first).
    assert by_name == ["rater-b2", "rater-a1", "rater-c3"]


def test_a_reason_that_names_a_rater_shows_no_name_in_the_panel(engine, library, tmp_path):
    """A round-1 reason that names its author or another rater ("rater-a1 here", "as RATER-B2
    said") shows "[a rater]" in the round-2 panel; a longer word that only starts like a
    pseudonym is left alone."""
    folder = tmp_path / "attestations"
    coordinator, raters = enrol(engine, library, folder)
    said = {
        "rater-a1": "rater-a1 here: emergent, as RATER-B2 said (see rater-a1's note)",
        "rater-b2": "stable; not rater-b22 nor prerater-c3, whoever they are",
        "rater-c3": "could deteriorate at any moment",
    }
    for name in RATERS:
        verdict, values, _ = ROUND_ONE[name]
        review(engine, library, raters[name], ESI, verdict, values, said[name])
    with session_scope(engine) as s:
        close_round(s, actor=coordinator)
        open_round(s, library, actor=coordinator, number=2, folder=folder, bands=[ESI])
        shown = panel(s, library, viewer=raters["rater-c3"], vid=VID, name="esi_acuity")
    assert shown is not None
    assert sorted(e.reason or "" for e in shown.entries) == sorted(
        [
            "[a rater] here: emergent, as [a rater] said (see [a rater]'s note)",
            "stable; not rater-b22 nor prerater-c3, whoever they are",
            "could deteriorate at any moment",
        ]
    )


def test_round_one_agreement_stands_after_round_two(second):
    engine, library, _, coordinator, raters = second
    with session_scope(engine) as s:
        first = report_to_json(study_report(s, library, viewer=coordinator, bootstrap=0, round=1))
    review(engine, library, raters["rater-a1"], ESI, "AMEND", [2, 3], reason="panel: 2 or 3")
    review(engine, library, raters["rater-b2"], ESI, "AMEND", [2, 3], reason="panel: 2 or 3")
    review(engine, library, raters["rater-c3"], ESI, "ACCEPT", reason="the proposal is right")
    with session_scope(engine) as s:
        again = report_to_json(study_report(s, library, viewer=coordinator, bootstrap=0, round=1))
        later = report_to_json(study_report(s, library, viewer=coordinator, bootstrap=0, round=2))
    assert again == first
    [band] = [b for b in first["bands"] if b["sub_action"] == "esi_acuity"]
    assert band["intersection_rule"] == "empty"
    [band] = later["bands"]
    assert (band["sub_action"], band["intersection_rule"], band["consensus"]) == (
        "esi_acuity",
        "applied",
        [2, 3],
    )


def test_a_round_two_consensus_is_signed_granted_and_exported_as_round_two(second):
    engine, library, folder, coordinator, raters = second
    for name in RATERS:
        review(engine, library, raters[name], ESI, "AMEND", [2], reason="after the panel: 2")
    with session_scope(engine) as s:
        close_round(s, actor=coordinator, folder=folder)
    identify(engine, coordinator, folder)
    for name in RATERS:
        receipt = sign(engine, library, raters[name], folder)
        # Signed with the round closed: in the folder at once, at the receipt's head.
        [(sequence, digest, file)] = receipt.records
        assert receipt.head == (sequence, digest)
        checked = read_evidence(folder).chain[sequence]
        assert (checked.path.name, checked.digest) == (file, digest)
        rounds = {(r["sub_action"], r["round"]) for r in checked.predicate["reviews"]}
        assert rounds == {("esi_acuity", 2), ("urgency_score", 1)}
        # What the rater signs is true of both: round 2 was made after seeing the panel.
        statement = checked.predicate["declarations"]["statement"]
        assert statement == statement_text([(1, "review"), (2, "review")])
        assert "those of round 2 in review mode made after reading the proposed band" in statement
        assert "and after being shown the anonymised round-1 reviews of the same band" in statement
    decisions = {(d.vignette_id, d.sub_action): d for d in decide(library, folder).decisions}
    assert (decisions[ESI].adjudicated, decisions[ESI].round) == (True, 2)
    assert (decisions[URGENCY].adjudicated, decisions[URGENCY].round) == (True, 1)
    document = export_document(library, folder)
    entries = {b["sub_action"]: b for b in document["bands"][VID]}
    assert entries["esi_acuity"]["x_round"] == 2
    assert entries["esi_acuity"]["acceptable"] == [2]
    assert entries["esi_acuity"]["provenance"] == "clinician-adjudicated"
    assert entries["urgency_score"]["x_round"] == 1
    with session_scope(engine) as s:
        assert state(s, viewer=coordinator).phase == "closed"


def test_the_registry_counts_only_the_latest_round_of_a_band(closed):
    """All three raters signed round 1; in round 2 two of them revise and sign again. The third's
    round-1 signature no longer counts for the band (the latest round does), and the two
    round-2 bands agree, once round 2 closes and its attestations reach the folder."""
    engine, library, folder, coordinator, raters = closed
    identify(engine, coordinator, folder)
    for name in RATERS:
        sign(engine, library, raters[name], folder)
    [first] = [d for d in decide(library, folder).decisions if d.sub_action == "esi_acuity"]
    assert (first.adjudicated, [r.code for r in first.reasons]) == (False, ["no_consensus"])
    with session_scope(engine) as s:
        open_round(s, library, actor=coordinator, number=2, folder=folder)
    for name in ("rater-a1", "rater-b2"):
        review(engine, library, raters[name], ESI, "AMEND", [2, 3], reason="after the panel")
        sign(engine, library, raters[name], folder)
    # Sealed while round 2 is open: the folder, and so the registry, are as before.
    [held] = [d for d in decide(library, folder).decisions if d.sub_action == "esi_acuity"]
    assert (held.adjudicated, [r.code for r in held.reasons]) == (False, ["no_consensus"])
    with session_scope(engine) as s:
        close_round(s, actor=coordinator, folder=folder)
    [later] = [d for d in decide(library, folder).decisions if d.sub_action == "esi_acuity"]
    assert later.adjudicated and later.round == 2
    assert later.adjudicated_by == ("rater-a1", "rater-b2")
    assert later.band.values() == frozenset({2, 3})


def test_a_rater_the_coordinator_assigns_reviews_the_band_in_round_two(closed):
    from fma_bands.study.assignment import change

    engine, library, folder, coordinator, _ = closed
    with session_scope(engine) as s:
        extra = create_user(
            s,
            actor="coordinator",
            pseudonym="rater-d4",
            passphrase="rater-d4 passphrase",
            root_passphrase=ROOT_PASS,
            role="rater",
            specialty="geriatrics",  # out of ESI's scope: not assigned by default
            jurisdiction="Australia",
            years_post_registration=12,
            folder=folder,
        )
        assert extra.pseudonym not in [
            u.pseudonym for u in round_two_raters(s, library, [ESI])[ESI]
        ]
        change(s, library, actor=coordinator, rater="rater-d4", bands=[ESI])
    with session_scope(engine) as s:
        opened = open_round(s, library, actor=coordinator, number=2, folder=folder)
    [band] = [b for b in opened.bands if (b.vignette_id, b.sub_action) == ESI]
    assert "rater-d4" in band.raters and set(RATERS) <= set(band.raters)


def test_attestations_signed_while_the_round_is_open_are_sealed_until_it_closes(
    engine, library, tmp_path
):
    """Blinding of the folder: what raters sign during round 1 waits in the store (with every
    record after it) and reaches attestations/ when the coordinator closes the round."""
    folder = tmp_path / "attestations"
    coordinator, raters = enrol(engine, library, folder)
    for name, (verdict, values, reason) in ROUND_ONE.items():
        review(engine, library, raters[name], ESI, verdict, values, reason)
        review(engine, library, raters[name], URGENCY, "ACCEPT")
    identify(engine, coordinator, folder)
    published = sorted(p.name for p in folder.iterdir())
    receipts = {name: sign(engine, library, raters[name], folder) for name in RATERS}
    # A policy signed after them waits too: the folder holds the chain up to the first sealed.
    with session_scope(engine) as s:
        policy(s, folder, coordinator, quorum=3)

    assert sorted(p.name for p in folder.iterdir()) == published
    assert adjudication_files(folder) == []
    with session_scope(engine) as s:
        query = select(LogRecord).where(LogRecord.kind == "adjudication")
        rows = s.exec(query.order_by(LogRecord.sequence)).all()
        assert sorted((r.signer, r.sealed_round) for r in rows) == [(n, 1) for n in RATERS]
        [line] = on_file(s, "rater-a1")
        assert ", sealed until round 1 closes (record " in line
    files = sorted(f for r in receipts.values() for _, _, f in r.records)
    assert [f for _, _, f in receipts["rater-a1"].records] == [rows[0].file_name]
    assert receipts["rater-a1"].as_dict()["in_folder"] == "when round 1 closes"
    evidence = read_evidence(folder)
    assert evidence.valid and evidence.policy.quorum == 2
    assert [d.adjudicated for d in decide(library, folder).decisions] == [False, False]

    with session_scope(engine) as s:
        close_round(s, actor=coordinator, folder=folder)
    assert adjudication_files(folder) == files
    evidence = read_evidence(folder)
    assert evidence.valid, evidence.problems
    assert evidence.policy.quorum == 3  # the policy signed after them is published with them
    # Every receipt's head is in the published chain (verify --since would accept it).
    for receipt in receipts.values():
        sequence, digest = receipt.head
        assert evidence.chain[sequence].digest == digest
    with session_scope(engine) as s:
        [line] = on_file(s, "rater-a1")
        assert ", in the attestations folder (record " in line
    decisions = {(d.vignette_id, d.sub_action): d for d in decide(library, folder).decisions}
    assert decisions[URGENCY].adjudicated
    assert decisions[URGENCY].adjudicated_by == RATERS
    assert [r.code for r in decisions[ESI].reasons] == ["no_consensus"]


def test_a_yes_no_bands_disputed_answer_is_said_as_the_agreement_page_says_it(engine, tmp_path):
    """A bare "no" under "disputed" read as "not disputed": the answer is named."""
    folder = tmp_path / "vignettes"
    folder.mkdir()
    shutil.copy(DEMO_VIGNETTES / "demo_doc_border_01.yaml", folder)
    library = load_library([folder])
    admit = ("demo_doc_border_01", "admit")  # proposed [false]: do not admit
    attestations = tmp_path / "attestations"
    coordinator, raters = enrol(engine, library, attestations)
    review(engine, library, raters["rater-a1"], admit, "ACCEPT")
    review(engine, library, raters["rater-b2"], admit, "AMEND", [False, True], "either is fine")
    with session_scope(engine) as s:
        close_round(s, actor=coordinator, folder=attestations)
    with session_scope(engine) as s:
        found = {c.band: c for c in round_two_candidates(s, library, viewer=coordinator)}
    candidate = found[admit]
    assert candidate.reasons == ("disputed_span",)
    assert candidate.disputed == "the answer yes"
    assert candidate.as_json()["disputed_text"] == "the answer yes"


def test_the_disputed_bands_come_before_those_no_one_reviewed_each_in_case_order(engine, tmp_path):
    """The coordinator reads the disputes first: the bands no one reviewed (never chosen by
    default) follow them, and each group follows the cases' numbers, which `round show` and
    Study admin both list."""
    from fma_bands.core.labels import case_numbers
    from fma_bands.study.case_keys import case_key

    folder = tmp_path / "vignettes"
    folder.mkdir()
    for name in ("demo_triage_border_01", "demo_triage_clear_01", "demo_triage_inter_01"):
        shutil.copy(DEMO_VIGNETTES / f"{name}.yaml", folder)
    library = load_library([folder])
    attestations = tmp_path / "attestations"
    coordinator, raters = enrol(engine, library, attestations)
    with session_scope(engine) as s:
        numbers = case_numbers(library, case_key(s))
    by_number = sorted(numbers, key=numbers.__getitem__)
    # The last case's ESI band is disputed, the rest of the cases left unreviewed.
    disputed = (by_number[-1], "esi_acuity")
    for name, (verdict, values, reason) in ROUND_ONE.items():
        review(engine, library, raters[name], disputed, verdict, values, reason)
    with session_scope(engine) as s:
        close_round(s, actor=coordinator, folder=attestations)
        found = round_two_candidates(s, library, viewer=coordinator)
    assert found[0].band == disputed
    assert found[0].reasons == ("no_consensus",)
    rest = found[1:]
    assert rest and all("not_reviewed" in c.reasons for c in rest)
    cases = [numbers[c.vignette_id] for c in rest]
    assert cases == sorted(cases)
    assert [c.label.split(" · ")[0] for c in found] == [
        f"Case {numbers[c.vignette_id]} of 3" for c in found
    ]


def test_a_yes_no_panel_says_each_answer_on_a_line_of_its_own():
    """One rater's yes and another's no are two answers given by one of two each, never
    "either (yes or no)", which reads as one rater admitting both."""
    yes, no, both = (parse_band("admit", v) for v in ([True], [False], [True, False]))
    assert _counts("admit", [yes, no], {}) == (
        "Admitted by 1 of 2: the answer yes",
        "Admitted by 1 of 2: the answer no",
    )
    assert _counts("admit", [yes, both], {}) == (
        "Admitted by 2 of 2: the answer yes",
        "Admitted by 1 of 2: the answer no",
    )


def test_what_was_typed_and_never_submitted_in_round_one_is_gone_in_round_two(
    engine, library, tmp_path
):
    # A second tab's answers on a band already submitted (its submit refused as stale) are kept
    # as typed while round 1 is open; round 2 starts from the round-1 review, never from them.
    folder = tmp_path / "attestations"
    coordinator, raters = enrol(engine, library, folder)
    for name, (verdict, values, reason) in ROUND_ONE.items():
        review(engine, library, raters[name], ESI, verdict, values, reason)
        review(engine, library, raters[name], URGENCY, "ACCEPT")
    rater = raters["rater-a1"]
    with session_scope(engine) as s:
        assert drafts.keep(s, rater, *ESI, {"reason": "typed in a stale tab"}, base_version=0)
        assert drafts.in_progress(s, rater) == {ESI}
        close_round(s, actor=coordinator, folder=folder)
    with session_scope(engine) as s:
        open_round(s, library, actor=coordinator, number=2, folder=folder)
    with session_scope(engine) as s:
        assert drafts.in_progress(s, rater) == set()
        assert drafts.restore(s, rater, *ESI) is None
        [row] = rater_queue(s, library, rater)
        assert (row.sub_action, row.status) == ("esi_acuity", "to do")


def test_under_a_required_scope_the_candidates_count_the_raters_the_registry_counts(
    engine, library, tmp_path
):
    """Two emergency physicians agree on ESI 2; a geriatrician, outside ESI's scope, says 3.
    Under scope `require` the registry grants 2 from the two alone, so the band is no
    candidate (not "no consensus"), and progress counts two reviews, not three; under `warn`
    all three count, and the band has no consensus."""
    from fma_bands.study.assignment import change
    from fma_bands.study.coverage import band_progress

    folder = tmp_path / "attestations"
    coordinator, raters = enrol(engine, library, folder, order=RATERS[:2])
    with session_scope(engine) as s:
        raters["rater-d4"] = create_user(
            s,
            actor="coordinator",
            pseudonym="rater-d4",
            passphrase="rater-d4 passphrase",
            root_passphrase=ROOT_PASS,
            role="rater",
            specialty="geriatrics",
            jurisdiction="Australia",
            years_post_registration=12,
            folder=folder,
        )
        change(s, library, actor=coordinator, rater="rater-d4", bands=[ESI])
        policy(s, folder, coordinator, quorum=2, scope="require")
    for name, values in (("rater-a1", [2]), ("rater-b2", [2]), ("rater-d4", [3])):
        review(engine, library, raters[name], ESI, "AMEND", values, "my reading")
    with session_scope(engine) as s:
        [esi] = [
            p
            for p in band_progress(s, library, viewer=coordinator, quorum=2)
            if (p.vignette_id, p.sub_action) == ESI
        ]
        assert (esi.submitted, esi.out_of_scope, esi.counted, esi.status) == (
            3,
            1,
            2,
            "quorum reached",
        )
        close_round(s, actor=coordinator, folder=folder)
        found = {c.band: c.reasons for c in round_two_candidates(s, library, viewer=coordinator)}
    assert ESI not in found
    # The registry, from the signed files alone, grants what the candidates said it would.
    identify(engine, coordinator, folder, names=list(raters))
    for rater in raters.values():
        sign(engine, library, rater, folder)
    decision = {(d.vignette_id, d.sub_action): d for d in decide(library, folder).decisions}[ESI]
    assert decision.adjudicated and parse_band("esi_acuity", [2]) == decision.band
    assert [r.code for r in decision.reasons] == ["out_of_scope"]
    # A quorum of three: the geriatrician's band leaves too few in scope, said as both.
    with session_scope(engine) as s:
        policy(s, folder, coordinator, quorum=3, scope="require")
    with session_scope(engine) as s:
        listed = {c.band: c for c in round_two_candidates(s, library, viewer=coordinator)}
    assert listed[ESI].reasons == ("quorum_not_met", "out_of_scope")
    # The raters it counts are said beside those with a band, as the registry counts them.
    assert (listed[ESI].n_raters, listed[ESI].n_counted) == (3, 2)
    assert listed[ESI].raters_words() == "3 (2 in scope)"
    assert listed[ESI].as_json()["n_counted"] == 2
    # Only warned about: the three count, and share no value.
    with session_scope(engine) as s:
        policy(s, folder, coordinator, quorum=2, scope="warn")
    with session_scope(engine) as s:
        found = {c.band: c.reasons for c in round_two_candidates(s, library, viewer=coordinator)}
    assert found[ESI] == ("no_consensus",)


def test_the_chair_is_waited_for_only_on_a_band_whose_raters_share_no_value():
    from fma_bands.study.rounds import Candidate, chair_words

    def candidate(*reasons):
        return Candidate(VID, "esi_acuity", "Case 1", reasons, 2, None, final=True)

    assert chair_words(candidate("no_consensus"), None, "rater-c3") == (
        "none yet (the chair is rater-c3)"
    )
    # With no chair named, "none yet" would promise a decision no one can sign.
    assert chair_words(candidate("no_consensus"), None, None) == ("none: the policy names no chair")
    assert chair_words(candidate("quorum_not_met", "no_consensus"), "rater-c3", None) == (
        "signed by rater-c3"
    )
    assert chair_words(candidate("quorum_not_met"), None, "rater-c3") == (
        "not the chair's: too few raters"
    )
    assert chair_words(candidate("disputed_span"), None, "rater-c3") == (
        "not needed: a consensus band"
    )
