"""Text from files and people is shown as written, never as markup (docs/design.md, Quality bar).

One demo vignette is rewritten so that every text field a page shows (clinical core, results,
test names, source, clause, reasoning, notes) carries Markdown, HTML, KaTeX, Streamlit's colour
and icon directives, autolinks and remote images; a rater gives the same text as a reason and as
a flag. Every page both a rater and the coordinator can open is then read in chromium: no
request leaves the app, nothing of it becomes a heading, image, link, formula, colour or
strike-through, and the text reads as it was written (a `> 100 bpm` keeps its `>`)."""

import shutil
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml
from playwright.sync_api import FilePayload, Page, expect

from fma_bands.core.actions import sub_action
from fma_bands.core.vignettes import load_library
from tests.browser.case_numbers import band_url, case_of
from tests.browser.conftest import DEMO_ACCOUNTS
from tests.browser.helpers import (
    assert_no_exception,
    choose,
    open_app,
    open_from_sidebar,
    press,
    shoot,
    sign_in,
    wait_for_app,
)
from tests.conftest import DEMO_VIGNETTES

TARGET = "demo_order_border_01"  # an orders band: test names become widget labels
# Port 9 (discard) on this machine: a fetch of it would show as a request, never succeed.
BEACON = "http://127.0.0.1:9"
LINES = (
    "# Heading from the file",
    "> 100 bpm and <= 2 on the scale",
    f"![beacon]({BEACON}/markdown.png) <img src='{BEACON}/html.png'> $x^2$ and $$y$$",
    ":red[coloured] ~~struck~~ **bold** _slanted_ `code` :material/warning: :smile:",
    f"[a link]({BEACON}/link) {BEACON}/autolink www.example.org someone@example.org",
    "1. not a list",
    "===",
)
HOSTILE = "\n".join(LINES)
# What must never appear inside the page's main area when it shows the text above.
MARKUP = {
    "a heading": "h1:has-text('Heading from the file'), h2:has-text('Heading from the file')",
    "an image": "img",
    "a formula": ".katex, math",
    "struck text": "del, s",
    "a quotation": "blockquote",
    "a list from the text": "ol:has-text('not a list')",
    "a link out of the app": "a[href^='http']",
    "an icon from the text": "span[data-testid='stIconMaterial']:text-is('warning')",
}


def hostile_folder(tmp: Path) -> Path:
    folder = tmp / "vignettes"
    shutil.copytree(DEMO_VIGNETTES, folder)
    path = folder / f"{TARGET}.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["clinical_core"] = HOSTILE
    data["tool_results"] = {test: HOSTILE for test in data["tool_results"]}
    data["tool_labels"] = {test: f"**{test}** :red[x] $y$" for test in data["tool_results"]}
    for proposal in data["proposals"]:
        proposal.update(source=HOSTILE, clause=HOSTILE, reasoning=HOSTILE, notes=HOSTILE)
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return folder


def shown(page: Page) -> str:
    # The word joiner the app puts inside autolink and icon triggers is invisible.
    return page.get_by_test_id("stMain").inner_text().replace("\u2060", "")


def check(page: Page, where: str, outside: list[str]) -> None:
    """Nothing of the hostile text became markup on this page, and nothing was fetched."""
    wait_for_app(page)
    assert_no_exception(page)
    main = page.get_by_test_id("stMain")
    found = {what: main.locator(css).count() for what, css in MARKUP.items()}
    assert not any(found.values()), f"{where}: {found}"
    assert not outside, f"{where}: the browser fetched {outside}"


def watch(page: Page, origin: str) -> list[str]:
    outside: list[str] = []

    def seen(request) -> None:
        parts = urlsplit(request.url)
        if parts.scheme in ("http", "https", "ws", "wss") and parts.netloc != origin:
            outside.append(request.url)

    page.on("request", seen)
    return outside


def every_page(page: Page, outside: list[str], visited: dict[str, str]) -> None:
    nav = page.get_by_test_id("stSidebarNav").get_by_test_id("stMarkdownContainer")
    expect(nav.first).to_be_visible()
    for title in nav.all_inner_texts():
        open_from_sidebar(page, title)
        expect(page.get_by_test_id("stMain").locator("h1").first).to_be_visible()
        check(page, title, outside)
        visited[title] = shown(page)


def open_band(page: Page, server, name: str) -> None:
    """Open one band of the hostile case by its link, as a rater following it signs in again."""
    open_app(page, band_url(server, TARGET, name))
    sign_in(page, "rater-01", DEMO_ACCOUNTS["rater-01"])
    expect(page.get_by_role("heading", name=sub_action(name).label, level=1)).to_be_visible()
    wait_for_app(page)


@pytest.fixture
def hostile_server(demo_server, tmp_path):
    return demo_server(hostile_folder(tmp_path), fresh=True)


def test_text_from_files_and_people_is_never_markup(page: Page, hostile_server, tmp_path):
    library = load_library([Path(hostile_server.env["FMA_BANDS_VIGNETTES"])])
    assert not library.problems, library.problems
    outside = watch(page, urlsplit(hostile_server.url).netloc)

    open_app(page, hostile_server.url)
    sign_in(page, "rater-01", DEMO_ACCOUNTS["rater-01"])
    # The hostile case, as the rater reads it: the vignette page and each of its bands.
    open_from_sidebar(page, "Vignette")
    page.get_by_role("combobox", name="Vignette").click()
    page.get_by_role("option", name=case_of(hostile_server, TARGET), exact=True).click()
    expect(page.get_by_test_id("stMain")).to_contain_text(LINES[1])
    check(page, "vignette", outside)
    text = shown(page)
    for line in LINES:
        assert line in text, f"the vignette page does not show {line!r} as written"
    shoot(page, "plain-text-vignette")

    for proposal in library.vignettes[TARGET].proposals:
        label = sub_action(proposal.sub_action).label
        open_band(page, hostile_server, proposal.sub_action)
        expect(page.get_by_test_id("stMain")).to_contain_text(LINES[1])
        check(page, f"review: {label}", outside)
        if proposal.sub_action == "orders":  # the editor names each test by its label
            choose(page, "Verdict", "AMEND: correct the band or its clause")
            check(page, "the orders editor", outside)
            expect(page.get_by_test_id("stMain")).to_contain_text("**cxr** :red[x] $y$")
    shoot(page, "plain-text-review")

    # The rater's own words, as reason and as flag, with the same text.
    choose(page, "Verdict", "DECLINE: I cannot adjudicate this band")
    box = page.get_by_label("Reason", exact=True)
    box.fill(HOSTILE)
    box.blur()
    wait_for_app(page)
    page.get_by_text("Flag this band for the coordinator").click()
    note = page.get_by_label("What should the coordinator look at?", exact=True)
    note.fill(HOSTILE)
    note.blur()
    wait_for_app(page)
    press(page, "Send the flag")
    expect(page.get_by_text("Flag sent", exact=False)).to_be_visible()
    press(page, "Submit and next")
    expect(page.get_by_text("Review submitted (revision 1).")).to_be_visible()
    check(page, "after submitting", outside)

    rater_pages: dict[str, str] = {}
    every_page(page, outside, rater_pages)
    assert "Sign attestation" in rater_pages

    open_app(page, hostile_server.url)
    sign_in(page, "coordinator", DEMO_ACCOUNTS["coordinator"])
    coordinator_pages: dict[str, str] = {}
    every_page(page, outside, coordinator_pages)
    # The flag's note reached the coordinator as written.
    assert {"Raters' progress", "Band registry", "Agreement", "Study admin"} <= set(
        coordinator_pages
    )
    open_from_sidebar(page, "Raters' progress")
    expect(page.get_by_test_id("stMain")).to_contain_text(LINES[1])
    check(page, "the flag on Raters' progress", outside)
    shoot(page, "plain-text-coordinator")


def test_a_hostile_hand_back_upload_is_refused_by_name(page: Page, demo_server, tmp_path):
    server = demo_server(DEMO_VIGNETTES, fresh=True)
    outside = watch(page, urlsplit(server.url).netloc)
    open_app(page, server.url)
    sign_in(page, "coordinator", DEMO_ACCOUNTS["coordinator"])
    open_from_sidebar(page, "Import a hand-back")
    uploads = {
        "nul.txt": (b"demo_doc_clear_01 | followup_days | ACCEPT | ok\x00\n", "holds a NUL byte"),
        "latin1.txt": ("demo_doc_clear_01 | followup_days | ACCEPT | café\n".encode("latin-1"),
                       "is not UTF-8 text"),
        "**bold** :red[x] $y$.txt": (b"not a hand-back line\n", "1 problem(s)"),
    }  # fmt: skip
    for name, (data, message) in uploads.items():
        page.get_by_test_id("stFileUploaderDropzoneInput").set_input_files(
            files=[FilePayload(name=name, mimeType="text/plain", buffer=data)]
        )
        wait_for_app(page)
        page.get_by_role("combobox", name="Rater").click()
        page.get_by_role("option", name="rater-01", exact=True).click()
        press(page, "Import")
        # This upload's error, not the last one's still on screen while the page redraws.
        error = page.get_by_test_id("stAlert").filter(has_text="was not imported")
        error = error.filter(has_text=message)
        expect(error).to_have_count(1)
        assert name in error.inner_text().replace("\u2060", ""), error.inner_text()
        check(page, f"upload {name}", outside)
    # Nothing of it was stored: no review is waiting for rater-01's confirmation.
    open_from_sidebar(page, "Raters' progress")
    expect(page.get_by_test_id("stMain")).to_contain_text("0 of 27")
