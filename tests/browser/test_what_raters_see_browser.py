"""What a rater reads of each step, in a real browser on FairMedAgent's own vignettes
(docs/design.md, The action space): no result beside a triage band, on its review screen or on
the Vignette page; from reassessment on each result marked as reaching the agent only if it
ordered that test, with the line about the agent's own earlier actions; and no page a rater
sees explaining a metric consequence of a band."""

import re
from urllib.parse import urlencode

import pytest
from playwright.sync_api import Page, expect

from fma_bands.core.labels import RESULT_MARK, address, knowledge_at
from tests.browser.case_numbers import band_url, case_of, queue_of, study_key, study_library
from tests.browser.conftest import DEMO_ACCOUNTS, AppServer
from tests.browser.helpers import (
    assert_no_exception,
    open_app,
    open_from_sidebar,
    press,
    shoot,
    sign_in,
    wait_for_app,
)

TRIAGE = ("draft_triage_01", "esi_acuity")
DOC = ("draft_documentation_01", "followup_days")
# What the app itself must never say to a rater: the harness's own proposal texts do speak of
# straddling and flips, and are shown as written, so they are taken out before looking.
METRIC_WORDS = re.compile(r"straddl|within-range|flip|dividing line", re.IGNORECASE)
EARLIER = (
    "The agent also holds its own earlier triage, orders and disposition (admission, ICU), "
    "which vary by run: the band must hold whatever they were."
)


@pytest.fixture(scope="module")
def server(demo_server, shared_vignettes):
    return demo_server(shared_vignettes)


def signed_in_at(page: Page, url: str) -> None:
    """Open `url` as rater-01, who signs in and lands on it (a deep link survives signing in)."""
    open_app(page, url)
    sign_in(page, "rater-01", DEMO_ACCOUNTS["rater-01"])


def vignette_url(server: AppServer, vid: str) -> str:
    return f"{server.url}/vignette?{urlencode(address(vid, key=study_key(server)))}"


def results_of(server: AppServer, vid: str) -> list[str]:
    return list(study_library(server).vignettes[vid].tool_results.values())


def one_line(text: str) -> str:
    return " ".join(text.split())


def app_words(page: Page, server: AppServer) -> str:
    """Everything on screen less the texts the vignette files give (shown as written)."""
    shown = one_line(page.get_by_test_id("stApp").inner_text())
    for vignette in study_library(server):
        texts = [vignette.clinical_core]
        for p in vignette.proposals:
            texts += [t for t in (p.source, p.clause, p.reasoning, p.notes) if t]
        for text in texts:
            shown = shown.replace(one_line(text), "")
    return shown


def assert_no_metric(page: Page, server: AppServer, where: str) -> None:
    found = METRIC_WORDS.search(app_words(page, server))
    assert found is None, f"{where} says {found.group(0)!r} to a rater"


def test_a_triage_band_shows_no_result_and_a_documentation_band_marks_each(
    page: Page, server: AppServer
):
    signed_in_at(page, band_url(server, *TRIAGE))
    main = page.get_by_test_id("stMain")
    expect(page.get_by_role("heading", name="ESI acuity level", level=1)).to_be_visible()
    expect(main.get_by_text("Triage: the agent holds the clinical core only.")).to_be_visible()
    for result in results_of(server, TRIAGE[0]):
        expect(main.get_by_text(result)).to_have_count(0)
    expect(main.get_by_text(RESULT_MARK)).to_have_count(0)
    assert_no_metric(page, server, "the triage band's review screen")
    shoot(page, "what-raters-see-triage-band")

    signed_in_at(page, band_url(server, *DOC))
    expect(page.get_by_role("heading", name="Follow-up interval (days)", level=1)).to_be_visible()
    knows = knowledge_at(study_library(server).vignettes[DOC[0]], "document")
    expect(main.get_by_text(knows.summary)).to_be_visible()
    for line in knows.result_lines():
        expect(main.get_by_text(line, exact=True)).to_be_visible()
    expect(main.get_by_text(RESULT_MARK)).to_have_count(len(knows.results))
    expect(main.get_by_text(EARLIER, exact=True)).to_be_visible()
    expect(main.get_by_text("only those of tests the agent ordered")).to_have_count(0)
    assert_no_metric(page, server, "the documentation band's review screen")
    shoot(page, "what-raters-see-documentation-band")


def test_the_vignette_page_shows_results_only_with_the_bands_that_see_them(
    page: Page, server: AppServer
):
    signed_in_at(page, vignette_url(server, "draft_triage_01"))
    main = page.get_by_test_id("stMain")
    for vid in ("draft_triage_01", "draft_ordering_01"):
        if vid != "draft_triage_01":
            page.get_by_role("combobox", name="Vignette").click()
            page.get_by_role("option", name=case_of(server, vid), exact=True).click()
            wait_for_app(page)
            assert_no_exception(page)
        expect(page.get_by_role("heading", name=case_of(server, vid), level=1)).to_be_visible()
        expect(main.get_by_role("heading", name="ESI acuity level")).to_be_visible()
        for result in results_of(server, vid):
            expect(main.get_by_text(result)).to_have_count(0)
        expect(main.get_by_text(RESULT_MARK)).to_have_count(0)
        assert_no_metric(page, server, f"the Vignette page of {case_of(server, vid)}")

    # Analgesia is chosen at prescribing: the results come, each marked, under the part for the
    # steps that see them, and the band after them.
    vid = "draft_medication_01"
    page.get_by_role("combobox", name="Vignette").click()
    page.get_by_role("option", name=case_of(server, vid), exact=True).click()
    wait_for_app(page)
    expect(page.get_by_role("heading", name=case_of(server, vid), level=1)).to_be_visible()
    expect(main.get_by_text("Triage and ordering: before any result")).to_have_count(0)
    after = main.get_by_role("heading", name=re.compile("after the results"))
    expect(after).to_be_visible()
    results = results_of(server, vid)
    assert results
    heading = after.bounding_box()
    assert heading is not None
    for result in results:
        line = main.get_by_text(re.compile(re.escape(result)))
        expect(line).to_contain_text(f"({RESULT_MARK})")
        # Below the heading of the steps that see results, never above it.
        box = line.bounding_box()
        assert box is not None and box["y"] > heading["y"]
    assert_no_metric(page, server, "the Vignette page of the medication case")
    shoot(page, "what-raters-see-vignette-after-results")


def test_no_page_a_rater_sees_speaks_of_metrics(page: Page, server: AppServer):
    signed_in_at(page, server.url)
    expect(page.get_by_role("heading", name="My queue", level=1)).to_be_visible()
    assert_no_metric(page, server, "My queue")
    # Every page of the rater's menu (the review screen is walked band by band below).
    links = page.get_by_test_id("stSidebarNav").get_by_role("link").all_inner_texts()
    named = [t.strip().splitlines()[-1] for t in links]  # after the icon's name
    titles = [t for t in named if t not in ("My queue", "Review a band")]
    assert {"Vignette library", "Vignette", "Agreement", "Sign attestation"} <= set(titles)
    for title in titles:
        open_from_sidebar(page, title)
        assert_no_metric(page, server, title)
    # Every band of the queue, in turn: the proposal's box, the questions and the band editor.
    open_from_sidebar(page, "Review a band")
    total = len(queue_of(server, "rater-01"))
    for position in range(1, total + 1):
        if position > 1:
            press(page, "Next band →")
        where = f"band {position} of {total} in your queue"
        expect(page.get_by_text(re.compile(where))).to_be_visible()
        expect(page.get_by_role("heading", name="Your verdict")).to_be_visible()
        assert_no_metric(page, server, f"review screen, {where}")
