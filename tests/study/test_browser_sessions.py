"""Browser sessions (fma_bands.study.browser_sessions): a reload within the idle time finds its
person again; an idle, ended or foreign token finds nobody; the store keeps only a token's hash;
an account reset or activated again since the session opened is not signed in."""

from datetime import timedelta

import pytest
from sqlmodel import select

from fma_bands.store.db import session_scope
from fma_bands.store.models import BrowserSession, User, utcnow
from fma_bands.study.browser_sessions import (
    end_session,
    find_session,
    open_session,
    token_hash,
    touch_session,
)
from fma_bands.study.enrolment import activate, create_user, reset

COORDINATOR_PASS = "the coordinator's own passphrase"
RATER_PASS = "the rater's own passphrase"
IDLE = 30


@pytest.fixture
def people(engine):
    with session_scope(engine) as s:
        coordinator = create_user(
            s, actor=None, pseudonym="coordinator", passphrase=COORDINATOR_PASS, role="coordinator"
        )
        raters = [
            create_user(
                s,
                actor="coordinator",
                pseudonym=name,
                passphrase=RATER_PASS,
                root_passphrase=COORDINATOR_PASS,
                role="rater",
                specialty="emergency medicine",
                jurisdiction="Australia",
                years_post_registration=7,
            )
            for name in ("rater-01", "rater-02")
        ]
    return coordinator, *raters


def opened(engine, user_id: int, **kwargs) -> str:
    with session_scope(engine) as s:
        return open_session(s, user_id, **kwargs)


def found(engine, token: str, **kwargs):
    with session_scope(engine) as s:
        return find_session(s, token, idle_minutes=IDLE, **kwargs)


def row(engine, token: str) -> BrowserSession:
    with session_scope(engine) as s:
        got = s.get(BrowserSession, token_hash(token))
        assert got is not None
        s.expunge(got)
        return got


def test_a_token_finds_its_person_again_and_counts_as_activity(engine, people):
    _, rater, _ = people
    token = opened(engine, rater.id)
    later = utcnow() + timedelta(minutes=20)
    result = found(engine, token, now=later)
    assert result.user is not None and result.user.pseudonym == "rater-01"
    assert result.user.role == "rater" and not result.idle
    assert result.token_hash == token_hash(token)
    assert row(engine, token).last_seen_at == later


def test_only_the_tokens_hash_is_stored(engine, people):
    _, rater, _ = people
    token = opened(engine, rater.id)
    assert len(token) >= 43  # 32 random bytes
    with session_scope(engine) as s:
        rows = list(s.exec(select(BrowserSession)))
    assert [r.token_hash for r in rows] == [token_hash(token)]
    stored = " ".join(str(value) for r in rows for value in r.model_dump().values())
    assert token not in stored
    # Two sign-ins never share a token.
    assert opened(engine, rater.id) != token


def test_a_session_idle_beyond_the_limit_is_ended_and_says_so(engine, people):
    _, rater, _ = people
    start = utcnow()
    token = opened(engine, rater.id, now=start)
    # Just within the limit it still holds, and that use counts as activity.
    inside = start + timedelta(minutes=IDLE) - timedelta(seconds=1)
    assert found(engine, token, now=inside).user is not None
    later = inside + timedelta(minutes=IDLE, seconds=2)
    result = found(engine, token, now=later)
    assert result.user is None and result.idle
    assert row(engine, token).ended_at == later
    # Ended, it is never found again, even "within" the idle time of its last use.
    again = found(engine, token, now=later)
    assert again.user is None and not again.idle


def test_an_ended_session_is_never_reused(engine, people):
    _, rater, _ = people
    token = opened(engine, rater.id)
    with session_scope(engine) as s:
        end_session(s, token_hash(token))
    assert found(engine, token).user is None
    with session_scope(engine) as s:
        assert not touch_session(s, token_hash(token), role="rater")
    # Ending twice keeps the first end.
    ended = row(engine, token).ended_at
    with session_scope(engine) as s:
        end_session(s, token_hash(token))
    assert row(engine, token).ended_at == ended


def test_a_token_signs_in_only_its_own_person(engine, people):
    _, first, second = people
    mine = opened(engine, first.id)
    theirs = opened(engine, second.id)
    assert found(engine, mine).user.pseudonym == "rater-01"
    assert found(engine, theirs).user.pseudonym == "rater-02"
    # A token nobody was given, its hash offered as a token, an empty or huge value.
    for forged in ("x" * 43, token_hash(mine), "", "a" * 10_000):
        assert found(engine, forged).user is None


def test_an_account_reset_since_signs_nobody_in(engine, people, tmp_path):
    coordinator, rater, _ = people
    token = opened(engine, rater.id)
    with session_scope(engine) as s:
        code = reset(s, actor=coordinator, pseudonym="rater-01", passphrase=COORDINATOR_PASS)
    assert found(engine, token).user is None
    assert row(engine, token).ended_at is not None
    # Activated again with a new passphrase, the old browser's session stays ended...
    with session_scope(engine) as s:
        assert activate(
            s, pseudonym="rater-01", code=code, passphrase="a new passphrase", folder=tmp_path
        )
    assert found(engine, token).user is None
    # ...and a session opened before the new activation is refused as well.
    with session_scope(engine) as s:
        user = s.get(User, rater.id)
        assert user is not None and user.activated_at is not None
        before = user.activated_at - timedelta(seconds=1)
    stale = opened(engine, rater.id, now=before)
    assert found(engine, stale).user is None
    # A sign-in after the activation works.
    assert found(engine, opened(engine, rater.id)).user.pseudonym == "rater-01"


def test_touch_refreshes_a_live_session_and_ends_one_whose_account_changed(engine, people):
    coordinator, rater, _ = people
    token = opened(engine, rater.id)
    key = token_hash(token)
    later = utcnow() + timedelta(minutes=10)
    with session_scope(engine) as s:
        assert touch_session(s, key, role="rater", now=later)
    assert row(engine, token).last_seen_at == later
    # The page acts for a role the account no longer has: the session ends.
    with session_scope(engine) as s:
        assert not touch_session(s, key, role="coordinator")
    assert row(engine, token).ended_at is not None
    assert found(engine, token).user is None
    # A reset account's session ends at the next touch.
    other = token_hash(opened(engine, rater.id))
    with session_scope(engine) as s:
        reset(s, actor=coordinator, pseudonym="rater-01", passphrase=COORDINATOR_PASS)
    with session_scope(engine) as s:
        assert not touch_session(s, other, role="rater")
        assert not touch_session(s, token_hash("never given"), role="rater")
