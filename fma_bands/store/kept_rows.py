"""Rows of table kept_report (copies of what was computed: reports, diagnostics, answers) written
apart from the transaction that computed them.

A copy is written once the session that made it has committed and given its connection back
(db.session_scope), in a short transaction of its own. The computing transaction stays a reader:
a writer holds SQLite's one write lock until it commits, and every rater's save in the app waits
for it (for as long as a bootstrap takes, and past the busy timeout on a large study); nor does a
session ever hold two connections of the pool at once. A copy that cannot be written is not
kept, and is computed again when next asked: it is only ever a copy. A write that must not be
lost (a forgetting asked for by `--fresh`) is `required`: when it cannot be made, the session
ends in ConflictError ("changed elsewhere ... try again").
"""

from collections.abc import Callable

from sqlalchemy import delete
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col

from fma_bands.core.errors import ConflictError
from fma_bands.store.db import CHANGED_ELSEWHERE, LATER, write_apart
from fma_bands.store.models import KeptReport


def keep_apart(
    session: Session, write: Callable[[Session], None], *, required: bool = False
) -> None:
    """`write` made apart from `session`'s transaction: after it, when the session is a
    session_scope's; else at once, in a transaction of its own (in the caller's on SQLite when
    the caller already writes, whose lock a transaction apart would wait for, or when the
    database is in memory: one connection)."""
    later = session.info.get(LATER)
    if later is not None:
        later.append((write, required))
        return
    engine = session.get_bind().engine
    if engine.dialect.name == "sqlite" and (
        engine.url.database in (None, "", ":memory:") or _writing(session)
    ):
        try:
            with session.begin_nested():
                write(session)
        except IntegrityError:
            if required:
                raise ConflictError(CHANGED_ELSEWHERE) from None
        return
    if not write_apart(engine, write) and required:
        raise ConflictError(CHANGED_ELSEWHERE)


def _writing(session: Session) -> bool:
    """Whether the session's SQLite connection is inside a transaction it began to write (or
    cannot say: then it is taken to)."""
    driver = session.connection().connection.driver_connection
    return bool(getattr(driver, "in_transaction", True))


def put(session: Session, key: str, body: str) -> None:
    """`body` under `key`, in place of a row kept there before."""
    session.execute(delete(KeptReport).where(col(KeptReport.key) == key))
    session.add(KeptReport(key=key, body=body))
    session.flush()
