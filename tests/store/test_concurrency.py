"""Ten raters at once, and two writers racing for one thing, on SQLite and PostgreSQL: nothing is
lost, no raw database error reaches anyone, and the audit chain still verifies."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlmodel import select

from fma_bands.core.vignettes import load_library
from fma_bands.store.db import session_scope
from fma_bands.store.models import Review, StudySettings
from fma_bands.study import audit
from fma_bands.study.enrolment import create_user
from fma_bands.study.library import sync_vignettes
from tests.conftest import DEMO_VIGNETTES, assign_all

RATERS = [f"rater-{i:02d}" for i in range(10)]


@pytest.fixture
def study(engine):
    """The demo vignettes and ten raters in the store (demo-style accounts: it is a test)."""
    library = load_library([DEMO_VIGNETTES])
    with session_scope(engine) as s:
        sync_vignettes(s, library, actor="test")
        raters = [
            create_user(
                s,
                actor="test",
                pseudonym=name,
                passphrase=f"passphrase of {name}",
                role="rater",
                specialty="emergency medicine",
                jurisdiction="Australia",
                years_post_registration=5,
            )
            for name in RATERS
        ]
        # Emergency physicians review follow-up bands here too: assignment is not under test.
        coordinator = create_user(
            s, actor="test", pseudonym="coordinator", passphrase="coordinator pass",
            role="coordinator",
        )  # fmt: skip
        assign_all(s, library, coordinator, raters)
    bands = [(v.id, p.sub_action) for v in library for p in v.proposals]
    return engine, str(engine.url.render_as_string(hide_password=False)), bands


ROOT = Path(__file__).resolve().parents[2]


def at_once(name: str, *calls: list) -> list:
    """Run tests.store.workers' `name` once per argument list, each in a process of its own, all
    at once; their results in order. A process that dies says how, with what it printed."""
    started = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.store.workers", name, json.dumps(args)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for args in calls
    ]
    results = []
    for process in started:
        out, err = process.communicate(timeout=600)
        assert process.returncode == 0, f"a worker exited with {process.returncode}:\n{err}"
        results.append(json.loads(out.splitlines()[-1]))
    return results


def test_ten_raters_at_once_lose_nothing(study):
    engine, url, bands = study
    mine = bands[:12]
    days = at_once("rater_day", *([url, str(DEMO_VIGNETTES), rater, mine] for rater in RATERS))
    results = [r for day in days for r in day]
    assert not [r for r in results if r.startswith("RAW")], results
    # Nobody else writes a rater's own reviews, so no save of theirs may be lost or refused.
    assert results == ["ok"] * (10 * len(mine) * 2)
    with session_scope(engine) as s:
        submitted = s.exec(select(Review).where(Review.status == "submitted")).all()
        assert len(submitted) == 10 * len(mine)
        assert audit.verify(s).ok


def test_two_tabs_racing_on_one_band_one_wins_one_reloads(study):
    engine, url, bands = study
    band = bands[0]
    for round_ in range(3):
        tab = [url, str(DEMO_VIGNETTES), "rater-00", band, round_]
        outcomes = at_once("stale_save", tab, tab)
        assert sorted(outcomes) == ["conflict", "ok"], outcomes
    with session_scope(engine) as s:
        rows = s.exec(select(Review).where(Review.vignette_id == band[0])).all()
        mine = sorted(r.revision for r in rows if r.sub_action == band[1])
        assert mine == [1, 2, 3]  # one revision per round: none lost, none doubled
        assert audit.verify(s).ok


def test_two_first_callers_never_collide_on_the_study_settings(study):
    engine, url, _ = study
    for _ in range(3):
        with engine.begin() as conn:
            conn.execute(text("DELETE FROM study_settings"))
        outcomes = at_once("first_call", [url], [url])
        assert outcomes == ["ok", "ok"]
        with session_scope(engine) as s:
            assert len(s.exec(select(StudySettings)).all()) == 1
