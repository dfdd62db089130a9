"""What browser tests do to a page: wait as Streamlit's own e2e suite does, sign in, choose,
check, read tables, take pictures; and the fma-bands command on a server's database."""

import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from playwright.sync_api import Locator, Page, expect

ROOT = Path(__file__).resolve().parents[2]
# The first render of a page is slow on a loaded machine; a rerun far less so.
TIMEOUT_MS = 20_000
MAX_SHOT_HEIGHT = 16_000


def wait_for_app(page: Page, timeout: float = TIMEOUT_MS) -> None:
    """Wait until the app is connected, its script has finished and no placeholder is left."""
    app = page.get_by_test_id("stApp")
    expect(app).to_have_attribute("data-test-connection-state", "CONNECTED", timeout=timeout)
    expect(app).to_have_attribute("data-test-script-state", "notRunning", timeout=timeout)
    expect(page.locator('[data-testid="stSkeleton"]')).to_have_count(0, timeout=timeout)


def assert_no_exception(page: Page) -> None:
    """No traceback ever reaches a clinician's browser; when one does, the failure says it."""
    shown = page.locator('[data-testid="stException"]')
    try:
        expect(shown).to_have_count(0)
    except AssertionError:
        raise AssertionError(f"the page shows an exception: {shown.all_inner_texts()}") from None


def open_app(page: Page, url: str) -> None:
    """Load the app afresh, signed out: the page leaves the app, whose every run sets the
    session cookie again, and the browser forgets the cookie (a reload with it would find the
    person again)."""
    page.goto("about:blank")
    page.context.clear_cookies()
    page.goto(url)
    wait_for_app(page)
    assert_no_exception(page)


def sign_in(page: Page, name: str, passphrase: str) -> None:
    """Fill the sign-in form and send it; the caller checks where it landed."""
    expect(page.get_by_role("heading", name="Sign in", level=1)).to_be_visible()
    page.get_by_label("Your name in the study", exact=True).fill(name)
    page.get_by_label("Passphrase", exact=True).fill(passphrase)
    page.get_by_role("button", name="Sign in", exact=True).click()
    wait_for_app(page)
    assert_no_exception(page)


# Streamlit keeps the last run's elements on screen, marked stale, while a rerun redraws: for a
# moment the same button can be there twice (a rerun a radio or a field started may begin just
# after the page looked idle). The one a person clicks is the live one.
LIVE = '[data-testid="stElementContainer"]:not([data-stale="true"])'


def press(page: Page, name: str) -> None:
    """Click the one live button called `name` in the page's main area, and settle."""
    button = (
        page.get_by_test_id("stMain").locator(LIVE).get_by_role("button", name=name, exact=True)
    )
    expect(button).to_have_count(1)
    button.click()
    wait_for_app(page)
    assert_no_exception(page)


def open_from_sidebar(page: Page, title: str) -> None:
    """Follow one of the sidebar's navigation links and wait for its page; without the link
    (signed out, a page stopped short), the failure says which page is shown."""
    link = page.get_by_test_id("stSidebarNav").get_by_role("link", name=title, exact=True)
    try:
        expect(link).to_be_visible(timeout=TIMEOUT_MS)
    except AssertionError:
        shown = page.get_by_test_id("stMain").inner_text()[:600]
        raise AssertionError(f"no sidebar link {title!r}; the page shows:\n{shown}") from None
    link.click()
    wait_for_app(page)
    assert_no_exception(page)


def follow_link(page: Page, name: str) -> None:
    """Follow a link in the page itself (st.page_link), by its exact label."""
    page.get_by_test_id("stMain").get_by_role("link", name=name, exact=True).click()
    wait_for_app(page)
    assert_no_exception(page)


def choose(page: Page, group: str, option: str) -> None:
    """Pick `option` in the radio group labelled `group` (the input itself is hidden: click its
    label, as a person would)."""
    radios = page.get_by_role("radiogroup", name=group, exact=True)
    radios.get_by_text(option, exact=True).click()
    expect(radios.get_by_role("radio", name=option, exact=True)).to_be_checked()
    wait_for_app(page)
    assert_no_exception(page)


def screenshots_dir() -> Path:
    return Path(os.environ.get("FMA_BANDS_SCREENSHOTS") or ROOT / "test-results" / "screenshots")


def shoot(page: Page, name: str) -> Path:
    """Save a full-page PNG named `name` under $FMA_BANDS_SCREENSHOTS for people to look at."""
    folder = screenshots_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / (re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-") + ".png")
    page.mouse.move(0, 0)  # no hover effects (heading anchors, tooltips) in the picture
    # Streamlit scrolls inside its own container, so a "full page" is only the viewport: make
    # the viewport as tall as the content for the picture, then put it back.
    size = page.viewport_size
    tallest = page.evaluate(
        "() => Math.max(...Array.from(document.querySelectorAll('*'), e => e.scrollHeight))"
    )
    if size and tallest > size["height"]:
        page.set_viewport_size({"width": size["width"], "height": min(tallest, MAX_SHOT_HEIGHT)})
    try:
        page.screenshot(path=str(path), full_page=True)
    finally:
        if size:
            page.set_viewport_size(size)
    return path


def run_cli(env: dict[str, str], *args: str) -> str:
    """Run `python -m fma_bands.cli ARGS` with the FMA_BANDS_* settings in `env` (a server's,
    so the command works on that server's database and folders); return its stdout."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("FMA_BANDS_")}
    result = subprocess.run(
        [sys.executable, "-m", "fma_bands.cli", *args],
        cwd=ROOT,
        env={**base, **env},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, (
        f"`fma-bands {' '.join(args)}` failed with code {result.returncode}:\n"
        f"{result.stdout}{result.stderr}"
    )
    return result.stdout


def dataframe_rows(frame: Locator, first: int = 1) -> dict[str, dict[str, str]]:
    """An st.dataframe's visible cells, by the text of each row's `first` cells (joined by a
    space), then by column header (the grid draws on a canvas; its accessible table carries
    the text)."""
    headers = frame.locator('[role="columnheader"]').all_inner_texts()
    # Raised while the grid is still drawing, so that eventually() reads it again.
    assert headers and all(headers), f"the grid has not drawn its headers yet: {headers}"
    rows = {}
    for row in frame.locator('[role="row"]').all():
        cells = row.locator('[role="gridcell"]').all_inner_texts()
        if cells:
            rows[" ".join(cells[:first])] = dict(zip(headers, cells, strict=False))
    return rows


def eventually(page: Page, check: Callable[[], object], timeout: float = 15_000) -> None:
    """Retry `check` until it stops failing an assertion, as `expect` retries a locator: for
    what the page draws after the script has finished (a dataframe's new rows)."""
    deadline = time.monotonic() + timeout / 1000
    while True:
        try:
            check()
            return
        except AssertionError:
            if time.monotonic() > deadline:
                raise
        page.wait_for_timeout(100)


def tick(page: Page, label: str) -> None:
    """Tick the checkbox labelled `label` (the input itself is hidden: click its label)."""
    box = page.get_by_role("checkbox", name=label, exact=True)
    if not box.is_checked():
        page.get_by_text(label, exact=True).click()
    expect(box).to_be_checked()
    wait_for_app(page)


def close_the_round(page: Page) -> None:
    """The coordinator closes the open round on Raters' progress, confirming first."""
    open_from_sidebar(page, "Raters' progress")
    heading = page.get_by_role("heading", name=re.compile(r"^Close round \d+$"))
    number = heading.inner_text().removeprefix("Close round ")
    tick(page, f"I understand: close round {number} now")
    press(page, f"Close round {number}")
    said = f"Round {number} is closed: its reviews are frozen."
    expect(page.get_by_text(said, exact=True)).to_be_visible()
    if number != "1":
        # The round just closed is the one shown, its choice marked as such.
        shown = page.get_by_role("radio", name=re.compile(rf"^Round {number}\b"))
        expect(shown).to_be_checked()
        expect(page.get_by_role("heading", name=f"Round {number} (closed)")).to_be_visible()


def settle(page: Page) -> None:
    wait_for_app(page)
    assert_no_exception(page)


def submit_first_band(page: Page) -> None:
    """As a signed-in rater: decline the first band of the queue, with a reason, and submit."""
    open_from_sidebar(page, "Review a band")
    choose(page, "Verdict", "DECLINE: I cannot adjudicate this band")
    # choose() may return before the form's run has begun (the page still says "notRunning"
    # from the run before): the line under the title says "in progress" once that run has
    # kept the verdict, and the reason is typed after it.
    place = re.compile(r"band \d+ of \d+ in your queue \(in progress[^)]*\)$")
    expect(page.get_by_test_id("stMain").get_by_text(place)).to_be_visible()
    settle(page)
    box = page.get_by_label("Reason", exact=True)
    box.fill("Outside what I can judge.")
    box.blur()
    settle(page)
    press(page, "Submit and next")
    expect(page.get_by_text("Review submitted (revision 1).")).to_be_visible()


def registry_band(page: Page, vignette: str, label: str):
    """The registry's details of one band, chosen below its table of bands: the innermost box
    holding the band's line (the page's list is itself in a fragment)."""
    # Typed, since the list of every band is long: it draws only the options in view.
    page.get_by_role("combobox", name="Details of one band").click()
    page.keyboard.type(f"{vignette} · {label}")
    # Its title begins with the case's number as raters read it ("7 · draft_triage_01 · ...").
    title = re.compile(rf"^\d+ · {re.escape(vignette)} · {re.escape(label)}$")
    page.get_by_role("option", name=title).click()
    wait_for_app(page)
    return (
        page.get_by_test_id("stLayoutWrapper")
        .filter(has=page.get_by_text(re.compile(rf"{re.escape(vignette)} · {re.escape(label)}: ")))
        .last
    )
