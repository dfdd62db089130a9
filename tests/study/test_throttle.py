"""Every passphrase check throttled and audited alike (fma_bands.study.throttle; 21 CFR
11.300(d)): signing, a passphrase change and a root signature count failures against the same
account as sign-in does, an account made to wait is told how long and its right passphrase is
refused until then, and each failure is recorded without the typed text, kept although what the
passphrase guarded is rolled back."""

import json
from datetime import timedelta

import pytest
from sqlmodel import select

from fma_bands.core.errors import AccessDenied, FmaBandsError, WrongPassphrase
from fma_bands.store.db import session_scope
from fma_bands.store.models import AuditEvent, User, utcnow
from fma_bands.study import audit, throttle
from fma_bands.study.enrolment import create_user, enrol
from fma_bands.study.throttle import FREE_FAILURES, MAX_DELAY, wait_after, wait_message
from fma_bands.study.users import change_passphrase, sign_in, unlock_signing_key

COORDINATOR_PASS = "the coordinator's own passphrase"
RATER_PASS = "the rater's own passphrase"
SECOND = dict(
    pseudonym="rater-02",
    role="rater",
    specialty="geriatrics",
    jurisdiction="Australia",
    years_post_registration=3,
)


class Clock:
    """The time the throttle reads, moved on by hand: no test sleeps."""

    def __init__(self) -> None:
        self.now = utcnow()

    def advance(self, by: timedelta) -> None:
        self.now += by


@pytest.fixture
def clock(monkeypatch) -> Clock:
    found = Clock()
    monkeypatch.setattr(throttle, "utcnow", lambda: found.now)
    return found


@pytest.fixture
def people(engine, clock):
    with session_scope(engine) as s:
        coordinator = create_user(
            s, actor=None, pseudonym="coordinator", passphrase=COORDINATOR_PASS, role="coordinator"
        )
        rater = create_user(
            s,
            actor="coordinator",
            pseudonym="rater-01",
            passphrase=RATER_PASS,
            root_passphrase=COORDINATOR_PASS,
            role="rater",
            specialty="emergency medicine",
            jurisdiction="Australia",
            years_post_registration=7,
        )
    return coordinator, rater


def failures(engine) -> list[dict]:
    """The payloads of the passphrase_failed events, oldest first."""
    with session_scope(engine) as s:
        return [e["payload"] for e in reversed(audit.events(s, kinds=["passphrase_failed"]))]


def audit_text(engine) -> str:
    with session_scope(engine) as s:
        return json.dumps([[e.kind, e.payload] for e in s.exec(select(AuditEvent))])


def test_wrong_passphrases_at_signing_lock_the_account_until_the_wait_passes(engine, people, clock):
    _, rater = people
    # Eight wrong passphrases, each once the wait before it has passed: all checked.
    for i in range(8):
        with session_scope(engine) as s, pytest.raises(WrongPassphrase):
            audit.record(s, kind="written_before_the_check")
            unlock_signing_key(s, rater.id, f"guess number {i}")
        clock.advance(wait_after(i + 1))
    # The right passphrase, one second too soon: refused unchecked, with how long to wait.
    clock.advance(-timedelta(seconds=1))
    with session_scope(engine) as s, pytest.raises(AccessDenied) as refused:
        unlock_signing_key(s, rater.id, RATER_PASS)
    assert refused.value.message == "Too many failed attempts: wait 1 second before trying again"
    # The same lockout as at sign-in: it is the one account.
    with session_scope(engine) as s, pytest.raises(AccessDenied, match="wait 1 second"):
        sign_in(s, "rater-01", RATER_PASS)
    clock.advance(timedelta(seconds=1))
    with session_scope(engine) as s:
        key, _ = unlock_signing_key(s, rater.id, RATER_PASS)
    assert key.keyid == rater.keyid

    recorded = failures(engine)
    assert [(p["pseudonym"], p["where"], p["throttled"]) for p in recorded] == [
        ("rater-01", "signing", False)
    ] * 8 + [("rater-01", "signing", True), ("rater-01", "sign-in", True)]
    text = audit_text(engine)
    assert "guess number" not in text and RATER_PASS not in text
    # Each failure was kept, and what the caller wrote before the check was rolled back with it.
    with session_scope(engine) as s:
        assert audit.events(s, kinds=["written_before_the_check"]) == []
    # A success starts the count again: the next few failures are free.
    for _ in range(FREE_FAILURES):
        with session_scope(engine) as s, pytest.raises(WrongPassphrase):
            unlock_signing_key(s, rater.id, "not it")


def test_a_passphrase_change_is_throttled_and_audited(engine, people, clock):
    _, rater = people
    for _ in range(FREE_FAILURES):
        with session_scope(engine) as s, pytest.raises(FmaBandsError) as wrong:
            change_passphrase(s, rater.id, "a guessed passphrase", "the new passphrase")
        assert wrong.value.fields == {"old": "the current passphrase is not right"}
    with session_scope(engine) as s, pytest.raises(AccessDenied, match="wait 1 second"):
        change_passphrase(s, rater.id, RATER_PASS, "the new passphrase")
    assert {p["where"] for p in failures(engine)} == {"passphrase change"}
    assert "guessed" not in audit_text(engine)
    clock.advance(wait_after(FREE_FAILURES))
    with session_scope(engine) as s:
        assert sign_in(s, "rater-01", RATER_PASS) is not None  # nothing was changed
        change_passphrase(s, rater.id, RATER_PASS, "the new passphrase")


def test_a_root_signature_is_throttled_and_its_action_rolled_back(engine, people, clock):
    coordinator, _ = people
    for _ in range(FREE_FAILURES):
        with session_scope(engine) as s, pytest.raises(WrongPassphrase):
            enrol(s, actor=coordinator, passphrase="not the root's", **SECOND)
    with session_scope(engine) as s, pytest.raises(AccessDenied, match="wait 1 second"):
        enrol(s, actor=coordinator, passphrase=COORDINATOR_PASS, **SECOND)
    with session_scope(engine) as s:
        assert s.exec(select(User).where(User.pseudonym == "rater-02")).first() is None
    assert [(p["pseudonym"], p["where"], p["throttled"]) for p in failures(engine)] == [
        ("coordinator", "root signing", False)
    ] * FREE_FAILURES + [("coordinator", "root signing", True)]
    clock.advance(wait_after(FREE_FAILURES))
    with session_scope(engine) as s:
        enrol(s, actor=coordinator, passphrase=COORDINATOR_PASS, **SECOND)


def test_the_wait_is_said_in_whole_seconds_or_minutes_rounded_up():
    assert wait_message(timedelta(milliseconds=200)).startswith(
        "Too many failed attempts: wait 1 second "
    )
    assert "wait 61 seconds" in wait_message(timedelta(seconds=60.5))
    assert "wait 15 minutes" in wait_message(MAX_DELAY - timedelta(seconds=30))
