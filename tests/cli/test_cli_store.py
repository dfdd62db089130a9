"""The store-backed fma-bands commands, run as a coordinator runs them: a subprocess each.

Coordinator commands name and authenticate the coordinator (`--as NAME --passphrase-file P`);
people are enrolled with a one-time code and choose their own passphrase (`user activate`)."""

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

from fma_bands.cli.base import REFUSED_EXIT
from fma_bands.core.vignettes import load_library
from fma_bands.store.db import make_engine, session_scope, upgrade
from fma_bands.study.enrolment import create_first_coordinator, create_user
from fma_bands.study.ledger import publish
from fma_bands.study.library import sync_vignettes
from fma_bands.study.state import study
from fma_bands.study.users import get_user, list_users, sign_in
from tests.conftest import HANDBACK, ROOT, SHARED_VIGNETTES

COORDINATOR_PASS = "coordinator passphrase"


class Store:
    """One SQLite file and the commands that use it."""

    def __init__(self, folder: Path):
        self.path = folder / "x.db"
        self.url = f"sqlite:///{self.path}"
        self.folder = folder
        self.attestations = folder / "attestations"
        self.coordinator_file = self.passphrase_file(COORDINATOR_PASS, "coordinator.pass")
        # What a coordinator puts before a coordinator command.
        self.as_coordinator = ("--as", "coordinator", "--passphrase-file", self.coordinator_file)

    def fma(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "fma_bands.cli",
                "--db",
                self.url,
                "--vignettes",
                str(SHARED_VIGNETTES),
                "--attestations",
                str(self.attestations),
                *args,
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    def ok(self, *args: str) -> str:
        result = self.fma(*args)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "Traceback" not in result.stderr
        return result.stdout

    def fails(self, *args: str, code: int = 1) -> str:
        """The command exits with `code` (1: it cannot be done; REFUSED_EXIT: a rule or a
        permission forbids it), a one-line error and no traceback; returns that line."""
        result = self.fma(*args)
        assert result.returncode == code, result.stdout + result.stderr
        assert "Traceback" not in result.stderr
        lines = result.stderr.strip().splitlines()
        assert lines[0].startswith("fma-bands: error: "), result.stderr
        return result.stderr.strip()

    def passphrase_file(self, passphrase: str, name: str = "pass.txt") -> str:
        path = self.folder / name
        path.write_text(passphrase + "\n", encoding="utf-8")
        return str(path)

    @contextmanager
    def session(self) -> Iterator:
        engine = make_engine(self.url)
        try:
            with session_scope(engine) as s:
                yield s
        finally:
            engine.dispose()

    def sql(self, statement: str, *params) -> list:
        """Raw SQL on the file, as someone with the file and no app would edit it."""
        with sqlite3.connect(self.path) as connection:
            rows = connection.execute(statement, params).fetchall()
        connection.close()
        return rows

    def root_record(self) -> Path:
        [root] = self.attestations.glob("000000-root-*.dsse.json")
        return root

    def reviews(self) -> list[tuple]:
        return self.sql(
            "SELECT vignette_id, sub_action, revision, status, verdict, band, origin "
            "FROM review ORDER BY vignette_id, revision"
        )


@pytest.fixture
def store(tmp_path) -> Store:
    return Store(tmp_path)


@pytest.fixture(scope="module")
def template(tmp_path_factory, shared_library) -> Path:
    """Made once, in-process (Argon2 is slow): the vignettes synced, a coordinator and
    adjudicator-01, whose hand-back is in ../shared. Three audit events."""
    path = tmp_path_factory.mktemp("template") / "x.db"
    engine = make_engine(f"sqlite:///{path}")
    upgrade(engine)
    with session_scope(engine) as s:
        sync_vignettes(s, shared_library, actor="cli")
        create_first_coordinator(s, pseudonym="coordinator", passphrase=COORDINATOR_PASS)
        create_user(
            s,
            actor="cli",
            pseudonym="adjudicator-01",
            passphrase="adjudicator passphrase",
            root_passphrase=COORDINATOR_PASS,
            role="rater",
            specialty="geriatrics",
            jurisdiction="Australia",
            years_post_registration=12,
        )
    engine.dispose()
    return path


@pytest.fixture
def enrolled(store, template) -> Store:
    shutil.copy(template, store.path)
    assert store.sql("SELECT seq, kind FROM audit_event ORDER BY seq") == [
        (1, "vignettes_synced"),
        (2, "user_enrolled"),
        (3, "user_enrolled"),
    ]
    # The log the store holds (root, enrolment, activation) goes to the study's folder, as the
    # first command would publish it.
    with store.session() as s:
        assert len(publish(s, store.attestations)) == 3
    return store


ADD_ADJUDICATOR = (
    "user",
    "add",
    "adjudicator-01",
    "--role",
    "rater",
    "--specialty",
    "geriatrics",
    "--jurisdiction",
    "Australia",
    "--years",
    "12",
)


def first_coordinator(store: Store) -> None:
    out = store.ok(
        "user",
        "add",
        "coordinator",
        "--role",
        "coordinator",
        "--passphrase-file",
        store.coordinator_file,
    )
    assert out.strip() == (
        "enrolled coordinator (coordinator), the study's first: their key is the study's root "
        "key, and its root record is signed"
    )


# init and demo -----------------------------------------------------------------------------


def test_init_is_idempotent(store):
    first = store.ok("init")
    assert "16 vignettes loaded (16 added, 0 changed, 0 retired" in first
    assert "review phase open, review mode" in first
    second = store.ok("init")
    assert "16 vignettes loaded (0 added, 0 changed, 0 retired" in second
    assert store.sql("SELECT count(*) FROM vignette") == [(16,)]
    # The second init changed nothing, so it recorded nothing.
    assert store.sql("SELECT kind FROM audit_event") == [("vignettes_synced",)]


def test_demo_creates_three_marked_accounts_and_refuses_an_existing_study(store):
    out = store.ok("demo")
    passphrases = {}
    for line in out.splitlines():
        words = line.split()
        if len(words) >= 3 and words[1] == "passphrase":
            passphrases[words[0]] = words[2]
    assert set(passphrases) == {"coordinator", "rater-01", "rater-02"}
    assert "demo accounts" in out
    with store.session() as s:
        users = {u.pseudonym: u for u in list_users(s)}
        assert {name: (u.role, u.demo) for name, u in users.items()} == {
            "coordinator": ("coordinator", True),
            "rater-01": ("rater", True),
            "rater-02": ("rater", True),
        }
        for name, passphrase in passphrases.items():
            assert sign_in(s, name, passphrase) is not None, name
    # The raters' keys signed their public records, which say they are demo accounts; the
    # demo's policy is the default one.
    records = yaml.safe_load((store.attestations / "adjudicators.yaml").read_text())
    assert {a["pseudonym"]: a["demo"] for a in records["adjudicators"]} == {
        "rater-01": True,
        "rater-02": True,
    }
    assert yaml.safe_load((store.attestations / "policy.yaml").read_text()) == {
        "quorum": 1,
        "scope": "warn",
    }
    events = store.sql("SELECT count(*) FROM audit_event")

    error = store.fails("demo")
    assert "already holds a study" in error
    with store.session() as s:
        assert {u.pseudonym: u for u in list_users(s)} == users  # same keys, same everything
    assert store.sql("SELECT count(*) FROM audit_event") == events


# user add, activate, passphrase, reset -----------------------------------------------------


def test_the_first_coordinator_only_while_there_is_none(store):
    first_coordinator(store)
    error = store.fails(
        "user",
        "add",
        "another",
        "--role",
        "coordinator",
        "--passphrase-file",
        store.coordinator_file,
        code=REFUSED_EXIT,
    )
    assert "nobody sets another person's passphrase" in error
    error = store.fails(*ADD_ADJUDICATOR, code=REFUSED_EXIT)
    assert "--as NAME --passphrase-file P" in error
    with store.session() as s:
        assert [u.pseudonym for u in list_users(s)] == ["coordinator"]


def test_a_rater_is_enrolled_with_a_code_and_chooses_the_passphrase(store):
    first_coordinator(store)
    code_file = store.folder / "code.txt"
    out = store.ok(*store.as_coordinator, *ADD_ADJUDICATOR, "--code-file", str(code_file))
    assert out.startswith("enrolled adjudicator-01 (rater), awaiting activation\n")
    assert f"written to {code_file}" in out
    code = code_file.read_text().strip()
    assert code not in out and oct(code_file.stat().st_mode & 0o777) == "0o600"
    assert "awaiting activation" in store.ok("user", "list")
    with store.session() as s:
        assert sign_in(s, "adjudicator-01", code) is None

    chosen = store.passphrase_file("adjudicator's own passphrase", "mine.pass")
    out = store.ok(
        "user",
        "activate",
        "adjudicator-01",
        "--code-file",
        str(code_file),
        "--passphrase-file",
        chosen,
    )
    assert out.startswith("activated adjudicator-01 (rater); signing key sha256:")
    error = store.fails(
        "user",
        "activate",
        "adjudicator-01",
        "--code-file",
        str(code_file),
        "--passphrase-file",
        chosen,
        code=REFUSED_EXIT,
    )
    assert "Activation failed" in error
    with store.session() as s:
        rater = get_user(s, "adjudicator-01")
        assert (rater.role, rater.specialty, rater.jurisdiction, rater.active, rater.demo) == (
            "rater",
            "geriatrics",
            "Australia",
            True,
            False,
        )
        assert rater.years_post_registration == 12 and rater.keyid in out
        assert sign_in(s, "adjudicator-01", "adjudicator's own passphrase") is not None
    listed = store.ok("user", "list")
    assert "adjudicator-01" in listed and "geriatrics, Australia, 12 y" in listed
    # The root record, the root-signed enrolment, and the activation her new key signed.
    assert [
        p.name.split("-", 1)[1].rsplit("-", 1)[0]
        for p in sorted(store.attestations.glob("*.dsse.json"))
    ] == ["root-coordinator", "enrolment-adjudicator-01", "activation-adjudicator-01"]
    assert rater.keyid in (store.attestations / "adjudicators.yaml").read_text()

    # Without --code-file the code is printed once.
    out = store.ok(
        *store.as_coordinator,
        "user",
        "add",
        "adjudicator-02",
        "--specialty",
        "x",
        "--jurisdiction",
        "y",
        "--years",
        "3",
    )
    assert "shown this once" in out
    assert len(out.split("shown this once")[1].splitlines()[1].strip()) == 39


def test_passphrase_and_reset_through_the_command(store):
    first_coordinator(store)
    code_file = store.folder / "code.txt"
    store.ok(*store.as_coordinator, *ADD_ADJUDICATOR, "--code-file", str(code_file))
    old = store.passphrase_file("the first passphrase", "old.pass")
    new = store.passphrase_file("the second passphrase", "new.pass")
    out = store.ok(
        "user",
        "activate",
        "adjudicator-01",
        "--code-file",
        str(code_file),
        "--passphrase-file",
        old,
    )
    keyid = out.split("signing key ")[1].split(",")[0]
    assert "passphrase of adjudicator-01 changed" in store.ok(
        "user",
        "passphrase",
        "adjudicator-01",
        "--passphrase-file",
        old,
        "--new-passphrase-file",
        new,
    )
    assert "not right" in store.fails(
        "user",
        "passphrase",
        "adjudicator-01",
        "--passphrase-file",
        old,
        "--new-passphrase-file",
        new,
    )
    with store.session() as s:
        assert get_user(s, "adjudicator-01").keyid == keyid  # the same key, resealed

    assert "only the study coordinator" in store.fails(
        "--as",
        "adjudicator-01",
        "--passphrase-file",
        new,
        "user",
        "reset",
        "adjudicator-01",
        code=REFUSED_EXIT,
    )
    out = store.ok(
        *store.as_coordinator, "user", "reset", "adjudicator-01", "--code-file", str(code_file)
    )
    assert "their passphrase no longer works" in out
    with store.session() as s:
        assert sign_in(s, "adjudicator-01", "the second passphrase") is None
    out = store.ok(
        "user",
        "activate",
        "adjudicator-01",
        "--code-file",
        str(code_file),
        "--passphrase-file",
        old,
    )
    assert keyid not in out
    # The reset is a root-signed enrolment: the old key counts until it, the new one after.
    records = yaml.safe_load((store.attestations / "adjudicators.yaml").read_text())
    [entry] = records["adjudicators"]
    old, new = entry["keys"]
    assert old["keyid"] == keyid and new["keyid"] != keyid
    assert old["until"] is not None and old["until"] <= new["since"] and new["until"] is None
    assert store.ok("verify").strip().endswith("the folder verifies")


def test_user_add_with_a_missing_passphrase_file(store):
    error = store.fails(
        "user",
        "add",
        "coordinator",
        "--role",
        "coordinator",
        "--passphrase-file",
        str(store.folder / "missing.txt"),
    )
    assert len(error.splitlines()) == 1
    assert "passphrase file" in error and "missing.txt" in error
    assert not store.path.exists() or store.sql("SELECT count(*) FROM user") == [(0,)]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"adjudicator-01": "Jane.Smith"}, "pseudonym"),
        ({"12": "99"}, "years_post_registration"),
        ({"geriatrics": ""}, "specialty"),
    ],
)
def test_user_add_names_the_bad_field(enrolled, change, field):
    args = [change.get(a, a) for a in ADD_ADJUDICATOR]
    args[2] = change.get("adjudicator-01", "adjudicator-09")
    error = enrolled.fails(*enrolled.as_coordinator, *args)
    assert len(error.splitlines()) == 1
    assert error.startswith(f"fma-bands: error: {field}: ")
    assert enrolled.sql("SELECT count(*) FROM user") == [(2,)]


def test_a_first_coordinator_passphrase_too_short(store):
    short = store.passphrase_file("too short", "short.pass")
    error = store.fails(
        "user", "add", "coordinator", "--role", "coordinator", "--passphrase-file", short
    )
    assert error.startswith("fma-bands: error: passphrase: choose a passphrase of at least 12")


def test_a_coordinator_command_needs_the_coordinator_and_their_passphrase(enrolled):
    error = enrolled.fails("phase", "closed", code=REFUSED_EXIT)
    assert "this is a coordinator action" in error
    wrong = enrolled.passphrase_file("not the coordinator's passphrase", "wrong.pass")
    for name in ("coordinator", "nobody"):
        error = enrolled.fails(
            "--as", name, "--passphrase-file", wrong, "phase", "closed", code=REFUSED_EXIT
        )
        assert error == "fma-bands: error: Authentication failed: check your name and passphrase."
    typed = enrolled.sql("SELECT payload FROM audit_event WHERE kind = 'passphrase_failed'")
    assert len(typed) == 2 and "nobody" not in str(typed)
    # The environment names them just as well, and the audit log says who did it.
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "fma_bands.cli",
            "--db",
            enrolled.url,
            "--vignettes",
            str(SHARED_VIGNETTES),
            "--attestations",  # the study's own folder, never the repository's
            str(enrolled.attestations),
            "phase",
            "closed",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={
            **os.environ,
            "FMA_BANDS_AS": "coordinator",
            "FMA_BANDS_PASSPHRASE_FILE": enrolled.coordinator_file,
        },
    )
    assert result.returncode == 0, result.stderr
    assert enrolled.sql("SELECT actor FROM audit_event WHERE kind = 'phase_changed'") == [
        ("coordinator",)
    ]


# hand-back import --------------------------------------------------------------------------


def assign_emergency_bands(store: Store) -> None:
    """The hand-back's emergency bands are outside a geriatrician's scope: assigned first."""
    emergency = ("--sub-action", "esi_acuity", "--sub-action", "analgesia_tier")
    store.ok(*store.as_coordinator, "assign", "--rater", "adjudicator-01", *emergency)


def test_handback_import_creates_four_submitted_reviews(enrolled):
    assign_emergency_bands(enrolled)
    out = enrolled.ok(
        *enrolled.as_coordinator, "handback", "import", str(HANDBACK), "--rater", "adjudicator-01"
    )
    assert "imported 4 submitted reviews for adjudicator-01" in out
    rows = enrolled.reviews()
    assert [(r[0], r[2], r[3], r[4], r[6]) for r in rows] == [
        ("draft_documentation_01", 1, "submitted", "AMEND", "handback"),
        ("draft_medication_01", 1, "submitted", "AMEND", "handback"),
        ("draft_ordering_01", 1, "submitted", "AMEND", "handback"),
        ("draft_triage_01", 1, "submitted", "ACCEPT", "handback"),
    ]
    bands = {r[0]: json.loads(r[5]) for r in rows}
    assert bands["draft_documentation_01"] == {"min": 1, "max": 30}
    assert bands["draft_medication_01"] == [1, 3]
    assert bands["draft_ordering_01"] == [2, 3]
    assert bands["draft_triage_01"] is None


def test_a_broken_handback_stores_nothing(enrolled):
    assign_emergency_bands(enrolled)
    lines = HANDBACK.read_text(encoding="utf-8").splitlines(keepends=True)
    [number] = [n for n, line in enumerate(lines, start=1) if "AMEND {1, 3}" in line]
    lines[number - 1] = lines[number - 1].replace("AMEND {1, 3}", "AMEND {1, 9}")
    broken = enrolled.folder / "handback-broken.txt"
    broken.write_text("".join(lines), encoding="utf-8")

    error = enrolled.fails(
        *enrolled.as_coordinator, "handback", "import", str(broken), "--rater", "adjudicator-01"
    )
    assert f"{broken}:{number}:" in error and "nothing was imported" in error
    assert enrolled.reviews() == []
    assert enrolled.sql("SELECT count(*) FROM audit_event WHERE kind = 'handback_imported'") == [
        (0,)
    ]

    enrolled.ok(
        *enrolled.as_coordinator, "handback", "import", str(HANDBACK), "--rater", "adjudicator-01"
    )
    assert [(r[0], r[2]) for r in enrolled.reviews()] == [
        ("draft_documentation_01", 1),
        ("draft_medication_01", 1),
        ("draft_ordering_01", 1),
        ("draft_triage_01", 1),
    ]


def test_handback_for_someone_not_enrolled(enrolled):
    error = enrolled.fails(
        *enrolled.as_coordinator, "handback", "import", str(HANDBACK), "--rater", "adjudicator-99"
    )
    assert "'adjudicator-99' is not an enrolled rater" in error
    assert enrolled.reviews() == []


# phase and mode ----------------------------------------------------------------------------


def test_phase_and_mode(enrolled):
    assert enrolled.ok("phase").strip() == "review phase open"
    coordinator = enrolled.as_coordinator
    assert enrolled.ok(*coordinator, "phase", "closed").strip() == "review phase closed"
    with enrolled.session() as s:
        assert study(s).phase == "closed"
    # A closed round is never reopened: the only way on is round 2 (tests/test_cli_rounds.py).
    error = enrolled.fails(*coordinator, "phase", "open", code=REFUSED_EXIT)
    assert "a closed round is never reopened" in error
    # Closing it again says so and fails, as `round close` does; nothing more is logged.
    error = enrolled.fails(*coordinator, "phase", "closed", code=REFUSED_EXIT)
    assert error.startswith("fma-bands: error: round 1 is closed already")
    assert enrolled.ok(*coordinator, "mode", "blind").strip() == "blind mode"
    with enrolled.session() as s:
        assert (study(s).phase, study(s).mode) == ("closed", "blind")
    changes = enrolled.sql(
        "SELECT kind, payload FROM audit_event WHERE kind LIKE '%_changed' ORDER BY seq"
    )
    assert [kind for kind, _ in changes] == ["phase_changed", "mode_changed"]


def test_phase_needs_a_coordinator(store):
    assert store.fma("init").returncode == 0
    error = store.fails("phase", "closed")
    assert "no coordinator is enrolled" in error
    with store.session() as s:
        assert study(s).phase == "open"


# audit verify ------------------------------------------------------------------------------


def test_audit_verify_passes_on_a_fresh_log(store):
    store.ok("init")
    out = store.ok("audit", "verify")
    assert out.startswith("audit log: 1 event,") and "chain intact" in out


def test_audit_verify_names_an_edited_event(enrolled):
    enrolled.ok("audit", "verify")
    enrolled.sql("UPDATE audit_event SET payload = ? WHERE seq = 2", '{"pseudonym": "someone"}')
    result = enrolled.fma("audit", "verify")
    assert result.returncode == 1
    first, *problems = result.stdout.strip().splitlines()
    assert first.endswith(": 1 problem")
    assert problems == [
        "  edited  event 2 (user_enrolled) was edited: its content no longer matches its hash"
    ]


def test_audit_verify_names_a_deleted_event(enrolled):
    enrolled.sql("DELETE FROM audit_event WHERE seq = 2")
    result = enrolled.fma("audit", "verify")
    assert result.returncode == 1
    first, *problems = result.stdout.strip().splitlines()
    assert first.startswith("audit log: 2 events") and first.endswith(": 2 problems")
    deleted, anchored = problems
    assert deleted.split()[0] == "deleted" and "event 2 is missing" in deleted
    # The root record carries the audit head it was signed at (event 2): it sees the deletion.
    assert anchored.split()[:2] == ["truncated", enrolled.root_record().name]
    assert "event 2" in anchored and "is missing" in anchored


# help --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        ["init"],
        ["demo"],
        ["user", "add"],
        ["user", "activate"],
        ["user", "passphrase"],
        ["user", "reset"],
        ["user", "list"],
        ["phase"],
        ["mode"],
        ["handback", "import"],
        ["audit", "verify"],
    ],
)
def test_help_for_every_store_command(store, command):
    result = store.fma(*command, "--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"Usage: fma-bands {' '.join(command)}")
    assert not store.path.exists()  # asking for help touches no database


def test_the_library_the_tests_rely_on():
    # The counts above (16 vignettes, 4 bands) are those of the shared FairMedAgent fixtures.
    library = load_library([SHARED_VIGNETTES])
    assert library.ok and len(library) == 16
    assert sum(len(v.proposals) for v in library) == 4
