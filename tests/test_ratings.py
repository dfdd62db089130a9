"""Submitted reviews as ratings: the study's agreement report, blinding, and the CLI's JSON."""

import json
import subprocess
import sys

import pytest

from fma_bands.agreement import METRICS, POOLED, agreement_report, report_to_json
from fma_bands.errors import AccessDenied
from fma_bands.handback import import_handback
from fma_bands.ratings import MEMBERSHIP_DOMAINS, harness_span, reading, study_ratings, study_report
from fma_bands.reviews import ReviewForm, save
from fma_bands.store.db import session_scope
from fma_bands.study import set_mode, set_phase
from tests.conftest import HANDBACK, ROOT, SHARED_VIGNETTES, enrol_study

RATER = dict(role="rater", jurisdiction="Australia", years_post_registration=12)
# A second paper review that disagrees on analgesia and follow-up and declines the triage band.
SECOND = """\
draft_triage_01 | esi_acuity | DECLINE | Out of my scope.
draft_ordering_01 | esi_acuity | AMEND {2, 3} | Same values; the clause needed correcting.
draft_medication_01 | analgesia_tier | AMEND {1, 2} | A weak opioid is a realistic middle step.
draft_documentation_01 | followup_days | AMEND {"min": 1, "max": 14} | Two weeks at most.
"""


@pytest.fixture
def study(engine, shared_library):
    with session_scope(engine) as s:
        coordinator, a, b = enrol_study(s, shared_library)
        import_handback(
            s,
            shared_library,
            actor=coordinator,
            rater_pseudonym="adjudicator-01",
            text=HANDBACK.read_text(),
            source="a.txt",
        )
        import_handback(
            s,
            shared_library,
            actor=coordinator,
            rater_pseudonym="adjudicator-02",
            text=SECOND,
            source="b.txt",
        )
    return engine, shared_library, coordinator, a, b


def test_reviews_become_ratings_of_what_each_rater_attested(study):
    engine, library, coordinator, _, _ = study
    with session_scope(engine) as s:
        ratings = {
            (r.vignette_id, r.rater): r for r in study_ratings(s, library, viewer=coordinator)
        }
    accepted = ratings[("draft_triage_01", "adjudicator-01")]
    assert (accepted.verdict, accepted.values) == ("ACCEPT", frozenset({2}))  # the proposal
    amended = ratings[("draft_documentation_01", "adjudicator-01")]
    assert amended.values == frozenset(range(1, 31))
    assert amended.interval == (1, 30)
    declined = ratings[("draft_triage_01", "adjudicator-02")]
    assert (declined.verdict, declined.values) == ("DECLINE", None)


def test_the_study_report_is_the_agreement_report_of_its_ratings(study):
    engine, library, coordinator, _, _ = study
    with session_scope(engine) as s:
        report = study_report(s, library, viewer=coordinator, bootstrap=200, seed=7)
        ratings = study_ratings(s, library, viewer=coordinator)
    direct = agreement_report(ratings, MEMBERSHIP_DOMAINS, bootstrap=200, seed=7)
    assert report_to_json(report) == report_to_json(direct)
    band = report.metrics[POOLED]["band"]
    # The triage band has one non-DECLINE rater, so three bands are pairable.
    assert band.n_units == 3
    assert band.n_raters == 2
    consensus = {(b.vignette_id, b.sub_action): b.consensus for b in report.bands}
    follow = consensus[("draft_documentation_01", "followup_days")]
    assert follow.rule == "applied"
    assert harness_span("followup_days", follow.consensus) == {"min": 1, "max": 14}
    assert harness_span("followup_days", follow.disputed) == {"min": 15, "max": 30}
    assert consensus[("draft_triage_01", "esi_acuity")].rule == "absent"


def test_raters_see_no_agreement_while_the_phase_is_open(study):
    engine, library, coordinator, a, _ = study
    with session_scope(engine) as s, pytest.raises(AccessDenied):
        study_report(s, library, viewer=a, bootstrap=0)
    with session_scope(engine) as s:
        set_phase(s, actor=coordinator, phase="closed")
    with session_scope(engine) as s:
        assert study_report(s, library, viewer=a, bootstrap=0).metrics[POOLED]["band"].n_units == 3


def test_blind_reviews_take_no_part_in_the_verdict_metric(study):
    engine, library, coordinator, a, _ = study
    with session_scope(engine) as s:
        set_mode(s, actor=coordinator, mode="blind")
    form = ReviewForm(verdict="AMEND", band=[2], reason="High-risk presentation.")
    with session_scope(engine) as s:
        save(s, library, a, "draft_triage_01", "esi_acuity", form, expected_version=1, submit=True)
    with session_scope(engine) as s:
        report = study_report(s, library, viewer=coordinator, bootstrap=0)
    verdict = report.metrics["esi_acuity"]["verdict"]
    # Only draft_ordering_01 keeps two review-mode verdicts for ESI.
    assert verdict.n_units == 1
    assert report.metrics["esi_acuity"]["band"].n_units == 1  # adjudicator-02 declined triage


def test_every_scope_reports_every_metric_with_a_reason_when_absent(study):
    engine, library, coordinator, _, _ = study
    with session_scope(engine) as s:
        data = report_to_json(study_report(s, library, viewer=coordinator, bootstrap=0))
    for scope, metrics in data["metrics"].items():
        assert list(metrics) == list(METRICS), scope
        for metric, alpha in metrics.items():
            assert set(alpha) == {
                "alpha",
                "reason",
                "n_units",
                "n_raters",
                "n_pairable",
                "ci_low",
                "ci_high",
                "p_below_0800",
                "p_below_0667",
                "method",
            }
            assert (alpha["alpha"] is None) == (alpha["reason"] is not None), (scope, metric)
    assert data["metrics"]["followup_days"]["membership"]["reason"].startswith("not defined")


def test_readings_follow_krippendorff():
    assert reading(0.85, None) == "reliable (>= 0.800)"
    assert reading(0.7, None) == "tentative only (0.667 to 0.800)"
    assert reading(0.2, None) == "unreliable (< 0.667)"
    assert reading(None, "no variation") == "undefined (no variation)"


def test_cli_agreement_json_matches_the_page_numbers(tmp_path):
    db = f"sqlite:///{tmp_path / 'x.db'}"
    base = [
        sys.executable,
        "-m",
        "fma_bands.cli",
        "--db",
        db,
        "--vignettes",
        str(SHARED_VIGNETTES),
        "--attestations",
        str(tmp_path / "att"),
        # Coordinator commands name and authenticate the coordinator (issue 9).
        "--as",
        "coordinator",
        "--passphrase-file",
        str(tmp_path / "coordinator.pass"),
    ]
    (tmp_path / "coordinator.pass").write_text("coordinator-demo\n")
    run = dict(cwd=ROOT, capture_output=True, text=True, timeout=120, check=True)
    subprocess.run([*base, "demo"], **run)
    (tmp_path / "b.txt").write_text(SECOND)
    subprocess.run([*base, "handback", "import", str(HANDBACK), "--rater", "rater-01"], **run)
    subprocess.run(
        [*base, "handback", "import", str(tmp_path / "b.txt"), "--rater", "rater-02"], **run
    )
    out = subprocess.run([*base, "agreement", "--json", "--bootstrap", "100", "--seed", "3"], **run)
    data = json.loads(out.stdout)
    assert set(data) == {"metrics", "bands"}
    bands = {(b["vignette_id"], b["sub_action"]): b for b in data["bands"]}
    follow = bands[("draft_documentation_01", "followup_days")]
    assert follow["consensus"] == {"min": 1, "max": 14}
    assert follow["disputed_span"] == {"min": 15, "max": 30}
    assert follow["intersection_rule"] == "applied"
    assert bands[("draft_triage_01", "esi_acuity")]["consensus"] is None
    pooled = data["metrics"]["pooled"]["band"]
    assert pooled["n_units"] == 3
    assert "B=100" in pooled["method"]
    assert "seed=3" in pooled["method"]
    text = subprocess.run([*base, "agreement", "--bootstrap", "0"], **run).stdout
    assert "pooled" in text
    assert "draft_documentation_01 followup_days" in text
    assert "{'min': 1, 'max': 14}" in text
