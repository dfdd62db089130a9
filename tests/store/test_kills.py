"""Crash safety: a process killed at any instant leaves the store and the files
consistent, once the next process has started (every command and the app publish, at start, the
records of the study's log the folder lacks: fma_bands.study.ledger.publish).

Each case kills a real `fma-bands` process on a real SQLite study, either inside a named crash
window (tests/store/killer.py) or after a seeded random delay within the command's own running
time, and then checks what must always hold:

- the folder holds exactly the records of the store's log that may be shown, byte for byte, and
  no half-written file; `fma-bands verify` accepts the folder;
- a record killed before its commit is nowhere; one killed after it reaches the folder at the
  next start;
- the audit log's hash chain verifies;
- a hand-back was imported whole or not at all; bands.yaml is either the old one or complete.
"""

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from sqlmodel import col, select

from fma_bands.core.protocol import IDENTITY_FIELDS
from fma_bands.core.vignettes import load_library
from fma_bands.evidence.envelope import ENVELOPE_SUFFIX
from fma_bands.store.db import make_engine, session_scope
from fma_bands.store.models import LogRecord, Review, User
from fma_bands.study import audit
from fma_bands.study.ledger import published_head
from tests.conftest import DEMO_VIGNETTES, ROOT

RANDOM_KILLS = 3  # per command; the seed makes the instants the same on every run
SEED = 20261201
DECLARE = ["not-an-author", "no-financial-interest", "consent-editor-disclosure"]


class Study:
    """A demo study in a folder: its database, attestations and the coordinator's secret."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.url = f"sqlite:///{folder / 'fma-bands.db'}"
        self.attestations = folder / "attestations"

    def env(self) -> dict[str, str]:
        base = {k: v for k, v in os.environ.items() if not k.startswith("FMA_BANDS_")}
        return {
            **base,
            "FMA_BANDS_DATABASE_URL": self.url,
            "FMA_BANDS_VIGNETTES": str(DEMO_VIGNETTES),
            "FMA_BANDS_ATTESTATIONS": str(self.attestations),
            "FMA_BANDS_IDENTITY_KEY": str(self.folder / "identity.key"),
            "FMA_BANDS_AS": "coordinator",
            "FMA_BANDS_PASSPHRASE_FILE": str(self.folder / "coordinator.pass"),
            # A killed command's traceback goes to its own log, not the checkout's.
            "FMA_BANDS_LOG_FILE": str(self.folder / "fma-bands.log"),
        }

    def command(self, *args: str, window: str | None = None) -> list[str]:
        runner = ["-m", "tests.store.killer", window] if window else ["-m", "fma_bands.cli"]
        return [sys.executable, *runner, *args]

    def run(self, *args: str, window: str | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(
            self.command(*args, window=window),
            cwd=ROOT,
            env=self.env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )

    def ok(self, *args: str) -> str:
        done = self.run(*args)
        assert done.returncode == 0, f"fma-bands {' '.join(args)}:\n{done.stdout}{done.stderr}"
        return done.stdout

    def killed_after(self, delay: float, *args: str) -> int:
        """Start the command, SIGKILL it `delay` seconds in; its return code."""
        process = subprocess.Popen(
            self.command(*args),
            cwd=ROOT,
            env=self.env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(delay)
        process.send_signal(signal.SIGKILL)
        return process.wait(timeout=60)

    def timed(self, *args: str) -> float:
        """How long the whole command takes here, on a throwaway copy of the study."""
        copy = Study(self.folder.with_name(self.folder.name + "-timing"))
        shutil.copytree(self.folder, copy.folder)
        started = time.monotonic()
        copy.ok(*args)
        elapsed = time.monotonic() - started
        shutil.rmtree(copy.folder)
        return elapsed


def rater_pass(study: Study) -> str:
    secret = study.folder / "rater.pass"
    secret.write_text("rater-01-demo\n", encoding="utf-8")
    return str(secret)


HANDBACK_VIGNETTES = [v.id for v in list(load_library([DEMO_VIGNETTES]))[:3]]


def handback(study: Study) -> tuple[str, int]:
    lines = [
        f"{v.id} | {p.sub_action} | ACCEPT | agrees with the clause"
        for v in list(load_library([DEMO_VIGNETTES]))[:3]
        for p in v.proposals
    ]
    path = study.folder / "handback.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path), len(lines)


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Study:
    study = Study(tmp_path_factory.mktemp("kills") / "template")
    study.folder.mkdir()
    (study.folder / "coordinator.pass").write_text("coordinator-demo\n", encoding="utf-8")
    study.ok("demo")
    identity = study.folder / "identity.yaml"
    identity.write_text(
        "\n".join(f"{field}: a synthetic {field.replace('_', ' ')}" for field in IDENTITY_FIELDS)
    )
    study.ok("identity", "set", "rater-01", "--from", str(identity))
    # The hand-back's bands, whatever rater-01's specialty covers, are assigned to her first.
    study.ok("assign", "--rater", "rater-01", *(f"--vignette={v}" for v in HANDBACK_VIGNETTES))
    return study


@pytest.fixture
def fresh(template, tmp_path) -> Study:
    study = Study(tmp_path / "study")
    shutil.copytree(template.folder, study.folder)
    return study


def with_imported(study: Study) -> Study:
    path, _ = handback(study)
    study.ok("handback", "import", path, "--rater", "rater-01")
    return study


def attest_args(study: Study) -> list[str]:
    declared = [x for d in DECLARE for x in ("--declare", d)]
    return [
        "attest",
        "--rater",
        "rater-01",
        "--passphrase-file",
        rater_pass(study),
        "--confirm-imported",
        *declared,
    ]


def stored_log(study: Study) -> tuple[dict[str, str], set[str]]:
    """The store's log: each record's file and its bytes, and the files the folder may hold."""
    engine = make_engine(study.url)
    with session_scope(engine) as s:
        rows = s.exec(select(LogRecord).order_by(col(LogRecord.sequence))).all()
        shown = published_head(s)
    engine.dispose()
    limit = -1 if shown is None else shown[0]
    return {r.file_name: r.envelope for r in rows}, {
        r.file_name for r in rows if r.sequence <= limit
    }


def assert_consistent(study: Study) -> None:
    """What must hold once the next process has started after a kill."""
    # The next process publishes at start; `audit verify` also checks the hash chain.
    checked = study.run("audit", "verify")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    folder = study.attestations
    # A kill between a temporary file and its rename may leave `.NAME.*.tmp` behind: never read
    # as a record (no *.dsse.json name), so the checks below hold with it there.
    records = {p.name for p in folder.glob(f"*{ENVELOPE_SUFFIX}")}
    stored, shown = stored_log(study)
    assert records == shown, f"folder and store differ: {records ^ shown}"
    for name in records:
        assert (folder / name).read_text(encoding="utf-8") == stored[name], name
    if records:
        verified = study.run("verify")
        assert verified.returncode == 0, verified.stdout + verified.stderr


def adjudications(study: Study) -> tuple[list[str], list[str]]:
    """The rater's attestation records: in the store, and in the folder."""
    stored, _ = stored_log(study)
    found = sorted(p.name for p in study.attestations.glob(f"*-adjudication-*{ENVELOPE_SUFFIX}"))
    return sorted(n for n in stored if "-adjudication-" in n), found


def imported_count(study: Study) -> int:
    engine = make_engine(study.url)
    with session_scope(engine) as s:
        rater = s.exec(select(User).where(User.pseudonym == "rater-01")).one()
        count = len(s.exec(select(Review).where(Review.rater_id == rater.id)).all())
    engine.dispose()
    return count


# Named windows ------------------------------------------------------------------------------


def test_a_signature_killed_before_its_commit_leaves_nothing(fresh):
    with_imported(fresh)
    before = sorted(p.name for p in fresh.attestations.iterdir())
    killed = fresh.run(*attest_args(fresh), window="appended")
    assert killed.returncode == -signal.SIGKILL, "the window was never reached"
    assert_consistent(fresh)
    assert adjudications(fresh) == ([], [])
    assert sorted(p.name for p in fresh.attestations.iterdir()) == before
    engine = make_engine(fresh.url)
    with session_scope(engine) as s:
        kinds = [e["kind"] for e in audit.events(s, limit=50)]
    engine.dispose()
    assert "attestation_signed" not in kinds
    # And the rater can sign as if nothing had happened.
    fresh.ok(*attest_args(fresh))
    assert_consistent(fresh)
    assert len(adjudications(fresh)[0]) == 1


def test_records_killed_after_their_commit_reach_the_folder_at_the_next_start(fresh):
    with_imported(fresh)
    fresh.ok(*attest_args(fresh))
    stored, shown = adjudications(fresh)
    # Signed while the round is open: sealed in the store, not in the folder.
    assert len(stored) == 1 and shown == []
    killed = fresh.run("round", "close", window="before-publish")
    assert killed.returncode == -signal.SIGKILL, "the window was never reached"
    # The round is closed in the store, and the folder was left behind.
    assert adjudications(fresh) == (stored, [])
    _, may_show = stored_log(fresh)
    assert set(stored) <= may_show
    assert_consistent(fresh)  # the next start published it
    assert adjudications(fresh) == (stored, stored)


def test_a_study_killed_before_adjudicators_yaml_is_written_publishes_it_at_next_start(
    tmp_path,
):
    study = Study(tmp_path / "study")
    study.folder.mkdir()
    killed = study.run("demo", window="adjudicators")
    assert killed.returncode == -signal.SIGKILL, "the window was never reached"
    assert not (study.attestations / "adjudicators.yaml").exists()
    assert list(study.attestations.glob(f"*{ENVELOPE_SUFFIX}")), "no record was published"
    assert_consistent(study)
    listed = yaml.safe_load((study.attestations / "adjudicators.yaml").read_text())
    assert "rater-01" in str(listed)


def test_an_export_killed_before_its_rename_leaves_the_old_file(fresh):
    out = fresh.folder / "bands.yaml"
    fresh.ok("export", "--out", str(out))
    before = out.read_bytes()
    killed = fresh.run("export", "--out", str(out), window="export")
    assert killed.returncode == -signal.SIGKILL, "the window was never reached"
    assert out.read_bytes() == before
    assert_consistent(fresh)


# Random instants ----------------------------------------------------------------------------


def random_delays(seconds: float, salt: str) -> list[float]:
    draw = random.Random(f"{SEED}:{salt}")
    # From the start (imports) to past the end: a kill may also come too late, which is fine.
    return sorted(draw.uniform(0.05, seconds * 1.1) for _ in range(RANDOM_KILLS))


def test_init_killed_at_random_instants_leaves_a_store_the_next_init_finishes(tmp_path):
    first = Study(tmp_path / "timing")
    first.folder.mkdir()
    started = time.monotonic()
    first.ok("init")
    took = time.monotonic() - started
    for number, delay in enumerate(random_delays(took, "init")):
        study = Study(tmp_path / f"init-{number}")
        study.folder.mkdir()
        study.killed_after(delay, "init")
        study.ok("init")
        assert "(head " in (now := study.ok("db", "current")) and "up to date" in now, now
        assert_consistent(study)


def test_an_import_killed_at_random_instants_is_all_or_nothing(fresh, tmp_path):
    path, lines = handback(fresh)
    took = fresh.timed("handback", "import", path, "--rater", "rater-01")
    for number, delay in enumerate(random_delays(took, "import")):
        study = Study(tmp_path / f"import-{number}")
        shutil.copytree(fresh.folder, study.folder)
        study.killed_after(delay, "handback", "import", path, "--rater", "rater-01")
        assert_consistent(study)
        assert imported_count(study) in (0, lines)


def test_a_signature_killed_at_random_instants_is_whole_or_absent(fresh, tmp_path):
    with_imported(fresh)
    took = fresh.timed(*attest_args(fresh))
    for number, delay in enumerate(random_delays(took, "attest")):
        study = Study(tmp_path / f"attest-{number}")
        shutil.copytree(fresh.folder, study.folder)
        study.killed_after(delay, *attest_args(study))
        assert_consistent(study)
        # Whatever happened, the rater can sign now (again, if the first one was committed).
        if not adjudications(study)[0]:
            study.ok(*attest_args(study))
        assert_consistent(study)
        assert len(adjudications(study)[0]) == 1


def test_an_export_killed_at_random_instants_is_old_or_complete(fresh, tmp_path):
    out = fresh.folder / "bands.yaml"
    fresh.ok("export", "--out", str(out))
    complete = yaml.safe_load(out.read_text(encoding="utf-8"))
    out.unlink()
    took = fresh.timed("export", "--out", str(out))
    for delay in random_delays(took, "export"):
        fresh.killed_after(delay, "export", "--out", str(out))
        if out.exists():
            assert yaml.safe_load(out.read_text(encoding="utf-8")).keys() == complete.keys()
            out.unlink()
        assert_consistent(fresh)
