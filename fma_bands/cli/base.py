"""The fma-bands group, its global options, and the one place where errors become messages
and exit statuses (docs/cli.md, "Exit statuses").

Handlers import the domain modules they need inside their bodies: `fma-bands --help` must not
pay for the database, numpy or an Argon2 hash.
"""

import contextlib
import json
import logging
import os
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, Protocol

import click

from fma_bands.cli import logs
from fma_bands.core.errors import AccessDenied, ConflictError, FmaBandsError, WrongPassphrase
from fma_bands.core.files import read_bounded
from fma_bands.core.files import read_yaml as read_yaml_file

if TYPE_CHECKING:
    from sqlmodel import Session

    from fma_bands.core.people import UserPublic
    from fma_bands.core.settings import Settings
    from fma_bands.core.vignettes import Library
    from fma_bands.study.library import SyncReport

OK_EXIT = 0
FAILED_EXIT = 1  # a check failed, or what was asked cannot be done (the message says why)
USAGE_EXIT = 2  # click's: the command line itself is wrong
REFUSED_EXIT = 3  # a rule or a permission forbids it: nothing was done
BUG_EXIT = 70  # EX_SOFTWARE: not the user's mistake, and scripts can tell it apart
PIPE_CLOSED_EXIT = 141  # 128 + SIGPIPE, what a shell reports for a reader that left early

# The errors that say "not allowed" rather than "not possible": a role, the blinding, a frozen
# round, a passphrase that does not prove who is asking, a change someone made meanwhile.
REFUSALS = (AccessDenied, WrongPassphrase, ConflictError)

# How each exit status reads in the log's command.end event.
OUTCOMES = {
    OK_EXIT: "ok",
    FAILED_EXIT: "failed",
    USAGE_EXIT: "usage",
    REFUSED_EXIT: "refused",
    BUG_EXIT: "bug",
    PIPE_CLOSED_EXIT: "pipe_closed",
}


class FmaCommand(click.Command):
    """A command that logs its start (its outcome is logged where errors are handled)."""

    def invoke(self, ctx: click.Context) -> Any:
        root = ctx.find_root()
        root.meta["command"] = ctx.command_path.removeprefix(root.command_path).strip()
        found = settings()
        logs.configure(found.log_file, found.log_level)
        logs.note(logging.INFO, "command.start", actor=_actor(), command=root.meta["command"])
        from fma_bands.evidence.kept_parses import keep_parses_in

        # Records read before are not parsed again (evidence/kept_parses.py).
        with keep_parses_in(found.kept_answers):
            return super().invoke(ctx)


class FmaGroup(click.Group):
    """A click group whose failures reach a person as one line: `fma-bands: error: ...`, and
    whose commands and groups are of these classes."""

    command_class = FmaCommand
    group_class = type  # a group made with @cli.group() is an FmaGroup too

    def invoke(self, ctx: click.Context) -> Any:
        if ctx.parent is not None:  # a group inside fma-bands: the root handles what escapes
            return super().invoke(ctx)
        started = time.monotonic()
        code = OK_EXIT
        message = None
        try:
            return super().invoke(ctx)
        except click.exceptions.Exit as exc:
            code = exc.exit_code
            raise
        except click.ClickException as exc:
            code, message = exc.exit_code, exc.format_message()
            raise
        except click.Abort:
            code, message = FAILED_EXIT, "aborted"
            raise
        except BrokenPipeError:
            # The reader went away (`fma-bands registry | head`): nothing is wrong, and what is
            # still buffered has nowhere to go, so it goes to /dev/null instead of a traceback.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            code = PIPE_CLOSED_EXIT
            ctx.exit(code)
        except FmaBandsError as exc:
            code, message = (REFUSED_EXIT if isinstance(exc, REFUSALS) else FAILED_EXIT), str(exc)
            click.echo(f"fma-bands: error: {exc}", err=True)
            ctx.exit(code)
        except Exception as exc:  # the catch-all that keeps tracebacks off a terminal
            if _given_not_utf8(exc):
                code, message = FAILED_EXIT, NOT_UTF8
                click.echo(f"fma-bands: error: {NOT_UTF8}", err=True)
                ctx.exit(code)
            code, message = BUG_EXIT, f"{type(exc).__name__}: {exc}"
            log = _log_bug(ctx, exc)
            click.echo(
                f"fma-bands: error: this is a bug in fma-bands ({type(exc).__name__}), not "
                f"something you did; the details are in {log}. Please report it with that file.",
                err=True,
            )
            ctx.exit(code)
        finally:
            _log_end(ctx, code, message, time.monotonic() - started)
            logs.release()


# Bytes that are not UTF-8 in an argument, an option or an FMA_BANDS_ variable reach Python as
# lone surrogates (file names keep them, and work), which no database, signed statement or
# terminal can write: where one would be written, the command stops saying so.
NOT_UTF8 = (
    "a name or text given to fma-bands (an argument, an option or an FMA_BANDS_ variable) holds "
    "bytes that are not UTF-8 text: give it in UTF-8"
)


def _given_not_utf8(exc: Exception) -> bool:
    return (
        isinstance(exc, UnicodeEncodeError)
        and exc.encoding.replace("-", "").lower() == "utf8"
        and exc.reason == "surrogates not allowed"
    )


def _actor() -> str | None:
    """Who the command acts as: the name given with --as (proved by its passphrase when the
    command needs it: a passphrase that does not prove it ends the command as refused)."""
    options = click.get_current_context().find_root().obj or {}
    return options.get("acting_as")


def _log_end(ctx: click.Context, code: int, message: str | None, seconds: float) -> None:
    """The command's outcome, once it started (a command line click refused never did)."""
    if "command" not in ctx.meta or logs.configured() is None:
        return
    outcome = OUTCOMES.get(code, "failed")
    level = {"refused": logging.WARNING, "bug": logging.ERROR}.get(outcome, logging.INFO)
    logs.note(
        level,
        "command.end",
        actor=_actor(),
        command=ctx.meta["command"],
        outcome=outcome,
        exit=code,
        message=message,
        seconds=round(seconds, 3),
    )


def _log_bug(ctx: click.Context, exc: Exception) -> str:
    """Log the bug with its traceback; where it went (the log file, else the fallback)."""
    handler = logs.configured()
    if handler is None:  # before the settings were read (or while they were): their defaults
        wanted = os.environ.get("FMA_BANDS_LOG_FILE") or "fma-bands.log"
        handler = logs.configure(Path(wanted), "ERROR")
    logs.LOGGER.error(
        "command.bug",
        exc_info=exc,
        extra={"fields": {"actor": _actor(), "command": ctx.meta.get("command")}},
    )
    return str(handler.where) if handler.where else "(no log could be written)"


@click.group(cls=FmaGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(
    package_name="fma-bands", prog_name="fma-bands", message="%(prog)s %(version)s"
)
@click.option(
    "--vignettes",
    metavar="DIR",
    help="Folder of vignette files (default ./vignettes, or $FMA_BANDS_VIGNETTES).",
)
@click.option(
    "--db",
    "database_url",
    metavar="URL",
    help="Database URL (default sqlite:///fma-bands.db, or $FMA_BANDS_DATABASE_URL).",
)
@click.option(
    "--attestations",
    metavar="DIR",
    help="Attestations folder (default ./attestations, or $FMA_BANDS_ATTESTATIONS).",
)
@click.option(
    "--identity-key",
    metavar="FILE",
    help="Key sealing private identities (default ./fma-bands-identity.key, or "
    "$FMA_BANDS_IDENTITY_KEY); keep it out of attestations/ and out of version control.",
)
@click.option(
    "--as",
    "acting_as",
    metavar="NAME",
    envvar="FMA_BANDS_AS",
    help="The coordinator taking a coordinator action (or $FMA_BANDS_AS); the audit log names "
    "them.",
)
@click.option(
    "--passphrase-file",
    "acting_passphrase_file",
    metavar="P",
    envvar="FMA_BANDS_PASSPHRASE_FILE",
    help="File whose first line is that coordinator's passphrase (or "
    "$FMA_BANDS_PASSPHRASE_FILE); without it the passphrase is asked for at a terminal.",
)
@click.pass_context
def cli(ctx: click.Context, **options: Any) -> None:
    """Clinician adjudication of FairMedAgent acceptable-action bands."""
    # Only the raw options here: the settings are read when a command first needs them.
    ctx.obj = options


def settings() -> "Settings":
    """The settings, read once per command: options over FMA_BANDS_* variables over defaults."""
    ctx = click.get_current_context().find_root()
    if "settings" not in ctx.meta:
        from fma_bands.core.settings import load_settings

        ctx.meta["settings"] = load_settings(**(ctx.obj or {}))
    return ctx.meta["settings"]


def done(code: int = 0) -> NoReturn:
    """End the command with this exit status."""
    click.get_current_context().exit(code)


@contextlib.contextmanager
def store(*, create: bool = False) -> Iterator["Session"]:
    """A session on the study database, brought to the current schema first (as the app does).

    Only a command that sets a study up (`create`: `init`, `demo`, the first coordinator's
    `user add`) makes a SQLite file that is not there: any other would make an empty study
    where the operator meant theirs (a mistyped --db, a command run in the wrong folder), and
    answer from it."""
    from sqlalchemy.exc import SQLAlchemyError

    from fma_bands.store.db import make_engine, session_scope, shown_url, upgrade
    from fma_bands.study.ledger import publish

    url = settings().database_url
    engine = make_engine(url, create=create)
    try:
        upgrade(engine)
        with session_scope(engine) as session:
            # Records the store holds and the folder lacks (a process killed after its commit,
            # a round closed since) are published first.
            for name in publish(session, settings().attestations):
                click.echo(f"published: {name}", err=True)
        with session_scope(engine) as session:
            yield session
    except SQLAlchemyError as exc:
        cause = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        raise FmaBandsError(f"cannot use the database {shown_url(url)}: {cause}") from None
    finally:
        engine.dispose()


def library(folders: tuple[str, ...] = ()) -> "Library":
    """The vignettes, parsing only the files not read before with the same bytes
    (evidence/kept_reads.py)."""
    from fma_bands.evidence.kept_reads import load_library_kept

    return load_library_kept(list(folders) or [settings().vignettes], settings().kept_answers)


def has_database() -> bool:
    """False for a SQLite file that does not exist (an editor's checkout holds only files):
    commands that merely read the store then do without it rather than create it."""
    path = sqlite_file(settings().database_url)
    # os.path.exists: a path no file can have (too long, a NUL) holds no study either.
    return path is None or os.path.exists(path)


def sqlite_file(url: str) -> str | None:
    """The file a SQLite URL names, without its options (?timeout=...); None for a server's.
    Read from the text, as commands that never open the store ask it too."""
    if not url.startswith("sqlite:///"):
        return None
    return url.removeprefix("sqlite:///").split("?", 1)[0]


def pinned(given: str | None) -> tuple[str | None, tuple[int, str] | None]:
    """What the attestations folder must be: the log of this study (--study, else the
    database's), holding at least what the database has published (its head), so a folder
    swapped or cut short is refused. An editor with the folder alone gives --study from the
    paper, and --since with `verify`."""
    study_id, since, _ = pinned_with_audit_head(given)
    return study_id, since


def pinned_with_audit_head(
    given: str | None,
) -> tuple[str | None, tuple[int, str] | None, tuple[int, str] | None]:
    """pinned's study and head, and the audit log's (seq, hash) now, which an export carries:
    read in one session, so the store is opened (and brought up to date) once."""
    if not has_database():
        return given, None, None
    from fma_bands.study.audit import head
    from fma_bands.study.ledger import published_head
    from fma_bands.study.state import study

    with store() as session:
        return given or study(session).study_id, published_head(session), head(session)


def complete_library() -> "Library":
    """The study's vignettes, refused whole if any file has a problem (the export needs all)."""
    found = library()
    if not found.ok:
        raise FmaBandsError(
            "the vignette files have problems; fix them first", problems=found.problems
        )
    return found


def synced(session: "Session") -> tuple["Library", "SyncReport"]:
    """The vignettes, with the store brought in line with them (the sync refuses a folder that
    loads none)."""
    from fma_bands.study.library import sync_vignettes

    found = library()
    report = sync_vignettes(session, found, actor="cli")
    for problem in found.problems:
        click.echo(f"warning: {problem}", err=True)
    return found, report


def coordinator(session: "Session") -> "UserPublic":
    """The person taking a coordinator action, named by --as and authenticated by their passphrase
    (a file, $FMA_BANDS_PASSPHRASE_FILE, or a prompt at a terminal), so the audit log says who
    did what. Each attempt is throttled and audited like a sign-in (fma_bands.study.throttle)."""
    from fma_bands.study.users import SIGN_IN_FAILED, has_coordinator, sign_in

    if not has_coordinator(session):
        raise FmaBandsError(
            "no coordinator is enrolled: run `fma-bands demo`, or "
            "`fma-bands user add NAME --role coordinator --passphrase-file P`"
        )
    options = click.get_current_context().find_root().obj or {}
    name = options.get("acting_as")
    if not name:
        raise AccessDenied(
            "this is a coordinator action: say who you are with --as NAME --passphrase-file P "
            "before the command (or FMA_BANDS_AS and FMA_BANDS_PASSPHRASE_FILE)"
        )
    if options.get("acting_passphrase_file"):
        passphrase = read_secret(options["acting_passphrase_file"])
    elif sys.stdin.isatty():
        passphrase = click.prompt(f"Passphrase of {name}", hide_input=True)
        logs.keep_secret(passphrase)
    else:
        raise AccessDenied(
            f"give {name}'s passphrase with --passphrase-file P (or FMA_BANDS_PASSPHRASE_FILE)"
        )
    # A failure is counted and audited (committed) by the check itself; an account that must
    # still wait is refused with how long (AccessDenied, exit 3).
    user = sign_in(session, name, passphrase, where="cli --as")
    if user is None:
        raise AccessDenied(SIGN_IN_FAILED.replace("Sign-in", "Authentication"))
    # The sign-in is recorded at once, and the command's own work starts holding no lock: on
    # SQLite a writer holds the study's one write lock until it commits, and a command that
    # then computes for long (agreement) would keep every rater's save in the app waiting.
    session.commit()
    # What this person may do is the domain's to say (fma_bands.study.state.authorize). The
    # passphrase is kept for this command only: it also unseals the study's root key.
    click.get_current_context().meta["acting_passphrase"] = passphrase
    return user


def acting_passphrase() -> str:
    """The passphrase the coordinator authenticated with (after `coordinator`): what unseals
    the study's root key for a record the root signs."""
    found = click.get_current_context().meta.get("acting_passphrase")
    assert isinstance(found, str), "coordinator() authenticates first"
    return found


# Files a command is handed: a hand-back, an identity record, a passphrase. Each is small; the
# limits refuse a flood (or /dev/zero) by name at once.
TEXT_LIMIT = 1024 * 1024


def read_text(path: str | Path, what: str = "file", limit: int = TEXT_LIMIT) -> str:
    return read_bounded(path, limit=limit, what=what)


def read_yaml(path: str | Path, what: str = "file", limit: int = 64 * 1024) -> Any:
    return read_yaml_file(path, limit=limit, what=what)


def read_secret(path: str | Path) -> str:
    """The first line of a passphrase file (a file keeps the secret out of shell history)."""
    lines = read_text(path, "passphrase file", limit=64 * 1024).splitlines()
    if not lines or not lines[0].strip():
        raise FmaBandsError("the passphrase file is empty", file=str(path))
    logs.keep_secret(lines[0])
    return lines[0]


def forget_statements() -> None:
    """A command decides once: the signed statements it read are not kept for a next time
    (the app's server keeps them; a large study's are hundreds of megabytes)."""
    from fma_bands.evidence.envelope import clear_cache

    clear_cache()


class TextOut(Protocol):
    """Where a command writes its text: standard output, or that and an answer being kept."""

    def write(self, text: str, /) -> int: ...

    def flush(self) -> None: ...


def print_json(
    data: Any, *, each: tuple[str, Iterable[Any]] | None = None, out: TextOut | None = None
) -> None:
    """`data` as JSON on one line: json's C encoder writes it, several times faster than an
    indented dump of a study's whole registry (`| python -m json.tool` indents it for people).
    `each` is (key, members): a list written as its last member, one member at a time, so that
    the tens of megabytes of a large study's list are never held at once. `out` is where it
    goes (standard output by default)."""
    if each is None and out is None:
        click.echo(json.dumps(data))
        return
    out = out or sys.stdout
    if each is None:
        out.write(json.dumps(data) + "\n")
        out.flush()
        return
    key, members = each
    head = json.dumps({**data, key: []})
    assert head.endswith("[]}")
    out.write(head[:-2])
    for index, member in enumerate(members):
        out.write(("" if index == 0 else ", ") + json.dumps(member))
    out.write("]}\n")
    out.flush()
