"""Passphrases guarded on every page that asks for one, under streamlit's AppTest (21 CFR
11.300(d)): wrong passphrases on Sign attestation and Change passphrase lock the account as
they would at sign-in, and say how long to wait; a session left idle is signed out, and the
sign-in form says why."""

import time

import pytest
from sqlmodel import select

from fma_bands.store.models import LogRecord, utcnow
from fma_bands.study import audit, throttle
from fma_bands.study.identity import set_identity
from fma_bands.study.throttle import FREE_FAILURES, wait_after
from tests import page_helpers
from tests.page_helpers import (
    BANDS,
    GOOD_ANSWERS,
    PASSPHRASES,
    as_read,
    by_label,
    click,
    go,
    open_app,
    run,
    title,
)

fresh_caches, app_env, template, study = (
    page_helpers.fresh_caches,
    page_helpers.app_env,
    page_helpers.template,
    page_helpers.study,
)

LOCKED = "Too many failed attempts: wait 1 second before trying again"
IDENTITY = {
    "full_name": "Example Clinician",
    "primary_qualification": "MBBS",
    "postgraduate_qualification": "FACEM",
    "registration_number": "MED0000000001",
    "registering_body": "Example Medical Board",
    "institution": "Example Hospital",
    "email": "clinician@example.org",
}


class Clock:
    """The time the throttle reads, moved on by hand: no test sleeps."""

    def __init__(self) -> None:
        self.now = utcnow()


@pytest.fixture
def clock(monkeypatch) -> Clock:
    found = Clock()
    monkeypatch.setattr(throttle, "utcnow", lambda: found.now)
    return found


def failures(study) -> list[tuple[str, str, bool]]:
    with study.store() as s:
        events = reversed(audit.events(s, kinds=["passphrase_failed"]))
        return [
            (e["payload"]["pseudonym"], e["payload"]["where"], e["payload"]["throttled"])
            for e in events
        ]


def test_wrong_passphrases_on_sign_attestation_lock_the_rater_out(
    study, clock, tmp_path, monkeypatch
):
    monkeypatch.setenv("FMA_BANDS_IDENTITY_KEY", str(tmp_path / "identity.key"))
    for band in BANDS:
        study.save(study.rater, band, submit=True, verdict="ACCEPT", answers=GOOD_ANSWERS)
    with study.store() as s:
        set_identity(
            s,
            actor=study.coordinator,
            pseudonym="rater-01",
            record=IDENTITY,
            key_path=tmp_path / "identity.key",
            passphrase=PASSPHRASES["coordinator"],
            folder=None,
        )
    at = open_app(study.rater, "app_pages/attest.py")
    for box in at.checkbox:
        if box.key.startswith("declare:"):
            box.check()

    def sign(passphrase: str) -> list[str]:
        at.text_input(key="attest:passphrase").input(passphrase)
        click(at, "Sign attestation")
        return [as_read(e.value) for e in at.error]

    for _ in range(FREE_FAILURES):
        assert sign("a wrong guess") == ["that passphrase is not right; nothing was signed"]
        # The refused passphrase leaves the screen; the declarations stay ticked.
        assert at.text_input(key="attest:passphrase").value == ""
        assert all(b.value for b in at.checkbox if b.key.startswith("declare:"))
    assert sign(PASSPHRASES["rater-01"]) == [LOCKED]
    with study.store() as s:
        assert not s.exec(select(LogRecord).where(LogRecord.kind == "adjudication")).first()
    assert failures(study) == [("rater-01", "signing", False)] * FREE_FAILURES + [
        ("rater-01", "signing", True)
    ]
    clock.now += wait_after(FREE_FAILURES)
    assert sign(PASSPHRASES["rater-01"]) == []
    assert any(s.value.startswith("Signed.") for s in at.success)


def test_wrong_passphrases_on_change_passphrase_lock_the_account_out(study, clock):
    at = go(open_app(study.rater), "app_pages/passphrase.py")
    by_label(at.text_input, "New passphrase").input("a new passphrase 1")
    by_label(at.text_input, "Repeat the new passphrase").input("a new passphrase 1")

    def change(current: str) -> list[str]:
        by_label(at.text_input, "Current passphrase").input(current)
        click(at, "Change passphrase")
        return [as_read(e.value) for e in at.error]

    for _ in range(FREE_FAILURES):
        assert change("a wrong guess") == ["the current passphrase is not right"]
    assert change(PASSPHRASES["rater-01"]) == [LOCKED]
    assert not at.success
    assert {where for _, where, _ in failures(study)} == {"passphrase change"}
    clock.now += wait_after(FREE_FAILURES)
    assert change(PASSPHRASES["rater-01"]) == []
    assert [s.value for s in at.success] == [
        "Your passphrase is changed. Use the new one from now on."
    ]


def idle_for(at, minutes: float):
    """The session's last page run, `minutes` ago; then the next run."""
    at.session_state["active_at"] = time.monotonic() - minutes * 60
    return run(at)


def test_a_session_idle_past_the_setting_is_signed_out(study):
    at = open_app(study.rater)
    assert title(idle_for(at, 29)) == "My queue"  # a run inside the idle time keeps it
    assert title(idle_for(at, 31)) == "Sign in"
    assert "user" not in at.session_state
    assert [i.value for i in at.info] == [
        "You were signed out after 30 minutes without activity. Sign in again to go on."
    ]


def test_the_idle_time_is_a_setting(study, monkeypatch):
    monkeypatch.setenv("FMA_BANDS_IDLE_MINUTES", "5")
    at = open_app(study.coordinator)
    assert title(idle_for(at, 4)) == "Study admin"
    assert title(idle_for(at, 6)) == "Sign in"
    assert [i.value for i in at.info] == [
        "You were signed out after 5 minutes without activity. Sign in again to go on."
    ]


IDLE_NOTE = "You were signed out after 30 minutes without activity. Sign in again to go on."


def test_a_button_pressed_after_idling_acts_on_nothing_and_signs_out(study):
    """Streamlit runs a button's callback before the page: a due date cleared, or a query sent,
    by a session idle past the setting would act before the page signed it out. The callback
    checks first (common.for_signed_in): nothing is done, and the sign-in form says why."""
    from fma_bands.study.due_dates import due_date, set_due, today

    with study.store() as s:
        set_due(s, actor=study.coordinator, due_on=today())
    at = open_app(study.coordinator)
    assert title(at) == "Study admin"
    at.session_state["active_at"] = time.monotonic() - 31 * 60
    click(at, "Clear the due date")
    assert title(at) == "Sign in" and [i.value for i in at.info] == [IDLE_NOTE]
    with study.store() as s:
        assert due_date(s) is not None  # not cleared

    at = open_app(study.rater)
    go(at, "app_pages/queries.py")
    band = at.selectbox(key="queries:start:band")
    band.set_value(band.options[0])
    at.text_area(key="queries:start:body").input("Sent after half an hour away?")
    at.session_state["active_at"] = time.monotonic() - 31 * 60
    click(at, "Send the question")
    assert title(at) == "Sign in" and [i.value for i in at.info] == [IDLE_NOTE]
    with study.store() as s:
        assert "query_message" not in [e["kind"] for e in audit.events(s)]
    # Inside the idle time the same press acts, as always.
    at = open_app(study.coordinator)
    at.session_state["active_at"] = time.monotonic() - 29 * 60
    click(at, "Clear the due date")
    assert title(at) == "Study admin"
    with study.store() as s:
        assert due_date(s) is None
