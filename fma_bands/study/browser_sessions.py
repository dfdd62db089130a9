"""Browser sessions: a signed-in browser found again after a reload, so that reloading a page
within the idle time does not ask for the passphrase again (docs/deployment.md).

The browser holds a random token in a cookie; the store keeps only its SHA-256, so a copy of
the database signs nobody in. A session ends when its person signs out or stays idle longer
than the idle_minutes setting (21 CFR 11.300(d)); an ended session is never found again. A
session serves only the account as it was when it opened: an account reset since, activated
again since, or no longer active signs nobody in. Signing an attestation never rests on a
session: it always asks for the passphrase (fma_bands.study.signing).
"""

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlmodel import Session

from fma_bands.core.people import UserPublic
from fma_bands.store.models import BrowserSession, User, utcnow
from fma_bands.study.users import public_of

TOKEN_BYTES = 32
# A token from token_urlsafe(32) has 43 characters; anything much longer is no token of ours,
# and is not worth hashing.
MAX_TOKEN = 128


@dataclass(frozen=True)
class Found:
    """What a browser's token finds: the person it acts for (None: nobody), the key the page
    keeps to refresh and end the session, and whether a live session was just ended for being
    idle (the sign-in form then says why)."""

    user: UserPublic | None
    token_hash: str | None = None
    idle: bool = False


def token_hash(token: str) -> str:
    """What the store keeps of a token: its SHA-256, in hex."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def open_session(session: Session, user_id: int, *, now: datetime | None = None) -> str:
    """A new session for the user's browser; returns its token, for the cookie only (never
    stored, logged or shown)."""
    token = secrets.token_urlsafe(TOKEN_BYTES)
    when = now or utcnow()
    session.add(
        BrowserSession(
            token_hash=token_hash(token), user_id=user_id, created_at=when, last_seen_at=when
        )
    )
    return token


def find_session(
    session: Session, token: str, *, idle_minutes: int, now: datetime | None = None
) -> Found:
    """The person a browser's token signs in, its use counted as activity; nobody for an
    unknown or ended token. A session idle longer than `idle_minutes`, or whose account no
    longer holds (see `_account_holds`), is ended here."""
    if not token or len(token) > MAX_TOKEN:
        return Found(None)
    key = token_hash(token)
    row = session.get(BrowserSession, key)
    if row is None or row.ended_at is not None:
        return Found(None)
    when = now or utcnow()
    if when - row.last_seen_at > timedelta(minutes=idle_minutes):
        row.ended_at = when
        return Found(None, idle=True)
    user = session.get(User, row.user_id)
    if user is None or not _account_holds(user, row):
        row.ended_at = when
        return Found(None)
    row.last_seen_at = when
    return Found(public_of(session, user), key)


def touch_session(session: Session, key: str, *, role: str, now: datetime | None = None) -> bool:
    """Record activity on a session still in use; False (and the session ended) when it has
    ended meanwhile (signed out in another tab), its account no longer holds, or the account's
    role is no longer `role`, the one the page acts for."""
    row = session.get(BrowserSession, key)
    if row is None or row.ended_at is not None:
        return False
    when = now or utcnow()
    user = session.get(User, row.user_id)
    if user is None or not _account_holds(user, row) or user.role != role:
        row.ended_at = when
        return False
    row.last_seen_at = when
    return True


def end_session(session: Session, key: str, *, now: datetime | None = None) -> None:
    """End a session for good (sign-out, idle): its token never signs anyone in again."""
    row = session.get(BrowserSession, key)
    if row is not None and row.ended_at is None:
        row.ended_at = now or utcnow()


def _account_holds(user: User, row: BrowserSession) -> bool:
    """Whether the account is the one the session opened for: active (a reset clears the
    passphrase until the person activates again) and not activated again since."""
    if user.passphrase_hash is None:
        return False
    return user.activated_at is None or user.activated_at <= row.created_at
