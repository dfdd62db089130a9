"""Every page under streamlit's AppTest: first run, sign-in, activation, passphrases, admin and
the audit log (the queue and the review screen: test_pages_review.py).

Each test works on its own SQLite file, copied from a template made once per module (the users'
Argon2 hashes and signing keys are what is slow to make), and checks the store, not only the page.
"""

import json
import re

import pytest
from sqlalchemy import text
from streamlit.testing.v1 import AppTest

from fma_bands.core.people import UserPublic
from fma_bands.evidence.log import read_evidence
from fma_bands.store.db import make_engine, session_scope, upgrade
from fma_bands.store.models import utcnow
from fma_bands.study import audit, throttle
from fma_bands.study.enrolment import ACTIVATION_FAILED
from fma_bands.study.rounds import close_round
from fma_bands.study.throttle import FREE_FAILURES
from fma_bands.study.users import SIGN_IN_FAILED, list_users
from tests import page_helpers
from tests.page_helpers import (
    BANDS,
    DOC,
    GOOD_ANSWERS,
    MED,
    PASSPHRASES,
    as_read,
    band_params,
    by_label,
    click,
    go,
    key,
    open_app,
    open_review,
    pages_of,
    progress_text,
    run,
    shown,
    texts,
    title,
)

fresh_caches, app_env, template, study = (
    page_helpers.fresh_caches,
    page_helpers.app_env,
    page_helpers.template,
    page_helpers.study,
)


def fill_first_run(at: AppTest, passphrase: str, repeat: str) -> AppTest:
    by_label(at.text_input, "Passphrase").input(passphrase)
    by_label(at.text_input, "Repeat the passphrase").input(repeat)
    return click(at, "Create coordinator account")


def statement_of(path) -> str:
    """The in-toto statement a DSSE envelope file signs, as JSON text."""
    import base64

    return base64.b64decode(json.loads(path.read_text(encoding="utf-8"))["payload"]).decode()


def users_in(url: str) -> list[UserPublic]:
    engine = make_engine(url)
    try:
        upgrade(engine)
        with session_scope(engine) as s:
            return list_users(s)
    finally:
        engine.dispose()


def test_first_run_creates_the_coordinator_and_lands_on_admin(app_env):
    at = open_app()
    assert title(at) == "Set up fma-bands"

    fill_first_run(at, "long enough passphrase", "another long passphrase")
    assert [e.value for e in at.error] == ["the two passphrases differ"]
    assert users_in(app_env) == []

    fill_first_run(at, "short", "short")
    assert [e.value for e in at.error] == ["choose a passphrase of at least 12 characters"]
    assert users_in(app_env) == []

    fill_first_run(at, "long enough passphrase", "long enough passphrase")
    assert title(at) == "Study admin"
    [coordinator] = users_in(app_env)
    assert (coordinator.pseudonym, coordinator.role) == ("coordinator", "coordinator")
    assert at.session_state["user"]["pseudonym"] == "coordinator"


# Sign in -----------------------------------------------------------------------------------


def sign_in_as(at: AppTest, name: str, passphrase: str) -> AppTest:
    by_label(at.text_input, "Your name in the study").input(name)
    by_label(at.text_input, "Passphrase").input(passphrase)
    return click(at, "Sign in")


def test_failed_sign_ins_say_the_same_thing_and_nothing_more(study):
    wrong = sign_in_as(open_app(), "rater-01", "not the passphrase")
    unknown = sign_in_as(open_app(), "no-such-rater", "not the passphrase")
    for at in (wrong, unknown):
        assert title(at) == "Sign in"
        assert [e.value for e in at.error] == [SIGN_IN_FAILED]
        assert not at.warning and not at.info and not at.success
        assert "user" not in at.session_state
    assert texts(wrong) == texts(unknown)


def test_rater_signs_in_to_the_queue_and_has_no_coordinator_pages(study):
    at = sign_in_as(open_app(), "rater-01", PASSPHRASES["rater-01"])
    assert title(at) == "My queue"
    assert at.session_state["user"]["role"] == "rater"
    offered = pages_of(at)
    assert {"app_pages/queue.py", "app_pages/review.py"} <= set(offered)
    assert "app_pages/admin.py" not in offered and "app_pages/audit_log.py" not in offered


@pytest.mark.parametrize("role", ["rater", "coordinator"])
def test_every_page_opens_without_an_exception(study, role):
    user = study.rater if role == "rater" else study.coordinator
    at = open_app(user)
    for page in pages_of(at):
        go(at, page)  # asserts that no exception is shown
        assert at.title or at.info, page
        # Every signed-in page hands on a click made while leaving a field (page_script._GUARD;
        # the browser tests try it), from one hidden element of the sidebar.
        assert len(guards(at)) == 1, page
        for script in scripts(at):
            # The browser's sanitizer drops a script whose text reads like markup ("<" then a
            # letter or "/"), silently: the page would lose its guard, shortcuts or cookie.
            assert not re.search(r"<[/\w]", script), (
                page,
                re.search(r".{0,40}<[/\w].{0,40}", script),
            )


def scripts(at: AppTest) -> list[str]:
    """The text of every script the page drew (its html elements, the sidebar's included)."""
    bodies = [e.proto.body for e in (*at.get("html"), *at.sidebar.get("html"))]
    return [
        found for body in bodies for found in re.findall(r"<script[^>]*>(.*?)</script>", body, re.S)
    ]


def guards(at: AppTest) -> list[str]:
    return [e.proto.body for e in at.sidebar.get("html") if "data-fma-bands-guard" in e.proto.body]


def test_a_signed_out_page_draws_no_click_guard(study):
    at = open_app()
    assert title(at) == "Sign in" and not guards(at) and not at.sidebar.get("html")


def test_coordinator_signs_in_to_study_admin(study):
    at = sign_in_as(open_app(), "coordinator", PASSPHRASES["coordinator"])
    assert title(at) == "Study admin"
    assert at.session_state["user"]["role"] == "coordinator"
    # Its caption counts the enrolled raters; their progress is one link away, never repeated.
    assert "; 2 raters enrolled." in at.caption[0].value
    links = [(p.proto.label, p.proto.page) for p in at.get("page_link")]
    label = "Each rater's submitted, draft and stale reviews, by round, on Raters' progress"
    assert (label, "progress") in links, links
    assert "Progress by rater" in [h.value for h in at.subheader]
    assert not [d for d in at.dataframe if "stale" in d.value.columns]


# Queue -------------------------------------------------------------------------------------


# Review page: what it shows ----------------------------------------------------------------


# Review page: saving -----------------------------------------------------------------------


def fill_draft(at: AppTest, band, *, hi: int, reason: str) -> None:
    at.radio(key=key(band, "verdict")).set_value("AMEND")
    run(at)
    at.number_input(key=key(band, "band", "hi")).set_value(hi)
    at.radio(key=key(band, "q1", "choice")).set_value("no")
    at.text_input(key=key(band, "q1", "note")).input("the clause says one month")
    at.text_area(key=key(band, "reason")).input(reason)


def assert_shows_draft(at: AppTest, band, *, hi: int, reason: str) -> None:
    assert at.radio(key=key(band, "verdict")).value == "AMEND"
    assert at.number_input(key=key(band, "band", "hi")).value == hi
    assert at.radio(key=key(band, "q1", "choice")).value == "no"
    assert at.text_input(key=key(band, "q1", "note")).value == "the clause says one month"
    assert at.text_area(key=key(band, "reason")).value == reason


# Blinding ----------------------------------------------------------------------------------

SECRET_REASON = "Zebra-quartz reasoning known only to rater-01"


def test_no_page_shows_one_rater_anything_of_another(study):
    study.save(
        study.rater,
        DOC,
        submit=True,
        verdict="AMEND",
        band={"min": 3, "max": 247},
        answers=GOOD_ANSWERS,
        reason=SECRET_REASON,
    )
    study.save(study.rater, MED, submit=False, verdict="DECLINE", reason=SECRET_REASON + " (draft)")
    traces = (SECRET_REASON, "247 days", "'max': 247", "Verdict:", "rater-01")

    at = open_app(study.other)
    screens = {"first page": shown(at)}
    for page in pages_of(at):
        go(at, page)
        screens[page] = shown(at)
    for band in BANDS:
        go(at, "app_pages/review.py", **band_params(band))
        screens[band] = shown(at)
    for band in BANDS:
        go(at, "app_pages/vignette.py", case=band_params(band)["case"])
        assert at.title[0].value.startswith("Case "), at.title[0].value
        screens[band[0]] = shown(at)
    for where, screen in screens.items():
        for trace in traces:
            assert trace not in screen, (where, trace)
        assert "FMA-CANARY" not in screen, where

    # The other rater's own form starts empty, and an AMEND starts from the proposal.
    go(at, "app_pages/review.py", **band_params(DOC))
    assert at.radio(key=key(DOC, "verdict")).value is None
    assert at.text_area(key=key(DOC, "reason")).value == ""
    at.radio(key=key(DOC, "verdict")).set_value("AMEND")
    run(at)
    assert at.number_input(key=key(DOC, "band", "hi")).value == 14
    assert not [t for t in traces if t in shown(at)]
    go(at, "app_pages/queue.py")
    assert progress_text(at) == "0 of 4 bands submitted"


# Study admin -------------------------------------------------------------------------------


ENROL_PASSPHRASE = "Your passphrase (it unlocks the study's root key, which signs the enrolment)"


def enrol(at: AppTest, pseudonym: str, passphrase: str = PASSPHRASES["coordinator"]) -> AppTest:
    go(at, "app_pages/raters.py")
    by_label(at.text_input, "Pseudonym").input(pseudonym)
    by_label(at.text_input, "Specialty").input("geriatrics")
    by_label(at.text_input, "Jurisdiction").input("Australia")
    by_label(at.number_input, "Years since registration").set_value(12)
    by_label(at.text_input, ENROL_PASSPHRASE).input(passphrase)
    return click(at, "Enrol rater")


def rater_table(at: AppTest):
    [table] = [d.value for d in at.dataframe if "pseudonym" in d.value.columns]
    return table


def test_coordinator_enrols_a_rater_and_is_shown_the_code_once(study):
    enrol_and_read_code(study)


def enrol_and_read_code(study) -> str:
    at = open_app(study.coordinator)
    assert title(at) == "Study admin"
    enrol(at, "adjudicator-02")
    assert not at.exception
    [success] = at.success
    assert success.value.startswith("Enrolled adjudicator-02. Give adjudicator-02 this enrolment")
    [code] = at.code
    assert len(code.value) == 39  # 8 groups of 4 base32 characters: 160 bits
    made = {u.pseudonym: u for u in users_in(study.url)}["adjudicator-02"]
    assert (made.role, made.specialty, made.jurisdiction, made.years_post_registration) == (
        "rater",
        "geriatrics",
        "Australia",
        12,
    )
    assert not made.active and made.keyid is None
    table = rater_table(at)
    assert list(table[table["pseudonym"] == "adjudicator-02"]["account"]) == ["awaiting activation"]
    # The one passphrase field is the coordinator's own (the root key signs the enrolment),
    # never the rater's, and it is emptied once the enrolment is signed.
    assert [w.label for w in at.text_input if "assphrase" in w.label] == [
        ENROL_PASSPHRASE,
        "Your passphrase (it unlocks the study's root key, which signs the new enrolment)",
    ]
    assert by_label(at.text_input, ENROL_PASSPHRASE).value == ""
    # Shown once: the next rerun no longer shows it.
    run(at)
    assert not at.code and code.value not in shown(at)
    return code.value


def test_a_wrong_coordinator_passphrase_enrols_nobody(study):
    at = open_app(study.coordinator)
    before = users_in(study.url)
    enrol(at, "adjudicator-02", passphrase="not the passphrase")
    assert [as_read(e.value) for e in at.error] == [
        "that passphrase is not right; nothing was signed"
    ]
    assert not at.success and not at.code
    assert by_label(at.text_input, "Pseudonym").value == "adjudicator-02"  # input kept
    assert users_in(study.url) == before


def test_the_coordinator_resets_a_rater_with_the_root_passphrase(study, tmp_path):
    at = go(open_app(study.coordinator), "app_pages/raters.py")
    reset_label = "Your passphrase (it unlocks the study's root key, which signs the new enrolment)"
    by_label(at.selectbox, "Rater who lost their passphrase").set_value("rater-01")
    by_label(at.text_input, reset_label).input("not the passphrase")
    click(at, "Issue a new enrolment code")
    assert [e.value for e in at.error] == ["that passphrase is not right; nothing was signed"]
    assert not at.code
    assert {u.pseudonym: u for u in users_in(study.url)}["rater-01"].active
    by_label(at.text_input, reset_label).input(PASSPHRASES["coordinator"])
    click(at, "Issue a new enrolment code")
    assert not at.error
    [success] = at.success
    assert success.value.startswith("rater-01 was reset. Give rater-01 this enrolment code")
    assert len(at.code) == 1
    assert by_label(at.text_input, reset_label).value == ""  # not left on screen
    # The reset is a new root-signed enrolment, in the folder once the page's session commits.
    [enrolment] = sorted((tmp_path / "attestations").glob("*-enrolment-rater-01-*.dsse.json"))[-1:]
    assert json.loads(statement_of(enrolment))["predicate"]["reset"] is True


def test_a_real_name_is_refused_naming_the_field(study):
    at = open_app(study.coordinator)
    before = users_in(study.url)
    enrol(at, "Dr Jane Smith")
    [error] = [as_read(e.value) for e in at.error]
    assert error.startswith("Pseudonym:") and "never a real name" in error
    assert not at.success
    assert by_label(at.text_input, "Pseudonym").value == "Dr Jane Smith"  # input kept
    assert users_in(study.url) == before


def activate_in(at: AppTest, name: str, code: str, passphrase: str, repeat: str | None = None):
    by_label(at.text_input, "Your name in the study").input(name)
    by_label(at.text_input, "Enrolment code").input(code)
    by_label(at.text_input, "Choose a passphrase").input(passphrase)
    by_label(at.text_input, "Repeat the passphrase").input(passphrase if repeat is None else repeat)
    return click(at, "Activate")


def test_a_rater_activates_with_the_code_and_chooses_the_passphrase(study, monkeypatch, tmp_path):
    monkeypatch.setenv("FMA_BANDS_ATTESTATIONS", str(tmp_path / "attestations"))
    code = enrol_and_read_code(study)
    at = go(open_app(), "app_pages/activate.py")
    assert title(at) == "Activate your account"

    activate_in(at, "adjudicator-02", code, "my very own passphrase", "a typo in the repeat")
    assert [e.value for e in at.error] == ["the two passphrases differ"]
    assert not {u.pseudonym: u for u in users_in(study.url)}["adjudicator-02"].active
    activate_in(at, "adjudicator-02", "WRONG-CODE", "my very own passphrase")
    assert [e.value for e in at.error] == [ACTIVATION_FAILED]
    assert by_label(at.text_input, "Your name in the study").value == "adjudicator-02"  # input kept
    activate_in(at, "adjudicator-02", code, "short")
    assert [e.value for e in at.error] == ["choose a passphrase of at least 12 characters"]

    activate_in(at, "adjudicator-02", code, "my very own passphrase")
    assert title(at) == "My queue"
    assert at.session_state["user"]["pseudonym"] == "adjudicator-02"
    made = {u.pseudonym: u for u in users_in(study.url)}["adjudicator-02"]
    assert made.active and made.keyid
    # The root-signed enrolment, then the activation her new key signed: the log's newest two.
    newest = sorted(p.name for p in (tmp_path / "attestations").glob("*.dsse.json"))[-2:]
    assert [name.split("-", 1)[1].rsplit("-", 1)[0] for name in newest] == [
        "enrolment-adjudicator-02",
        "activation-adjudicator-02",
    ]
    evidence = read_evidence(tmp_path / "attestations")
    assert evidence.valid, evidence.problems
    assert [k.keyid for k in evidence.adjudicators["adjudicator-02"].keys] == [made.keyid]
    # The code is spent, and the chosen passphrase signs in.
    again = activate_in(
        go(open_app(), "app_pages/activate.py"), "adjudicator-02", code, "another passphrase!"
    )
    assert [e.value for e in again.error] == [ACTIVATION_FAILED]
    assert title(sign_in_as(open_app(), "adjudicator-02", "my very own passphrase")) == "My queue"
    with study.store() as s:
        log = json.dumps(audit.events(s), default=str)
    assert "my very own passphrase" not in log and code not in log


def test_everyone_can_change_their_own_passphrase(study):
    for user in (study.rater, study.coordinator):
        at = go(open_app(user), "app_pages/passphrase.py")
        assert title(at) == "Change your passphrase"
        old = PASSPHRASES[user.pseudonym]
        for label, value in (
            ("Current passphrase", "not it at all"),
            ("New passphrase", "a new passphrase 1"),
            ("Repeat the new passphrase", "a new passphrase 1"),
        ):
            by_label(at.text_input, label).input(value)
        click(at, "Change passphrase")
        assert [e.value for e in at.error] == ["the current passphrase is not right"]
        assert by_label(at.text_input, "New passphrase").value == "a new passphrase 1"  # kept
        by_label(at.text_input, "Current passphrase").input(old)
        click(at, "Change passphrase")
        assert [s.value for s in at.success] == [
            "Your passphrase is changed. Use the new one from now on."
        ]
        assert by_label(at.text_input, "New passphrase").value == ""  # not left on screen
        assert title(sign_in_as(open_app(), user.pseudonym, "a new passphrase 1")) != "Sign in"


def test_two_different_new_passphrases_change_nothing(study):
    at = go(open_app(study.rater), "app_pages/passphrase.py")
    old = PASSPHRASES["rater-01"]
    for label, value in (
        ("Current passphrase", old),
        ("New passphrase", "a new passphrase 1"),
        ("Repeat the new passphrase", "a new passphrase 2"),
    ):
        by_label(at.text_input, label).input(value)
    click(at, "Change passphrase")
    assert [e.value for e in at.error] == ["the two passphrases differ"]
    assert not at.success
    with study.store() as s:
        assert audit.events(s, kinds=["passphrase_changed"]) == []
    assert title(sign_in_as(open_app(), "rater-01", old)) == "My queue"


def test_repeated_failed_sign_ins_are_throttled_and_told_how_long_to_wait(study, monkeypatch):
    stopped = utcnow()
    monkeypatch.setattr(throttle, "utcnow", lambda: stopped)  # the wait never runs out here
    at = open_app()
    for _ in range(FREE_FAILURES):
        sign_in_as(at, "rater-01", "not the passphrase")
        assert [e.value for e in at.error] == [SIGN_IN_FAILED]
    # The right passphrase, too soon after: told how long to wait, and no way in.
    sign_in_as(at, "rater-01", PASSPHRASES["rater-01"])
    assert [as_read(e.value) for e in at.error] == [
        "Too many failed attempts: wait 1 second before trying again"
    ]
    assert "user" not in at.session_state


def test_the_coordinator_reaches_no_signing_page(study):
    at = open_app(study.coordinator)
    offered = pages_of(at)
    assert "app_pages/attest.py" not in offered and "app_pages/review.py" not in offered


def test_raters_and_the_coordinator_reach_the_queries_and_a_steward_does_not(study):
    from app_pages.main import ADDRESSES

    for user in (study.rater, study.coordinator):
        assert "app_pages/queries.py" in pages_of(open_app(user))
    steward = UserPublic(id=study.coordinator.id, pseudonym="steward-01", role="steward")
    assert "app_pages/queries.py" not in pages_of(open_app(steward))
    # Signed out, the address shows the sign-in form and keeps the link for afterwards.
    assert "queries" in ADDRESSES


def test_the_study_admin_page_neither_closes_unconfirmed_nor_reopens(study):
    at = open_app(study.coordinator)
    assert "Round 1 is **open**." in texts(at)
    assert any(c.value.startswith("Raters review blind to each other.") for c in at.caption)
    # Closing asks for confirmation, on Raters' progress (tests/pages/test_progress_page.py).
    assert not [b for b in at.button if "review phase" in b.label or "Reopen" in b.label]
    with study.store() as s:
        close_round(s, actor=study.coordinator)
    at = open_app(study.coordinator)
    assert "Round 1 is **closed**." in texts(at)
    assert not [b for b in at.button if "review phase" in b.label or "Reopen" in b.label]


def test_a_closed_review_phase_stops_reviews(study):
    with study.store() as s:
        close_round(s, actor=study.coordinator)

    rater = open_review(study.rater, DOC)
    assert [i.value for i in rater.info if "vary by run" not in i.value] == [
        "The review phase is closed: reviews can no longer change."
    ]
    assert not [b for b in rater.button if b.label in ("Save draft", "Submit review")]


# Audit log ---------------------------------------------------------------------------------


def test_audit_log_shows_an_intact_chain_then_tampering(study):
    at = open_app(study.coordinator, "app_pages/audit_log.py")
    with study.store() as s:
        n_events = audit.verify(s).n_events
    assert n_events >= 4
    assert [s.value for s in at.success] == [
        f"The hash chain is intact: {n_events} events checked."
    ]
    assert not at.error

    [when] = [c.value for c in at.caption if c.value.startswith("Checked at ")]

    with study.store() as s:
        s.execute(
            text("UPDATE audit_event SET payload = :p WHERE seq = 2"),
            {"p": '{"pseudonym": "someone-else"}'},
        )

    def tampered(at) -> None:
        assert not at.success
        [error] = at.error
        assert error.value == "The audit log has been tampered with (1 problem(s)):"
        assert "event 2 (user_enrolled) was edited" in at.code[0].value

    # A rerun with no event added says the check it made, and when; asked, it checks again.
    run(at)
    assert [s.value for s in at.success] == [
        f"The hash chain is intact: {n_events} events checked."
    ]
    assert when in [c.value for c in at.caption]
    click(at, "Check again")
    tampered(at)
    # Opened again, the page checks the whole chain again.
    fresh = open_app(study.coordinator, "app_pages/audit_log.py")
    tampered(fresh)
    go(at, "app_pages/progress.py")
    tampered(go(at, "app_pages/audit_log.py"))


def test_the_audit_logs_filters_are_still_set_after_another_page(study):
    at = open_app(study.coordinator, "app_pages/audit_log.py")
    everyone = [c.value for c in at.caption if c.value.startswith("Rows ")]
    at.selectbox(key="audit_who").set_value("coordinator").run()
    at.multiselect(key="audit_what").set_value(["user_enrolled"]).run()
    [filtered] = [c.value for c in at.caption if c.value.startswith("Rows ")]
    assert [filtered] != everyone
    go(at, "app_pages/progress.py")
    go(at, "app_pages/audit_log.py")
    assert at.selectbox(key="audit_who").value == "coordinator"
    assert at.multiselect(key="audit_what").value == ["user_enrolled"]
    assert [c.value for c in at.caption if c.value.startswith("Rows ")] == [filtered]
    assert not at.warning  # no "set by the Session State API" warning either


def test_an_event_added_since_the_check_has_the_rerun_check_again(study):
    at = open_app(study.coordinator, "app_pages/audit_log.py")
    assert at.success and not at.error
    with study.store() as s:
        s.execute(
            text("UPDATE audit_event SET payload = :p WHERE seq = 2"),
            {"p": '{"pseudonym": "someone-else"}'},
        )
    study.save(study.rater, DOC, submit=True, verdict="ACCEPT", answers=GOOD_ANSWERS)
    run(at)
    assert not at.success
    assert "event 2 (user_enrolled) was edited" in at.code[0].value


@pytest.mark.parametrize(
    "edit", ["payload = '{\"pseudonym\": '", "payload = 7", "at = '2026-02-30 10:00:00.000000'"]
)
def test_audit_log_lists_an_event_edited_into_nonsense_and_names_it(study, edit):
    # SQLite keeps whatever an UPDATE writes, even what the model cannot read back: the page
    # must still say the log was edited and list the event, never fail.
    from app_pages.audit_log_screen import UNREADABLE

    with study.store() as s:
        s.execute(text(f"UPDATE audit_event SET {edit} WHERE seq = 2"))
    at = open_app(study.coordinator, "app_pages/audit_log.py")
    [error] = at.error
    assert error.value == "The audit log has been tampered with (1 problem(s)):"
    assert "event 2 (user_enrolled) was edited" in at.code[0].value
    [listed] = [row for row in at.dataframe[0].value.to_dict("records") if row["seq"] == 2]
    assert UNREADABLE in (listed["when (UTC)"], listed["details"])


def test_a_misspelt_setting_is_named_in_the_browser_without_a_traceback(monkeypatch, tmp_path):
    from streamlit.testing.v1 import AppTest

    from app_pages.common import escaped
    from tests.conftest import ROOT

    monkeypatch.setenv("FMA_BANDS_DATABASE_URL", f"sqlite:///{tmp_path / 'fma-bands.db'}")
    monkeypatch.setenv("FMA_BANDS_ATTESTATIONS", str(tmp_path / "attestations"))
    misspelt = "FMA_BANDS_" + "VIGNETES"  # one T short (written apart: no setting is named so)
    monkeypatch.setenv(misspelt, str(tmp_path))
    monkeypatch.chdir(ROOT)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=20).run()
    assert not at.exception
    [error] = at.error
    assert escaped(f"{misspelt}:") in error.value and "settings cannot be used" in error.value


def test_a_store_the_app_cannot_open_is_named_in_the_browser_without_a_traceback(
    monkeypatch, tmp_path
):
    from streamlit.testing.v1 import AppTest

    from tests.conftest import ROOT

    (tmp_path / "not-a-database.db").write_text("hello\n")
    monkeypatch.setenv("FMA_BANDS_DATABASE_URL", f"sqlite:///{tmp_path / 'not-a-database.db'}")
    monkeypatch.setenv("FMA_BANDS_ATTESTATIONS", str(tmp_path / "attestations"))
    monkeypatch.chdir(ROOT)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=20).run()
    assert not at.exception, [e.value for e in at.exception]
    [error] = at.error
    assert "The study's store cannot be used" in error.value
    assert "file is not a database" in error.value
