"""Submitted reviews as ratings: what each rater attested, the study's report, blinding, and the
command's JSON and table carrying the same fields."""

import json
import re

import pytest

from fma_bands.agreement import METRICS, POOLED, agreement_report, report_to_json
from fma_bands.agreement.metrics import ALPHA_FIELDS, REVIEW_MODE_ONLY
from fma_bands.agreement.views import HEADINGS, alpha_row
from fma_bands.cli.agreement import BELOW, SHORT
from fma_bands.core.bands import IntervalBand
from fma_bands.core.errors import AccessDenied, FmaBandsError
from fma_bands.store.db import session_scope
from fma_bands.study.handback import import_handback
from fma_bands.study.ratings import study_ratings, study_report, study_screen
from fma_bands.study.reviews import ReviewForm, save
from fma_bands.study.rounds import close_round
from fma_bands.study.state import set_mode
from fma_bands.study.submissions import submitted_rows
from tests.agreement.demo import THREE_RATERS, demo_study
from tests.conftest import HANDBACK, enrol_study

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
        for rater, text, source in (
            ("adjudicator-01", HANDBACK.read_text(), "a.txt"),
            ("adjudicator-02", SECOND, "b.txt"),
        ):
            import_handback(
                s,
                shared_library,
                actor=coordinator,
                rater_pseudonym=rater,
                text=text,
                source=source,
            )
    return engine, shared_library, coordinator, a, b


def test_reviews_become_ratings_of_the_typed_band_each_rater_attested(study):
    engine, library, coordinator, _, _ = study
    with session_scope(engine) as s:
        ratings = {
            (r.vignette_id, r.rater): r for r in study_ratings(s, library, viewer=coordinator)
        }
    accepted = ratings[("draft_triage_01", "adjudicator-01")]
    assert accepted.verdict == "ACCEPT"
    assert accepted.band == library.vignettes["draft_triage_01"].proposal("esi_acuity").acceptable
    amended = ratings[("draft_documentation_01", "adjudicator-01")]
    assert amended.band == IntervalBand(sub_action="followup_days", min=1, max=30)
    assert amended.mode == "review"
    declined = ratings[("draft_triage_01", "adjudicator-02")]
    assert (declined.verdict, declined.band) == ("DECLINE", None)


def test_the_study_report_is_the_agreement_report_of_its_ratings(study):
    engine, library, coordinator, _, _ = study
    with session_scope(engine) as s:
        report = study_report(s, library, viewer=coordinator, bootstrap=200, seed=7)
        ratings = study_ratings(s, library, viewer=coordinator)
    assert report_to_json(report) == report_to_json(
        agreement_report(ratings, bootstrap=200, seed=7)
    )
    band = report.metrics[POOLED]["band"]
    # The triage band has one rater who did not DECLINE: three bands pair, but one of them is
    # the only band of a sub-action whose raters agree, which adds nothing to the pool.
    assert (band.n_bands, band.n_units, band.n_raters, band.n_declined) == (2, 3, 2, 1)
    assert band.reading == "too few bands (2)"
    follow = {(b.vignette_id, b.sub_action): b for b in report.bands}[
        ("draft_documentation_01", "followup_days")
    ]
    assert follow.consensus.band == IntervalBand(sub_action="followup_days", min=1, max=14)
    assert follow.consensus.disputed == frozenset(range(15, 31))


def test_raters_see_no_agreement_while_the_phase_is_open(study):
    engine, library, coordinator, a, _ = study
    with session_scope(engine) as s, pytest.raises(AccessDenied):
        study_report(s, library, viewer=a, bootstrap=0)
    with session_scope(engine) as s:
        close_round(s, actor=coordinator)
    with session_scope(engine) as s:
        assert study_report(s, library, viewer=a, bootstrap=0).metrics[POOLED]["band"].n_bands == 2


def test_blind_reviews_take_no_part_in_the_verdict_metric(study):
    engine, library, coordinator, a, _ = study
    with session_scope(engine) as s:
        set_mode(s, actor=coordinator, mode="blind")
    form = ReviewForm(verdict="AMEND", band=[2], reason="High-risk presentation.")
    with session_scope(engine) as s:
        save(s, library, a, "draft_triage_01", "esi_acuity", form, expected_version=1, submit=True)
    with session_scope(engine) as s:
        report = study_report(s, library, viewer=coordinator, bootstrap=0)
    # adjudicator-01's triage review is now blind: only draft_ordering_01 pairs two verdicts.
    # Blind and review ratings are reported apart; adjudicator-02 declined triage.
    assert report.metrics["review:esi_acuity"]["verdict"].n_bands == 1
    assert report.metrics["review:esi_acuity"]["band"].n_bands == 1
    alone = [r for r in study_ratings_of(engine, library, coordinator) if r.mode == "blind"]
    assert agreement_report(alone, bootstrap=0).metrics[POOLED]["verdict"].reason == (
        REVIEW_MODE_ONLY
    )


def study_ratings_of(engine, library, viewer):
    with session_scope(engine) as s:
        return study_ratings(s, library, viewer=viewer)


# The command on a three-rater study of the demo vignettes ------------------------------------


def table_rows(text: str) -> list[dict[str, str]]:
    """The command's alpha table back as rows by heading (below-lines folded in)."""
    lines = text.split("\n\n")[0].splitlines()
    headings = re.split(r" {2,}", lines[0])
    full = {short: long for long, short in SHORT.items()}
    rows: list[dict[str, str]] = []
    for line in lines[1:]:
        if line.startswith("    "):
            name, value = line.strip().split(": ", 1)
            rows[-1][name] = value
            continue
        cells = re.split(r" {2,}", line)
        assert len(cells) == len(headings), line
        rows.append({full.get(h, h): c for h, c in zip(headings, cells, strict=True)})
        rows[-1].update({name: "-" for name in BELOW} | {"interval method": "none"})
    return rows


@pytest.fixture(scope="module")
def three_raters(tmp_path_factory):
    return demo_study(tmp_path_factory.mktemp("three-raters"), THREE_RATERS)


def test_the_commands_json_and_table_carry_the_same_fields(three_raters):
    data = json.loads(three_raters.fma("agreement", "--json", "--bootstrap", "300", "--seed", "5"))
    rows = table_rows(three_raters.fma("agreement", "--bootstrap", "300", "--seed", "5"))
    assert set(data["metrics"]) >= {"admit", "orders", "esi_acuity", "followup_days", POOLED}
    shown = 0
    by_key = {(r["sub-action"], r["metric"]): r for r in rows}
    for scope, by_metric in data["metrics"].items():
        for metric in METRICS:
            entry = by_metric[metric]
            assert tuple(entry) == ALPHA_FIELDS
            from_json = json_row(scope, metric, entry)
            row = by_key.get((from_json["sub-action"], metric))
            if row is None:  # the table leaves out what does not apply; the JSON says why
                assert entry["alpha"] is None and entry["reason"].startswith("not ")
                continue
            shown += 1
            assert set(row) == set(HEADINGS)
            assert row == from_json
    assert shown == len(rows)
    text = three_raters.fma("agreement", "--bootstrap", "0")
    assert "    consensus: 3 to 6 days\n    disputed span: 1 to 2 and 7 to 30 days" in text
    assert "no consensus: an order one rater requires is not defensible to every rater" in text


def json_row(scope: str, metric: str, entry: dict) -> dict[str, str]:
    """A JSON entry written as the table writes it."""
    from fma_bands.agreement import Alpha

    fields = {k: v for k, v in entry.items() if k != "reading"}
    fields["warnings"] = tuple(fields["warnings"])
    return alpha_row(Alpha(metric=metric, scope=scope, **fields))


def test_the_crash_study_reports_without_an_error(tmp_path):
    from tests.agreement.demo import CRASH

    demo = demo_study(tmp_path, CRASH)
    data = json.loads(demo.fma("agreement", "--json", "--bootstrap", "50"))
    bands = {(b["vignette_id"], b["sub_action"]): b for b in data["bands"]}
    analgesia = bands[("demo_med_border_01", "analgesia_tier")]
    caution = bands[("demo_med_inter_01", "controlled_substance_caution")]
    assert (analgesia["consensus"], analgesia["consensus_text"]) == ([1], "1 - NSAID")
    assert (caution["consensus"], caution["consensus_text"]) == ([True], "the answer yes")
    assert "1 - NSAID" in demo.fma("agreement", "--bootstrap", "0")


def test_a_problem_with_the_ratings_names_no_rater_to_a_rater(study, monkeypatch):
    """The message of a malformed rating names its rater: the coordinator reads it, a rater
    reads only that the figures cannot be computed."""
    engine, library, coordinator, a, _ = study
    with session_scope(engine) as s:
        close_round(s, actor=coordinator)

    def broken(*args, **kwargs):
        raise FmaBandsError("rating draft_triage_01 / esi_acuity / adjudicator-02: bad")

    monkeypatch.setattr("fma_bands.study.ratings.study_report", broken)
    with session_scope(engine) as s, pytest.raises(FmaBandsError) as seen:
        study_screen(s, library, viewer=a)
    assert "adjudicator-02" not in seen.value.message and "coordinator" in seen.value.message
    with session_scope(engine) as s, pytest.raises(FmaBandsError) as seen:
        study_screen(s, library, viewer=coordinator)
    assert "adjudicator-02" in seen.value.message


def test_the_reviews_read_for_agreement_share_their_repeated_strings(study):
    # Each row holding its own copy of its vignette, sub-action, verdict and mode was a third
    # of what agreement held while it read a large study's reviews; its band's text and its
    # three digests of 64 characters much of the rest.
    engine, _, coordinator, _, _ = study
    with session_scope(engine) as s:
        rows = submitted_rows(s, viewer=coordinator).rows
    columns = ("vignette_id", "sub_action", "verdict", "mode", "band", "context_digest")
    for column in (*columns, "band_digest", "proposal_digest"):
        by_value: dict[str, list[str]] = {}
        for row in rows:
            by_value.setdefault(row[column], []).append(row[column])
        repeated = [texts for texts in by_value.values() if len(texts) > 1]
        assert repeated, f"no {column} repeats in this study: the test would prove nothing"
        for texts in repeated:
            assert all(text is texts[0] for text in texts), column
