"""The coordinator's tables in a real browser, on a study `fma-bands demo` made: the audit log's
grid draws every row of its page, never about ten in a box that scrolls, and counts them; Raters'
progress says which round its figures are for, and the bands against the quorum draw no empty
table."""

import re
import sqlite3

from playwright.sync_api import Page, expect

from tests.browser.conftest import DEMO_ACCOUNTS
from tests.browser.helpers import open_app, open_from_sidebar, press, run_cli, shoot, sign_in

ROW_PIXELS = 35  # a grid row's height, as the audit log page sets it


def test_the_audit_grid_shows_every_row_of_its_page_and_progress_names_its_round(
    page: Page, demo_server
):
    server = demo_server(fresh=True)
    # Enough events for more rows than a grid shows by default (about ten).
    for mode in ("blind", "review") * 6:
        run_cli(server.env, "mode", mode)
    open_app(page, server.url)
    sign_in(page, "coordinator", DEMO_ACCOUNTS["coordinator"])
    expect(page.get_by_role("heading", name="Study admin", level=1)).to_be_visible()

    open_from_sidebar(page, "Audit log")
    expect(page.get_by_role("heading", name="Audit log", level=1)).to_be_visible()
    count = page.get_by_text(re.compile(r"^Rows 1-\d+ of \d+ matching events, newest first"))
    expect(count).to_be_visible()
    found = re.match(r"Rows 1-(\d+) of (\d+)", count.inner_text())
    assert found is not None
    shown, total = int(found[1]), int(found[2])
    assert shown == min(total, 25) and shown > 12, (shown, total)
    grid = page.get_by_test_id("stDataFrame")
    expect(grid).to_have_count(1)
    box = grid.bounding_box()
    assert box is not None
    # Tall enough for the header and every row of the page: nothing hides inside the grid.
    assert box["height"] >= ROW_PIXELS * (shown + 1), (box, shown)
    shoot(page, "audit-log-page")
    # A row chosen (the box at its left) gives its details whole, below the grid.
    expect(page.get_by_text("Choose a row (the box at its left)")).to_be_visible()
    newest = int(re.search(r"of (\d+) matching", count.inner_text())[1])  # type: ignore[index]
    page.mouse.click(box["x"] + 18, box["y"] + ROW_PIXELS * 1.5)
    expect(page.get_by_text(re.compile(rf"^Event {newest}, \d{{4}}-"))).to_be_visible()
    whole = page.get_by_test_id("stCode")
    # The newest event is the coordinator's sign-in, which records where it was made.
    expect(whole).to_have_text("coordinator: sign in\nwhere: sign-in")
    shoot(page, "audit-log-event-whole")

    open_from_sidebar(page, "Raters' progress")
    expect(page.get_by_role("heading", name="Raters' progress", level=1)).to_be_visible()
    expect(page.get_by_role("heading", name="Round 1 (open)")).to_be_visible()
    expect(
        page.get_by_text(re.compile(r"^Every figure on this page is of round 1"))
    ).to_be_visible()
    # Nobody has reviewed anything: every band is short, in a table that is not empty.
    expect(page.get_by_role("heading", name="Bands against the quorum")).to_be_visible()
    expect(page.get_by_test_id("stDataFrame")).to_have_count(2)
    shoot(page, "raters-progress-round-1")

    # The log edited behind the app's back while the page is open: Check again shows it.
    open_from_sidebar(page, "Audit log")
    expect(
        page.get_by_text(re.compile(r"^The hash chain is intact: \d+ events checked"))
    ).to_be_visible()
    expect(page.get_by_text(re.compile(r"^Checked at \d\d:\d\d:\d\d UTC"))).to_be_visible()
    database = server.env["FMA_BANDS_DATABASE_URL"].removeprefix("sqlite:///")
    with sqlite3.connect(database) as db:
        db.execute('UPDATE audit_event SET payload = \'{"pseudonym": "x"}\' WHERE seq = 2')
    press(page, "Check again")
    expect(page.get_by_text("The audit log has been tampered with (1 problem(s)):")).to_be_visible()
    shoot(page, "audit-log-tampered")


def test_the_audit_logs_filters_are_still_set_after_another_page(page: Page, demo_server):
    """Streamlit forgets a widget's value once a page does not draw it: the audit log's filters
    are kept for the session, so the coordinator comes back to the rows they chose."""
    server = demo_server()
    open_app(page, server.url)
    sign_in(page, "coordinator", DEMO_ACCOUNTS["coordinator"])
    expect(page.get_by_role("heading", name="Study admin", level=1)).to_be_visible()
    open_from_sidebar(page, "Audit log")
    rows = page.get_by_text(re.compile(r"^Rows 1-\d+ of \d+ matching events"))
    everyone = rows.inner_text()
    page.get_by_role("combobox", name="Who").click()
    page.get_by_role("option").first.click()
    expect(rows).not_to_have_text(everyone)
    chosen = rows.inner_text()
    open_from_sidebar(page, "Raters' progress")
    open_from_sidebar(page, "Audit log")
    expect(rows).to_have_text(chosen)  # the rows chosen, not every event again
    assert chosen != everyone
