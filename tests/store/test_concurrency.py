"""Ten raters at once, and two writers racing for one thing, on SQLite and PostgreSQL: nothing is
lost, no raw database error reaches anyone, the audit chain still verifies, and ten raters signing
at once still make one chain of the study's signed log."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlmodel import col, select

from fma_bands.core.protocol import IDENTITY_FIELDS
from fma_bands.core.vignettes import load_library
from fma_bands.evidence.log import read_evidence
from fma_bands.store.db import session_scope
from fma_bands.store.models import LogRecord, Review, StudySettings
from fma_bands.study import audit
from fma_bands.study.enrolment import create_user
from fma_bands.study.identity import set_identity
from fma_bands.study.ledger import publish
from fma_bands.study.library import sync_vignettes
from fma_bands.study.rounds import close_round
from fma_bands.study.state import study as study_settings
from fma_bands.study.users import require_user
from tests.conftest import DEMO_VIGNETTES, assign_all
from tests.store.workers import rater_day

RATERS = [f"rater-{i:02d}" for i in range(10)]
COORDINATOR_PASS = "coordinator pass"


@pytest.fixture
def study(engine):
    """The demo vignettes and ten raters in the store (demo-style accounts: it is a test)."""
    library = load_library([DEMO_VIGNETTES])
    with session_scope(engine) as s:
        sync_vignettes(s, library, actor="test")
        # The first coordinator holds the study's root key, which signs each rater's enrolment.
        coordinator = create_user(
            s, actor=None, pseudonym="coordinator", passphrase=COORDINATOR_PASS,
            role="coordinator",
        )  # fmt: skip
        raters = [
            create_user(
                s,
                actor="coordinator",
                pseudonym=name,
                passphrase=f"passphrase of {name}",
                root_passphrase=COORDINATOR_PASS,
                role="rater",
                specialty="emergency medicine",
                jurisdiction="Australia",
                years_post_registration=5,
            )
            for name in RATERS
        ]
        # Emergency physicians review follow-up bands here too: assignment is not under test.
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


def test_ten_raters_signing_at_once_make_one_valid_chain(study, tmp_path):
    engine, url, bands = study
    mine = bands[:3]
    for rater in RATERS:
        assert rater_day(url, str(DEMO_VIGNETTES), rater, mine) == ["ok"] * (2 * len(mine))
    with session_scope(engine) as s:
        coordinator = require_user(s, "coordinator")
        for rater in RATERS:
            record = {field: f"a synthetic {field.replace('_', ' ')}" for field in IDENTITY_FIELDS}
            set_identity(
                s, actor=coordinator, pseudonym=rater, record=record,
                key_path=tmp_path / "identity.key", passphrase=COORDINATOR_PASS, folder=None,
            )  # fmt: skip
        before = s.exec(select(LogRecord)).all()
    folder = tmp_path / "attestations"
    with session_scope(engine) as s:
        # The roster is in the folder before anyone signs, as every start of the app publishes.
        publish(s, folder)
    assert len(list(folder.glob("*.dsse.json"))) == len(before)
    signed = at_once(
        "sign", *([url, str(DEMO_VIGNETTES), r, f"passphrase of {r}", str(folder)] for r in RATERS)
    )
    assert [outcome for outcome, _ in signed] == ["ok"] * len(RATERS), signed
    # Signed while the round is open, the attestations are sealed: the folder shows none yet.
    assert not list(folder.glob("*-adjudication-*"))
    with session_scope(engine) as s:
        close_round(s, actor=coordinator, folder=folder)
    with session_scope(engine) as s:
        rows = s.exec(select(LogRecord).order_by(col(LogRecord.sequence))).all()
        study_id = study_settings(s).study_id
    # Every rater's records took a place of their own: one chain, no gap, no two at one place.
    sequences = [r.sequence for r in rows]
    assert sequences == list(range(len(before) + len(RATERS)))
    receipts = sorted(sequence for _, places in signed for sequence in places)
    assert receipts == sequences[len(before) :]
    evidence = read_evidence(folder, study=study_id)
    assert evidence.valid, evidence.problems
    assert not evidence.strays
    assert [env.position[1] for env in evidence.chain] == sequences  # type: ignore[index]
    assert evidence.head == (rows[-1].sequence, rows[-1].digest)
    signers = sorted(env.pseudonym for env in evidence.chain if env.kind == "adjudication")
    assert signers == RATERS
    with session_scope(engine) as s:
        assert audit.verify(s).ok
