"""The Band registry and Agreement pages fit a working day (issue 24, points 5 and 6), in chromium
at 1280 x 720 on the demo study once both demo raters have reviewed every band and signed: each
page opens on a short table of bands with filters, under 2,500 pixels tall (on this study the
previous layout measured 9,997 for the registry's first page of bands and 6,535 for Agreement's,
the same main-area scroll height); what holds for the whole study (demo accounts, what the
harness cannot check yet) is said once above the registry's table, never per band; no registry
code reaches the screen without its sentence; and one band's details still open, to be read in
full.
The heights measured are printed (run with -s) and each page is photographed."""

import re

import pytest
from playwright.sync_api import Locator, Page, expect

from fma_bands.core.labels import HARNESS_WORDS, WARNING_WORDS
from fma_bands.core.vignettes import load_library
from fma_bands.evidence.provenance import REASONS, WARNINGS
from tests.agreement.demo import CRASH, Demo, demo_study
from tests.browser.conftest import DEMO_ACCOUNTS
from tests.browser.helpers import (
    LIVE,
    assert_no_exception,
    dataframe_rows,
    eventually,
    open_app,
    open_from_sidebar,
    shoot,
    sign_in,
    wait_for_app,
)
from tests.conftest import DEMO_VIGNETTES

# What a page may measure, in pixels, at 1280 x 720: about three screens.
FITS = 2_500
# Agreement holds two tables and a chart; its band table's rows are three lines tall (76
# pixels, six in sight), so that no consensus or disputed span is cut short.
AGREEMENT_FITS = FITS + 200
DECLARE = ("not-an-author", "no-financial-interest", "consent-editor-disclosure")


def everything_reviewed() -> dict[str, str]:
    """Both demo raters' hand-backs: every band of the demo, ACCEPT but where CRASH says
    otherwise (an analgesia band of {1} beside a boolean band of {true})."""
    crashed = {
        tuple(p.strip() for p in line.split("|")[:2]): line
        for text in CRASH.values()
        for line in text.splitlines()
    }
    handbacks = {}
    for rater, text in CRASH.items():
        lines = text.splitlines()
        for vignette in load_library([DEMO_VIGNETTES]):
            for proposal in vignette.proposals:
                band = (vignette.id, proposal.sub_action)
                if band not in crashed:
                    lines.append(f"{vignette.id} | {proposal.sub_action} | ACCEPT | As proposed.")
        handbacks[rater] = "\n".join(lines) + "\n"
    return handbacks


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Demo:
    """The demo study, every band reviewed by both raters, signed by both, round 1 closed."""
    folder = tmp_path_factory.mktemp("overviews")
    demo = demo_study(folder, everything_reviewed(), close=False)
    for rater in ("rater-01", "rater-02"):
        secret = folder / f"{rater}.pass"
        secret.write_text(DEMO_ACCOUNTS[rater] + "\n", encoding="utf-8")
        declared = [part for d in DECLARE for part in ("--declare", d)]
        demo.fma("attest", "--rater", rater, "--passphrase-file", str(secret),
                 *declared, "--confirm-imported")  # fmt: skip
    demo.fma("phase", "closed")
    return demo


@pytest.fixture(scope="module")
def server(app_server, demo):
    return app_server(
        FMA_BANDS_DATABASE_URL=demo.url,
        FMA_BANDS_VIGNETTES=DEMO_VIGNETTES,
        FMA_BANDS_ATTESTATIONS=demo.attestations,
    )


def live(page: Page) -> Locator:
    return page.get_by_test_id("stMain").locator(LIVE)


def height(page: Page) -> int:
    """The page's whole height: Streamlit scrolls inside its own main container, not the
    window, so that container's scroll height (a collapsed expander's hidden content, which
    the tallest element would count, is not on the page)."""
    return page.get_by_test_id("stMain").evaluate("e => e.scrollHeight")


def table_of_bands(page: Page, column: str, count: int) -> dict[str, dict[str, str]]:
    """The one table with `column`, read once it has drawn its first rows (as many as it
    shows at once: five at least), by case and sub-action (a case has several bands)."""
    frame = (
        page.get_by_test_id("stMain")
        .get_by_test_id("stDataFrame")
        .filter(has=page.locator('[role="columnheader"]', has_text=column))
    )
    expect(frame).to_have_count(1)
    rows: dict[str, dict[str, str]] = {}

    def read() -> None:
        rows.clear()
        # Keyed by their first two cells: by the case alone, a case's bands would be one row.
        for row in dataframe_rows(frame, first=2).values():
            rows[f"{row['case']} · {row['sub-action']}"] = row
        assert len(rows) >= min(count, 5), rows

    eventually(page, read)
    return rows


def choose_band(page: Page, title: str) -> Locator:
    """Open one band's details below the table; return the box that holds them."""
    page.get_by_role("combobox", name="Details of one band").click()
    page.keyboard.type(title)  # the list draws only the options in sight: narrow it first
    # The registry's titles begin with the case's number ("7 · demo_med_border_01 · ...").
    ending = re.compile(rf"^(\d+ · )?{re.escape(title)}$")
    page.get_by_role("option", name=ending).click()
    wait_for_app(page)
    assert_no_exception(page)
    return (
        page.get_by_test_id("stMain")
        .get_by_test_id("stLayoutWrapper")
        .filter(has=page.get_by_text(re.compile(re.escape(title))))
        .last
    )


def assert_codes_only_beside_sentences(text: str) -> None:
    """Every registry code on screen is inside "(code: ...)", after its sentence."""
    for code in {*REASONS, *WARNINGS}:
        if "_" not in code:  # "declined", "revoked" are words too
            continue
        for found in re.finditer(re.escape(code), text):
            before = text[max(0, found.start() - 7) : found.start()]
            assert before == "(code: ", f"{code} alone on screen: ...{text[found.start() - 80 :]}"


def test_the_registry_fits_a_screen_and_says_study_wide_warnings_once(page: Page, server):
    open_app(page, server.url)
    sign_in(page, "coordinator", DEMO_ACCOUNTS["coordinator"])
    open_from_sidebar(page, "Band registry")
    expect(live(page).get_by_role("heading", name="Band registry", level=1)).to_be_visible()
    rows = table_of_bands(page, "warnings", 27)
    expect(
        page.get_by_text("27 of 27 bands are clinician-adjudicated.", exact=False)
    ).to_be_visible()
    first = next(iter(rows.values()))
    assert first["status"] == "clinician-adjudicated" and "demo account" in first["warnings"]
    tall = height(page)
    print(f"\nBand registry, 27 bands: {tall} px (before: 9,997)")
    shoot(page, "overview-registry")
    assert tall < FITS, tall

    # Said once for the whole study: the demo accounts and what the harness cannot check.
    main = page.get_by_test_id("stMain")
    demo_note = WARNING_WORDS["demo_account"].sentence
    expect(
        main.get_by_text(re.compile(r"^Demo account \(rater-01, rater-02\), every band: "))
    ).to_have_count(1)
    text = main.inner_text()
    assert text.count(demo_note) == 1, text
    for kind in ("boolean", "multilabel"):
        assert text.count(HARNESS_WORDS[kind].sentence) == 1, kind
    expect(main.get_by_test_id("stAlertContainer")).to_have_count(0)  # no box per band
    assert "TypeError" not in text and "in_band" not in text and "x_required" not in text
    assert_codes_only_beside_sentences(text)

    # One band's details open, and read in full.
    box = choose_band(page, "demo_med_border_01 · Controlled-substance caution")
    expect(
        box.get_by_text("demo_med_border_01 · Controlled-substance caution: clinician-adjudicated")
    ).to_be_visible()
    expect(box.get_by_text("Band: the answer yes", exact=True)).to_be_visible()
    expect(box.get_by_text("Adjudicated by rater-01, rater-02", exact=False)).to_be_visible()
    expect(box.get_by_text(demo_note, exact=False).first).to_be_visible()
    # The two demo accounts are one line naming both, not two alike.
    expect(box.get_by_text("Details: rater-01; rater-02.", exact=False)).to_have_count(1)
    expect(box.get_by_text(HARNESS_WORDS["boolean"].sentence, exact=False)).to_be_visible()
    assert_codes_only_beside_sentences(main.inner_text())
    opened = height(page)
    print(f"Band registry with one band's details: {opened} px")
    assert opened < FITS + 400, opened
    shoot(page, "overview-registry-details")


def test_the_agreement_page_fits_a_screen_with_one_bands_picture_on_demand(page: Page, server):
    open_app(page, server.url)
    sign_in(page, "coordinator", DEMO_ACCOUNTS["coordinator"])
    open_from_sidebar(page, "Agreement")
    heading = live(page).get_by_role("heading", name="Bands, most disputed first")
    expect(heading).to_be_visible()
    rows = table_of_bands(page, "outcome", 27)
    assert all(r["consensus"] for r in rows.values()), rows
    tall = height(page)
    print(f"\nAgreement, 27 bands: {tall} px (before: 6,535)")
    shoot(page, "overview-agreement")
    assert tall < AGREEMENT_FITS, tall
    main = page.get_by_test_id("stMain")
    expect(main.get_by_test_id("stVegaLiteChart")).to_have_count(1)  # the alphas alone

    # The band the raters disagree on: its picture and its words, on demand.
    box = choose_band(page, "demo_med_border_01 · Analgesia tier")
    expect(box.get_by_role("link", name="demo_med_border_01 · Analgesia tier")).to_be_visible()
    expect(box.get_by_text("Consensus: 1 - NSAID", exact=True)).to_be_visible()
    expect(box.get_by_text("Disputed span: 2 - weak opioid", exact=True)).to_be_visible()
    chart = box.get_by_test_id("stVegaLiteChart")
    expect(chart).to_have_count(1)
    expect(chart.get_by_role("img")).to_be_visible()
    for row in ("rater-01", "rater-02", "consensus"):
        expect(chart.locator(f'[aria-label*="row: {row};"]').first).to_be_attached()
    opened = height(page)
    print(f"Agreement with one band's picture: {opened} px")
    assert opened < AGREEMENT_FITS + 600, opened
    shoot(page, "overview-agreement-details")

    # A filter keeps the bands asked for, and a chosen band it hides closes.
    main.get_by_test_id("stMultiSelect").filter(has_text="Outcome").click()
    page.keyboard.type("agreed")  # the list opens as one types
    page.get_by_role("option", name="agreed", exact=True).click()
    page.keyboard.press("Escape")  # the list stays open after a choice, over the page
    wait_for_app(page)
    assert_no_exception(page)
    frame = main.get_by_test_id("stDataFrame").filter(
        has=page.locator('[role="columnheader"]', has_text="outcome")
    )

    def only_agreed() -> None:
        kept = dataframe_rows(frame)
        assert kept and {r["outcome"] for r in kept.values()} == {"agreed"}, kept

    eventually(page, only_agreed)
    expect(main.get_by_text("Consensus: 1 - NSAID", exact=True)).to_have_count(0)
    assert_no_exception(page)
