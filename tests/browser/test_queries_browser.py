"""Queries in a real browser on the demo study: rater-01 asks the coordinator about a band of
their queue, the coordinator (a second browser) replies, rater-01 reads the reply from the
queue's reminder line, and rater-02 (a third browser) sees nothing of it anywhere a rater can
look."""

from datetime import date, timedelta

import pytest
from playwright.sync_api import Browser, Dialog, Page, expect
from playwright.sync_api import Error as PlaywrightError

from fma_bands.study.due_dates import long_date
from tests.browser.case_numbers import in_queue, queue_of
from tests.browser.conftest import DEMO_ACCOUNTS, AppServer
from tests.browser.helpers import (
    assert_no_exception,
    follow_link,
    open_app,
    open_from_sidebar,
    press,
    settle,
    shoot,
    sign_in,
    wait_for_app,
)

QUESTION = "Is the follow-up counted from discharge or from this visit?"
ANSWER = "From discharge: the clinical core says so in its second line."


@pytest.fixture(scope="module")
def server(demo_server):
    return demo_server()


def signed_in(page: Page, server: AppServer, name: str, landing: str) -> None:
    open_app(page, server.url)
    sign_in(page, name, DEMO_ACCOUNTS[name])
    expect(page.get_by_role("heading", name=landing, level=1)).to_be_visible()


def test_a_query_goes_between_one_rater_and_the_coordinator_only(
    page: Page, browser: Browser, server: AppServer
):
    band = in_queue(server, *queue_of(server, "rater-01")[0])
    signed_in(page, server, "rater-01", "My queue")
    open_from_sidebar(page, "Queries")
    expect(page.get_by_role("heading", name="Queries", level=1)).to_be_visible()
    page.get_by_role("combobox", name="Band").click()
    page.get_by_role("option", name=band, exact=True).click()
    page.get_by_label("Your question", exact=True).fill(QUESTION)
    press(page, "Send the question")
    expect(page.get_by_text("Your message is sent to the study coordinator.")).to_be_visible()
    # Sent once: the field is emptied (a question left in it could be sent twice), and the
    # question is in the thread, as text.
    expect(page.get_by_label("Your question", exact=True)).to_have_value("")
    expect(page.get_by_test_id("stText").get_by_text(QUESTION, exact=True)).to_be_visible()
    expect(page.get_by_text("Open · awaiting the coordinator's reply", exact=True)).to_be_visible()

    coordinator = browser.new_context().new_page()
    try:
        signed_in(coordinator, server, "coordinator", "Study admin")
        open_from_sidebar(coordinator, "Queries")
        expect(
            coordinator.get_by_text("1 query waits for your answer.", exact=True)
        ).to_be_visible()
        expect(coordinator.get_by_text(QUESTION, exact=True)).to_be_visible()
        coordinator.get_by_label("Your reply", exact=True).fill(ANSWER)
        press(coordinator, "Send the reply")
        expect(coordinator.get_by_text("Your message is sent to rater-01.")).to_be_visible()
        expect(
            coordinator.get_by_text(
                "Open · you wrote last: rater-01 may reply; close it once it is settled", exact=True
            )
        ).to_be_visible()
        shoot(coordinator, "queries-coordinator")
    finally:
        coordinator.context.close()

    open_from_sidebar(page, "My queue")
    expect(
        page.get_by_text("1 open query ends with a message from the coordinator.", exact=True)
    ).to_be_visible()
    follow_link(page, "Read and answer your queries")
    expect(page.get_by_text(ANSWER, exact=True)).to_be_visible()
    expect(
        page.get_by_text(
            "Open · the coordinator wrote last: reply if you need to (the coordinator closes it)",
            exact=True,
        )
    ).to_be_visible()
    shoot(page, "queries-rater")

    other = browser.new_context().new_page()
    try:
        signed_in(other, server, "rater-02", "My queue")
        expect(
            other.get_by_text("1 open query ends with a message from the coordinator.", exact=True)
        ).to_have_count(0)
        expect(other.get_by_role("link", name="Read and answer your queries")).to_have_count(0)
        open_from_sidebar(other, "Queries")
        expect(other.get_by_text("No query is open.", exact=True)).to_be_visible()
        settle(other)
        content = other.content()
        assert QUESTION not in content and ANSWER not in content and "rater-01" not in content
    finally:
        other.context.close()


def test_a_due_date_typed_is_set_by_the_first_click(page: Page, server: AppServer):
    """The coordinator types a day into "Due on" and clicks "Set the due date" straight away:
    the click that leaves the field sets the day (the button is never greyed out waiting for
    the field to be left)."""
    signed_in(page, server, "coordinator", "Study admin")
    day = date.today() + timedelta(days=9)
    field = page.get_by_test_id("stMain").get_by_role("group", name="Due on", exact=True)
    # Typed as a person types it: year, month and day, each part moving on to the next.
    field.get_by_role("spinbutton", name="year, Due on").click()
    page.keyboard.type(day.strftime("%Y%m%d"))
    button = page.get_by_role("button", name="Set the due date", exact=True)
    expect(button).to_be_enabled()
    button.click()
    wait_for_app(page)
    assert_no_exception(page)
    expect(page.get_by_text(f"Round 1 is now due on {long_date(day)}.")).to_be_visible()
    shoot(page, "due-date-set")
    press(page, "Clear the due date")
    expect(page.get_by_text("Round 1 has no due date now.")).to_be_visible()


DUE_QUESTION = 'What you typed in "Due on" is not sent: leaving this page loses it. Leave anyway?'


def answer_questions(page: Page, *, leave: bool) -> list[str]:
    """The page's "Leave anyway?" questions, each answered with `leave`, as they are asked."""
    asked: list[str] = []

    def answer(dialog: Dialog) -> None:
        asked.append(dialog.message)
        dialog.accept() if leave else dialog.dismiss()

    page.on("dialog", answer)
    return asked


def test_a_tap_outside_the_due_date_while_typing_it_is_never_lost(page: Page, server: AppServer):
    """The due date's form is a fragment: a click pressed and released at once (a touchpad's
    tap) on a button outside it, made while leaving the field, was put into the fragment's run
    by Streamlit and did nothing. Every signed-in page hands such a click on once the field's
    value has gone: one tap on Sign out asks first (the day is not set), and once told to
    leave, signs out."""
    asked = answer_questions(page, leave=True)
    signed_in(page, server, "coordinator", "Study admin")
    field = page.get_by_test_id("stMain").get_by_role("group", name="Due on", exact=True)
    field.get_by_role("spinbutton", name="year, Due on").click()
    page.keyboard.type((date.today() + timedelta(days=9)).strftime("%Y%m%d"))
    page.get_by_role("button", name="Sign out", exact=True).click()  # pressed and released at once
    expect(page.get_by_role("heading", name="Sign in", level=1)).to_be_visible()
    assert asked == [DUE_QUESTION]
    assert_no_exception(page)


def test_leaving_study_admin_with_a_due_date_chosen_and_not_set_asks_first(
    page: Page, server: AppServer
):
    """A day typed into "Due on" sets nothing until Set the due date is pressed: leaving the
    page at once, or later, asks first, and the page says the day is chosen, not set; once set,
    nothing is asked."""
    asked = answer_questions(page, leave=False)
    signed_in(page, server, "coordinator", "Study admin")
    day = date.today() + timedelta(days=11)
    field = page.get_by_test_id("stMain").get_by_role("group", name="Due on", exact=True)
    field.get_by_role("spinbutton", name="year, Due on").click()
    page.keyboard.type(day.strftime("%Y%m%d"))
    menu = page.get_by_test_id("stSidebar")
    menu.get_by_role("link", name="Audit log").click()  # straight from the field
    wait_for_app(page)
    assert asked == [DUE_QUESTION]
    expect(page.get_by_role("heading", name="Study admin", level=1)).to_be_visible()
    expect(
        page.get_by_text(
            f"{long_date(day)} is chosen, not set: press Set the due date to make round 1 due "
            "then.",
            exact=True,
        )
    ).to_be_visible()
    shoot(page, "due-date-chosen-not-set")
    menu.get_by_role("link", name="Audit log").click()  # later, the field long left
    wait_for_app(page)
    assert asked == [DUE_QUESTION, DUE_QUESTION]
    press(page, "Set the due date")
    expect(page.get_by_text(f"Round 1 is now due on {long_date(day)}.")).to_be_visible()
    expect(page.get_by_text("is chosen, not set")).to_have_count(0)
    open_from_sidebar(page, "Audit log")
    assert len(asked) == 2
    open_from_sidebar(page, "Study admin")
    press(page, "Clear the due date")
    expect(page.get_by_text("Round 1 has no due date now.")).to_be_visible()
    # Cleared, the field is empty again: nothing is chosen and nothing is asked.
    expect(page.get_by_text("is chosen, not set")).to_have_count(0)
    open_from_sidebar(page, "Audit log")
    assert len(asked) == 2
    assert_no_exception(page)


def test_leaving_a_page_with_a_message_typed_and_not_sent_asks_first(page: Page, demo_server):
    """A message box is a form's, sent only by its button: leaving the page (a menu link, a
    reload) would lose what is typed in it, so the page asks first, and again after a refused
    send (the text is still not sent); once sent, the box is emptied and nothing is asked."""
    server = demo_server(fresh=True)  # rater-01's query is seen by the other tests' server
    asked: list[tuple[str, str]] = []
    leave = {"answer": False}

    def answer(dialog: Dialog) -> None:
        asked.append((dialog.type, dialog.message))
        dialog.accept() if leave["answer"] else dialog.dismiss()

    page.on("dialog", answer)
    question = (
        'What you typed in "Your question" is not sent: leaving this page loses it. Leave anyway?'
    )
    menu = page.get_by_test_id("stSidebar")
    signed_in(page, server, "rater-01", "My queue")
    open_from_sidebar(page, "Queries")
    box = page.get_by_label("Your question", exact=True)
    box.fill(QUESTION)
    menu.get_by_role("link", name="Vignette library").click()
    wait_for_app(page)
    assert asked == [("confirm", question)]
    expect(page.get_by_role("heading", name="Queries", level=1)).to_be_visible()
    expect(box).to_have_value(QUESTION)
    # A reload asks too (the browser's own question), and stays when told to.
    with pytest.raises(PlaywrightError):
        page.reload(timeout=2_000)
    assert asked[-1][0] == "beforeunload"
    expect(box).to_have_value(QUESTION)
    # Refused (no band chosen): the text stays, said beside it, and is still not sent.
    press(page, "Send the question")
    expect(page.get_by_text("choose the band your message is about")).to_be_visible()
    menu.get_by_role("link", name="Vignette library").click()
    wait_for_app(page)
    assert asked[-1] == ("confirm", question)
    # Sent: the box is emptied, and leaving asks nothing.
    count = len(asked)
    page.get_by_role("combobox", name="Band").click()
    page.get_by_role("option", name=in_queue(server, *queue_of(server, "rater-01")[0])).click()
    press(page, "Send the question")
    expect(page.get_by_text("Your message is sent to the study coordinator.")).to_be_visible()
    open_from_sidebar(page, "My queue")
    assert len(asked) == count
    # Left anyway, the page goes; back, nothing is held.
    open_from_sidebar(page, "Queries")
    page.get_by_label("Your question", exact=True).fill("A second thought")
    leave["answer"] = True
    menu.get_by_role("link", name="Vignette library").click()
    expect(page.get_by_role("heading", name="Vignette library", level=1)).to_be_visible()
    assert asked[-1] == ("confirm", question)
    assert page.evaluate("window.fmaBandsUnsent()") == []
    assert_no_exception(page)
