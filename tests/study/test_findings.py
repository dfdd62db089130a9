"""The coordinator's findings of a round (study/ratings.py, study_findings): the report as
study_report gives it, and the per-rater diagnostics, alpha by ambiguity stratum and planning
of the same ratings; never a rater's to see."""

import json

import pytest

from fma_bands.agreement import POOLED
from fma_bands.agreement.diagnostics import diagnostics, diagnostics_json
from fma_bands.agreement.metrics import report_to_json
from fma_bands.core.errors import AccessDenied
from fma_bands.store.db import session_scope
from fma_bands.study.kept_diagnostics import (
    diagnostics_from_json,
    diagnostics_key,
    diagnostics_to_json,
)
from fma_bands.study.kept_reports import source_key
from fma_bands.study.ratings import study_ambiguity, study_findings, study_ratings, study_report
from fma_bands.study.rounds import close_round
from fma_bands.study.submissions import submitted_rows
from tests.study.test_ratings import study  # noqa: F401 (a fixture)


def test_the_findings_are_the_report_and_the_diagnostics_of_its_ratings(study):  # noqa: F811
    engine, library, coordinator, _, _ = study
    with session_scope(engine) as s:
        found = study_findings(s, library, viewer=coordinator, bootstrap=50, seed=3, width=0.3)
        report = study_report(s, library, viewer=coordinator, bootstrap=50, seed=3)
        ratings = study_ratings(s, library, viewer=coordinator)
    assert report_to_json(found.report) == report_to_json(report)
    again = diagnostics(
        ratings,
        study_ambiguity(library),
        pooled={"review": report.metrics[POOLED]["band"]},
        width=0.3,
        bootstrap=50,
        seed=3,
    )
    assert diagnostics_json(found.diagnostics) == diagnostics_json(again)
    assert [r.rater for r in found.diagnostics.raters] == ["adjudicator-01", "adjudicator-02"]
    assert found.diagnostics.width == 0.3
    assert set(study_ambiguity(library).values()) <= {"clear", "intermediate", "borderline", None}


def test_a_rater_never_sees_the_findings(study):  # noqa: F811
    engine, library, coordinator, a, _ = study
    with session_scope(engine) as s:
        close_round(s, actor=coordinator)
    with session_scope(engine) as s, pytest.raises(AccessDenied, match="coordinator"):
        study_findings(s, library, viewer=a, bootstrap=0)


def test_the_diagnostics_are_kept_and_read_back_until_an_input_changes(study, monkeypatch):  # noqa: F811
    engine, library, coordinator, _, _ = study

    def findings(**options):
        with session_scope(engine) as s:
            return study_findings(s, library, viewer=coordinator, bootstrap=40, seed=2, **options)

    first = findings(width=0.2)
    assert diagnostics_from_json(
        json.loads(json.dumps(diagnostics_to_json(first.diagnostics)))
    ) == (first.diagnostics)

    def computed(*args, **kwargs):
        raise AssertionError("computed again")

    monkeypatch.setattr("fma_bands.study.kept_diagnostics.diagnostics", computed)
    assert findings(width=0.2).diagnostics == first.diagnostics  # the kept copy
    for options in ({"width": 0.25}, {"width": 0.2, "fresh": True}):
        with pytest.raises(AssertionError, match="computed again"):
            findings(**options)
    with session_scope(engine) as s:
        stored = submitted_rows(s, viewer=coordinator, round=1)
    source = source_key(stored.rows, stored.names, library)
    stated = study_ambiguity(library)
    key = diagnostics_key(source, stated, width=0.2, bootstrap=40, seed=2)
    assert key == diagnostics_key(source, dict(stated), width=0.2, bootstrap=40, seed=2)
    assert key != diagnostics_key(source, stated, width=0.2, bootstrap=40, seed=3)
    restated = {vid: "borderline" if a == "clear" else "clear" for vid, a in stated.items()}
    assert key != diagnostics_key(source, restated, width=0.2, bootstrap=40, seed=2)
    assert key != diagnostics_key(source[::-1], stated, width=0.2, bootstrap=40, seed=2)
