"""Throttling failed sign-ins (docs/design.md, Identity, keys and attestation): per account, keyed
by a hash of the name typed (so an unknown name is throttled too, and never stored as typed), and
per browser session; after a few failures each attempt must wait longer. Rows are locked until
commit, so parallel guesses wait for each other instead of slipping through before the first failure
is counted.
"""

import hashlib
import hmac
import secrets
from datetime import datetime, timedelta

from sqlalchemy import text
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlmodel import Session, col, select

from fma_bands.store.models import AppSecret, SignInThrottle

# Failed attempts allowed before each further one must wait, and the longest wait.
FREE_FAILURES = 3
MAX_DELAY = timedelta(minutes=15)


def _secret(session: Session, name: str) -> bytes:
    """A server-side secret made on first use (kept in the store, never shown or logged)."""
    _insert_ignore(session, AppSecret, [{"name": name, "value": secrets.token_hex(32)}])
    row = session.get(AppSecret, name)
    assert row is not None
    return bytes.fromhex(row.value)


def name_hash(session: Session, typed: str) -> str:
    """A keyed hash of a typed name: failed attempts on one name can be told apart in the audit
    log without the log ever holding what was typed (perhaps a passphrase in the wrong box)."""
    key = _secret(session, "sign-in-names")
    return hmac.new(key, typed.strip().encode(), hashlib.sha256).hexdigest()[:16]


def account_key(session: Session, typed: str) -> str:
    return f"account:{name_hash(session, typed or '')}"


def _insert_ignore(session: Session, table, values: list[dict]) -> None:
    dialect = session.connection().dialect.name
    insert = postgresql_insert if dialect == "postgresql" else sqlite_insert
    session.execute(insert(table).values(values).on_conflict_do_nothing())


def rows(session: Session, keys: list[str]) -> list[SignInThrottle]:
    """The throttle rows for these keys, locked until commit so that parallel guesses wait for
    each other instead of all slipping through before the first failure is counted."""
    if session.connection().dialect.name == "sqlite":
        # Take SQLite's write lock before reading, as the audit log does.
        session.execute(text("UPDATE sign_in_throttle SET failures = failures WHERE 1 = 0"))
    _insert_ignore(session, SignInThrottle, [{"key": k, "failures": 0} for k in keys])
    query = select(SignInThrottle).where(col(SignInThrottle.key).in_(keys)).with_for_update()
    return list(session.exec(query))


def wait_after(failures: int) -> timedelta:
    """How long the next attempt must wait after this many failures in a row: nothing for the
    first few, then twice as long each time, up to MAX_DELAY."""
    if failures < FREE_FAILURES:
        return timedelta(0)
    return min(timedelta(seconds=2 ** (failures - FREE_FAILURES)), MAX_DELAY)


def blocked(rows: list[SignInThrottle], now: datetime) -> bool:
    return any(
        row.last_failure_at is not None and now < row.last_failure_at + wait_after(row.failures)
        for row in rows
    )


def fail(rows: list[SignInThrottle], now: datetime) -> None:
    for row in rows:
        row.failures += 1
        row.last_failure_at = now


def clear(rows: list[SignInThrottle]) -> None:
    for row in rows:
        row.failures, row.last_failure_at = 0, None
