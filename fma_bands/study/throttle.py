"""Throttling failed passphrases (docs/design.md, Identity, keys and attestation), as 21 CFR
11.300(d) asks (docs/trust.md): every check of a passphrase, at sign-in, signing, a passphrase
change or a key unsealed for a root signature, goes through check_passphrase. Failures are
counted per account, keyed by a hash of the name typed (so an unknown name is throttled too, and
never stored as typed), and at sign-in per browser session; after a few failures each attempt
must wait longer. Rows are locked until commit, so parallel guesses wait for each other instead
of slipping through before the first failure is counted.
"""

import hashlib
import hmac
import math
import secrets
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TypeVar

from sqlalchemy import text
from sqlmodel import Session, col, select

from fma_bands.core.errors import AccessDenied, WrongPassphrase
from fma_bands.store.models import AppSecret, SignInThrottle, utcnow
from fma_bands.study import audit

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
    # Imported for the database in use only: PostgreSQL's dialect takes longer to import than
    # a SQLite study's whole sign-in, and every coordinator command signs in.
    if session.connection().dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as postgresql_insert

        session.execute(postgresql_insert(table).values(values).on_conflict_do_nothing())
    else:
        from sqlalchemy.dialects.sqlite import insert as sqlite_insert

        session.execute(sqlite_insert(table).values(values).on_conflict_do_nothing())


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


def remaining(rows: list[SignInThrottle], now: datetime) -> timedelta:
    """How long the next attempt must still wait (nothing when it may be made now)."""
    waits = [
        row.last_failure_at + wait_after(row.failures) - now
        for row in rows
        if row.last_failure_at is not None
    ]
    return max([timedelta(0), *waits])


def blocked(rows: list[SignInThrottle], now: datetime) -> bool:
    return remaining(rows, now) > timedelta(0)


def wait_message(wait: timedelta) -> str:
    """What a person is told when an attempt comes too soon: how long to wait, rounded up (no
    full stop: a caller may add what was not done)."""
    seconds = math.ceil(wait.total_seconds())
    if seconds >= 120:
        amount, unit = math.ceil(seconds / 60), "minute"
    else:
        amount, unit = max(seconds, 1), "second"
    return (
        f"Too many failed attempts: wait {amount} {unit}{'s' if amount != 1 else ''} before "
        "trying again"
    )


def fail(rows: list[SignInThrottle], now: datetime) -> None:
    for row in rows:
        row.failures += 1
        row.last_failure_at = now


def clear(rows: list[SignInThrottle]) -> None:
    for row in rows:
        row.failures, row.last_failure_at = 0, None


T = TypeVar("T")


def check_passphrase(
    session: Session,
    *,
    account: str,
    known: bool,
    where: str,
    check: Callable[[], T],
    client: str | None = None,
    now: datetime | None = None,
) -> T:
    """What `check` returns: it tries a passphrase for `account` (a name as typed; `known` when
    it names an account), raising WrongPassphrase when the passphrase is not right. Every
    passphrase check of the study comes here, so each is throttled and audited alike.

    While the account (or the browser session `client`) must still wait after earlier failures,
    the passphrase is not tried: the attempt is refused with how long to wait (AccessDenied) and
    does not lengthen the wait. A failure is kept whatever the caller does next: the caller's
    transaction is rolled back (the failure fails it anyway), and the failure alone is counted,
    recorded as a `passphrase_failed` event naming the account (an unknown name only as a keyed
    hash) and `where` (never what was typed), and committed."""
    now = now or utcnow()
    keys = [account_key(session, account)] + ([f"client:{client}"] if client else [])
    held = rows(session, keys)
    if wait := remaining(held, now):
        _keep_failure(session, keys, account, known, where, counted=False, now=now)
        raise AccessDenied(wait_message(wait))
    try:
        found = check()
    except WrongPassphrase:
        _keep_failure(session, keys, account, known, where, counted=True, now=now)
        raise
    clear(held)
    return found


def _keep_failure(
    session: Session,
    keys: list[str],
    account: str,
    known: bool,
    where: str,
    *,
    counted: bool,
    now: datetime,
) -> None:
    """Roll the caller's transaction back, then count (unless the attempt came too soon) and
    audit the failure, and commit it alone."""
    session.rollback()
    held = rows(session, keys)
    if counted:
        fail(held, now)
    who = (
        {"pseudonym": account.strip()}
        if known
        else {"unknown_name_hmac": name_hash(session, account)}
    )
    audit.record(
        session,
        kind="passphrase_failed",
        actor=None,
        payload={**who, "where": where, "throttled": not counted},
    )
    session.commit()
