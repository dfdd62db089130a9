"""Shared fixtures: the real FairMedAgent data read from ../shared, and the bundled demo study."""

import os
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from fma_bands.evidence.kept_parses import keep_parses_for_life

# Hypothesis fails an example that takes over 200 ms, or data drawn slowly, by default: the
# code's speed on a loaded CI machine, not its behaviour (speed lives in the benchmarks). An
# example that fails for what it does still fails, and Hypothesis shows it shrunk.
settings.register_profile("fma-bands", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("fma-bands")

pytest_plugins = ["tests.servers"]

ROOT = Path(__file__).resolve().parent.parent
# FMA_BANDS_SHARED moves it (pointing it at nothing shows what a clone without it runs).
SHARED = Path(os.environ.get("FMA_BANDS_SHARED", ROOT.parent / "shared")) / "fairmedagent"
SHARED_VIGNETTES = SHARED / "vignettes"
DEMO_VIGNETTES = ROOT / "vignettes"
HANDBACK = SHARED / "handback-adjudicator-01.txt"


@pytest.hookimpl(trylast=True)  # after tests/browser/conftest.py has marked its tests
def pytest_collection_modifyitems(items):
    from tests.shared_data import mark

    mark(items, SHARED)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """With pytest-xdist (`-n 2 --dist loadscope`, pyproject.toml) the browser tests run one
    after another on one worker (each drives a server and chromium: two at once on two cores
    only slow both and their timings) while the other worker runs the rest, a module at a time
    so that module fixtures are built once. (xdist's own `loadgroup` reads a node id that pytest
    9.2 no longer lets it change.)"""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]

    class BrowserTestsTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            if path.startswith("tests/browser/") or path.endswith("_browser.py"):
                return "browser"
            return super()._split_scope(nodeid)

    return BrowserTestsTogether(config, log)


@pytest.fixture(autouse=True)
def kept_answers_of_this_test(tmp_path_factory, monkeypatch):
    """Each test keeps the answers of `registry` and `export` (evidence/kept.py) in a folder of
    its own, in its own processes and the commands it starts: never one another's, nor the
    user's own cache."""
    folder = tmp_path_factory.mktemp("kept-answers")
    monkeypatch.setenv("FMA_BANDS_KEPT_ANSWERS", str(folder))
    yield folder
    # The app's pages say where envelope parses are kept for the life of their process, which
    # a test's AppTest shares with the tests after it.
    keep_parses_for_life(None)


@pytest.fixture
def shared_data_required():
    """Set on a test that needs ../shared when it is missing and FMA_BANDS_REQUIRE_SHARED=1."""
    pytest.fail(f"FMA_BANDS_REQUIRE_SHARED=1, but the FairMedAgent data is missing: {SHARED}")


@pytest.fixture(scope="session")
def shared_vignettes() -> Path:
    return SHARED_VIGNETTES


@pytest.fixture(scope="session")
def shared_library(shared_vignettes):
    from fma_bands.core.vignettes import load_library

    return load_library([shared_vignettes])


@pytest.fixture(scope="session")
def postgres_engine(postgres_server):
    """One PostgreSQL database for the session; each test gets it emptied (see `engine`)."""
    import uuid

    from sqlalchemy import text

    from fma_bands.store.db import make_engine, upgrade

    admin = make_engine(postgres_server)
    name = f"t_{uuid.uuid4().hex[:12]}"
    with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    engine = make_engine(postgres_server.rsplit("/", 1)[0] + f"/{name}")
    upgrade(engine)
    yield engine
    engine.dispose()
    with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f'DROP DATABASE "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def engine(request, tmp_path):
    """A fresh, empty store: a real SQLite file, and a real PostgreSQL database."""
    from sqlalchemy import text
    from sqlmodel import SQLModel

    from fma_bands.store.db import make_engine, upgrade

    if request.param == "sqlite":
        engine = make_engine(f"sqlite:///{tmp_path / 'fma-bands.db'}")
        upgrade(engine)
        yield engine
        engine.dispose()
        return
    engine = request.getfixturevalue("postgres_engine")
    tables = ", ".join(f'"{t.name}"' for t in SQLModel.metadata.sorted_tables)
    with engine.begin() as conn:
        conn.execute(text(f"TRUNCATE {tables} RESTART IDENTITY CASCADE"))
    yield engine


RATER_DETAILS = {"role": "rater", "jurisdiction": "Australia", "years_post_registration": 12}


def enrol_study(session, library, *, assign_everything=True):
    """The library in the store, a coordinator, and two raters of different specialties.

    Unless told otherwise the coordinator assigns both raters every band, so tests of reviewing
    need not care whose specialty covers which band (tests/study/test_assignment.py does)."""
    from fma_bands.study.enrolment import create_user
    from fma_bands.study.library import sync_vignettes

    sync_vignettes(session, library, actor="test")
    coordinator = create_user(
        session,
        actor=None,
        pseudonym="coordinator",
        passphrase="coordinator pass",
        role="coordinator",
    )
    raters = [
        create_user(
            session,
            actor="coordinator",
            pseudonym=name,
            passphrase=passphrase,
            root_passphrase="coordinator pass",
            specialty=specialty,
            **RATER_DETAILS,
        )
        for name, passphrase, specialty in (
            ("adjudicator-01", "passphrase one", "geriatrics"),
            ("adjudicator-02", "passphrase two", "emergency medicine"),
        )
    ]
    if assign_everything:
        assign_all(session, library, coordinator, raters)
    return coordinator, *raters


def assign_all(session, library, coordinator, raters):
    """The coordinator assigns these raters every band, whatever their specialty covers: for
    tests of reviewing, signing and exporting, where who is assigned is beside the point."""
    from fma_bands.core.actions import SUB_ACTIONS
    from fma_bands.study.assignment import change

    for rater in raters:
        change(session, library, actor=coordinator, rater=rater.pseudonym, sub_actions=SUB_ACTIONS)


def lock_is_free(engine) -> bool:
    """Whether another connection could take a SQLite study's write lock at once, without
    waiting (a PostgreSQL study has no such lock: always)."""
    if engine.dialect.name != "sqlite":
        return True
    other = sqlite3.connect(engine.url.database, timeout=0, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        other.execute("ROLLBACK")
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        other.close()
