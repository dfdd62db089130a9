"""A reload keeps the person signed in (issue 24, point 2): the browser holds a cookie naming a
server-side session (fma_bands.study.browser_sessions), so a reload within the idle time opens
the same page without the sign-in form; signing out, an idle session, or another browser
without the cookie all get the sign-in form."""

import hashlib
import sqlite3
from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, Route, expect

from tests.browser.conftest import DEMO_ACCOUNTS, AppServer
from tests.browser.helpers import (
    choose,
    eventually,
    open_app,
    open_from_sidebar,
    settle,
    shoot,
    sign_in,
)

COOKIE = "fma_bands_session"


@pytest.fixture(scope="module")
def server(demo_server):
    return demo_server(fresh=True)


def signed_in_as(page: Page, name: str) -> None:
    expect(page.get_by_role("heading", name="Sign in", level=1)).to_have_count(0)
    expect(page.get_by_test_id("stSidebar")).to_contain_text(f"Signed in as {name} (rater)")


def on_sign_in_form(page: Page) -> None:
    expect(page.get_by_role("heading", name="Sign in", level=1)).to_be_visible()
    expect(page.get_by_label("Passphrase", exact=True)).to_be_visible()


def session_cookie(context: BrowserContext) -> dict | None:
    found = [c for c in context.cookies() if c["name"] == COOKIE]
    assert len(found) <= 1, found
    return dict(found[0]) if found else None


def has_cookie(context: BrowserContext, present: bool = True) -> None:
    assert (session_cookie(context) is not None) == present, context.cookies()


def stored_sessions(server: AppServer) -> list[tuple]:
    db = server.env["FMA_BANDS_DATABASE_URL"].removeprefix("sqlite:///")
    with sqlite3.connect(db) as connection:
        return list(
            connection.execute(
                "SELECT token_hash, user_id, last_seen_at, ended_at FROM browser_session"
            )
        )


def age_sessions(server: AppServer, by: timedelta) -> None:
    """Move every session's last activity back by `by`, as if the browser had been idle."""
    db = server.env["FMA_BANDS_DATABASE_URL"].removeprefix("sqlite:///")
    with sqlite3.connect(db) as connection:
        for key, seen in connection.execute("SELECT token_hash, last_seen_at FROM browser_session"):
            when = datetime.fromisoformat(seen).replace(tzinfo=UTC) - by
            connection.execute(
                "UPDATE browser_session SET last_seen_at = ? WHERE token_hash = ?",
                (when.strftime("%Y-%m-%d %H:%M:%S.%f"), key),
            )


def test_a_reload_keeps_the_rater_signed_in_until_they_sign_out(
    page: Page, browser: Browser, server
):
    open_app(page, server.url)
    sign_in(page, "rater-01", DEMO_ACCOUNTS["rater-01"])
    expect(page.get_by_role("heading", name="My queue", level=1)).to_be_visible()
    # The hidden element that sets the cookie stands in the sidebar and takes no room there.
    holder = page.get_by_test_id("stSidebar").locator(
        "[data-testid='stElementContainer']:has(script[data-fma-bands-cookie])"
    )
    expect(holder).to_have_count(1)
    expect(holder).to_be_hidden()
    open_from_sidebar(page, "Vignette library")
    expect(page.get_by_role("heading", name="Vignette library", level=1)).to_be_visible()
    address = page.url

    # The cookie: for the whole app, never sent by another site's page, as long as the idle
    # time (30 minutes by default) and a minute, and over http not marked Secure.
    eventually(page, lambda: has_cookie(page.context))
    cookie = session_cookie(page.context)
    assert cookie is not None
    token = cookie["value"]
    assert len(token) >= 43 and cookie["path"] == "/" and cookie["sameSite"] == "Strict"
    assert not cookie["httpOnly"] and not cookie["secure"]
    lifetime = cookie["expires"] - datetime.now(UTC).timestamp()
    assert 29 * 60 < lifetime <= 31 * 60 + 5, lifetime
    # The store keeps its hash, never the token; the token is in no address, text or log.
    rows = stored_sessions(server)
    assert [r[0] for r in rows] == [hashlib.sha256(token.encode()).hexdigest()]
    assert token not in str(rows)
    assert token not in page.url and token not in page.get_by_test_id("stApp").inner_text()
    assert token not in server.log_text()

    # A reload is a new Streamlit session: the same page opens, no passphrase asked.
    page.reload()
    settle(page)
    expect(page).to_have_url(address)
    expect(page.get_by_role("heading", name="Vignette library", level=1)).to_be_visible()
    signed_in_as(page, "rater-01")
    shoot(page, "reload-still-signed-in")

    # Another browser, without the cookie, is asked to sign in.
    other = browser.new_context()
    try:
        stranger = other.new_page()
        open_app(stranger, address)
        on_sign_in_form(stranger)
    finally:
        other.close()

    # Signing out ends the session and clears the cookie: a reload asks to sign in again.
    page.get_by_test_id("stSidebar").get_by_role("button", name="Sign out", exact=True).click()
    settle(page)
    on_sign_in_form(page)
    eventually(page, lambda: has_cookie(page.context, present=False))
    assert all(ended is not None for *_, ended in stored_sessions(server))
    page.reload()
    settle(page)
    on_sign_in_form(page)

    # The old token, offered by hand, signs nobody in: an ended session is never used again.
    replay = browser.new_context()
    try:
        replay.add_cookies([{"name": COOKIE, "value": token, "url": server.url}])
        again = replay.new_page()
        open_app(again, address)
        on_sign_in_form(again)
    finally:
        replay.close()


def test_a_reload_after_the_idle_time_asks_for_the_passphrase_and_says_why(page: Page, server):
    open_app(page, server.url)
    sign_in(page, "rater-02", DEMO_ACCOUNTS["rater-02"])
    signed_in_as(page, "rater-02")
    eventually(page, lambda: has_cookie(page.context))
    # Idle longer than the idle time (30 minutes), as the store records it.
    age_sessions(server, timedelta(minutes=31))
    page.reload()
    settle(page)
    on_sign_in_form(page)
    expect(
        page.get_by_text("You were signed out after 30 minutes without activity.", exact=False)
    ).to_be_visible()
    assert all(ended is not None for *_, ended in stored_sessions(server))
    eventually(page, lambda: has_cookie(page.context, present=False))
    shoot(page, "reload-after-idle")


def test_activity_inside_the_review_form_keeps_the_sidebar_and_renews_the_cookie(
    page: Page, server
):
    """A minute after the last recorded activity, the next click records it again and renews
    the cookie. A click in the review form reruns only the form: the cookie's script goes into
    the form then, never into the sidebar from the click's callback, which took the sidebar's
    place ("Signed in as" and Sign out gone until the next run of the page)."""
    open_app(page, server.url)
    sign_in(page, "rater-02", DEMO_ACCOUNTS["rater-02"])
    open_from_sidebar(page, "Review a band")
    expect(page.get_by_role("radiogroup", name="Verdict", exact=True)).to_be_visible()
    eventually(page, lambda: has_cookie(page.context))
    before = session_cookie(page.context)
    assert before is not None
    page.wait_for_timeout(61_000)  # the activity is recorded about once a minute
    choose(page, "Verdict", "DECLINE: I cannot adjudicate this band")

    def renewed() -> None:
        found = session_cookie(page.context)
        assert found is not None and found["expires"] > before["expires"] + 30, found

    eventually(page, renewed)
    # The sidebar went some time after the form's run had ended: look a while later.
    page.wait_for_timeout(3000)
    sidebar = page.get_by_test_id("stSidebar")
    expect(sidebar).to_contain_text("Signed in as rater-02 (rater)")
    expect(sidebar.get_by_role("button", name="Sign out", exact=True)).to_be_visible()
    shoot(page, "review-form-keeps-the-sidebar")


def test_a_link_followed_before_the_cookie_script_has_loaded_still_leaves_the_cookie(
    page: Page, server
):
    """The browser loads the code that runs the cookie's hidden element only when the first such
    element arrives. Held back here (a slow network) until the person, just signed in, has
    followed a sidebar link and that page has drawn: the element of the run after signing in
    is gone unrun by then, and the next page's element sets the cookie once the code arrives."""
    open_app(page, server.url)
    held: list[Route] = []
    page.route("**/Html.*.js", lambda route: held.append(route))
    # Not sign_in(): its wait for the page would wait for the code held back.
    page.get_by_label("Your name in the study", exact=True).fill("rater-01")
    page.get_by_label("Passphrase", exact=True).fill(DEMO_ACCOUNTS["rater-01"])
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.get_by_test_id("stSidebarNav").get_by_role("link", name="Vignette library").click()
    expect(page.get_by_role("heading", name="Vignette library", level=1)).to_be_visible()
    expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning")
    eventually(page, lambda: held_once(held))
    has_cookie(page.context, present=False)
    held[0].continue_()
    page.unroute("**/Html.*.js")
    settle(page)
    eventually(page, lambda: has_cookie(page.context))
    page.reload()
    settle(page)
    expect(page.get_by_role("heading", name="Vignette library", level=1)).to_be_visible()
    signed_in_as(page, "rater-01")


def held_once(held: list[Route]) -> None:
    assert len(held) == 1, f"{len(held)} requests for the code of the html element held"
