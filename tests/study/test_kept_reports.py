"""Agreement reports kept under the digest of what they were computed from (kept_reports.py): a
kept report reads back as the very report computed, is used only for the same stored reviews,
vignettes, B, seed and code, is found without making a rating, and a missing, unreadable or
outdated copy is computed again."""

import dataclasses
import gc
import json
import sqlite3
import weakref
from types import MappingProxyType

import pytest
from sqlmodel import create_engine, select

from fma_bands.agreement import DEFAULT_SEED, agreement_report, report_to_json
from fma_bands.core.errors import ConflictError
from fma_bands.core.vignettes import load_library
from fma_bands.store import db
from fma_bands.store.db import make_engine, session_scope
from fma_bands.store.models import KeptReport
from fma_bands.study import audit, kept_diagnostics, kept_reports
from fma_bands.study import ratings as ratings_module
from fma_bands.study.kept_answers import ANSWER
from fma_bands.study.kept_reports import (
    KEEP,
    STATE,
    keep_source,
    kept_report,
    report_from_json,
    report_json,
    report_key,
    source_key,
    state_key,
)
from fma_bands.study.ratings import study_findings, study_ratings, study_report
from fma_bands.study.submissions import Submitted, submitted_rows
from fma_bands.study.users import require_user
from tests.agreement.demo import THREE_RATERS, demo_study
from tests.conftest import DEMO_VIGNETTES, lock_is_free


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


def stored(engine) -> Submitted:
    with session_scope(engine) as s:
        return submitted_rows(s, viewer=require_user(s, "coordinator"), round=1)


def test_a_changed_review_vignette_pseudonym_or_code_is_another_key(demo, monkeypatch):
    engine, library = demo
    found = stored(engine)
    rows, names = found.rows, found.names
    source = source_key(rows, names, library)
    assert source_key(list(rows), dict(names), library) == source  # the same reviews again
    key = report_key(source, bootstrap=100, seed=5)

    def changed(i: int, **values) -> list:
        return [*rows[:i], MappingProxyType({**rows[i], **values}), *rows[i + 1 :]]

    amended = next(i for i, r in enumerate(rows) if r["verdict"] == "AMEND")
    for other in (
        changed(0, verdict="DECLINE"),
        changed(amended, band=json.dumps(["another value"])),
        changed(0, mode="blind"),
        changed(0, proposal_digest="sha256:another proposal"),  # now stale
        rows[:-1],
    ):
        assert source_key(other, names, library) != source
    renamed = {**names, rows[0]["rater_id"]: "rater-99"}
    assert source_key(rows, renamed, library) != source
    # An edited vignette (here: another proposal's text) is another key: which reviews are
    # current, and the band an ACCEPT vouches for, are read from the vignettes.
    vignette = next(iter(library))
    proposal = dataclasses.replace(vignette.proposals[0], clause="an edited clause")
    edited = dataclasses.replace(vignette, proposals=(proposal, *vignette.proposals[1:]))
    again = dataclasses.replace(library, vignettes={**library.vignettes, vignette.id: edited})
    assert source_key(rows, names, again) != source
    assert report_key(source, bootstrap=100, seed=6) != key
    assert report_key(source, bootstrap=50, seed=5) != key
    monkeypatch.setattr(kept_reports, "code_digest", lambda: "another version of the code")
    assert report_key(source, bootstrap=100, seed=5) != key


def test_a_kept_report_is_found_without_making_a_rating(demo, computed, monkeypatch):
    engine, library = demo
    coordinator, _ = ratings_of(engine, library)
    with session_scope(engine) as s:
        first = study_report(s, library, viewer=coordinator, bootstrap=100, seed=5)

    def made(*args, **kwargs):
        raise AssertionError("a rating was made")

    monkeypatch.setattr(ratings_module, "rating", made)
    with session_scope(engine) as s:
        assert study_report(s, library, viewer=coordinator, bootstrap=100, seed=5) == first
    assert len(computed) == 1


def test_while_the_store_stands_a_kept_report_is_found_without_reading_a_review(
    demo, computed, monkeypatch
):
    """The source of a report is kept under the store's state (the audit log's head): asked
    again in the same state, no review is read; once anything is recorded, the reviews are read
    again and the same report is found, not computed; `fresh` reads them whatever is kept."""
    engine, library = demo
    coordinator, _ = ratings_of(engine, library)
    with session_scope(engine) as s:
        # The report, and the coordinator's diagnostics kept beside it.
        first = ratings_module.study_findings(
            s, library, viewer=coordinator, bootstrap=100, seed=7
        ).report
    reads = []
    real = ratings_module.submitted_rows

    def read(*args, **kwargs):
        reads.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(ratings_module, "submitted_rows", read)
    with session_scope(engine) as s:
        assert study_report(s, library, viewer=coordinator, bootstrap=100, seed=7) == first
        assert (
            ratings_module.study_findings(
                s, library, viewer=coordinator, bootstrap=100, seed=7
            ).report
            == first
        )
    assert reads == []
    with session_scope(engine) as s:  # every command signs in: no change of the reviews
        audit.record(s, kind="sign_in", actor="coordinator", payload={})
    with session_scope(engine) as s:
        assert study_report(s, library, viewer=coordinator, bootstrap=100, seed=7) == first
    assert reads == []
    with session_scope(engine) as s:
        audit.record(s, kind="test_event", actor="coordinator", payload={})
    with session_scope(engine) as s:
        assert study_report(s, library, viewer=coordinator, bootstrap=100, seed=7) == first
    assert len(reads) == 1
    with session_scope(engine) as s:
        assert study_report(s, library, viewer=coordinator, bootstrap=100, seed=7) == first
    assert len(reads) == 1  # the new state is kept too
    with session_scope(engine) as s:
        study_report(s, library, viewer=coordinator, bootstrap=100, seed=7, fresh=True)
    assert len(reads) == 2
    assert len(computed) == 2  # the first, and the fresh one
    # Blinding is asked of the store even when no review is read.
    asked = []
    real_authorize = ratings_module.authorize

    def authorize(session, viewer, action):
        asked.append((viewer.pseudonym, action))
        return real_authorize(session, viewer, action)

    monkeypatch.setattr(ratings_module, "authorize", authorize)
    with session_scope(engine) as s:
        study_report(s, library, viewer=coordinator, bootstrap=100, seed=7)
    assert asked == [("coordinator", "see_reviews")] and len(reads) == 2


def test_kept_states_never_push_out_a_report(demo, computed):
    engine, library = demo
    _, ratings = ratings_of(engine, library)
    found = stored(engine)
    source = source_key(found.rows, found.names, library)
    for seed in range(KEEP):
        with session_scope(engine) as s:
            kept_report(s, source, lambda: ratings, library, bootstrap=10, seed=seed)
    for n in range(KEEP + 3):
        with session_scope(engine) as s:
            keep_source(s, state_key((n + 1, f"head {n}"), library, 1) or "", source)
    with session_scope(engine) as s:
        keys = [row.key for row in s.exec(select(KeptReport))]
    assert sum(k.startswith(STATE) for k in keys) == KEEP
    assert {report_key(source, bootstrap=10, seed=n) for n in range(KEEP)} <= set(keys)
    assert state_key(None, library, 1) is None  # nothing ever recorded: no state to keep


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
    coordinator, _ = ratings_of(engine, library)
    with session_scope(engine) as s:
        first = study_report(s, library, viewer=coordinator, bootstrap=0)
    found = stored(engine)
    key = report_key(source_key(found.rows, found.names, library), bootstrap=0, seed=DEFAULT_SEED)
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
    found = stored(engine)
    source = source_key(found.rows, found.names, library)
    for seed in range(KEEP + 3):
        with session_scope(engine) as s:
            kept_report(s, source, lambda: ratings, library, bootstrap=10, seed=seed)
    with session_scope(engine) as s:
        kept = s.exec(select(KeptReport)).all()
        newest = report_key(source, bootstrap=10, seed=KEEP + 2)
    assert len(kept) == KEEP
    assert newest in {row.key for row in kept}


def kept_kinds(engine) -> tuple[int, int, int]:
    """How many rows of kept_report are reports or diagnostics, states' sources, answers."""
    with session_scope(engine) as s:
        keys = [row.key for row in s.exec(select(KeptReport))]
    return (
        sum(not k.startswith((STATE, ANSWER)) for k in keys),
        sum(k.startswith(STATE) for k in keys),
        sum(k.startswith(ANSWER) for k in keys),
    )


def test_the_command_prints_the_same_report_kept_or_fresh(tmp_path):
    made = demo_study(tmp_path, THREE_RATERS)
    first = made.fma("agreement", "--json", "--bootstrap", "200")
    engine = make_engine(made.url)
    # The report, and the coordinator's diagnostics kept beside it (kept_diagnostics), the
    # state of the store they were found in, and the command's whole answer (kept_answers).
    assert kept_kinds(engine) == (2, 1, 1)
    engine.dispose()
    assert made.fma("agreement", "--json", "--bootstrap", "200") == first
    assert made.fma("agreement", "--json", "--bootstrap", "200", "--fresh") == first
    assert made.fma("agreement", "--bootstrap", "200") == made.fma(
        "agreement", "--bootstrap", "200", "--fresh"
    )


def probing(module, name, engine, monkeypatch) -> list[bool]:
    """Replace module.name by itself preceded by a look at the write lock."""
    found: list[bool] = []
    real = getattr(module, name)

    def probed(*args, **kwargs):
        found.append(lock_is_free(engine))
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, probed)
    return found


def test_nothing_is_written_while_the_findings_are_computed(tmp_path, monkeypatch):
    # A writer holds SQLite's one write lock until it commits: a report or diagnostics computed
    # after a write in the same transaction kept every rater's save in the app waiting (for as
    # long as the bootstrap, past the busy timeout on a large study). Each copy is written apart,
    # once made; the command commits its sign-in and sync before it computes.
    made = demo_study(tmp_path, THREE_RATERS)
    engine = make_engine(made.url)
    report = probing(kept_reports, "agreement_report", engine, monkeypatch)
    diagnostics = probing(kept_diagnostics, "diagnostics", engine, monkeypatch)
    library = load_library([DEMO_VIGNETTES])
    coordinator, _ = ratings_of(engine, library)
    for fresh in (False, True):
        with session_scope(engine) as s:
            study_findings(s, library, viewer=coordinator, bootstrap=20, fresh=fresh)
        made.fma("agreement", "--json", "--bootstrap", "30", *(["--fresh"] if fresh else []))
    assert report == diagnostics == [True] * 4
    # Kept all the same: the reports and diagnostics of both B, a state, the answer.
    assert kept_kinds(engine) == (4, 1, 1)
    engine.dispose()


def test_the_reviews_read_are_let_go_once_made_into_ratings(demo, computed, monkeypatch):
    # At 1,000 x 20 the rows read were a fifth of what the diagnostics held at their peak.
    engine, library = demo
    coordinator, _ = ratings_of(engine, library)
    read: list[weakref.ref] = []
    real = ratings_module.ratings_of

    def watched(found: Submitted, lib):
        read.append(weakref.ref(found))
        return real(found, lib)

    monkeypatch.setattr(ratings_module, "ratings_of", watched)
    held = []

    def probed(*args, **kwargs):
        gc.collect()
        held.append([ref() is not None for ref in read])
        return real_diagnostics(*args, **kwargs)

    real_diagnostics = kept_diagnostics.diagnostics
    monkeypatch.setattr(kept_diagnostics, "diagnostics", probed)
    with session_scope(engine) as s:
        study_findings(s, library, viewer=coordinator, bootstrap=20, fresh=True)
    assert held == [[False]]  # read once, and let go before the diagnostics


def test_a_copy_that_cannot_be_written_is_not_kept_and_the_figures_still_come(
    tmp_path, monkeypatch
):
    made = demo_study(tmp_path, THREE_RATERS)
    engine = make_engine(made.url)
    library = load_library([DEMO_VIGNETTES])
    coordinator, _ = ratings_of(engine, library)
    with session_scope(engine) as s:
        expected = study_findings(s, library, viewer=coordinator, bootstrap=20)
    with session_scope(engine) as s:
        for row in s.exec(select(KeptReport)):
            s.delete(row)
    # Another process holds the write lock throughout: each copy waits out the busy timeout
    # (shortened here), is not kept, and the figures are given all the same.
    real = db.write_apart
    impatient = create_engine(engine.url, connect_args={"timeout": 0.1})
    monkeypatch.setattr(db, "write_apart", lambda _engine, write: real(impatient, write))
    other = sqlite3.connect(engine.url.database, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        with session_scope(engine) as s:
            found = study_findings(s, library, viewer=coordinator, bootstrap=20)
        # `fresh` replaces what was kept for this state, which must not be lost: asked so while
        # the database stays locked, the coordinator is told to try again.
        with pytest.raises(ConflictError), session_scope(engine) as s:
            study_findings(s, library, viewer=coordinator, bootstrap=20, fresh=True)
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert found == expected
    with session_scope(engine) as s:
        assert s.exec(select(KeptReport)).all() == []
    engine.dispose()
