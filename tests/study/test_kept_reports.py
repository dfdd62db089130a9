"""Agreement reports kept under the digest of what they were computed from (kept_reports.py): a
kept report reads back as the very report computed, is used only for the same ratings, B, seed
and code, and a missing, unreadable or outdated copy is computed again."""

import dataclasses
import json

import pytest
from sqlmodel import select

from fma_bands.agreement import DEFAULT_SEED, agreement_report, report_to_json
from fma_bands.core.vignettes import load_library
from fma_bands.store.db import make_engine, session_scope
from fma_bands.store.models import KeptReport
from fma_bands.study import kept_reports
from fma_bands.study.kept_reports import (
    KEEP,
    kept_report,
    report_from_json,
    report_json,
    report_key,
)
from fma_bands.study.ratings import study_ratings, study_report
from fma_bands.study.users import require_user
from tests.agreement.demo import THREE_RATERS, demo_study
from tests.conftest import DEMO_VIGNETTES


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """Three raters on the demo: booleans, ordinals as lists and ranges, follow-up ranges and
    orders, with declines, unanimity and an empty consensus."""
    folder = tmp_path_factory.mktemp("kept")
    made = demo_study(folder, THREE_RATERS)
    return make_engine(made.url), load_library([DEMO_VIGNETTES])


@pytest.fixture
def computed(demo, monkeypatch):
    """How many times the report is really computed."""
    engine, _ = demo
    with session_scope(engine) as s:
        for row in s.exec(select(KeptReport)):
            s.delete(row)
    calls = []
    real = kept_reports.agreement_report

    def counted(ratings, **options):
        calls.append(options)
        return real(ratings, **options)

    monkeypatch.setattr(kept_reports, "agreement_report", counted)
    return calls


def ratings_of(engine, library):
    with session_scope(engine) as s:
        coordinator = require_user(s, "coordinator")
        return coordinator, study_ratings(s, library, viewer=coordinator)


def test_a_kept_report_reads_back_as_the_report_computed(demo):
    engine, library = demo
    _, ratings = ratings_of(engine, library)
    report = agreement_report(ratings, bootstrap=200, seed=3)
    kinds = {type(band).__name__ for b in report.bands for _, band in b.bands}
    assert kinds == {"SetBand", "IntervalBand", "MultilabelBand"}
    assert {b.consensus.rule for b in report.bands} == {"applied", "empty"}
    # Through the text as stored, so floats, booleans and None all make the round trip.
    again = report_from_json(json.loads(json.dumps(report_json(report))), library)
    assert again == report
    assert report_to_json(again) == report_to_json(report)


def test_the_same_ratings_are_computed_once_and_the_copy_is_the_same(demo, computed):
    engine, library = demo
    coordinator, _ = ratings_of(engine, library)
    with session_scope(engine) as s:
        first = study_report(s, library, viewer=coordinator, bootstrap=100, seed=5)
    with session_scope(engine) as s:
        second = study_report(s, library, viewer=coordinator, bootstrap=100, seed=5)
    assert len(computed) == 1
    assert second == first
    with session_scope(engine) as s:
        study_report(s, library, viewer=coordinator, bootstrap=100, seed=6)  # another seed
        study_report(s, library, viewer=coordinator, bootstrap=50, seed=5)  # another B
        fresh = study_report(s, library, viewer=coordinator, bootstrap=100, seed=5, fresh=True)
    assert len(computed) == 4
    assert fresh == first


def test_a_changed_rating_or_code_is_another_key(demo, monkeypatch):
    engine, library = demo
    _, ratings = ratings_of(engine, library)
    key = report_key(ratings, bootstrap=100, seed=5)
    assert report_key(list(reversed(ratings)), bootstrap=100, seed=5) == key  # order is not
    changed = [*ratings[:-1], dataclasses.replace(ratings[-1], verdict="DECLINE")]
    assert report_key(changed, bootstrap=100, seed=5) != key
    assert report_key(ratings[:-1], bootstrap=100, seed=5) != key
    # The proposal a rating was judged against says whether it was left unchanged.
    i = next(i for i, r in enumerate(ratings) if r.proposal is not None)
    unproposed = [*ratings[:i], dataclasses.replace(ratings[i], proposal=None), *ratings[i + 1 :]]
    assert report_key(unproposed, bootstrap=100, seed=5) != key
    monkeypatch.setattr(kept_reports, "code_digest", lambda: "another version of the code")
    assert report_key(ratings, bootstrap=100, seed=5) != key


def test_the_code_digest_follows_the_agreement_code(tmp_path, monkeypatch):
    kept_reports.code_digest.cache_clear()
    try:
        before = kept_reports.code_digest()
        source = tmp_path / "fma_bands"
        source.mkdir()
        for name in kept_reports._SOURCES:
            path = kept_reports.Path(kept_reports.__file__).parents[1] / name
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            if path.is_dir():
                (source / name).mkdir()
                for file in path.glob("*.py"):
                    (source / name / file.name).write_bytes(file.read_bytes())
            else:
                (source / name).write_bytes(path.read_bytes())
        monkeypatch.setattr(kept_reports, "__file__", str(source / "study" / "kept_reports.py"))
        kept_reports.code_digest.cache_clear()
        assert kept_reports.code_digest() == before
        metrics = source / "agreement" / "metrics.py"
        metrics.write_text(metrics.read_text() + "\n# a change\n")
        kept_reports.code_digest.cache_clear()
        assert kept_reports.code_digest() != before
    finally:
        kept_reports.code_digest.cache_clear()


def test_an_unreadable_copy_is_computed_again_and_replaced(demo, computed):
    engine, library = demo
    coordinator, ratings = ratings_of(engine, library)
    with session_scope(engine) as s:
        first = study_report(s, library, viewer=coordinator, bootstrap=0)
    key = report_key(ratings, bootstrap=0, seed=DEFAULT_SEED)
    for body in ('{"metrics": {}}', "not json", '{"bands": 7}'):
        with session_scope(engine) as s:
            s.get(KeptReport, key).body = body
        with session_scope(engine) as s:
            assert study_report(s, library, viewer=coordinator, bootstrap=0) == first
        with session_scope(engine) as s:
            kept = s.get(KeptReport, key).body
        assert kept == json.dumps(report_json(first), separators=(",", ":"))
    assert len(computed) == 4


def test_only_the_newest_reports_are_kept(demo, computed):
    engine, library = demo
    _, ratings = ratings_of(engine, library)
    for seed in range(KEEP + 3):
        with session_scope(engine) as s:
            kept_report(s, ratings, library, bootstrap=10, seed=seed)
    with session_scope(engine) as s:
        kept = s.exec(select(KeptReport)).all()
        newest = report_key(ratings, bootstrap=10, seed=KEEP + 2)
    assert len(kept) == KEEP
    assert newest in {row.key for row in kept}


def test_the_command_prints_the_same_report_kept_or_fresh(tmp_path):
    made = demo_study(tmp_path, THREE_RATERS)
    first = made.fma("agreement", "--json", "--bootstrap", "200")
    engine = make_engine(made.url)
    with session_scope(engine) as s:
        # The report, and the coordinator's diagnostics kept beside it (kept_diagnostics).
        assert len(s.exec(select(KeptReport)).all()) == 2
    engine.dispose()
    assert made.fma("agreement", "--json", "--bootstrap", "200") == first
    assert made.fma("agreement", "--json", "--bootstrap", "200", "--fresh") == first
    assert made.fma("agreement", "--bootstrap", "200") == made.fma(
        "agreement", "--bootstrap", "200", "--fresh"
    )
