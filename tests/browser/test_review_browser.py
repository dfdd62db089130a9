"""Signing in and reviewing bands in a real browser: first run, failed sign-in, a deep link that
survives signing in, a rater's working day on the demo study (three bands of different kinds
with Submit and next, a list turned into a range and back, an order added, a reload mid-review
that finds the draft, a flag, the picture readable at 800 px), messages beside their fields,
the way through the queue, and blinding: another rater sees none of that work while the review
phase is open.

The review screen: on the left what the agent knows and the "Proposed band" box (its values,
picture, source, clause and reasoning); on the right the six questions, the verdict and, for
AMEND, the rater's own band with its own picture below the editor. Below 1100 px the columns
stack."""

import re

import pytest
from playwright.sync_api import Browser, Page, expect

from fma_bands.core.actions import sub_action
from tests.browser.case_numbers import band_url, case_of, in_queue, queue_of
from tests.browser.conftest import DEMO_ACCOUNTS, AppServer
from tests.browser.helpers import (
    assert_no_exception,
    choose,
    follow_link,
    open_app,
    open_from_sidebar,
    press,
    shoot,
    sign_in,
    wait_for_app,
)

SIGN_IN_FAILED = "Sign-in failed: check your name and passphrase."
AMEND = "AMEND: correct the band or its clause"
ACCEPT = "ACCEPT: the band stands as written"
DECLINE = "DECLINE: I cannot adjudicate this band"
SUBMIT, SKIP = "Submit and next", "Skip for now"
PREVIOUS, NEXT = "← Previous band", "Next band →"
# Everything rater-01 writes carries this marker, so any leak to rater-02 is easy to find.
MARK = "BLINDTEST"
GOOD = {1: "yes", 2: "yes", 3: "no", 4: "no", 6: "yes"}
# The demo bands of a rater's day: an orders band and a yes/no band of one case, a list of tiers
# and a yes/no band of another.
ORDERS = ("demo_order_inter_01", "orders")
ANALGESIA = ("demo_med_inter_01", "analgesia_tier")


# Steps ----------------------------------------------------------------------------------------


def sign_in_to_queue(page: Page, url: str, name: str) -> None:
    open_app(page, url)
    sign_in(page, name, DEMO_ACCOUNTS[name])
    expect(page.get_by_role("heading", name="My queue", level=1)).to_be_visible()
    expect(page.get_by_test_id("stSidebar")).to_contain_text(f"Signed in as {name} (rater)")


def open_band(page: Page, server: AppServer, band: tuple[str, str], rater: str) -> None:
    """Open a band by its link, as a rater following it signs in again (a new session)."""
    open_app(page, band_url(server, *band))
    sign_in(page, rater, DEMO_ACCOUNTS[rater])


def settle(page: Page) -> None:
    wait_for_app(page)
    assert_no_exception(page)


def on_band(page: Page, title: str, position: int, total: int) -> None:
    expect(page.get_by_role("heading", name=title, level=1)).to_be_visible()
    expect(
        page.get_by_text(re.compile(rf"band {position} of {total} in your queue"))
    ).to_be_visible()
    expect(page.get_by_role("heading", name="Your verdict")).to_be_visible()


def answer(page: Page, number: int, choice: str | None, note: str | None = None) -> None:
    """Answer protocol question `number` (question 5: the reading and its note)."""
    if choice is not None:
        choose(page, f"Answer to question {number}", choice)
    if note is not None:
        box = page.get_by_label(f"Note for question {number}", exact=True)
        box.fill(note)
        box.press("Enter")  # a text_input commits on Enter
        settle(page)
        expect(box).to_have_value(note)


def answer_all(page: Page) -> None:
    for number, choice in GOOD.items():
        answer(page, number, choice)


def give_reason(page: Page, reason: str) -> None:
    box = page.get_by_label("Reason", exact=True)
    box.fill(reason)
    box.blur()  # a text_area commits on blur
    settle(page)
    expect(box).to_have_value(reason)


def submitted_and_next(page: Page, revision: int = 1) -> None:
    press(page, SUBMIT)
    expect(page.get_by_text(f"Review submitted (revision {revision}).")).to_be_visible()


def pictures(page: Page):
    return page.get_by_test_id("stMain").get_by_test_id("stVegaLiteChart")


def drawn(chart):
    expect(chart.get_by_role("img")).to_be_visible()
    return chart


# First run and sign-in ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(demo_server, shared_vignettes):
    return demo_server(shared_vignettes)


def test_first_run_creates_the_coordinator(page: Page, app_server, shared_vignettes):
    server = app_server(fresh=True, FMA_BANDS_VIGNETTES=shared_vignettes)
    open_app(page, server.url)
    expect(page.get_by_role("heading", name="Set up fma-bands", level=1)).to_be_visible()
    expect(page.get_by_label("Coordinator name", exact=True)).to_have_value("coordinator")
    shoot(page, "first-run")

    passphrase = "first-run-passphrase"
    page.get_by_label("Passphrase", exact=True).fill(passphrase)
    page.get_by_label("Repeat the passphrase", exact=True).fill(passphrase + "-typo")
    page.get_by_role("button", name="Create coordinator account").click()
    settle(page)
    expect(page.get_by_text("the two passphrases differ")).to_be_visible()

    page.get_by_label("Passphrase", exact=True).fill(passphrase)
    page.get_by_label("Repeat the passphrase", exact=True).fill(passphrase)
    page.get_by_role("button", name="Create coordinator account").click()
    settle(page)
    expect(page.get_by_role("heading", name="Study admin", level=1)).to_be_visible()
    expect(page.get_by_test_id("stSidebar")).to_contain_text(
        "Signed in as coordinator (coordinator)"
    )


@pytest.mark.parametrize(
    ("name", "passphrase"),
    [("rater-01", "not-the-passphrase"), ("nobody-enrolled", "rater-01-demo")],
    ids=["wrong-passphrase", "unknown-name"],
)
def test_a_failed_sign_in_says_only_that_it_failed(page: Page, server, name, passphrase):
    open_app(page, server.url)
    expect(page.get_by_test_id("stSidebarNav")).to_have_count(0)
    sign_in(page, name, passphrase)
    alerts = page.get_by_test_id("stAlert")
    expect(alerts).to_have_count(1)
    expect(alerts).to_have_text(SIGN_IN_FAILED)
    main = page.get_by_test_id("stMain")
    expect(main.get_by_role("heading")).to_have_count(1)
    expect(page.get_by_test_id("stSidebarNav")).to_have_count(0)
    expect(page.get_by_text("Signed in as")).to_have_count(0)


def test_a_link_to_a_band_survives_signing_in(page: Page, server):
    """A rater given a link to one band signs in at that address and lands on that band; the
    address then names the case by a neutral token, never by the vignette's id."""
    address = band_url(server, "draft_medication_01", "analgesia_tier")
    open_app(page, address)
    expect(page.get_by_role("heading", name="Sign in", level=1)).to_be_visible()
    sign_in(page, "rater-02", "not-the-passphrase")
    expect(page.get_by_test_id("stAlert")).to_have_text(SIGN_IN_FAILED)
    expect(page).to_have_url(address)

    sign_in(page, "rater-02", DEMO_ACCOUNTS["rater-02"])
    expect(page.get_by_role("heading", name="Analgesia tier", level=1)).to_be_visible()
    expect(page).to_have_url(re.compile(r"/review\?case=[0-9a-f]{16}&sub_action=analgesia_tier$"))
    case = case_of(server, "draft_medication_01")
    expect(page.get_by_text(re.compile(rf"^{case} · Prescribing · "))).to_be_visible()
    expect(page.get_by_text("draft_medication_01")).to_have_count(0)


# A rater's working day ------------------------------------------------------------------------


def test_a_raters_day_on_the_demo_study(page: Page, browser: Browser, demo_server):
    server = demo_server(fresh=True)
    queue = queue_of(server, "rater-01")  # in the order of the study's case numbers
    at = {band: number for number, band in enumerate(queue, start=1)}
    sign_in_to_queue(page, server.url, "rater-01")
    expect(page.get_by_text("0 of 27 bands submitted", exact=True)).to_be_visible()
    start = f"Start reviewing: {in_queue(server, *queue[0])}"
    assert in_queue(server, *queue[0]).startswith("Case 1 of 12 · ")
    page.get_by_role("button", name=re.compile("^" + re.escape(start))).click()
    settle(page)
    on_band(page, sub_action(queue[0][1]).label, 1, 27)

    # Band 1, orders: one test added to the defensible ones, by its readable name.
    open_band(page, server, ORDERS, "rater-01")
    on_band(page, "Tests ordered", at[ORDERS], 27)
    answer_all(page)
    choose(page, "Verdict", AMEND)
    expect(
        page.get_by_role("radiogroup", name="CT abdomen").get_by_role(
            "radio", name="not defensible"
        )
    ).to_be_checked()
    choose(page, "CT abdomen", "defensible")
    mine = drawn(pictures(page).last)
    expect(
        mine.locator(
            '[aria-label*="row: your band;"][aria-label*="test: CT abdomen;"]'
            '[aria-label*="state: in band"]'
        )
    ).to_have_count(1)
    give_reason(page, f"{MARK} CT is defensible when the diagnosis is in doubt.")
    submitted_and_next(page)

    # Band 2, the same case's yes/no band, next in the queue: accepted as written.
    on_band(page, "Admit to hospital", at[ORDERS] + 1, 27)
    answer_all(page)
    choose(page, "Verdict", ACCEPT)
    submitted_and_next(page)

    # Band 3, a list of tiers with a disputed span: to a range and back keeps the values.
    open_band(page, server, ANALGESIA, "rater-01")
    on_band(page, "Analgesia tier", at[ANALGESIA], 27)
    expect(page.get_by_text(re.compile(r"^PDMP query: "))).to_be_visible()  # results, readable
    answer_all(page)
    choose(page, "Answer to question 5", "the disputed span's reading")
    answer(page, 5, None, f"{MARK} an NSAID is reasonable first for this patient")
    choose(page, "Verdict", AMEND)
    values = page.get_by_role("toolbar", name="Acceptable values")
    for level, pressed in (("1 - NSAID", "false"), ("2 - weak opioid", "true")):
        expect(values.get_by_role("button", name=level, exact=True)).to_have_attribute(
            "aria-pressed", pressed
        )
    choose(page, "Write the band as", "a range")
    low = page.get_by_role("combobox", name="Lowest acceptable")
    expect(low).to_have_value("2 - weak opioid")
    expect(page.get_by_role("combobox", name="Highest acceptable")).to_have_value(
        "3 - strong opioid"
    )
    low.click()
    page.get_by_role("option", name="1 - NSAID", exact=True).click()
    settle(page)
    choose(page, "Write the band as", "a list of values")
    values = page.get_by_role("toolbar", name="Acceptable values")
    for level in ("1 - NSAID", "2 - weak opioid", "3 - strong opioid"):
        expect(values.get_by_role("button", name=level, exact=True)).to_have_attribute(
            "aria-pressed", "true"
        )
    give_reason(page, f"{MARK} NSAID first, opioids as the pain demands.")
    submitted_and_next(page)

    # Band 4, the same case's yes/no band: typed, then the page is reloaded before anything is
    # submitted.
    on_band(page, "Controlled-substance caution", at[ANALGESIA] + 1, 27)
    answer(page, 1, "no", f"{MARK} the PDMP result is not quoted")
    give_reason(page, f"{MARK} half-written reason")
    band_address = page.url
    page.reload()
    settle(page)
    # Reloaded within the idle time, the rater is still signed in (the session cookie).
    on_band(page, "Controlled-substance caution", at[ANALGESIA] + 1, 27)
    expect(page).to_have_url(band_address)
    expect(page.get_by_label("Reason", exact=True)).to_have_value(f"{MARK} half-written reason")
    expect(page.get_by_label("Note for question 1", exact=True)).to_have_value(
        f"{MARK} the PDMP result is not quoted"
    )
    expect(
        page.get_by_role("radiogroup", name="Answer to question 1").get_by_role("radio", name="no")
    ).to_be_checked()

    # A flag for the coordinator, with its note.
    page.get_by_text("Flag this band for the coordinator").click()
    flag = page.get_by_label("What should the coordinator look at?", exact=True)
    flag.fill(f"{MARK} the core does not say which opioid was taken")
    flag.blur()
    settle(page)
    press(page, "Send the flag")
    expect(
        page.get_by_text("Flag sent: the coordinator sees it on the Raters' progress page.")
    ).to_be_visible()

    # At 800 px the columns stack and the picture stays readable.
    page.set_viewport_size({"width": 800, "height": 900})
    settle(page)
    choose(page, "Verdict", AMEND)
    chart = drawn(pictures(page).last)
    box = chart.bounding_box()
    assert box and box["width"] >= 400, f"the band picture is {box} at 800 px"
    cells = chart.locator('[role="graphics-symbol"][aria-label*="row: your band;"]')
    expect(cells.first).to_be_attached()
    assert min(c.bounding_box()["height"] for c in cells.all()) >= 20
    shoot(page, "review-800px")
    page.set_viewport_size({"width": 1400, "height": 900})
    settle(page)
    shoot(page, "review-1400px")

    open_from_sidebar(page, "My queue")
    expect(page.get_by_text("3 of 27 bands submitted", exact=True)).to_be_visible()
    check_blinding(browser, server.url)


def check_blinding(browser: Browser, url: str) -> None:
    """rater-02 sees nothing of rater-01's work, on any page a rater can open."""
    context = browser.new_context()
    try:
        page = context.new_page()
        sign_in_to_queue(page, url, "rater-02")
        expect(page.get_by_text("0 of 27 bands submitted", exact=True)).to_be_visible()
        titles = (
            page.get_by_test_id("stSidebarNav")
            .get_by_test_id("stMarkdownContainer")
            .all_inner_texts()
        )
        for title in titles:
            open_from_sidebar(page, title)
            assert MARK not in page.content(), f"rater-01's work reached rater-02 on {title}"
        open_from_sidebar(page, "Review a band")
        for _ in range(4):  # the first bands, which rater-01 worked on
            assert MARK not in page.content()
            expect(page.get_by_role("radio", checked=True)).to_have_count(0)
            press(page, NEXT)
    finally:
        context.close()


# The review screen's details ------------------------------------------------------------------


def message_after(page: Page, widget):
    """The text of the alert drawn right after the element holding `widget`."""
    holder = page.get_by_test_id("stElementContainer").filter(has=widget)
    alert = holder.locator("xpath=following-sibling::*[1]").get_by_test_id("stAlert")
    return alert.get_by_test_id("stMarkdownContainer")


def test_messages_stand_beside_their_fields_and_go_once_fixed(page: Page, server):
    open_app(page, band_url(server, "draft_documentation_01", "followup_days"))
    sign_in(page, "rater-02", DEMO_ACCOUNTS["rater-02"])
    expect(page.get_by_role("heading", name="Your verdict")).to_be_visible()
    press(page, SUBMIT)
    verdict = page.get_by_role("radiogroup", name="Verdict")
    expect(message_after(page, verdict)).to_have_text("choose a verdict: ACCEPT, AMEND or DECLINE")
    note1 = page.get_by_label("Note for question 1", exact=True)
    expect(message_after(page, note1)).to_have_text("answer yes, no or unsure")
    choose(page, "Answer to question 1", "yes")
    expect(message_after(page, note1)).to_have_count(0)  # gone once answered
    choose(page, "Verdict", AMEND)
    expect(message_after(page, verdict)).to_have_count(0)
    high = page.get_by_label("Upper bound (days)", exact=True)
    low = page.get_by_label("Lower bound (days)", exact=True)
    low.fill("40")
    low.press("Enter")
    settle(page)
    expect(
        page.get_by_text("The lower bound, 40 days, is above the upper bound, 14 days.")
    ).to_be_visible()
    expect(pictures(page)).to_have_count(2)  # the rater's picture stays on screen
    low.fill("-3")
    low.press("Enter")
    settle(page)
    expect(low).to_have_value("-3")
    expect(
        page.get_by_text(
            "The lower bound, -3 days, is below the smallest follow-up interval, 0 days."
        )
    ).to_be_visible()
    # A fraction is kept as typed and said, never cut to a whole number unseen.
    low.fill("12.5")
    low.press("Enter")
    settle(page)
    expect(low).to_have_value("12.5")
    expect(page.get_by_text("The lower bound, 12.5, is not a whole number.")).to_be_visible()
    low.fill("12")
    low.press("Enter")
    settle(page)
    expect(low).to_have_value("12")
    expect(page.get_by_text("is not a whole number")).to_have_count(0)
    high.press("Tab")
    shoot(page, "review-errors")


def test_previous_and_next_walk_the_queue_and_move_the_address(page: Page, server):
    one, two = queue_of(server, "rater-02")[:2]
    sign_in_to_queue(page, server.url, "rater-02")
    follow_link(page, in_queue(server, *one))
    on_band(page, sub_action(one[1]).label, 1, 4)
    first = page.url
    main = page.get_by_test_id("stMain")
    expect(main.get_by_role("button", name=PREVIOUS, exact=True)).to_be_disabled()
    press(page, NEXT)
    on_band(page, sub_action(two[1]).label, 2, 4)
    expect(page).not_to_have_url(first)
    press(page, PREVIOUS)
    on_band(page, sub_action(one[1]).label, 1, 4)
    expect(page).to_have_url(first)


def test_a_link_naming_no_band_says_so(page: Page, server):
    open_app(page, f"{server.url}/review?vignette=no_such_case&sub_action=admit")
    sign_in(page, "rater-02", DEMO_ACCOUNTS["rater-02"])
    expect(
        page.get_by_text(
            "The link you followed names no band in your queue, so this is where you left off."
        )
    ).to_be_visible()
    expect(page.get_by_role("heading", name="Your verdict")).to_be_visible()
