"""The library and vignette pages in a real browser, signed in as a rater: FairMedAgent's
vignettes, then the bundled demo study. Raters read neutral case labels, ten cases to a page."""

import re

import pytest
from playwright.sync_api import Page, expect

from tests.browser.case_numbers import case_of, study_numbers
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


def test_library_lists_every_case_ten_to_a_page_without_canaries(page: Page, server):
    open_library(page, server.url)
    main = page.get_by_test_id("stMain")
    expect(main.get_by_test_id("stPageLink")).to_have_count(10)
    expect(page.get_by_text("16 vignettes in the study.", exact=False)).to_be_visible()
    main.get_by_role("button", name="Page 2", exact=True).click()
    wait_for_app(page)
    assert_no_exception(page)
    expect(main.get_by_test_id("stPageLink")).to_have_count(6)
    expect(page.get_by_text("draft_documentation_01")).to_have_count(0)
    assert_no_canary(page)
    shoot(page, "library-fairmedagent")


def test_a_case_link_opens_its_page(page: Page, server):
    open_library(page, server.url)
    label = case_of(server, "draft_documentation_01")
    if study_numbers(server)["draft_documentation_01"] > 10:  # ten cases to a page
        page.get_by_test_id("stMain").get_by_role("button", name="Page 2", exact=True).click()
        wait_for_app(page)
    follow_link(page, label)
    expect(page).to_have_url(re.compile(r"/vignette\?case=[0-9a-f]{16}$"))
    expect(page.get_by_role("heading", name=label, level=1)).to_be_visible()
    expect(page.get_by_text("poorly-controlled diabetes")).to_be_visible()
    for result in ("BMP: ", "Glucose: ", "Beta-hydroxybutyrate: "):
        expect(page.get_by_text(re.compile("^" + re.escape(result)))).to_be_visible()
        expect(page.get_by_text(re.compile("^" + re.escape(result)))).to_contain_text(
            "(returned only if the agent ordered this test)"
        )
    expect(page.get_by_text("15 days to 30 days", exact=True)).to_be_visible()
    chart = page.get_by_test_id("stVegaLiteChart")
    expect(chart).to_have_count(1)
    expect(
        chart.locator(
            '[aria-label*="row: proposal;"][aria-label*="from: 15; to: 30; state: disputed"]'
        )
    ).to_have_count(1)
    assert_no_canary(page)
    shoot(page, "vignette-followup")


def test_the_vignette_picker_switches_cases(page: Page, server):
    open_library(page, server.url)
    open_from_sidebar(page, "Vignette")
    page.get_by_role("combobox", name="Vignette").click()
    label = case_of(server, "draft_ordering_01")
    page.get_by_role("option", name=label, exact=True).click()
    wait_for_app(page)
    assert_no_exception(page)
    expect(page.get_by_role("heading", name=label, level=1)).to_be_visible()
    expect(page.get_by_role("heading", name="ESI acuity level")).to_be_visible()
    assert_no_canary(page)


def test_the_demo_study_is_the_default_library(page: Page, demo_server):
    server = demo_server()
    open_library(page, server.url)
    expect(page.get_by_test_id("stMain").get_by_test_id("stPageLink")).to_have_count(10)
    expect(page.get_by_text("12 vignettes in the study.", exact=False)).to_be_visible()
    expect(page.get_by_role("link", name="Case 1 of 12", exact=True)).to_be_visible()
    assert_no_canary(page)
    shoot(page, "library-demo")
