"""Agreement in a real browser (docs/design.md, Blinding and rounds; Agreement).

On FairMedAgent's vignettes and a database `fma-bands demo` prepared: rater-02 hands back
reviews on paper (imported with the command), rater-01 reviews in the browser and disagrees on
one band; while the phase is open a rater's Agreement page shows no figure, the coordinator's
shows them all; once the coordinator closes the phase, rater-01 sees the alpha table, its chart
and the table of bands most disputed first, each band's picture on demand, with the same numbers
as `fma-bands agreement --json`.

On the bundled demo vignettes: an analgesia band of {1} beside a boolean band of {true}, after
the phase closes, leaves no traceback and every band drawn."""

import json
import re

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.agreement.demo import CRASH
from tests.browser.case_numbers import case_of, in_queue, queue_of
from tests.browser.conftest import DEMO_ACCOUNTS, AppServer
from tests.browser.helpers import (
    assert_no_exception,
    choose,
    close_the_round,
    dataframe_rows,
    eventually,
    follow_link,
    open_app,
    open_from_sidebar,
    press,
    run_cli,
    shoot,
    sign_in,
    wait_for_app,
)

ACCEPT = "ACCEPT: the band stands as written"
FOLLOWUP = "draft_documentation_01 · Follow-up interval (days)"
TRIAGE = "draft_triage_01 · ESI acuity level"
ANALGESIA = "draft_medication_01 · Analgesia tier"
# The bands those labels name: a rater's queue names them by neutral case labels, keyed with the
# study's secret (tests/browser/case_numbers.py).
BANDS = {
    FOLLOWUP: ("draft_documentation_01", "followup_days"),
    TRIAGE: ("draft_triage_01", "esi_acuity"),
    ANALGESIA: ("draft_medication_01", "analgesia_tier"),
}
# rater-02, on paper: widens the follow-up interval to a month (rater-01 accepts 1 to 14 days),
# accepts the triage band (as rater-01 does) and the analgesia band (rater-01 leaves it).
HANDBACK_OF_RATER_02 = """\
# rater-02's hand-back: vignette_id | sub_action | VERDICT [band] | reason
draft_documentation_01 | followup_days | AMEND {"min": 1, "max": 30} | The sources admit follow-up within the first month.
draft_triage_01 | esi_acuity | ACCEPT | Chest pain before any test is ESI 2, not ESI 1.
draft_medication_01 | analgesia_tier | ACCEPT | NSAID first, a weak opioid defensible.
"""  # noqa: E501
CLOSED_FOR_RATERS = (
    "Round 1 is open: agreement between raters is shown once the coordinator closes it."
)
POOLED = "pooled (stratified by sub-action)"
# The dataframe's columns a reader needs first (wider tables scroll: later ones may be hidden).
COLUMNS = ("sub-action", "alpha", "95% interval", "reading", "sizes")
LABELS = {
    "followup_days": "Follow-up interval (days)",
    "esi_acuity": "ESI acuity level",
    "analgesia_tier": "Analgesia tier",
    "pooled": POOLED,
}


@pytest.fixture(scope="module")
def server(demo_server, shared_vignettes):
    return demo_server(shared_vignettes, fresh=True)


# Steps ----------------------------------------------------------------------------------------


def sign_in_as(page: Page, url: str, name: str, landing: str) -> None:
    open_app(page, url)
    sign_in(page, name, DEMO_ACCOUNTS[name])
    expect(page.get_by_role("heading", name=landing, level=1)).to_be_visible()
    role = "coordinator" if name == "coordinator" else "rater"
    expect(page.get_by_test_id("stSidebar")).to_contain_text(f"Signed in as {name} ({role})")


def accept_band(page: Page, server: AppServer, link: str, title: str, *, disputed: bool) -> None:
    """ACCEPT one of rater-01's bands from the queue, answering the six questions as an
    accepting rater would."""
    open_from_sidebar(page, "My queue")
    band = BANDS[link]
    if queue_of(server, "rater-01").index(band) >= 20:  # twenty bands to a page
        page.get_by_test_id("stMain").get_by_role("button", name="Page 2", exact=True).click()
        wait_for_app(page)
    follow_link(page, in_queue(server, *band))
    expect(page.get_by_role("heading", name=title, level=1)).to_be_visible()
    for number, choice in ((1, "yes"), (2, "yes"), (3, "no"), (4, "no"), (6, "yes")):
        choose(page, f"Answer to question {number}", choice)
    if disputed:
        choose(page, "Answer to question 5", "the band's reading")
        note = page.get_by_label("Note for question 5", exact=True)
        note.fill("The proposal's narrower reading: two weeks is what the clause prefers.")
        note.press("Enter")
        wait_for_app(page)
    choose(page, "Verdict", ACCEPT)
    reason = page.get_by_label("Reason", exact=True)
    reason.fill("The band stands as the clause reads.")
    reason.blur()
    wait_for_app(page)
    press(page, "Submit and next")
    assert_no_exception(page)
    expect(page.get_by_text(re.compile(r"^Review submitted \(revision 1\)\."))).to_be_visible()


def open_agreement(page: Page) -> None:
    open_from_sidebar(page, "Agreement")
    expect(page.get_by_role("heading", name="Agreement", level=1)).to_be_visible()


def assert_no_figures(page: Page) -> None:
    """A rater's Agreement page during the open phase: the notice, and not one figure."""
    main = page.get_by_test_id("stMain")
    expect(main.get_by_text(CLOSED_FOR_RATERS, exact=True)).to_be_visible()
    expect(main.get_by_test_id("stDataFrame")).to_have_count(0)
    expect(main.get_by_test_id("stVegaLiteChart")).to_have_count(0)
    expect(main.get_by_text("alpha")).to_have_count(0)
    expect(main.get_by_text("rater-02")).to_have_count(0)
    # No figure: the only number is the open round's own, in the notice.
    text = main.inner_text().replace(CLOSED_FOR_RATERS, "")
    assert not re.search(r"\d", text), f"a number on a rater's Agreement page while open:\n{text}"


def alpha_table(page: Page, metric: str = "band") -> dict[str, dict[str, str]]:
    """The alpha table for `metric`, read once its columns and pooled row are drawn."""
    expect(page.get_by_role("heading", name=f"Krippendorff's alpha: {metric}")).to_be_visible()
    frame = (
        page.get_by_test_id("stMain")
        .get_by_test_id("stDataFrame")
        .filter(has=page.locator('[role="columnheader"]', has_text="reading"))
    )
    expect(frame).to_have_count(1)
    expect(frame).to_be_visible()
    # The grid paints a canvas; its (visually hidden) accessible table carries the text.
    expect(frame.locator('[role="columnheader"]')).to_contain_text(list(COLUMNS))
    pooled = frame.locator('[role="gridcell"]').filter(
        has_text=re.compile(rf"^{re.escape(POOLED)}$")
    )
    expect(pooled).to_have_count(1)
    return dataframe_rows(frame)


def cli_report(server) -> dict:
    """`fma-bands agreement --json` on the server's own database."""
    return json.loads(run_cli(server.env, "agreement", "--json"))


def assert_same_numbers(page: Page, report: dict, metric: str) -> dict[str, dict[str, str]]:
    """The alpha table for `metric`: every scope's alpha (to 3 decimals), units and raters are
    the command's. Returns the table's rows."""
    rows: dict[str, dict[str, str]] = {}

    def check() -> None:
        rows.clear()
        rows.update(alpha_table(page, metric))
        same(rows, report, metric)

    eventually(page, check)
    return rows


def same(rows: dict[str, dict[str, str]], report: dict, metric: str) -> None:
    for scope, label in LABELS.items():
        expected = report["metrics"][scope][metric]
        row = rows[label]
        sizes = [int(n) for n in re.findall(r"\d+", row["sizes"])]
        counts = ("n_bands", "n_vignettes_reading", "n_raters", "n_declined", "n_bands_reviewed")
        assert sizes == [expected[n] for n in counts], (scope, row, expected)
        assert row["reading"] == expected["reading"], (scope, row, expected)
        if expected["alpha"] is None:
            assert row["alpha"] == "undefined", (scope, row, expected)
            assert expected["reason"] in row["reading"], (scope, row, expected)
        else:
            assert float(row["alpha"]) == round(expected["alpha"], 3), (scope, row, expected)


def alpha_chart(page: Page):
    """The chart under the table: each defined alpha as a point on -1 to 1, with its interval."""
    chart = page.get_by_test_id("stMain").get_by_test_id("stVegaLiteChart").first
    expect(chart.get_by_role("img")).to_be_visible()
    expect(chart.locator('[aria-label*="alpha and its 95% interval"]').first).to_be_attached()
    return chart


def band_box(page: Page, link: str):
    """Choose one band below the table of bands; return the box of it that opens, with its
    link to the case, its picture and its words."""
    page.get_by_role("combobox", name="Details of one band").click()
    page.keyboard.type(link)  # the list draws only the options in sight: narrow it first
    page.get_by_role("option", name=link, exact=True).click()
    wait_for_app(page)
    assert_no_exception(page)
    return (
        page.get_by_test_id("stLayoutWrapper")
        .filter(has=page.get_by_role("link", name=link, exact=True))
        .last
    )


def frame_rows(frame):
    return frame.locator('[role="row"]').all()


def bands_in_order(page: Page) -> list[str]:
    """The table of bands' rows, most disputed first, as "case · sub-action"."""
    frame = (
        page.get_by_test_id("stMain")
        .get_by_test_id("stDataFrame")
        .filter(has=page.locator('[role="columnheader"]', has_text="outcome"))
    )
    expect(frame).to_have_count(1)
    titles: list[str] = []

    def read() -> None:
        # Each row's first two cells: a case has a row per sub-action, so no dict by case.
        cells = [r.locator('[role="gridcell"]').all_inner_texts() for r in frame_rows(frame)]
        titles[:] = [f"{c[0]} · {c[1]}" for c in cells if len(c) > 1]
        assert titles, "the table of bands has not drawn its rows yet"

    eventually(page, read)
    return titles


# The test -------------------------------------------------------------------------------------


def test_agreement_is_shown_to_raters_once_the_phase_is_closed(
    page: Page, browser: Browser, server, tmp_path
):
    # rater-02 reviewed on paper; the coordinator imports the hand-back with the command.
    handback = tmp_path / "handback-rater-02.txt"
    handback.write_text(HANDBACK_OF_RATER_02, encoding="utf-8")
    out = run_cli(server.env, "handback", "import", str(handback), "--rater", "rater-02")
    assert "imported 3 submitted reviews for rater-02" in out, out

    # rater-01 reviews in the browser: accepts both bands, so disagrees on the follow-up one.
    sign_in_as(page, server.url, "rater-01", "My queue")
    accept_band(page, server, FOLLOWUP, "Follow-up interval (days)", disputed=True)
    accept_band(page, server, TRIAGE, "ESI acuity level", disputed=False)
    open_from_sidebar(page, "My queue")
    expect(page.get_by_text("2 of 4 bands submitted", exact=True)).to_be_visible()

    # While the phase is open, rater-01's Agreement page says when it will show, and no more.
    open_agreement(page)
    assert_no_figures(page)
    shoot(page, "agreement-rater-open")

    report = cli_report(server)
    pooled = report["metrics"]["pooled"]["band"]
    # Both raters accept the triage band, so ESI has one value and adds nothing to the pool:
    # the pooled alpha rests on the follow-up band alone.
    assert pooled["alpha"] is not None and pooled["n_bands"] == 1, pooled
    assert pooled["reading"] == "too few bands (1)"

    # The coordinator sees agreement at any time, then closes the phase.
    context = browser.new_context()
    try:
        desk = context.new_page()
        sign_in_as(desk, server.url, "coordinator", "Study admin")
        open_agreement(desk)
        assert_same_numbers(desk, report, "band")
        alpha_chart(desk)
        shoot(desk, "agreement-coordinator-open")

        open_from_sidebar(desk, "Study admin")
        expect(desk.get_by_text("Round 1 is open.", exact=True)).to_be_visible()
        close_the_round(desk)
        # A closed round is never reopened: no page offers it.
        open_from_sidebar(desk, "Study admin")
        expect(desk.get_by_text("Round 1 is closed.", exact=True)).to_be_visible()
        expect(desk.get_by_role("button", name=re.compile("Reopen"))).to_have_count(0)
    finally:
        context.close()
    assert run_cli(server.env, "phase").strip() == "review phase closed"
    # Closing freezes the reviews: the command's figures are those the coordinator saw.
    assert cli_report(server) == report

    # Now rater-01 sees the table, the chart and the bands, most disputed first.
    open_agreement(page)
    expect(page.get_by_text(CLOSED_FOR_RATERS)).to_have_count(0)
    rows = assert_same_numbers(page, report, "band")
    assert float(rows[POOLED]["alpha"]) == round(pooled["alpha"], 3)
    assert rows[POOLED]["sizes"].startswith("1 band, ") and pooled["n_bands"] == 1
    chart = alpha_chart(page)
    point = chart.locator(f'[aria-label*="; scope: {POOLED}; bands: {pooled["n_bands"]}"]')
    expect(point).to_have_count(1)
    drawn = re.match(r"alpha: (-?[\d.]+);", point.get_attribute("aria-label") or "")
    assert drawn and round(float(drawn[1]), 3) == round(pooled["alpha"], 3), drawn
    # The chart draws the interval the report has: this study's one disagreeing band carries
    # all the disagreement, so leaving its vignette out leaves none, and there is no interval.
    assert pooled["ci_high"] is None and "no interval" in pooled["method"]
    expect(chart.locator(f'[aria-label*="; scope: {POOLED}; hi: "]')).to_have_count(0)
    for line in ("x: 0.667", "x: 0.8"):
        expect(chart.locator(f'[aria-label="{line}"]')).to_have_count(1)

    expect(page.get_by_role("heading", name="Bands, most disputed first")).to_be_visible()
    # A rater reads the cases by their neutral labels, and the others' bands without names;
    # most disputed first: the band the raters disagree on leads the table.
    links = {name: in_queue(server, *BANDS[name]) for name in (FOLLOWUP, TRIAGE, ANALGESIA)}
    order = bands_in_order(page)
    assert order.index(links[FOLLOWUP]) < order.index(links[TRIAGE]), order
    expect(page.get_by_role("link", name=FOLLOWUP)).to_have_count(0)
    followup = band_box(page, links[FOLLOWUP])
    expect(followup).to_contain_text("2 raters with a band, 0 declined · intersection rule applied")
    expect(followup.get_by_text("Consensus: 1 to 14 days", exact=True)).to_be_visible()
    expect(followup.get_by_text("Disputed span: 15 to 30 days", exact=True)).to_be_visible()
    expect(followup.get_by_test_id("stVegaLiteChart")).to_have_count(1)
    for row in ("your band", "another rater (1)", "consensus"):
        expect(followup.locator(f'[aria-label*="row: {row};"]').first).to_be_attached()
    expect(followup.locator('[aria-label*="row: rater-02;"]')).to_have_count(0)
    assert "rater-02" not in page.get_by_test_id("stMain").inner_text()
    triage = band_box(page, links[TRIAGE])
    expect(triage.get_by_text("Consensus: 2 - emergent", exact=True)).to_be_visible()
    expect(triage.get_by_text(re.compile("^Disputed span"))).to_have_count(0)
    analgesia = band_box(page, links[ANALGESIA])
    expect(analgesia).to_contain_text("one rater only: the intersection rule does not bind")
    expect(analgesia.get_by_text(re.compile("^Consensus"))).to_have_count(0)
    # The consensus is the command's.
    bands = {(b["vignette_id"], b["sub_action"]): b for b in report["bands"]}
    assert bands[("draft_documentation_01", "followup_days")]["consensus"] == {"min": 1, "max": 14}
    assert bands[("draft_documentation_01", "followup_days")]["disputed_span"] == {
        "min": 15,
        "max": 30,
    }
    shoot(page, "agreement-rater-closed")

    # Another metric, the same agreement with the command.
    choose_metric(page, "verdict (nominal, review mode)")
    assert_same_numbers(page, report, "verdict")


def choose_metric(page: Page, label: str) -> None:
    """The metric is a segmented control, which the browser exposes as a radio group."""
    choose(page, "Metric", label)


# An analgesia band of {1} beside a boolean band of {true}, on the demo study ----------------

CAUTION = "demo_med_inter_01 · Controlled-substance caution"
BANDS[CAUTION] = ("demo_med_inter_01", "controlled_substance_caution")


@pytest.fixture(scope="module")
def demo(demo_server):
    return demo_server(fresh=True)


def test_an_analgesia_band_of_one_beside_a_boolean_band_draws_every_band(
    page: Page, browser: Browser, demo, tmp_path
):
    # rater-02 hands back all four bands on paper; rater-01 three on paper and one in the browser.
    for rater, text in CRASH.items():
        if rater == "rater-01":
            in_browser = "demo_med_inter_01 | controlled_substance_caution |"
            text = "".join(
                line for line in text.splitlines(True) if not line.startswith(in_browser)
            )
        path = tmp_path / f"{rater}.txt"
        path.write_text(text, encoding="utf-8")
        run_cli(demo.env, "handback", "import", str(path), "--rater", rater)
    sign_in_as(page, demo.url, "rater-01", "My queue")
    accept_band(page, demo, CAUTION, "Controlled-substance caution", disputed=False)

    # The coordinator closes the phase in the browser.
    context = browser.new_context()
    try:
        desk = context.new_page()
        sign_in_as(desk, demo.url, "coordinator", "Study admin")
        close_the_round(desk)
    finally:
        context.close()
    report = json.loads(run_cli(demo.env, "agreement", "--json"))
    assert len(report["bands"]) == 4

    open_agreement(page)
    rows = alpha_table(page)
    assert rows[POOLED]["reading"] == report["metrics"]["pooled"]["band"]["reading"]
    alpha_chart(page)
    main = page.get_by_test_id("stMain")
    assert len(bands_in_order(page)) == 4
    for band in report["bands"]:
        label = {"analgesia_tier": "Analgesia tier"}.get(
            band["sub_action"], "Controlled-substance caution"
        )
        # rater-01 reads each case by its neutral label, never by its id.
        box = band_box(page, f"{case_of(demo, band['vignette_id'])} · {label}")
        expect(box.get_by_test_id("stVegaLiteChart")).to_have_count(1)
        expect(box.get_by_test_id("stVegaLiteChart").get_by_role("img")).to_be_visible()
        if band["consensus_text"]:
            consensus = f"Consensus: {band['consensus_text']}"
            expect(box.get_by_text(consensus, exact=True)).to_be_visible()
    # What rater-01 reads for that band: a neutral case number, never the id.
    caution = band_box(page, in_queue(demo, *BANDS[CAUTION]))
    expect(caution.get_by_text("Consensus: the answer yes", exact=True)).to_be_visible()
    analgesia = band_box(page, in_queue(demo, "demo_med_border_01", "analgesia_tier"))
    expect(analgesia.get_by_text("Consensus: 1 - NSAID", exact=True)).to_be_visible()
    shoot(page, "agreement-demo-closed")
    for label in ("membership (nominal)", "lower (lowest value)", "verdict (nominal, review mode)"):
        choose_metric(page, label)
        expect(alpha_table_frame(page)).to_have_count(1)
        # Another metric changes the table only: the chosen band is still drawn as it was.
        expect(analgesia.get_by_text("Consensus: 1 - NSAID", exact=True)).to_be_visible()
        expect(analgesia.locator('[aria-label*="label: 1 - NSAID;"]').first).to_be_attached()
        expect(main.get_by_test_id("stVegaLiteChart")).to_have_count(2)  # alphas, the band
    shoot(page, "agreement-demo-closed-verdict")


def alpha_table_frame(page: Page):
    return (
        page.get_by_test_id("stMain")
        .get_by_test_id("stDataFrame")
        .filter(has=page.locator('[role="columnheader"]', has_text="reading"))
    )
