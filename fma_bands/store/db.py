"""The engine (SQLite by default, PostgreSQL by URL), its sessions, and upgrading the schema.

A database is only ever brought to the current schema by the migrations in migrations/; the
tables are never created behind their back, so a study survives an upgrade of fma-bands.
"""

import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import event, inspect
from sqlalchemy.engine import URL, Connection, Engine, make_url
from sqlalchemy.exc import (
    ArgumentError,
    IntegrityError,
    NoSuchModuleError,
    OperationalError,
    SQLAlchemyError,
)
from sqlmodel import Session, create_engine

from fma_bands.core.errors import ConflictError, FmaBandsError
from fma_bands.core.files import control_character

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
BACKENDS = ("sqlite", "postgresql")
# The revision whose schema equals the one create_all made before migrations existed.
BASELINE = "0001"
# The newest revision in migrations/versions, so that a database already there is recognised
# without importing alembic (slow to import, at every command and app start)
# or taking SQLite's write lock. tests/store/test_migrations.py checks it against alembic's head.
HEAD = "0090"


def normalise_url(url: str) -> str:
    """PostgreSQL URLs go to psycopg 3; `postgres://` (Heroku style) is refused by SQLAlchemy."""
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def make_engine(url: str, *, create: bool = True) -> Engine:
    """An engine for a SQLite file or a PostgreSQL server; any other URL is refused by name.
    Without `create`, a SQLite file that is not there is refused by name, never made."""
    url = normalise_url(url)
    parsed = check_url(url)
    backend = parsed.get_backend_name()
    if backend not in BACKENDS:
        raise FmaBandsError(
            f"the database URL {shown_url(parsed)!r} is for {backend}; fma-bands works with SQLite "
            "(sqlite:///FILE) and PostgreSQL (postgresql://USER@HOST:PORT/DATABASE)",
        )
    try:
        if backend == "sqlite":
            if parsed.database and parsed.database != ":memory:":
                if not create and not os.path.exists(parsed.database):
                    raise FmaBandsError(
                        f"no study database at {shown_url(parsed)}: `fma-bands init` sets a "
                        "study up there; name the study's own with --db or FMA_BANDS_DATABASE_URL"
                    )
                Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
            engine = create_engine(url, connect_args={"check_same_thread": False})
            event.listen(engine, "connect", _sqlite_pragmas)
        else:
            engine = create_engine(url, pool_pre_ping=True)
    # ValueError and TypeError: a query option the driver cannot take (?timeout=abc).
    except (ArgumentError, NoSuchModuleError, OSError, ValueError, TypeError) as exc:
        raise FmaBandsError(
            f"cannot use the database URL {shown_url(parsed)!r}: {hide_passwords(str(exc))}"
        ) from None
    return engine


def _sqlite_pragmas(connection, _record) -> None:
    # Without foreign_keys=ON SQLite silently ignores every foreign key.
    cursor = connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    # Writers on SQLite take turns; a turn can wait this long under load before it gives up.
    cursor.execute("PRAGMA busy_timeout=15000")
    cursor.close()


def _alembic_config(connection: Connection):
    # Imported here: alembic is slow to import, and `fma-bands --help` should not pay for it.
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    return config


def upgrade(engine: Engine, revision: str = "head") -> str | None:
    """Bring the database to `revision` (the newest by default) and return where it is now.

    A database made before migrations existed (tables, no alembic_version) is first marked as
    the baseline, whose schema it has, and then upgraded like any other.
    """
    if revision == "head" and _stamped(engine) == HEAD:
        return HEAD
    from alembic import command

    try:
        with engine.connect() as connection:
            sqlite = connection.dialect.name == "sqlite"
            if sqlite:
                # Batch migrations rebuild a table that others point at (SQLite cannot alter one
                # in place), and dropping the old copy would trip their foreign keys: off while
                # the migrations run (a no-op inside a transaction, so before it), checked after.
                connection.exec_driver_sql("PRAGMA foreign_keys=OFF")
                connection.commit()
                # Python's sqlite3 opens a transaction only before INSERT, UPDATE and DELETE, so
                # each CREATE or ALTER would commit on its own and a process killed halfway
                # would leave half a schema. The migrations run in one explicit transaction.
                raw = connection.connection.driver_connection
                raw.isolation_level = None  # type: ignore[union-attr]
            try:
                with connection.begin():
                    if sqlite:
                        connection.exec_driver_sql("BEGIN IMMEDIATE")
                    config = _alembic_config(connection)
                    tables = set(inspect(connection).get_table_names())
                    if "alembic_version" not in tables and "review" in tables:
                        command.stamp(config, BASELINE)
                    command.upgrade(config, revision)
                    if sqlite and connection.exec_driver_sql("PRAGMA foreign_key_check").first():
                        raise FmaBandsError(
                            f"cannot upgrade the database {engine.url!r}: a migration would "
                            "break its foreign keys; nothing was changed"
                        )
            finally:
                if sqlite:
                    raw.isolation_level = ""  # type: ignore[union-attr]
                    connection.exec_driver_sql("PRAGMA foreign_keys=ON")
                    connection.commit()
        return current_revision(engine)
    except SQLAlchemyError as exc:
        raise FmaBandsError(f"cannot upgrade the database {engine.url!r}: {_cause(exc)}") from None


def _stamped(engine: Engine) -> str | None:
    """The one revision alembic_version holds, read without alembic; None when there is no
    such table or it does not hold exactly one row (upgrade then decides, as before)."""
    try:
        connection = engine.connect()
    except SQLAlchemyError as exc:  # as upgrade would say it, without trying twice
        raise FmaBandsError(f"cannot upgrade the database {engine.url!r}: {_cause(exc)}") from None
    with connection:
        try:
            rows = connection.exec_driver_sql("SELECT version_num FROM alembic_version").all()
        except SQLAlchemyError:
            return None
    return rows[0][0] if len(rows) == 1 else None


def current_revision(engine: Engine) -> str | None:
    """The database's schema revision; None for a database with no fma-bands schema yet."""
    from alembic.runtime.migration import MigrationContext

    try:
        with engine.connect() as connection:
            return MigrationContext.configure(connection).get_current_revision()
    except SQLAlchemyError as exc:
        raise FmaBandsError(f"cannot read the database {engine.url!r}: {_cause(exc)}") from None


def head_revision() -> str:
    """The newest revision this version of fma-bands knows."""
    from alembic.script import ScriptDirectory

    config = _alembic_config(None)  # type: ignore[arg-type]
    head = ScriptDirectory.from_config(config).get_current_head()
    assert head is not None, "the migrations folder has no revision"
    return head


def _cause(exc: SQLAlchemyError) -> str:
    return str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]


def _refuse_control(session: Session, _context: object, _instances: object) -> None:
    """No text with a control character (other than tab and line breaks) reaches the store:
    PostgreSQL refuses a NUL with a raw error, SQLite would keep what no screen can show, and
    what is stored is signed and exported, where the bounded reader refuses it. Checked for
    every row about to be written."""
    for row in (*session.new, *session.dirty):
        for name, value in vars(row).items():
            if not name.startswith("_") and (found := _control_in(value)):
                raise FmaBandsError(
                    f"the text holds {found}, which no screen shows and cannot be stored: "
                    "remove it (retype the text where it was pasted)",
                    field=name,
                )


def _control_in(value: object) -> str | None:
    if isinstance(value, str):
        return control_character(value)
    if isinstance(value, dict):
        return next((f for k, v in value.items() if (f := _control_in(k) or _control_in(v))), None)
    if isinstance(value, list | tuple):
        return next((f for v in value if (f := _control_in(v))), None)
    return None


def on_commit(session: Session, do: Callable[[], object]) -> None:
    """Run `do` once the session's transaction has committed (files derived from the store)."""
    event.listen(session, "after_commit", lambda _session: do(), once=True)


# Writes a session leaves for after it (store/kept_rows.py): (write, required) in order.
LATER = "fma_bands.later"


@contextmanager
def session_scope(engine: Engine) -> Iterator[Session]:
    """A session that commits on success and rolls back on any error: nothing half-written.
    Once it has committed and given its connection back, the writes it left for later (copies
    of what was computed) are made, each in a transaction of its own."""
    later: list[tuple[Callable[[Session], None], bool]] = []
    with Session(engine, expire_on_commit=False) as session:
        session.info[LATER] = later
        event.listen(session, "before_flush", _refuse_control)
        # Registered before any on_commit hook, so it is set when one of them runs.
        event.listen(session, "after_commit", _mark_committed)
        event.listen(session, "after_begin", _mark_begun)
        try:
            yield session
            session.commit()
        except (IntegrityError, OperationalError) as exc:
            if session.info.get(COMMITTED):
                raise  # from an on_commit hook: what it saved is saved, and no conflict
            session.rollback()
            if _is_conflict(exc):
                # Two writers met: the loser is told to reload, never shown a database error.
                raise ConflictError(CHANGED_ELSEWHERE) from None
            raise
        except BaseException:
            # An error from an on_commit hook comes after the commit: there is nothing to roll
            # back (trying would hide the error behind SQLAlchemy's own).
            if not session.info.get(COMMITTED):
                session.rollback()
            raise
    for write, required in later:
        if not write_apart(engine, write) and required:
            raise ConflictError(CHANGED_ELSEWHERE)


def write_apart(engine: Engine, write: Callable[[Session], None]) -> bool:
    """`write` in a transaction of its own, committed at once; whether it was (not when another
    writer made the same meanwhile, or held the database past its busy timeout)."""
    try:
        with session_scope(engine) as own:
            write(own)
    except (ConflictError, SQLAlchemyError):
        return False
    return True


COMMITTED = "fma_bands.committed"


def _mark_committed(session: Session) -> None:
    session.info[COMMITTED] = True


def _mark_begun(session: Session, _transaction: object, _connection: object) -> None:
    session.info.pop(COMMITTED, None)


CHANGED_ELSEWHERE = (
    "this was changed elsewhere (another tab, window or person) at the same moment; "
    "reload to see what is saved now, and try again"
)
# PostgreSQL: unique_violation, serialization_failure, deadlock_detected, lock_not_available.
_CONFLICT_STATES = {"23505", "40001", "40P01", "55P03"}


def _is_conflict(exc: Exception) -> bool:
    """A uniqueness, serialisation or lock conflict between concurrent writers (not a bug)."""
    orig = getattr(exc, "orig", None)
    state = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)
    if state in _CONFLICT_STATES:
        return True
    text = str(orig or exc).lower()
    return "unique constraint failed" in text or "database is locked" in text or "busy" in text


# Database URLs as the operator gives them ---------------------------------------------------

# Longer than any server address and file path a person writes; a path longer than the system's
# own limit would otherwise fail deep inside the driver.
MAX_URL_CHARS = 2048
_PASSWORD_IN_URL = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://[^\s:/@]*:)[^\s]*@")


def check_url(url: str) -> URL:
    """The database URL, parsed, or an FmaBandsError saying what is wrong with it (never with
    its password): too long, a control character (%00 included), or a malformed host or port."""
    shown = hide_passwords(url)
    if len(url) > MAX_URL_CHARS:
        raise FmaBandsError(
            f"the database URL is {len(url):,} characters long, more than the "
            f"{MAX_URL_CHARS:,} accepted: {shown[:80]}...",
            field="database_url",
        )
    authority = url.split("://", 1)[-1].split("/", 1)[0]
    if authority.count("@") > 1:
        # Read as it stands, what follows the first @ would be taken for the host, and shown.
        raise FmaBandsError(
            f"the database URL {shown!r} has more than one @ before its host: write an @ in "
            "the user name or password as %40",
            field="database_url",
        )
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError, TypeError):
        raise FmaBandsError(
            f"cannot read the database URL {shown!r} (a malformed host, port or address?): "
            "write sqlite:///FILE or postgresql://USER@HOST:PORT/DATABASE",
            field="database_url",
        ) from None
    if parsed.port is not None and not 0 < parsed.port < 65536:
        raise FmaBandsError(
            f"cannot read the database URL {shown!r} (a malformed host, port or address?): its "
            f"port {parsed.port} is not between 1 and 65535",
            field="database_url",
        )
    parts = [url, parsed.username, parsed.password, parsed.host, parsed.database]
    parts += [str(v) for v in parsed.query.values()]
    if any(_control(str(p)) for p in parts if p is not None):
        raise FmaBandsError(
            f"the database URL {shown!r} holds a control character (such as %00): remove it",
            field="database_url",
        )
    return parsed


def shown_url(url: "str | URL") -> str:
    """The URL as fma-bands prints or logs it: its password, if any, as ***."""
    if isinstance(url, URL):
        return url.render_as_string(hide_password=True)
    return hide_passwords(url)


def hide_passwords(text: str) -> str:
    """Text with the password of every URL in it (scheme://user:PASSWORD@host) as ***."""
    return _PASSWORD_IN_URL.sub(r"\1***@", text)


def _control(text: str) -> bool:
    return any(ord(c) < 32 or ord(c) == 127 for c in text)
