"""Rows of table kept_report (copies of what was computed: reports, diagnostics, answers) written
apart from the caller's transaction.

A copy is written in a short transaction of its own, committed at once, once the work it keeps
is done. The caller's transaction stays a reader while it computes: a writer holds SQLite's one
write lock until it commits, and every rater's save in the app waits for it (for as long as a
bootstrap takes, and past the busy timeout on a large study). A copy that cannot be written is
not kept, and is computed again when next asked: it is only ever a copy.
"""

from collections.abc import Callable

from sqlalchemy import delete
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlmodel import Session, col

from fma_bands.core.errors import ConflictError
from fma_bands.store.db import session_scope
from fma_bands.store.models import KeptReport


def keep_apart(session: Session, write: Callable[[Session], None]) -> bool:
    """Run `write` in a transaction of its own on `session`'s database, committed at once;
    whether it was (not when another writer kept the same meanwhile, or held the database past
    its busy timeout). On SQLite, where the caller's transaction already writes (it holds the
    one lock, which a transaction apart would wait for) or the database is in memory (one
    connection), `write` runs in the caller's transaction instead."""
    engine = session.get_bind().engine
    if engine.dialect.name == "sqlite" and (
        engine.url.database in (None, "", ":memory:") or _writing(session)
    ):
        try:
            with session.begin_nested():
                write(session)
        except IntegrityError:
            return False
        return True
    try:
        with session_scope(engine) as own:
            write(own)
    except (ConflictError, IntegrityError, OperationalError):
        return False
    return True


def _writing(session: Session) -> bool:
    """Whether the session's SQLite connection is inside a transaction it began to write."""
    driver = session.connection().connection.driver_connection
    return bool(getattr(driver, "in_transaction", False))


def put(session: Session, key: str, body: str) -> None:
    """`body` under `key`, in place of a row kept there before."""
    session.execute(delete(KeptReport).where(col(KeptReport.key) == key))
    session.add(KeptReport(key=key, body=body))
    session.flush()
