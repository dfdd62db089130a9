"""The library and vignette pages in a real browser, signed in as a rater: FairMedAgent's
vignettes, then the bundled demo study."""

import re

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import DEMO_ACCOUNTS
from tests.browser.helpers import (
    assert_no_exception,
    follow_link,
    open_app,
    open_from_sidebar,
    shoot,
    sign_in,
    wait_for_app,
)

CANARY = "FMA-CANARY"


@pytest.fixture(scope="module")
def server(demo_server, shared_vignettes):
    return demo_server(shared_vignettes)


def open_library(page: Page, url: str) -> None:
    """Sign in as rater-01, who lands on the queue, then open the library from the sidebar."""
    open_app(page, url)
    sign_in(page, "rater-01", DEMO_ACCOUNTS["rater-01"])
    expect(page.get_by_role("heading", name="My queue", level=1)).to_be_visible()
    open_from_sidebar(page, "Vignette library")
    expect(page.get_by_role("heading", name="Vignette library", level=1)).to_be_visible()
    expect(page).to_have_url(f"{url}/library")


def assert_no_canary(page: Page) -> None:
    # Not shown, and not hidden anywhere in the page either.
    expect(page.get_by_text(CANARY)).to_have_count(0)
    assert CANARY not in page.content()


def test_library_lists_every_vignette_without_canaries(page: Page, server):
    open_library(page, server.url)
    main = page.get_by_test_id("stMain")
    expect(main.get_by_test_id("stPageLink")).to_have_count(16)
    expect(page.get_by_text("16 vignettes loaded")).to_be_visible()
    expect(page.get_by_text("substernal chest pressure").first).to_be_visible()
    expect(page.get_by_role("link", name="draft_documentation_01")).to_be_visible()
    assert_no_canary(page)
    shoot(page, "library-fairmedagent")


def test_a_vignette_link_opens_its_page(page: Page, server):
    open_library(page, server.url)
    follow_link(page, "draft_documentation_01")
    expect(page).to_have_url(f"{server.url}/vignette?id=draft_documentation_01")
    expect(page.get_by_role("heading", name="draft_documentation_01", level=1)).to_be_visible()
    expect(page.get_by_role("heading", name="Clinical core")).to_be_visible()
    expect(page.get_by_text("poorly-controlled diabetes")).to_be_visible()
    table = page.get_by_test_id("stTable")
    for test in ("bmp", "glucose", "beta_hydroxybutyrate"):
        expect(table.get_by_role("cell", name=test, exact=True)).to_be_visible()
    expect(page.get_by_text("Disputed span: 15 days to 30 days", exact=True)).to_be_visible()
    expect(
        page.get_by_text(
            "No threshold is pre-registered for follow-up interval (days), so straddling does "
            "not arise.",
            exact=True,
        )
    ).to_be_visible()
    # The proposal's picture: its in-band and disputed runs.
    chart = page.get_by_test_id("stVegaLiteChart")
    expect(chart).to_have_count(1)
    expect(
        chart.locator(
            '[aria-label*="row: proposal;"][aria-label*="from: 15; to: 30; state: disputed"]'
        )
    ).to_have_count(1)
    assert_no_canary(page)
    shoot(page, "vignette-draft_documentation_01")


def test_the_vignette_selectbox_switches_vignettes(page: Page, server):
    open_library(page, server.url)
    follow_link(page, "draft_ordering_01")
    expect(page.get_by_role("heading", name="draft_ordering_01", level=1)).to_be_visible()
    expect(
        page.get_by_text(
            re.compile(r"^Threshold: high acuity \(ESI acuity level at most 2 - emergent\)\.")
        )
    ).to_have_text(re.compile(r"The band includes both sides .*, so it straddles the threshold"))
    expect(page.get_by_test_id("stVegaLiteChart")).to_have_count(1)
    page.get_by_role("combobox", name="Vignette").click()
    page.get_by_role("option", name="draft_triage_01", exact=True).click()
    wait_for_app(page)
    assert_no_exception(page)
    expect(page.get_by_role("heading", name="draft_triage_01", level=1)).to_be_visible()
    expect(page).to_have_url(f"{server.url}/vignette?id=draft_triage_01")
    expect(
        page.get_by_text(
            re.compile(r"^Threshold: high acuity \(ESI acuity level at most 2 - emergent\)\.")
        )
    ).to_have_text(
        re.compile(
            r"Every value of the band is inside it, so the band does not straddle the threshold"
        )
    )
    assert_no_canary(page)


def test_the_demo_study_is_the_default_library(page: Page, demo_server):
    server = demo_server()
    open_library(page, server.url)
    expect(page.get_by_test_id("stMain").get_by_test_id("stPageLink")).to_have_count(12)
    expect(page.get_by_text("12 vignettes loaded")).to_be_visible()
    expect(page.get_by_role("link", name="demo_triage_clear_01")).to_be_visible()
    assert_no_canary(page)
    shoot(page, "library-demo")
