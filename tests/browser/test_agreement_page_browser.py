"""The Agreement page as a reader sees it in a 1280-pixel window (issue 21, point 8), on demo
studies made with the command: two raters (an analgesia band of {1} beside a boolean band of
{true}) and three raters with declines.

While the round is open the coordinator's page says its figures are provisional. Once closed,
the alpha table has one short row per sub-action and pooled, none of its columns cut off at the
right; the cautions and the rules wait in collapsed expanders; the table with every field is a
CSV download; and the page, its alpha section too, is shorter than before.
The heights measured are printed (run with -s) and each state is photographed."""

import csv
import io
import json

import pytest
from playwright.sync_api import Locator, Page, expect

from fma_bands.agreement.views import CSV_HEADINGS, SUMMARY
from tests.agreement.demo import CRASH, THREE_RATERS, demo_study
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
)
from tests.conftest import DEMO_VIGNETTES

POOLED = "pooled (stratified by sub-action)"
PROVISIONAL = "Round open: provisional figures"
# What the page measured before it was made readable (the same studies, the coordinator's page,
# round closed, 1280 x 720), in pixels: the whole page, and the alpha section from the title to
# the bands.
BEFORE = {2: {"page": 3455, "alpha section": 1216}, 3: {"page": 8851, "alpha section": 1727}}


def measure(page: Page) -> dict[str, float]:
    """The page's whole height, and that of its alpha section (title to the bands' heading)."""
    tallest = page.evaluate(
        "() => Math.max(...Array.from(document.querySelectorAll('*'), e => e.scrollHeight))"
    )
    title = live(page).get_by_role("heading", name="Agreement", level=1).bounding_box()
    bands = live(page).get_by_role("heading", name="Bands, most disputed first").bounding_box()
    assert title and bands
    return {"page": tallest, "alpha section": bands["y"] - title["y"]}


def live(page: Page) -> Locator:
    """The page's live elements: opened again from the sidebar, the page redraws while the last
    run's elements stay on screen, marked stale, so for a moment each heading is there twice."""
    return page.get_by_test_id("stMain").locator(LIVE)


def open_agreement(page: Page) -> None:
    open_from_sidebar(page, "Agreement")
    expect(live(page).get_by_role("heading", name="Agreement", level=1)).to_be_visible()
    expect(live(page).get_by_role("heading", name="Bands, most disputed first")).to_be_visible()
    assert_no_exception(page)


def alpha_frame(page: Page) -> Locator:
    """The alpha table (the table of bands below it has no "reading" column)."""
    return (
        page.get_by_test_id("stMain")
        .get_by_test_id("stDataFrame")
        .filter(has=page.locator('[role="columnheader"]', has_text="reading"))
    )


def short_table(page: Page) -> dict[str, dict[str, str]]:
    frame = alpha_frame(page)
    expect(frame).to_have_count(1)
    rows: dict[str, dict[str, str]] = {}

    def read() -> None:
        rows.clear()
        rows.update(dataframe_rows(frame))
        assert POOLED in rows, rows

    eventually(page, read)
    return rows


def assert_nothing_cut_off(page: Page) -> None:
    """The table ends inside the main column and its grid has nothing to scroll sideways."""
    main = page.get_by_test_id("stMainBlockContainer").bounding_box()
    frame = alpha_frame(page)
    box = frame.bounding_box()
    assert main and box and box["x"] + box["width"] <= main["x"] + main["width"] + 1, (box, main)
    # The grid draws on a canvas inside one scrolling element: what it cannot show it scrolls.
    scroller = frame.locator(".dvn-scroller")
    expect(scroller).to_have_count(1)
    hidden = scroller.evaluate("e => e.scrollWidth - e.clientWidth")
    assert hidden <= 1, f"{hidden} pixels of the table scroll out of sight"


@pytest.mark.parametrize("handbacks", [CRASH, THREE_RATERS], ids=["two-raters", "three-raters"])
def test_the_agreement_page_fits_its_window_and_keeps_the_detail_on_demand(
    page: Page, app_server, tmp_path, handbacks
):
    raters = len(handbacks)
    demo = demo_study(tmp_path, handbacks, close=False)
    server = app_server(
        fresh=True,
        FMA_BANDS_DATABASE_URL=demo.url,
        FMA_BANDS_VIGNETTES=DEMO_VIGNETTES,
        FMA_BANDS_ATTESTATIONS=demo.attestations,
    )
    assert page.viewport_size and page.viewport_size["width"] == 1280
    open_app(page, server.url)
    sign_in(page, "coordinator", DEMO_ACCOUNTS["coordinator"])

    # The round is open: the coordinator sees the figures, marked provisional.
    open_agreement(page)
    main = page.get_by_test_id("stMain")
    warning = main.get_by_test_id("stAlertContentWarning")
    expect(warning).to_have_count(1)
    expect(warning).to_contain_text(PROVISIONAL)
    short_table(page)
    print(f"\n{raters} raters, round open: {measure(page)}")
    shoot(page, f"agreement-page-{raters}-raters-open")

    demo.fma("phase", "closed")
    open_agreement(page)
    expect(main.get_by_text(PROVISIONAL)).to_have_count(0)
    rows = short_table(page)
    headers = alpha_frame(page).locator('[role="columnheader"]')
    assert headers.all_inner_texts() == list(SUMMARY)
    assert_nothing_cut_off(page)
    # The sizes in words are the command's numbers.
    pooled = json.loads(demo.fma("agreement", "--json"))["metrics"]["pooled"]["band"]
    read, declined = rows[POOLED]["sizes"].split("; ")
    words = read.split(", ")
    assert [int(w.split()[0]) for w in words] == [
        pooled[n] for n in ("n_bands", "n_vignettes_reading", "n_raters")
    ], words
    assert [w.split(maxsplit=1)[1].rstrip("s") for w in words] == ["band", "vignette", "rater"]
    reviewed = pooled["n_bands_reviewed"]
    assert declined == (
        f"{pooled['n_declined']} declined of the reviews of {reviewed} band"
        + ("" if reviewed == 1 else "s")
    )

    # The rules and the details wait, collapsed, under the table.
    rules = main.get_by_test_id("stExpander").filter(has_text="How these are computed")
    details = main.get_by_test_id("stExpander").filter(has_text="Details and cautions")
    for expander, inside in ((rules, "raters held fixed"), (details, "interval method:")):
        expect(expander).to_have_count(1)
        expect(expander.get_by_text(inside, exact=False).first).to_be_hidden()
    closed = measure(page)
    print(f"{raters} raters, round closed: {closed}; before: {BEFORE[raters]}")
    for part in ("page", "alpha section"):
        assert closed[part] < BEFORE[raters][part], (part, closed, BEFORE[raters])
    shoot(page, f"agreement-page-{raters}-raters-closed")

    details.get_by_text("Details and cautions").click()
    expect(details.get_by_text(POOLED, exact=True)).to_be_visible()
    expect(details.get_by_text("interval method:", exact=False).first).to_be_visible()
    rules.get_by_text("How these are computed").click()
    expect(rules.get_by_text("raters held fixed", exact=False)).to_be_visible()
    assert_no_exception(page)
    shoot(page, f"agreement-page-{raters}-raters-expanded")

    # Every field is in the download.
    with page.expect_download() as download:
        main.get_by_role("button", name="Download the table (CSV)").click()
    table = list(csv.DictReader(io.StringIO(download.value.path().read_text(encoding="utf-8"))))
    assert table and tuple(table[0]) == CSV_HEADINGS
    assert {r["metric"] for r in table} == {"band"}
    assert table[-1]["sub-action"] == POOLED
