"""What an operator names on the command line: the files a command writes go only to a new path
or over a regular file, never into the attestations or vignettes folder, over the study's own
files, or onto a link, device, FIFO or folder, and a refused path changes nothing; a reset
writes the new code before it commits; database URLs are refused by name and shown without their
password, in output, errors and the bug log (0600); numeric options are bounded (in-process,
with click's CliRunner)."""

import os
import sqlite3
import stat

import pytest
from click.testing import CliRunner

from fma_bands.cli import cli
from fma_bands.core.errors import FmaBandsError
from fma_bands.store.db import hide_passwords
from tests.cli.conftest import cli_vignettes, fma, template  # noqa: F401
from tests.conftest import DEMO_VIGNETTES

SECRET = "s3cret-pw"
RATER = ("--specialty", "geriatrics", "--jurisdiction", "Australia", "--years", "5")


def refused(result, *fragments: str) -> str:
    """One line, exit 1, no traceback, naming what it says."""
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("fma-bands: error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def count(db_path, sql: str) -> int:
    with sqlite3.connect(db_path) as db:
        return db.execute(sql).fetchone()[0]


@pytest.fixture
def odd_paths(tmp_path):
    """A FIFO, a folder, a link to a regular file, and a device."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (tmp_path / "folder").mkdir()
    (tmp_path / "real.yaml").write_text("kept\n")
    (tmp_path / "link.yaml").symlink_to(tmp_path / "real.yaml")
    return {
        "fifo": fifo,
        "folder": tmp_path / "folder",
        "link": tmp_path / "link.yaml",
        "device": "/dev/null",
    }


@pytest.mark.parametrize("kind", ["fifo", "folder", "link", "device"])
def test_export_and_code_files_are_never_written_onto_an_odd_path(fma, tmp_path, odd_paths, kind):  # noqa: F811
    target = odd_paths[kind]
    before = os.lstat(target)
    refused(fma("export", "--out", str(target)), str(target), "not a regular file")
    for command in (
        ("user", "add", "new-rater", *RATER, "--code-file", str(target)),
        ("user", "reset", "geri-01", "--code-file", str(target)),
        ("steward", "add", "new-steward", "--code-file", str(target)),
    ):
        refused(fma(*command), str(target), "enrolment code", "not a regular file")
    after = os.lstat(target)
    assert (stat.S_IFMT(after.st_mode), after.st_ino) == (
        stat.S_IFMT(before.st_mode),
        before.st_ino,
    )
    assert (tmp_path / "real.yaml").read_text() == "kept\n"
    # Refused before anything was done: nobody enrolled, nobody reset.
    db = tmp_path / "x.db"
    assert count(db, "SELECT count(*) FROM user WHERE pseudonym LIKE 'new-%'") == 0
    assert count(db, "SELECT count(*) FROM audit_event WHERE kind = 'account_reset'") == 0


def test_nothing_is_written_into_the_attestations_folder(fma, tmp_path):  # noqa: F811
    listed = sorted(p.name for p in (tmp_path / "att").iterdir())
    refused(fma("export", "--out", "att/bands.yaml"), "inside the attestations folder")
    refused(fma("export", "--out", "att"), "inside the attestations folder")
    refused(
        fma("user", "add", "new-rater", *RATER, "--code-file", "att/code.txt"),
        "inside the attestations folder",
    )
    assert sorted(p.name for p in (tmp_path / "att").iterdir()) == listed


@pytest.mark.parametrize("kind", ["fifo", "link", "device"])
def test_exemptions_yaml_is_never_written_onto_an_odd_path(fma, tmp_path, odd_paths, kind):  # noqa: F811
    target = odd_paths[kind]
    before = os.lstat(target)
    refused(fma("exemptions", "export", str(target)), str(target), "not a regular file")
    after = os.lstat(target)
    assert (stat.S_IFMT(after.st_mode), after.st_ino) == (
        stat.S_IFMT(before.st_mode),
        before.st_ino,
    )
    assert (tmp_path / "real.yaml").read_text() == "kept\n"


def test_exemptions_yaml_is_never_written_into_the_attestations_folder(fma, tmp_path):  # noqa: F811
    """Not over a signed record, nor policy.yaml, nor as the folder's exemptions.yaml."""
    before = {p.name: p.read_bytes() for p in (tmp_path / "att").iterdir()}
    record = sorted(name for name in before if name.endswith(".dsse.json"))[-1]
    for out in (f"att/{record}", "att/policy.yaml", "att", "att/new.yaml"):
        refused(fma("exemptions", "export", out), "inside the attestations folder")
    assert {p.name: p.read_bytes() for p in (tmp_path / "att").iterdir()} == before


def test_no_output_is_written_over_the_studys_own_files_or_among_its_vignettes(
    fma,  # noqa: F811
    tmp_path,
    cli_vignettes,  # noqa: F811
):
    """Not over the study's database, its identity key or its log, nor into the vignettes
    folder, where the next read would take the file for a vignette."""
    key = tmp_path / "fma-bands-identity.key"
    key.write_bytes(b"sealing key")
    (tmp_path / "fma-bands.log").write_text("kept\n")
    db_before = (tmp_path / "x.db").read_bytes()
    vignettes_before = sorted(p.name for p in cli_vignettes.iterdir())
    cases = {
        "x.db": "the study's database",
        str(tmp_path / "x.db"): "the study's database",
        "fma-bands-identity.key": "the study's identity key",
        "fma-bands.log": "the study's log file",
        str(cli_vignettes / "bands.yaml"): "inside the vignettes folder",
    }
    for out, said in cases.items():
        refused(fma("export", "--out", out), said)
        refused(fma("exemptions", "export", out), said)
        refused(fma("report", "--out", out), said)
    assert (tmp_path / "x.db").read_bytes() == db_before
    assert key.read_bytes() == b"sealing key"
    assert (tmp_path / "fma-bands.log").read_text() == "kept\n"
    assert sorted(p.name for p in cli_vignettes.iterdir()) == vignettes_before


def test_a_reset_whose_code_cannot_be_written_resets_nothing(fma, tmp_path, monkeypatch):  # noqa: F811
    def full_disk(path, data, **_):
        raise FmaBandsError("cannot write: No space left on device", file=str(path))

    db = tmp_path / "x.db"
    with monkeypatch.context() as patched:
        patched.setattr("fma_bands.cli.users.write_atomically", full_disk)
        refused(fma("user", "reset", "geri-01", "--code-file", "code.txt"), "No space left")
        assert count(db, "SELECT count(*) FROM audit_event WHERE kind = 'account_reset'") == 0
        assert count(db, "SELECT count(*) FROM user WHERE pseudonym = 'geri-01' AND "
                         "passphrase_hash IS NOT NULL") == 1  # fmt: skip
        # The same for an enrolment: nobody is enrolled with a code nobody has.
        added = fma("user", "add", "new-rater", *RATER, "--code-file", "code.txt")
        refused(added, "No space left")
        assert count(db, "SELECT count(*) FROM user WHERE pseudonym = 'new-rater'") == 0
    # A folder named as the code file is refused before the reset, which then still works.
    (tmp_path / "dir").mkdir()
    refused(fma("user", "reset", "geri-01", "--code-file", "dir"), "not a regular file")
    assert count(db, "SELECT count(*) FROM audit_event WHERE kind = 'account_reset'") == 0
    done = fma("user", "reset", "geri-01", "--code-file", "code.txt")
    assert done.exit_code == 0, done.output
    assert stat.S_IMODE((tmp_path / "code.txt").stat().st_mode) == 0o600
    assert count(db, "SELECT count(*) FROM audit_event WHERE kind = 'account_reset'") == 1


def run(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("postgresql://u:" + SECRET + "@[::1/db", "a malformed host"),
        ("postgresql://u:" + SECRET + "@localhost:99999999/db", "a malformed host"),
        ("sqlite:///study%00.db", "control character"),
        ("postgresql://u:" + SECRET + "@localhost/d%00b", "control character"),
        ("sqlite:///" + "x" * 4000, "more than the 2,048 accepted"),
        ("postgresql://u:" + SECRET + "@localhost/" + "d" * 4000, "more than the 2,048"),
        # An @ in the password, unencoded: the rest would be read as the host, and shown.
        ("postgresql://u:" + SECRET[:4] + "@" + SECRET[4:] + "@localhost/db", "as %40"),
    ],
)
def test_a_bad_database_url_is_refused_by_name(tmp_path, monkeypatch, url, message):
    monkeypatch.chdir(tmp_path)
    for command in (("db", "current"), ("init",), ("user", "list")):
        line = refused(run("--db", url, "--vignettes", str(tmp_path), *command), message)
        assert "database" in line and SECRET not in line and SECRET[4:] not in line


def test_the_password_of_a_database_url_is_never_shown(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    url = f"postgresql://someone:{SECRET}@127.0.0.1:1/study"  # nothing listens on port 1
    for command in (("db", "current"), ("db", "upgrade"), ("init",), ("user", "list")):
        result = run("--db", url, "--vignettes", str(tmp_path), *command)
        assert result.exit_code == 1, result.output
        assert SECRET not in result.output and "someone:***@127.0.0.1" in result.output
    # What the commands print on success hides it the same way (a SQLite URL has none to hide).
    assert hide_passwords(f"database {url}: revision x") == (
        "database postgresql://someone:***@127.0.0.1:1/study: revision x"
    )
    assert hide_passwords("sqlite:///a:b@c.db") == "sqlite:///a:b@c.db"


def test_the_bug_log_is_private_and_holds_no_password(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    url = f"postgresql://someone:{SECRET}@db.example/study"

    def bug(_url):
        raise RuntimeError(f"failed on {url}")

    monkeypatch.setattr("fma_bands.store.db.make_engine", bug)
    log = tmp_path / "bug.log"
    result = run("--db", url, "db", "current", env={"FMA_BANDS_LOG_FILE": str(log)})
    assert result.exit_code == 70 and SECRET not in result.output
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    text = log.read_text()
    assert "RuntimeError" in text and "someone:***@db.example" in text and SECRET not in text
    # A log left readable by others is made private when next written.
    log.chmod(0o644)
    run("--db", url, "db", "current", env={"FMA_BANDS_LOG_FILE": str(log)})
    assert stat.S_IMODE(log.stat().st_mode) == 0o600


def test_numeric_options_are_bounded_and_say_so(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for args, name in (
        (("agreement", "--bootstrap", "100001"), "--bootstrap"),
        (("agreement", "--bootstrap", "100000000"), "--bootstrap"),
        (("agreement", "--seed", str(2**64)), "--seed"),
        (("registry", "--quorum", "1001"), "--quorum"),
        (("round", "open", "9" * 4000), "NUMBER"),
    ):
        result = run(*args)
        assert result.exit_code == 2 and name in result.output and "range" in result.output
    shown = run("agreement", "--help").output
    assert "0 to 100,000" in shown and "0<=x<=100000" in shown


def test_numbers_are_written_with_the_digits_0_to_9(tmp_path, monkeypatch):
    """int() reads a full-width or Arabic-Indic digit as a number: a quorum typed so would be
    signed as one nobody wrote."""
    monkeypatch.chdir(tmp_path)
    for args in (
        ("policy", "set", "--quorum", "２", "--scope", "warn"),
        ("registry", "--quorum", "٢"),
        ("agreement", "--bootstrap", "１０"),
        ("round", "open", "２"),
        ("user", "add", "someone", "--years", "３"),
    ):
        result = run(*args)
        assert result.exit_code == 2, result.output
        assert "is not a whole number written with the digits 0 to 9" in result.output


@pytest.mark.postgres
def test_init_and_db_current_on_postgresql_hide_the_password(
    postgres_engine, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    # The test cluster trusts local connections, so any password opens it.
    url = postgres_engine.url.set(password=SECRET).render_as_string(hide_password=False)
    (tmp_path / "attestations").mkdir()
    for command in (("init",), ("db", "current"), ("db", "upgrade")):
        result = run("--db", url, "--vignettes", str(DEMO_VIGNETTES), *command)
        assert result.exit_code == 0, result.output
        assert SECRET not in result.output and "postgres:***@127.0.0.1" in result.output
