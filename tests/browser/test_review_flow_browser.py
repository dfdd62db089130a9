"""The way through a rater's queue in a real browser, measured: Submit and next, Next and
Previous open the new band at its top with its title and the confirmation in view; the case
picker jumps to any band of the queue; the keyboard shortcuts press Submit and next, Skip for
now, Next band and Previous band (text being typed is sent first); and a reload warns before it
would lose text typed but not yet kept, and loses nothing once the field has lost focus."""

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Dialog, Locator, Page, expect

from fma_bands.core.actions import sub_action
from fma_bands.store.db import make_engine, session_scope
from fma_bands.study import drafts
from fma_bands.study.reviews import ReviewForm, current_review, save
from fma_bands.study.users import require_user
from tests.browser.case_numbers import band_url, case_of, queue_of, status_of, study_library
from tests.browser.conftest import DEMO_ACCOUNTS, AppServer
from tests.browser.helpers import (
    LIVE,
    assert_no_exception,
    choose,
    eventually,
    open_app,
    open_from_sidebar,
    press,
    settle,
    shoot,
    sign_in,
    wait_for_app,
)

COOKIE = "fma_bands_session"  # app_pages.common.COOKIE (tests import no page module)
DECLINE = "DECLINE: I cannot adjudicate this band"
SUBMIT, NEXT, PREVIOUS = "Submit and next", "Next band →", "← Previous band"
WIDTH, HEIGHT = 1400, 900
CASE_PICKER, BAND_PICKER = "Go to a case", "Band of this case"


@pytest.fixture
def server(demo_server) -> Iterator[AppServer]:
    """A demo study nobody has reviewed yet: each test starts from its first band. Stopped
    after the test, not with the module's, so that a module's servers do not pile up."""
    started = demo_server(fresh=True)
    yield started
    started.stop()


def start(page: Page, server: AppServer, rater: str = "rater-01") -> None:
    page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
    open_app(page, server.url)
    sign_in(page, rater, DEMO_ACCOUNTS[rater])
    # The page's script sets the session's cookie after the run that signed in: a test that
    # opens an address next (a new page load) waits for it, as a person's next click does.
    page.wait_for_function(f"() => document.cookie.includes('{COOKIE}=')")
    open_from_sidebar(page, "Review a band")


def scroll_top(page: Page) -> float:
    """How far down the main area is scrolled (Streamlit scrolls inside stMain, not the
    window)."""
    return page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollTop")


def scroll_to_bottom(page: Page) -> None:
    page.evaluate(
        "() => { const m = document.querySelector('[data-testid=\"stMain\"]');"
        " m.scrollTop = m.scrollHeight; }"
    )
    assert scroll_top(page) > 300, "the band is too short to show where it opens"


def in_view(element: Locator) -> None:
    """The whole element lies inside the viewport."""
    expect(element).to_be_visible()
    box = element.bounding_box()
    assert box is not None
    assert box["y"] >= 0 and box["y"] + box["height"] <= HEIGHT, f"out of view: {box}"


def on_band(page: Page, band: tuple[str, str], position: int, total: int) -> None:
    expect(page.get_by_role("heading", name=sub_action(band[1]).label, level=1)).to_be_visible()
    expect(
        page.get_by_text(re.compile(rf"band {position} of {total} in your queue"))
    ).to_be_visible()


def at_its_top(page: Page, flash: str | None = None) -> None:
    """The band opened at its top: nothing scrolled, its title (and the confirmation) in view."""
    drawn(page)
    assert scroll_top(page) < 5, f"the band opened {scroll_top(page)} px down"
    in_view(page.get_by_test_id("stMain").get_by_role("heading", level=1))
    if flash is not None:
        in_view(page.get_by_test_id("stMain").locator(LIVE).get_by_text(flash))


def decline(page: Page, reason: str) -> None:
    choose(page, "Verdict", DECLINE)
    box = page.get_by_label("Reason", exact=True)
    box.fill(reason)
    box.blur()
    settle(page)


def press_keys(page: Page, keys: str) -> None:
    """Press `keys` and wait until the page it leads to is wholly drawn: a shortcut is pressed
    on live elements only, never on the last run's stale copy a page keeps while it redraws."""
    drawn(page)
    page.keyboard.press(keys)
    # The press starts a run only once the browser has handled it.
    page.wait_for_timeout(300)
    drawn(page)


def drawn(page: Page) -> None:
    """Wait until the page is wholly drawn: a move to another band is two runs, with a moment
    between them when the app looks idle and the last band's elements are still there, stale."""
    wait_for_app(page)
    expect(page.locator('[data-stale="true"]')).to_have_count(0)
    wait_for_app(page)


# Where a band opens ------------------------------------------------------------------------


def test_submit_and_next_opens_the_next_band_at_its_top(page: Page, server):
    queue = queue_of(server, "rater-01")
    start(page, server)
    on_band(page, queue[0], 1, len(queue))
    for done in range(3):
        decline(page, f"Outside what I can judge ({done + 1}).")
        if done:
            # Working on the band keeps the last one's confirmation above it, while the line
            # under the title follows the first answer kept.
            main = page.get_by_test_id("stMain").locator(LIVE)
            expect(main.get_by_text("Review submitted")).to_be_visible()
            expect(main.get_by_text(re.compile(r"in your queue \(in progress\)$"))).to_be_visible()
        press(page, SUBMIT)  # the button is at the foot of the band: the page is scrolled
        on_band(page, queue[done + 1], done + 2, len(queue))
        at_its_top(page, "Review submitted (revision 1).")
    shoot(page, "review-after-submit-and-next")


def submit_in_the_store(server: AppServer, rater: str, bands: list[tuple[str, str]]) -> None:
    """Submit a DECLINE of each band for `rater`, straight in the server's store."""
    library = study_library(server)
    engine = make_engine(server.env["FMA_BANDS_DATABASE_URL"])
    try:
        with session_scope(engine) as s:
            who = require_user(s, rater)
            for band in bands:
                form = ReviewForm(verdict="DECLINE", reason="Outside what I can judge.")
                save(s, library, who, *band, form, expected_version=0, submit=True)
    finally:
        engine.dispose()


def test_a_revision_left_by_keep_the_submitted_review_shows_it_again_at_its_top(page: Page, server):
    """Keep the submitted review is in the form's fragment: the page, not the fragment alone,
    must run again, or the form stays on screen with the revision dropped underneath it."""
    queue = queue_of(server, "rater-01")
    submit_in_the_store(server, "rater-01", queue[:1])
    start(page, server)
    page.goto(band_url(server, *queue[0]))
    drawn(page)
    main = page.get_by_test_id("stMain")
    expect(main.get_by_role("heading", name="Your submitted review")).to_be_visible()
    press(page, "Revise this review")
    revising = re.compile(r"^You are revising your submitted review \(DECLINE\)")
    expect(main.get_by_text(revising)).to_be_visible()
    expect(page.get_by_role("button", name="Skip for now")).to_have_count(0)
    choose(page, "Verdict", "ACCEPT: the band stands as written")
    scroll_to_bottom(page)
    press(page, "Keep the submitted review")
    expect(main.get_by_role("heading", name="Your submitted review")).to_be_visible()
    expect(page.get_by_role("button", name="Keep the submitted review")).to_have_count(0)
    at_its_top(page, "the changes made since Revise were dropped.")
    engine = make_engine(server.env["FMA_BANDS_DATABASE_URL"])
    try:
        with session_scope(engine) as s:
            rater = require_user(s, "rater-01")
            kept = current_review(s, study_library(server), rater, *queue[0])
            assert kept is not None and (kept.status, kept.verdict) == ("submitted", "DECLINE")
            assert drafts.restore(s, rater, *queue[0]) is None
    finally:
        engine.dispose()
    shoot(page, "review-revision-left")


def test_submit_and_next_on_the_last_band_opens_the_queue_at_its_top(page: Page, server):
    queue = queue_of(server, "rater-01")
    submit_in_the_store(server, "rater-01", queue[1:])
    start(page, server)
    on_band(page, queue[0], 1, len(queue))
    decline(page, "The last one, outside what I can judge.")
    press(page, SUBMIT)  # at the foot of the band: the page is scrolled
    expect(page.get_by_role("heading", name="My queue", level=1)).to_be_visible()
    at_its_top(page, "every band in your queue is now submitted")
    shoot(page, "queue-after-the-last-submit")


def scroll_to_row_of(page: Page, label: str) -> None:
    """Scroll so the row of the button `label` is at the top edge: the title is out of view."""
    # The band drawn first: the row is there to scroll to.
    expect(
        page.get_by_test_id("stMain").get_by_role("button", name=label, exact=True)
    ).to_be_visible()
    wait_for_app(page)

    def scrolled() -> None:
        # A band's page brings itself to its top once its run ends (app_pages/page_script.py):
        # scrolled while that run was still ending, as a person scrolling then would be, the
        # page is back at its top, and is scrolled again.
        page.evaluate(
            """(label) => {
                const main = document.querySelector('[data-testid="stMain"]');
                const button = Array.from(main.querySelectorAll("button"))
                    .find((b) => b.innerText.trim() === label);
                main.scrollTop += button.getBoundingClientRect().top - 4;
            }""",
            label,
        )
        assert scroll_top(page) > 50, "the title is still in view"

    eventually(page, scrolled)


def test_next_and_previous_open_the_band_at_its_top(page: Page, server):
    queue = queue_of(server, "rater-01")
    start(page, server)
    scroll_to_row_of(page, NEXT)
    press(page, NEXT)
    on_band(page, queue[1], 2, len(queue))
    at_its_top(page)
    scroll_to_row_of(page, PREVIOUS)
    press(page, PREVIOUS)
    on_band(page, queue[0], 1, len(queue))
    at_its_top(page)
    # From the foot of the band, by the keyboard.
    scroll_to_bottom(page)
    press_keys(page, "Alt+N")
    on_band(page, queue[1], 2, len(queue))
    at_its_top(page)
    scroll_to_bottom(page)
    press_keys(page, "Alt+P")
    on_band(page, queue[0], 1, len(queue))
    at_its_top(page)


def draft_of(server: AppServer, rater: str, band: tuple[str, str]) -> dict:
    """What the store keeps of the rater's screen of `band` (their automatic draft)."""
    from fma_bands.study import drafts

    engine = make_engine(server.env["FMA_BANDS_DATABASE_URL"])
    try:
        with session_scope(engine) as s:
            kept = drafts.restore(s, require_user(s, rater), *band)
            return dict(kept.entries) if kept is not None else {}
    finally:
        engine.dispose()


def test_a_click_on_the_band_just_left_while_the_next_one_loads_never_changes_it(
    page: Page, server
):
    """Next band pressed, then at once a click where the band left still shows question 1's
    "unsure" (as a clinician clicks on through): the band left never changes, whether the click
    is stopped in the page or lands on the band opened."""
    queue = queue_of(server, "rater-01")
    start(page, server)
    first = page.locator('[class*="-q1-choice"]').get_by_text("unsure", exact=True)
    expect(first).to_be_visible()
    first.click()
    settle(page)
    assert draft_of(server, "rater-01", queue[0]).get("q1:choice") == "unsure"
    other = page.locator('[class*="-q1-choice"]').get_by_text("no", exact=True)
    box = other.bounding_box()
    assert box is not None
    for _ in range(3):
        page.get_by_role("button", name=NEXT).click()
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        drawn(page)
        on_band(page, queue[1], 2, len(queue))
        assert draft_of(server, "rater-01", queue[0]).get("q1:choice") == "unsure"
        press(page, PREVIOUS)
        on_band(page, queue[0], 1, len(queue))
        drawn(page)
    expect(page.locator('[class*="-q1-choice"]').get_by_label("unsure")).to_be_checked()
    assert_no_exception(page)


def test_a_quick_click_outside_the_form_while_typing_is_never_lost(page: Page, server):
    """A tap on a touchpad presses and releases at once. Leaving a field of the review form (a
    fragment) sends its text, and Streamlit puts a click that comes before that is sent into
    the same fragment's run, where a button outside the form does nothing (then or, worse, on
    a later run). The page hands such a click on after the text has gone: one click moves on,
    and the text typed is kept."""
    queue = queue_of(server, "rater-01")
    start(page, server)
    decline(page, "Outside what I can judge.")
    reason = page.get_by_label("Reason", exact=True)
    reason.fill("Typed, and the field still focused")
    reason.focus()
    page.get_by_role("button", name=NEXT).click()  # pressed and released at once
    on_band(page, queue[1], 2, len(queue))
    press(page, PREVIOUS)
    on_band(page, queue[0], 1, len(queue))
    expect(page.get_by_label("Reason", exact=True)).to_have_value(
        "Typed, and the field still focused"
    )
    # The same for the sidebar's Sign out.
    reason = page.get_by_label("Reason", exact=True)
    reason.fill("Typed again, still focused")
    reason.focus()
    page.get_by_role("button", name="Sign out", exact=True).click()
    expect(page.get_by_role("heading", name="Sign in", level=1)).to_be_visible()


# The case picker and the keyboard ------------------------------------------------------------


def test_the_case_picker_jumps_to_any_case_and_any_band_of_it(page: Page, server):
    queue = queue_of(server, "rater-01")
    cases: dict[str, list[tuple[str, str]]] = {}
    for band in queue:
        cases.setdefault(case_of(server, band[0]), []).append(band)

    def listed(case: str, submitted: int) -> str:
        """How the case box names a case ("Case 3 of 12" is "Case 3" there)."""
        status = (
            "submitted"
            if submitted == len(cases[case])
            else "in progress"
            if submitted
            else "to do"
        )
        return f"{case.split(' of ')[0]} ({status})"

    start(page, server)
    decline(page, "Outside what I can judge.")
    press(page, SUBMIT)
    main = page.get_by_test_id("stMain")
    case_box = main.get_by_role("combobox", name=CASE_PICKER)
    band_box = main.get_by_role("combobox", name=BAND_PICKER)
    first = case_of(server, queue[0][0])
    here = case_of(server, queue[1][0])
    expect(case_box).to_have_value(listed(here, int(here == first)))
    expect(band_box).to_have_value(f"{sub_action(queue[1][1]).label} (to do)")
    # Typed into, the case box keeps the cases whose label holds what is typed, in case order,
    # so a case's number lists that case first (and Enter opens it, from the band's own case);
    # it opens on its first band. Here a later case of several bands.
    target = [c for c in cases if len(cases[c]) > 1 and c not in (first, here)][-1]
    case_box.click()
    case_box.fill(target.split(" ")[1])
    expect(page.get_by_role("option").first).to_have_text(listed(target, 0))
    case_box.press("Enter")
    wait_for_app(page)
    on_band(page, cases[target][0], queue.index(cases[target][0]) + 1, len(queue))
    at_its_top(page)
    expect(case_box).to_have_value(listed(target, 0))
    # The band box lists the case's bands: the last one opens.
    last = cases[target][-1]
    band_box.click()
    page.get_by_role("option", name=f"{sub_action(last[1]).label} (to do)", exact=True).click()
    wait_for_app(page)
    on_band(page, last, queue.index(last) + 1, len(queue))
    expect(band_box).to_have_value(f"{sub_action(last[1]).label} (to do)")
    # Back to the first case; its band submitted is listed with its status.
    # The first case's number is in later ones too ("1" in "Case 10"): listed first, chosen.
    case_box.click()
    case_box.fill(first.split(" ")[1])
    expect(page.get_by_role("option").first).to_have_text(listed(first, 1))
    page.get_by_role("option").first.click()
    wait_for_app(page)
    expect(case_box).to_have_value(listed(first, 1))
    # The case opens on its first band not yet submitted; the band box is used once that band
    # is drawn, as a person would (opened while the run still draws, its list is drawn anew).
    opened = next((band for band in cases[first] if band != queue[0]), queue[0])
    on_band(page, opened, queue.index(opened) + 1, len(queue))
    band_box.click()
    submitted = f"{sub_action(queue[0][1]).label} (submitted)"
    page.get_by_role("option", name=submitted, exact=True).click()
    wait_for_app(page)
    on_band(page, queue[0], 1, len(queue))
    expect(page.get_by_role("heading", name="Your submitted review")).to_be_visible()


def test_the_line_under_the_title_follows_the_form_at_once_and_the_boxes_at_the_next_move(
    page: Page, server
):
    """The form reruns on its own, never the whole page while the rater works (a box left
    during a run of the page came back empty): the band's status under its title changes as
    soon as its first answer is kept and as soon as the rater flags it; the boxes of its case
    and band, the page's, say so at the page's next run."""
    queue = queue_of(server, "rater-01")
    start(page, server)
    main = page.get_by_test_id("stMain")
    case_box = main.get_by_role("combobox", name=CASE_PICKER)
    band_box = main.get_by_role("combobox", name=BAND_PICKER)
    label = sub_action(queue[0][1]).label

    def place(status: str) -> Locator:
        return main.get_by_text(re.compile(rf"band 1 of {len(queue)} in your queue \({status}\)$"))

    expect(place("to do")).to_be_visible()
    expect(band_box).to_have_value(f"{label} (to do)")
    expect(case_box).to_have_value(re.compile(r"^Case \d+ \(to do\)$"))
    choose(page, "Verdict", DECLINE)
    expect(place("in progress")).to_be_visible()
    # The reason typed straight after the verdict stays: no run of the page redraws the form.
    reason = main.get_by_label("Reason", exact=True)
    reason.fill("Outside what I can judge.")
    reason.blur()
    settle(page)
    expect(main.get_by_role("radio", name=DECLINE)).to_be_checked()
    main.get_by_text("Flag this band for the coordinator").click()
    note = main.get_by_role("textbox", name="What should the coordinator look at?")
    note.fill("The clause cites a guideline I cannot find.")
    note.blur()
    settle(page)
    press(page, "Send the flag")
    expect(main.get_by_text("Flag sent:", exact=False)).to_be_visible()
    expect(place("in progress, flagged")).to_be_visible()
    expect(place("in progress")).to_have_count(0)
    expect(reason).to_have_value("Outside what I can judge.")
    # The next run of the page (the next band, then back) brings the boxes up to date.
    press(page, NEXT)
    press(page, PREVIOUS)
    expect(place("in progress, flagged")).to_be_visible()
    expect(band_box).to_have_value(f"{label} (in progress, flagged)")
    expect(case_box).to_have_value(re.compile(r"^Case \d+ \(in progress, flagged\)$"))
    expect(main.get_by_label("Reason", exact=True)).to_have_value("Outside what I can judge.")


def test_the_longest_choices_fit_their_boxes(page: Page, server):
    """Every sub-action's name with the longest status and a flag fits the band box, and a case
    of a study of a thousand with the longest status and a flag fits the case box, at a
    laptop's width, measured in each box's own font."""
    from app_pages.queue_screen import STATUSES, QueueRow, band_choice, case_choice
    from fma_bands.core.actions import SUB_ACTIONS

    def longest(choices) -> str:
        return max(choices, key=len)

    band = longest(
        band_choice(QueueRow("v", name, 1, status, True, 1))
        for name in SUB_ACTIONS
        for status in STATUSES
    )
    case = longest(
        case_choice(1000, [QueueRow("v", "admit", 1000, status, True, 1), *done])
        for status in STATUSES
        for done in ([], [QueueRow("v", "orders", 1000, "submitted", True, 1)])
    )
    start(page, server)
    main = page.get_by_test_id("stMain")
    # A laptop's 1280 pixels (the sidebar open) and the browser tests' 1400.
    for width in (1280, WIDTH):
        page.set_viewport_size({"width": width, "height": HEIGHT})
        page.wait_for_timeout(300)  # the columns laid out again
        for label, text in ((BAND_PICKER, band), (CASE_PICKER, case)):
            room, needed = main.get_by_role("combobox", name=label).evaluate(
                """(input, text) => {
                    const style = getComputedStyle(input);
                    const context = document.createElement("canvas").getContext("2d");
                    context.font = style.font;
                    const padding = parseFloat(style.paddingLeft) + parseFloat(style.paddingRight);
                    return [input.clientWidth - padding, context.measureText(text).width];
                }""",
                text,
            )
            assert needed <= room, f"at {width} px, {text!r} needs {needed:.0f} px of {room:.0f}"
        # The buttons either side keep their labels whole, on one line.
        for name in (NEXT, PREVIOUS):
            button = main.get_by_role("button", name=name, exact=True)
            box = button.bounding_box()
            assert box is not None and box["height"] < 50, f"at {width} px, {name} wraps: {box}"
            cut = button.evaluate(
                "(b) => Array.from(b.querySelectorAll('*'))"
                ".some((e) => e.scrollWidth > e.clientWidth + 1)"
            )
            assert not cut, f"at {width} px, {name} is cut short"
        shoot(page, f"review-heading-{width}px")


def test_enter_opens_the_first_case_listed_even_from_a_case_that_matches(page: Page, server):
    """On Case 12, typing "1" keeps Case 1, 10, 11 and 12: Enter opens Case 1, the first
    listed, not the case on screen because it matches too."""
    numbers = sorted(
        {int(case_of(server, vid).split(" ")[1]) for vid, _ in queue_of(server, "rater-01")}
    )
    ones = [n for n in numbers if "1" in str(n)]
    assert len(ones) > 1, "the demo queue has one case whose number holds a 1"
    start(page, server)
    case_box = page.get_by_test_id("stMain").get_by_role("combobox", name=CASE_PICKER)
    for typed, opened in ((str(ones[-1]), ones[-1]), ("1", ones[0])):
        case_box.click()
        page.keyboard.type(typed)
        expect(page.get_by_role("option").first).to_have_text(re.compile(rf"^Case {opened} \("))
        page.keyboard.press("Enter")
        drawn(page)
        expect(case_box).to_have_value(re.compile(rf"^Case {opened} \("))


def test_keyboard_shortcuts_press_the_screens_buttons(page: Page, server):
    queue = queue_of(server, "rater-01")
    start(page, server)
    # The first band has no band before it: no Alt+P offered.
    expect(
        page.get_by_text(
            "Keyboard shortcuts: Alt+S Submit and next · Alt+K Skip for now · Alt+N Next band "
            "(Option instead of Alt on a Mac)."
        )
    ).to_be_visible()
    press_keys(page, "Alt+N")
    on_band(page, queue[1], 2, len(queue))
    expect(
        page.get_by_text(
            "Keyboard shortcuts: Alt+S Submit and next · Alt+K Skip for now · Alt+N Next band "
            "· Alt+P Previous band (Option instead of Alt on a Mac)."
        )
    ).to_be_visible()
    press_keys(page, "Alt+P")
    on_band(page, queue[0], 1, len(queue))

    # Skip for now: the band is set aside and the next one opens.
    press_keys(page, "Alt+K")
    on_band(page, queue[1], 2, len(queue))
    expect(
        page.get_by_text(
            re.compile(r"^Skipped for now: Case \d+ of \d+ · .+ comes back once the others")
        )
    ).to_be_visible()

    # Submit and next while the reason is still being typed: the text goes with it.
    choose(page, "Verdict", DECLINE)
    reason = "Typed and submitted from the keyboard."
    page.get_by_label("Reason", exact=True).fill(reason)  # the field keeps the focus
    press_keys(page, "Alt+S")
    on_band(page, queue[2], 3, len(queue))
    at_its_top(page, "Review submitted (revision 1).")
    press_keys(page, "Alt+P")
    on_band(page, queue[1], 2, len(queue))
    expect(page.get_by_role("heading", name="Your submitted review")).to_be_visible()
    expect(page.get_by_text(reason, exact=True)).to_be_visible()


def test_a_refused_submit_takes_the_last_confirmation_away_and_shows_its_messages(
    page: Page, server
):
    """Submit and next pressed from the keyboard on a band not yet answered, far below its
    first question: nothing is submitted, the last band's "Review submitted" goes (beside a
    refusal it would read as this band's), and the first message is brought into view."""
    queue = queue_of(server, "rater-01")
    start(page, server)
    decline(page, "Outside what I can judge.")
    press(page, SUBMIT)
    on_band(page, queue[1], 2, len(queue))
    main = page.get_by_test_id("stMain")
    flash = main.get_by_text("Review submitted (revision 1).")
    at_its_top(page, "Review submitted (revision 1).")
    messages = main.locator(LIVE).get_by_test_id("stAlertContentError")
    for _ in range(2):  # each refusal brings its messages into view
        scroll_to_bottom(page)
        press_keys(page, "Alt+S")
        on_band(page, queue[1], 2, len(queue))
        expect(flash).to_have_count(0)
        in_view(messages.first)
        shoot(page, "review-refused-submit")
    assert status_of(server, "rater-01", queue[1]) == "to do"


def test_a_flag_not_yet_sent_stays_in_its_box_and_holds_back_submit(page: Page, server):
    """A flag's note typed on a band, then another band and back: the note is in its box again
    (its box was closed meanwhile). Submit and next then submits nothing and brings the reason
    into view; once the flag is sent, Submit and next goes on."""
    queue = queue_of(server, "rater-01")
    start(page, server)
    decline(page, "Outside what I can judge.")
    page.get_by_text("Flag this band for the coordinator").click()
    note = "The clause is from an older edition."
    box = page.get_by_label("What should the coordinator look at?", exact=True)
    box.fill(note)
    box.blur()
    settle(page)
    press(page, NEXT)
    on_band(page, queue[1], 2, len(queue))
    # This session holds the note: a reload from here would lose it, and the page says so.
    assert unkept(page) == ["a flag's note on another band"]
    press(page, PREVIOUS)
    on_band(page, queue[0], 1, len(queue))
    scroll_to_bottom(page)
    press_keys(page, "Alt+S")
    settle(page)
    on_band(page, queue[0], 1, len(queue))
    live_main = page.get_by_test_id("stMain").locator(LIVE)
    # Said above the buttons, brought into view, and beside the box.
    in_view(
        live_main.get_by_text(
            "Your flag is not sent yet: send it below, or clear its box, before you submit."
        )
    )
    expect(
        live_main.get_by_text(
            "Your flag is not sent yet: send it, or clear its box, before you submit."
        )
    ).to_have_count(1)
    expect(page.get_by_label("What should the coordinator look at?", exact=True)).to_have_value(
        note
    )
    shoot(page, "review-unsent-flag")
    assert status_of(server, "rater-01", queue[0]) != "submitted"
    press(page, "Send the flag")
    expect(page.get_by_text("Flag sent")).to_be_visible()
    press(page, SUBMIT)
    on_band(page, queue[1], 2, len(queue))
    assert status_of(server, "rater-01", queue[0]) == "submitted"


def test_signing_out_with_a_flag_not_yet_sent_asks_first(page: Page, server):
    """Signing out forgets a flag's note typed and not sent, and is no reload the browser would
    ask about: one tap on Sign out, still typing in the box, asks in the sidebar first."""
    start(page, server)
    page.get_by_text("Flag this band for the coordinator").click()
    note = "The core leaves out the allergy history."
    box = page.get_by_label("What should the coordinator look at?", exact=True)
    box.fill(note)
    box.focus()
    sidebar = page.get_by_test_id("stSidebar")
    sidebar.get_by_role("button", name="Sign out", exact=True).click()  # a tap
    asked = sidebar.get_by_text(
        "The flag's note you typed on Review a band is not sent yet: signing out loses it."
    )
    expect(asked).to_be_visible()
    shoot(page, "sign-out-asks")
    sidebar.get_by_role("button", name="Stay signed in", exact=True).click()
    expect(asked).to_have_count(0)
    expect(page.get_by_label("What should the coordinator look at?", exact=True)).to_have_value(
        note
    )
    sidebar.get_by_role("button", name="Sign out", exact=True).click()
    sidebar.get_by_role("button", name="Sign out anyway", exact=True).click()
    expect(page.get_by_role("heading", name="Sign in", level=1)).to_be_visible()
    assert_no_exception(page)


# A reload ------------------------------------------------------------------------------------


def reload_and_return(page: Page) -> None:
    """Reload the page, accepting any "leave page?" question; sign in again if the app asks."""
    page.reload()
    wait_for_app(page)
    if page.get_by_role("heading", name="Sign in", level=1).count():
        sign_in(page, "rater-01", DEMO_ACCOUNTS["rater-01"])


def unkept(page: Page) -> list[str]:
    """The fields whose text a reload now would lose, as the page's own script counts them."""
    return page.evaluate("() => window.fmaBandsUnkept()")


def unkept_on_leaving(page: Page) -> list[str]:
    """Leave the field being typed in and, in the same task (before the run that leaving starts
    can keep anything), ask the page what a reload would lose."""
    return page.evaluate("() => { document.activeElement.blur(); return window.fmaBandsUnkept(); }")


def all_kept(page: Page) -> None:
    """Wait until every text on screen is kept: the run that sending it started has ended."""

    def check() -> None:
        assert unkept(page) == []

    eventually(page, check)


def test_a_reload_warns_before_losing_typed_text_and_keeps_what_was_sent(page: Page, server):
    queue = queue_of(server, "rater-01")
    seen: list[str] = []

    def answer(dialog: Dialog) -> None:
        seen.append(dialog.type)
        dialog.accept()

    page.on("dialog", answer)
    start(page, server)
    # The page names its band in the address once it has drawn it.
    expect(page).to_have_url(re.compile(r"/review\?case=[0-9a-f]+&sub_action=\w+$"))
    band_address = page.url
    choose(page, "Verdict", DECLINE)
    reason = page.get_by_label("Reason", exact=True)

    # Typed, the field still focused: the text is not on the server yet, so a reload asks.
    reason.fill("Half a sentence not yet sent")
    reload_and_return(page)
    assert seen == ["beforeunload"], f"the reload asked {seen}"
    on_band(page, queue[0], 1, len(queue))
    expect(page).to_have_url(band_address)

    # Typed and the field left: the text is sent, but not kept until the run the sending
    # started has kept it (a reload stops that run): in the instant after, the page still
    # counts it as text a reload would lose.
    seen.clear()
    reason = page.get_by_label("Reason", exact=True)
    reason.fill("A whole sentence, sent when the field lost focus.")
    assert unkept_on_leaving(page) == ["Reason"]
    settle(page)
    all_kept(page)
    note = page.get_by_label("Note for question 1", exact=True)
    note.fill("A note sent with Enter")
    note.press("Enter")
    settle(page)
    # Once kept, a reload asks nothing and loses nothing.
    all_kept(page)
    reload_and_return(page)
    assert seen == [], f"the reload asked {seen} with nothing left unsent"
    on_band(page, queue[0], 1, len(queue))
    expect(page.get_by_label("Reason", exact=True)).to_have_value(
        "A whole sentence, sent when the field lost focus."
    )
    expect(page.get_by_label("Note for question 1", exact=True)).to_have_value(
        "A note sent with Enter"
    )

    # A flag's note is kept only by sending the flag: left in its box, sent to the server or
    # not, a reload would lose it, so the page counts it.
    page.get_by_text("Flag this band for the coordinator").click()
    flag = page.get_by_label("What should the coordinator look at?", exact=True)
    flag.fill("The clause is from an older edition")
    flag.blur()
    settle(page)
    assert unkept(page) == ["What should the coordinator look at?"]
    flag.fill("")
    flag.blur()
    settle(page)
    all_kept(page)

    # Ctrl+Enter sends a text area's text too: no question on the next reload.
    reason = page.get_by_label("Reason", exact=True)
    reason.fill("Sent with Ctrl+Enter.")
    reason.press("Control+Enter")
    settle(page)
    all_kept(page)
    reload_and_return(page)
    assert seen == [], f"the reload asked {seen} after Ctrl+Enter"
    expect(page.get_by_label("Reason", exact=True)).to_have_value("Sent with Ctrl+Enter.")


def test_a_bound_sent_is_counted_until_kept_and_a_reload_then_keeps_it(page: Page, server):
    """A number, as a text: the bound the browser has sent is kept only once the run it started
    has kept it, and a reload in that instant would lose it."""
    seen: list[str] = []

    def answer(dialog: Dialog) -> None:
        seen.append(dialog.type)
        dialog.accept()

    page.on("dialog", answer)
    page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
    open_app(page, band_url(server, "demo_triage_clear_01", "urgency_score"))
    sign_in(page, "rater-01", DEMO_ACCOUNTS["rater-01"])
    expect(page.get_by_role("heading", name="Your verdict")).to_be_visible()
    choose(page, "Verdict", "AMEND: correct the band or its clause")
    settle(page)
    all_kept(page)
    low = page.get_by_label("Lower bound", exact=True)
    low.fill("9")
    assert unkept_on_leaving(page) == ["Lower bound"]
    settle(page)
    all_kept(page)
    reload_and_return(page)
    assert seen == [], f"the reload asked {seen} with the bound kept"
    expect(page.get_by_label("Lower bound", exact=True)).to_have_value("9")
