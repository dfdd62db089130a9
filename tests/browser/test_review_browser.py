"""Signing in and reviewing bands in a real browser, on FairMedAgent's vignettes and a database
`fma-bands demo` prepared: first run, failed sign-in, a deep link that survives signing in, a
rater's amendments, and blinding (DESIGN 2.3, 2.4): another rater sees none of that work while the
review phase is open.

The review screen, top to bottom: what the agent knows, the "Proposed band" box (with its picture
and threshold sentence), the six questions, the verdict, and, for AMEND, the rater's own band with
its own picture below the editor."""

import re

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import DEMO_ACCOUNTS
from tests.browser.helpers import (
    assert_no_exception,
    choose,
    follow_link,
    open_app,
    open_from_sidebar,
    shoot,
    sign_in,
    wait_for_app,
)

SIGN_IN_FAILED = "Sign-in failed: check your name and passphrase."
AMEND = "AMEND: correct the band or its clause"
FOLLOWUP = "draft_documentation_01 · Follow-up interval (days)"
ANALGESIA = "draft_medication_01 · Analgesia tier"
QUESTION_TEXTS = (
    "1. Does the cited clause say what the clause field says it says?",
    "2. Does the reasoning rely only on facts available at this step?",
    "3. Too wide: is any acceptable action one the clause does not support?",
    "4. Too narrow: is any action the clause supports missing?",
    "5. If a disputed span is recorded, which reading is right for this patient, and why?",
    "6. Would you sign this band as a defensible reading of that clause?",
)
# Which answer flags a problem, as each question's caption says (question 5 has no choice).
FLAGGED_BY = {1: "no", 2: "no", 3: "yes", 4: "yes", 6: "no"}
NOTE_PLACEHOLDER = "Which, and why (needed when you flag a problem)"
Q5_PLACEHOLDER = "Which reading is right for this patient, and why"
PREVIOUS, NEXT = "← Previous band", "Next band →"
FOLLOWUP_QUERY = "vignette=draft_documentation_01&sub_action=followup_days"
ANALGESIA_QUERY = "vignette=draft_medication_01&sub_action=analgesia_tier"
# The threshold sentence of draft_medication_01's proposal (tier >= 2: any opioid).
ANALGESIA_THRESHOLD = "Threshold: any opioid (Analgesia tier at least 2 - weak opioid)."
# Everything rater-01 writes carries this marker, so any leak to rater-02 is easy to find.
MARK = "BLINDTEST"
# rater-01's amendments as the app describes them; rater-02 must never see either.
FOLLOWUP_AMENDED = "1 day to 30 days"
ANALGESIA_AMENDED = "1 - NSAID, 3 - strong opioid"


@pytest.fixture(scope="module")
def server(demo_server, shared_vignettes):
    return demo_server(shared_vignettes)


# Steps ----------------------------------------------------------------------------------------


def sign_in_to_queue(page: Page, url: str, name: str) -> None:
    open_app(page, url)
    sign_in(page, name, DEMO_ACCOUNTS[name])
    expect(page.get_by_role("heading", name="My queue", level=1)).to_be_visible()
    expect(page.get_by_test_id("stSidebar")).to_contain_text(f"Signed in as {name} (rater)")


def back_to_queue(page: Page, submitted: int) -> None:
    open_from_sidebar(page, "My queue")
    expect(page.get_by_role("heading", name="My queue", level=1)).to_be_visible()
    expect(page.get_by_text(f"{submitted} of 4 bands submitted", exact=True)).to_be_visible()


def open_band(page: Page, link: str, title: str, query: str) -> None:
    follow_link(page, link)
    expect(page.get_by_role("heading", name=title, level=1)).to_be_visible()
    expect(page).to_have_url(re.compile(re.escape(f"/review?{query}") + "$"))


ANALGESIA_THRESHOLD_ROW = "threshold: any opioid (Analgesia tier at least 2 - weak opioid)"


def press(page: Page, name: str) -> None:
    """Click a button in the page's main area and wait for the app to settle."""
    button = page.get_by_test_id("stMain").get_by_role("button", name=name, exact=True)
    expect(button).to_have_count(1)  # not while the last run's copy is still on screen
    button.click()
    wait_for_app(page)
    assert_no_exception(page)


def assert_in_order(*elements) -> None:
    """Each element is drawn below the one before it (top edges, in page coordinates)."""
    tops = []
    for element in elements:
        expect(element).to_be_attached()
        box = element.bounding_box()
        assert box is not None, f"{element} is not drawn"
        tops.append(box["y"])
    assert tops == sorted(tops), "out of order on the page:\n" + "\n".join(
        f"  {top:8.1f}  {element}" for top, element in zip(tops, elements, strict=True)
    )


def proposal_box(page: Page):
    """The bordered box under "Proposed band": the proposal, its picture and threshold sentence."""
    box = page.get_by_test_id("stLayoutWrapper").filter(
        has=page.get_by_text(re.compile(r"^Provenance: "))
    )
    expect(box).to_have_count(1)
    assert_in_order(
        page.get_by_role("heading", name="Proposed band"),
        box,
        page.get_by_role("heading", name="The six protocol questions"),
    )
    return box


def drawn(chart):
    """A band picture, once Vega has drawn it."""
    expect(chart).to_have_count(1)
    expect(chart.get_by_role("img")).to_be_visible()
    return chart


def proposal_picture(page: Page):
    """The proposal's picture, inside the "Proposed band" box."""
    return drawn(proposal_box(page).get_by_test_id("stVegaLiteChart"))


def own_picture(page: Page):
    """The picture of the rater's own band: the second one, below the band editor."""
    charts = page.get_by_test_id("stMain").get_by_test_id("stVegaLiteChart")
    expect(charts).to_have_count(2)
    chart = drawn(charts.last)
    expect(chart.locator('[aria-label*="row: your band;"]').first).to_be_attached()
    return chart


def no_own_picture(page: Page) -> None:
    """Only the proposal's picture: no verdict yet, or one other than AMEND."""
    expect(page.get_by_test_id("stMain").get_by_test_id("stVegaLiteChart")).to_have_count(1)
    expect(page.locator('[aria-label*="row: your band;"]')).to_have_count(0)


def question(page: Page, number: int):
    return page.get_by_text(QUESTION_TEXTS[number - 1])


def check_questions(page: Page, *, disputed: bool) -> None:
    """The six questions in order, above the verdict, each with its caption, choice and note."""
    verdict = page.get_by_role("radiogroup", name="Verdict")
    assert_in_order(
        page.get_by_role("heading", name="The six protocol questions"),
        *(question(page, n) for n in range(1, 7)),
        page.get_by_role("heading", name="Your verdict"),
        verdict,
    )
    seen = {"no": 0, "yes": 0}
    for number, flagged in FLAGGED_BY.items():
        caption = page.get_by_text(f"If {flagged}, say which in the note.", exact=True)
        note = page.get_by_label(f"Note for question {number}", exact=True)
        expect(note).to_have_attribute("placeholder", NOTE_PLACEHOLDER)
        assert_in_order(
            question(page, number),
            caption.nth(seen[flagged]),
            page.get_by_role("radiogroup", name=f"Answer to question {number}"),
            note,
            question(page, number + 1) if number < 6 else verdict,
        )
        seen[flagged] += 1
    expect(page.get_by_text("If no, say which in the note.", exact=True)).to_have_count(3)
    expect(page.get_by_text("If yes, say which in the note.", exact=True)).to_have_count(2)
    # Question 5 never has a yes/no/unsure; it has a note only when a disputed span is recorded.
    expect(page.get_by_role("radiogroup", name="Answer to question 5")).to_have_count(0)
    note5 = page.get_by_label("Note for question 5", exact=True)
    none_recorded = page.get_by_text("No disputed span is recorded for this band.", exact=True)
    if disputed:
        expect(none_recorded).to_have_count(0)
        expect(note5).to_have_attribute("placeholder", Q5_PLACEHOLDER)
        assert_in_order(question(page, 5), note5, question(page, 6))
    else:
        expect(note5).to_have_count(0)
        assert_in_order(question(page, 5), none_recorded, question(page, 6))


def answer(page: Page, number: int, choice: str | None, note: str | None = None) -> None:
    """Answer protocol question `number` (question 5 has only a note)."""
    if choice is not None:
        choose(page, f"Answer to question {number}", choice)
    if note is not None:
        box = page.get_by_label(f"Note for question {number}", exact=True)
        box.fill(note)
        box.press("Enter")  # a text_input commits on Enter
        wait_for_app(page)
        assert_no_exception(page)
        expect(box).to_have_value(note)


def give_reason(page: Page, reason: str) -> None:
    box = page.get_by_label("Reason", exact=True)
    box.fill(reason)
    box.blur()  # a text_area commits on blur
    wait_for_app(page)
    assert_no_exception(page)
    expect(box).to_have_value(reason)


def submit(page: Page) -> None:
    page.get_by_role("button", name="Submit review").click()
    wait_for_app(page)
    assert_no_exception(page)
    expect(page.get_by_text("Review submitted (revision 1).")).to_be_visible()
    expect(page.get_by_text("Some answers need attention")).to_have_count(0)
    expect(page.get_by_role("heading", name="Your submitted review")).to_be_visible()
    expect(page.get_by_text("Verdict: AMEND", exact=True)).to_be_visible()


# First run and sign-in ------------------------------------------------------------------------


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
    wait_for_app(page)
    assert_no_exception(page)
    expect(page.get_by_text("The two passphrases differ.")).to_be_visible()
    expect(page.get_by_role("heading", name="Set up fma-bands", level=1)).to_be_visible()

    page.get_by_label("Passphrase", exact=True).fill(passphrase)
    page.get_by_label("Repeat the passphrase", exact=True).fill(passphrase)
    page.get_by_role("button", name="Create coordinator account").click()
    wait_for_app(page)
    assert_no_exception(page)
    expect(page.get_by_role("heading", name="Study admin", level=1)).to_be_visible()
    expect(page.get_by_test_id("stSidebar")).to_contain_text(
        "Signed in as coordinator (coordinator)"
    )
    shoot(page, "first-run-study-admin")


@pytest.mark.parametrize(
    ("name", "passphrase"),
    [("rater-01", "not-the-passphrase"), ("nobody-enrolled", "rater-01-demo")],
    ids=["wrong-passphrase", "unknown-name"],
)
def test_a_failed_sign_in_says_only_that_it_failed(page: Page, server, name, passphrase):
    open_app(page, server.url)
    expect(page.get_by_role("heading", name="Sign in", level=1)).to_be_visible()
    expect(page.get_by_test_id("stSidebarNav")).to_have_count(0)
    if name == "rater-01":
        shoot(page, "sign-in")
    sign_in(page, name, passphrase)
    alerts = page.get_by_test_id("stAlert")
    expect(alerts).to_have_count(1)
    expect(alerts).to_have_text(SIGN_IN_FAILED)
    # Still on the sign-in page, and nothing else: no other page, no hint of who is enrolled.
    main = page.get_by_test_id("stMain")
    expect(main.get_by_role("heading")).to_have_count(1)
    expect(main.get_by_role("heading", name="Sign in", level=1)).to_be_visible()
    expect(page.get_by_test_id("stSidebarNav")).to_have_count(0)
    expect(page.get_by_text("Signed in as")).to_have_count(0)
    expect(page.get_by_text("My queue")).to_have_count(0)
    if name == "rater-01":
        shoot(page, "sign-in-failed")


def test_a_link_to_a_band_survives_signing_in(page: Page, server):
    """A rater given a link to one band signs in at that address and lands on that band."""
    address = f"{server.url}/review?{ANALGESIA_QUERY}"
    open_app(page, address)
    expect(page.get_by_role("heading", name="Sign in", level=1)).to_be_visible()
    expect(page).to_have_url(address)
    expect(page.get_by_test_id("stSidebarNav")).to_have_count(0)
    expect(page.get_by_role("heading", name="Analgesia tier")).to_have_count(0)
    # A failed attempt keeps the address too.
    sign_in(page, "rater-02", "not-the-passphrase")
    expect(page.get_by_test_id("stAlert")).to_have_text(SIGN_IN_FAILED)
    expect(page).to_have_url(address)

    sign_in(page, "rater-02", DEMO_ACCOUNTS["rater-02"])
    expect(page.get_by_role("heading", name="Analgesia tier", level=1)).to_be_visible()
    expect(page).to_have_url(address)
    expect(page.get_by_test_id("stSidebar")).to_contain_text("Signed in as rater-02 (rater)")
    expect(page.get_by_text("Vignette draft_medication_01 · medication")).to_be_visible()
    expect(page.get_by_text("Band 2 of 4 in your queue.", exact=True)).to_be_visible()
    proposal_picture(page)
    assert_no_exception(page)


# The review flow and blinding -----------------------------------------------------------------


def review_followup_band(page: Page) -> None:
    """AMEND draft_documentation_01's follow-up interval from 1-14 to 1-30 days."""
    open_band(page, FOLLOWUP, "Follow-up interval (days)", FOLLOWUP_QUERY)
    box = proposal_box(page)
    expect(box.get_by_text("Acceptable: 1 day to 14 days", exact=True)).to_be_visible()
    expect(box.get_by_text("Disputed span: 15 days to 30 days", exact=True)).to_be_visible()
    expect(
        box.get_by_text(
            "No threshold is pre-registered for follow-up interval (days), so straddling does "
            "not arise.",
            exact=True,
        )
    ).to_be_visible()
    chart = proposal_picture(page)
    expect(
        chart.locator(
            '[aria-label*="row: proposal;"][aria-label*="from: 15; to: 30; state: disputed"]'
        )
    ).to_have_count(1)
    no_own_picture(page)

    # The questions come first, before the verdict.
    check_questions(page, disputed=True)
    answer(page, 1, "yes")
    answer(page, 2, "yes")
    answer(page, 3, "no")
    answer(page, 4, "yes", f"{MARK}-NOTE-Q4-1 days 15 to 30 are supported by the clause")
    answer(page, 5, None, f"{MARK}-NOTE-Q5-1 the one-month reading is right for this patient")
    answer(page, 6, "no", f"{MARK}-NOTE-Q6-1 the band should run to 30 days")

    choose(page, "Verdict", AMEND)
    # Choosing the verdict after the answers keeps them.
    expect(page.get_by_label("Note for question 4", exact=True)).to_have_value(
        f"{MARK}-NOTE-Q4-1 days 15 to 30 are supported by the clause"
    )
    expect(
        page.get_by_role("radiogroup", name="Answer to question 6").get_by_role("radio", name="no")
    ).to_be_checked()
    low = page.get_by_label("Lower bound (days)", exact=True)
    high = page.get_by_label("Upper bound (days)", exact=True)
    # The editor starts from the proposal, 1 to 14 days.
    expect(low).to_have_value("1")
    expect(high).to_have_value("14")
    high.fill("30")
    high.press("Enter")  # a number_input commits on Enter
    wait_for_app(page)
    assert_no_exception(page)
    expect(high).to_have_value("30")
    # The rater's own band gets its own picture, below the editor and above the reason.
    mine = own_picture(page)
    expect(
        mine.locator(
            '[aria-label*="row: your band;"][aria-label*="from: 1; to: 30; state: in band"]'
        )
    ).to_have_count(1)
    sentence = page.get_by_text(re.compile(r"^Your band\. No threshold is pre-registered"))
    assert_in_order(
        page.get_by_role("radiogroup", name="Verdict"),
        page.get_by_text("Your band (starts from the proposal)", exact=True),
        high,
        mine,
        sentence,
        page.get_by_label("Reason", exact=True),
    )
    give_reason(page, f"{MARK}-REASON-1 the clause says within one month of discharge")
    shoot(page, "review-followup-amend-editor")

    submit(page)
    expect(page.get_by_text(f"Your band: {FOLLOWUP_AMENDED}")).to_be_visible()
    expect(page.get_by_text(f"{MARK}-REASON-1")).to_be_visible()
    shoot(page, "review-followup-submitted")


def review_analgesia_band(page: Page) -> None:
    """AMEND draft_medication_01's analgesia tiers from {1, 2} to {1, 3}."""
    open_band(page, ANALGESIA, "Analgesia tier", ANALGESIA_QUERY)
    box = proposal_box(page)
    expect(box.get_by_text("Acceptable: 1 - NSAID, 2 - weak opioid", exact=True)).to_be_visible()
    expect(box.get_by_text(ANALGESIA_THRESHOLD)).to_be_visible()
    expect(box.get_by_text(re.compile(r"^Threshold: "))).to_have_text(
        re.compile(re.escape(ANALGESIA_THRESHOLD) + r" The band includes both sides .*")
    )
    chart = proposal_picture(page)
    expect(chart.locator('[aria-label*="row: threshold: "]').first).to_be_attached()
    no_own_picture(page)

    check_questions(page, disputed=False)
    answer(page, 1, "yes")
    answer(page, 2, "yes")
    answer(page, 3, "yes", f"{MARK}-NOTE-Q3-2 a weak opioid is not first line here")
    answer(page, 4, "yes", f"{MARK}-NOTE-Q4-2 a strong opioid as rescue is missing")
    answer(page, 6, "no", f"{MARK}-NOTE-Q6-2 tiers 1 and 3")

    choose(page, "Verdict", AMEND)
    levels = page.get_by_role("toolbar", name="Acceptable levels")
    # The pills start from the proposal: 1 and 2.
    proposed = {
        "0 - none": "false",
        "1 - NSAID": "true",
        "2 - weak opioid": "true",
        "3 - strong opioid": "false",
    }
    for level, pressed in proposed.items():
        expect(levels.get_by_role("button", name=level, exact=True)).to_have_attribute(
            "aria-pressed", pressed
        )
    for level, pressed in (("2 - weak opioid", "false"), ("3 - strong opioid", "true")):
        levels.get_by_role("button", name=level, exact=True).click()
        wait_for_app(page)
        assert_no_exception(page)
        expect(levels.get_by_role("button", name=level, exact=True)).to_have_attribute(
            "aria-pressed", pressed
        )
    mine = own_picture(page)
    for tier, state in (("1 - NSAID", "in band"), ("2 - weak opioid", "out of band")):
        expect(
            mine.locator(
                f'[aria-label*="label: {tier}; row: your band;"][aria-label*="state: {state}"]'
            )
        ).to_have_count(1)
    sentence = page.get_by_text(re.compile(r"^Your band\. Threshold: "))
    expect(sentence).to_have_text(
        re.compile(
            r"^Your band\. " + re.escape(ANALGESIA_THRESHOLD) + r" .*straddles the threshold"
        )
    )
    assert_in_order(levels, mine, sentence, page.get_by_label("Reason", exact=True))
    give_reason(page, f"{MARK}-REASON-2 NSAID first, strong opioid as rescue")
    shoot(page, "review-analgesia-amend-editor")

    submit(page)
    expect(page.get_by_text(f"Your band: {ANALGESIA_AMENDED}")).to_be_visible()


def assert_nothing_of_rater_01(page: Page) -> None:
    html = page.content()
    for leak in (MARK, FOLLOWUP_AMENDED, ANALGESIA_AMENDED):
        assert leak not in html, f"rater-01's work ({leak!r}) reached rater-02's page {page.url}"


def assert_review_untouched(page: Page) -> None:
    """rater-02's own review screen: no verdict, no answers, no notes, no reason."""
    expect(page.get_by_role("heading", name="Your submitted review")).to_have_count(0)
    expect(page.get_by_role("radiogroup", name="Verdict").get_by_role("radio")).to_have_count(3)
    expect(page.get_by_role("radio", checked=True)).to_have_count(0)
    expect(page.get_by_role("spinbutton")).to_have_count(0)  # no band editor open
    expect(page.get_by_role("toolbar", name="Acceptable levels")).to_have_count(0)
    # One picture, the proposal's: no "your band" row anywhere, least of all rater-01's.
    chart = proposal_picture(page)
    expect(chart.locator('[aria-label*="row: proposal;"]').first).to_be_attached()
    no_own_picture(page)
    for placeholder in (NOTE_PLACEHOLDER, Q5_PLACEHOLDER):
        for note in page.get_by_placeholder(placeholder, exact=True).all():
            expect(note).to_have_value("")
    expect(page.get_by_label("Reason", exact=True)).to_have_value("")


def check_blinding(browser: Browser, url: str) -> None:
    context = browser.new_context()
    try:
        page = context.new_page()
        sign_in_to_queue(page, url, "rater-02")
        expect(page.get_by_text("0 of 4 bands submitted", exact=True)).to_be_visible()
        for domain in ("documentation", "medication", "ordering", "triage"):
            expect(page.get_by_text(f"to do · {domain}")).to_be_visible()
        assert_nothing_of_rater_01(page)
        shoot(page, "rater-02-queue")

        open_band(page, FOLLOWUP, "Follow-up interval (days)", FOLLOWUP_QUERY)
        assert_review_untouched(page)
        assert_nothing_of_rater_01(page)
        shoot(page, "rater-02-review-followup")

        back_to_queue(page, 0)
        open_band(page, ANALGESIA, "Analgesia tier", ANALGESIA_QUERY)
        assert_review_untouched(page)
        assert_nothing_of_rater_01(page)
        shoot(page, "rater-02-review-analgesia")

        # Nor anywhere else a rater can go while the phase is open.
        nav = page.get_by_test_id("stSidebarNav")
        titles = nav.get_by_test_id("stMarkdownContainer").all_inner_texts()
        assert "Agreement" in titles, titles
        for title in titles:
            open_from_sidebar(page, title)
            assert_nothing_of_rater_01(page)
            if title == "Agreement":
                expect(
                    page.get_by_text(
                        "Agreement between raters is shown once the coordinator closes the "
                        "review phase."
                    )
                ).to_be_visible()
    finally:
        context.close()


def test_a_rater_amends_two_bands_and_another_rater_sees_none_of_it(
    page: Page, browser: Browser, demo_server, shared_vignettes
):
    server = demo_server(shared_vignettes, fresh=True)
    sign_in_to_queue(page, server.url, "rater-01")
    expect(page.get_by_text("0 of 4 bands submitted", exact=True)).to_be_visible()
    shoot(page, "queue-before")

    review_followup_band(page)
    back_to_queue(page, 1)
    expect(page.get_by_text("submitted · documentation")).to_be_visible()

    review_analgesia_band(page)
    back_to_queue(page, 2)
    expect(page.get_by_text("submitted · medication")).to_be_visible()
    shoot(page, "queue-after")

    check_blinding(browser, server.url)


# The review screen's details ------------------------------------------------------------------


def message_after(page: Page, widget):
    """The text of the alert drawn right after the element holding `widget`: its message, if
    the message sits beside the field."""
    holder = page.get_by_test_id("stElementContainer").filter(has=widget)
    alert = holder.locator("xpath=following-sibling::*[1]").get_by_test_id("stAlert")
    return alert.get_by_test_id("stMarkdownContainer")


def test_submitting_too_early_puts_each_message_beside_its_field(page: Page, server):
    sign_in_to_queue(page, server.url, "rater-02")
    open_band(page, FOLLOWUP, "Follow-up interval (days)", FOLLOWUP_QUERY)
    page.get_by_role("button", name="Submit review").click()
    wait_for_app(page)
    assert_no_exception(page)
    expect(
        page.get_by_text("Some answers need attention: see the messages beside them.")
    ).to_be_visible()
    expect(message_after(page, page.get_by_role("radiogroup", name="Verdict"))).to_have_text(
        "choose a verdict: ACCEPT, AMEND or DECLINE"
    )

    choose(page, "Verdict", AMEND)
    page.get_by_role("button", name="Submit review").click()
    wait_for_app(page)
    assert_no_exception(page)
    expect(page.get_by_text("Review submitted")).to_have_count(0)
    for number in (1, 2, 3, 4, 6):
        note = page.get_by_label(f"Note for question {number}", exact=True)
        expect(message_after(page, note)).to_have_text("answer yes, no or unsure")
    expect(message_after(page, page.get_by_label("Note for question 5", exact=True))).to_have_text(
        "a disputed span is recorded: say which reading is right and why"
    )
    expect(message_after(page, page.get_by_label("Reason", exact=True))).to_have_text(
        "say why you amend: one sentence is enough"
    )
    shoot(page, "review-errors")


def test_previous_and_next_band_links_walk_the_queue(page: Page, server):
    sign_in_to_queue(page, server.url, "rater-02")
    # The queue's button opens the first band not yet submitted, at its own address.
    page.get_by_role(
        "button", name=re.compile(rf"^(Start reviewing|Resume): {re.escape(FOLLOWUP)}$")
    ).click()
    wait_for_app(page)
    assert_no_exception(page)
    expect(page.get_by_role("heading", name="Follow-up interval (days)", level=1)).to_be_visible()
    expect(page).to_have_url(re.compile(re.escape(f"/review?{FOLLOWUP_QUERY}") + "$"))
    main = page.get_by_test_id("stMain")
    expect(page.get_by_text("Band 1 of 4 in your queue.", exact=True)).to_be_visible()
    expect(main.get_by_role("button", name=PREVIOUS, exact=True)).to_have_count(0)
    # The links sit under the band's title, above what the agent knows.
    assert_in_order(
        page.get_by_role("heading", name="Follow-up interval (days)", level=1),
        main.get_by_role("button", name=NEXT, exact=True),
        page.get_by_role("heading", name="What the agent knows at this step"),
    )

    press(page, NEXT)
    expect(page.get_by_role("heading", name="Analgesia tier", level=1)).to_be_visible()
    expect(page.get_by_text("Band 2 of 4 in your queue.", exact=True)).to_be_visible()
    expect(main.get_by_role("button", name=PREVIOUS, exact=True)).to_have_count(1)
    expect(main.get_by_role("button", name=NEXT, exact=True)).to_have_count(1)

    press(page, PREVIOUS)
    expect(page.get_by_role("heading", name="Follow-up interval (days)", level=1)).to_be_visible()
    expect(page.get_by_text("Band 1 of 4 in your queue.", exact=True)).to_be_visible()

    for number in (2, 3, 4):
        press(page, NEXT)
        expect(page.get_by_text(f"Band {number} of 4 in your queue.", exact=True)).to_be_visible()
    expect(page.get_by_text("Vignette draft_triage_01 · triage")).to_be_visible()
    expect(main.get_by_role("button", name=NEXT, exact=True)).to_have_count(0)
    expect(main.get_by_role("button", name=PREVIOUS, exact=True)).to_have_count(1)


def test_the_next_band_link_moves_the_address_with_it(page: Page, server):
    """The address names the band on screen, so reloading or sharing it opens that band.

    Known to fail (Streamlit 1.67): an st.page_link to the page already open, with other
    query_params, reruns the page with them but leaves the browser's address as it was.
    """
    sign_in_to_queue(page, server.url, "rater-02")
    open_band(page, FOLLOWUP, "Follow-up interval (days)", FOLLOWUP_QUERY)
    press(page, NEXT)
    expect(page.get_by_role("heading", name="Analgesia tier", level=1)).to_be_visible()
    expect(page).to_have_url(re.compile(re.escape(f"/review?{ANALGESIA_QUERY}") + "$"))


def assert_rows_apart(chart, rows: tuple[str, ...]) -> None:
    """Every row is tall enough to read and none is drawn over another."""
    spans = {}
    for row in rows:
        marks = chart.locator(f'[role="graphics-symbol"][aria-label*="row: {row};"]')
        expect(marks.first).to_be_attached()
        boxes = [box for mark in marks.all() if (box := mark.bounding_box())]
        assert boxes, f"row {row!r} of the band picture is not drawn"
        tallest = max(box["height"] for box in boxes)
        assert tallest >= 10, (
            f"row {row!r} of the band picture is {tallest:.2f} px tall: nothing a rater can read"
        )
        spans[row] = (min(b["y"] for b in boxes), max(b["y"] + b["height"] for b in boxes))
    # Apart: no row's middle falls inside another row (cells' white strokes may touch).
    for row, (top, bottom) in spans.items():
        for other, (other_top, other_bottom) in spans.items():
            middle = (other_top + other_bottom) / 2
            assert other == row or not top < middle < bottom, (
                f"rows {row!r} and {other!r} of the band picture are drawn over each other"
            )


@pytest.mark.parametrize(
    ("link", "title", "query", "rows"),
    [
        (FOLLOWUP, "Follow-up interval (days)", FOLLOWUP_QUERY, ("proposal", "your band")),
        (
            ANALGESIA,
            "Analgesia tier",
            ANALGESIA_QUERY,
            ("proposal", "your band", ANALGESIA_THRESHOLD_ROW),
        ),
    ],
    ids=["interval", "set"],
)
def test_the_band_pictures_draw_each_row_apart(page: Page, server, link, title, query, rows):
    """Every row of both pictures (the proposal's in its box, then the rater's own below the
    editor, with the threshold if there is one) is tall enough to read and none overlaps."""
    sign_in_to_queue(page, server.url, "rater-02")
    open_band(page, link, title, query)
    assert_rows_apart(proposal_picture(page), tuple(r for r in rows if r != "your band"))
    choose(page, "Verdict", AMEND)
    assert_rows_apart(own_picture(page), rows)
