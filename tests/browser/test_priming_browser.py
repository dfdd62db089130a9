"""No rater is primed: on every rater page of the demo and FairMedAgent studies, in
a real browser, neither a vignette's ambiguity stratum (clear, intermediate, borderline) nor the
stratum parts of ids (border, clear, inter in demo_doc_border_01) nor an id itself appears,
in the text or the address bar, outside the verbatim texts that come from the vignette files.

The rater has submitted a review first, so the pages that list a rater's work have some."""

import re
from pathlib import Path

from playwright.sync_api import Page, expect

from fma_bands.core.vignettes import Library, load_library
from tests.browser.conftest import DEMO_ACCOUNTS
from tests.browser.helpers import (
    open_app,
    open_from_sidebar,
    press,
    settle,
    sign_in,
    submit_first_band,
)
from tests.conftest import DEMO_VIGNETTES, SHARED_VIGNETTES

AMBIGUITIES = ("clear", "intermediate", "borderline")


def primers(library: Library) -> re.Pattern:
    """Every word that would prime a rater: the strata, the ids, the stratum parts of ids."""
    words = {*AMBIGUITIES, "stratum", "strata", "ambiguity", *library.vignettes}
    for vid in library.vignettes:
        words |= {p for p in vid.split("_") if any(a.startswith(p) for a in AMBIGUITIES) and p}
    return re.compile(r"\b(" + "|".join(sorted(map(re.escape, words))) + r")\b", re.IGNORECASE)


def verbatim(library: Library) -> list[str]:
    """Texts from the files, shown as written: a word in them is the author's, not a label."""
    texts = []
    for v in library:
        texts += [v.clinical_core, *v.tool_results.values()]
        for p in v.proposals:
            texts += [t for t in (p.source, p.clause, p.reasoning, p.notes) if t]
    return sorted(texts, key=len, reverse=True)


def screen(page: Page, library: Library) -> str:
    text = "\n".join(
        [
            page.url,
            page.get_by_test_id("stMain").inner_text(),
            page.get_by_test_id("stSidebar").inner_text(),
        ]
    )
    for written in verbatim(library):
        text = text.replace(written, " ")
    return text


def walk(page: Page, url: str, library: Library) -> dict[str, str]:
    """What a rater reads on every page they can open, by where they read it."""
    open_app(page, url)
    sign_in(page, "rater-01", DEMO_ACCOUNTS["rater-01"])
    expect(page.get_by_role("heading", name="My queue", level=1)).to_be_visible()
    submit_first_band(page)
    seen: dict[str, str] = {}
    nav = page.get_by_test_id("stSidebarNav").get_by_test_id("stMarkdownContainer")
    for title in nav.all_inner_texts():
        open_from_sidebar(page, title)
        seen[title] = screen(page, library)
    open_from_sidebar(page, "Vignette library")
    main = page.get_by_test_id("stMain")
    pages = -(-len(library) // 10)  # ten cases to a page
    expect(main.get_by_role("button", name=re.compile(r"^Page \d+$"))).to_have_count(pages)
    for number in range(2, pages + 1):
        main.get_by_role("button", name=f"Page {number}", exact=True).click()
        settle(page)
        seen[f"library page {number}"] = screen(page, library)
    open_from_sidebar(page, "Vignette")
    picker = page.get_by_role("combobox", name="Vignette")
    for number in range(1, len(library) + 1):
        picker.click()
        page.get_by_role("option", name=f"Case {number} of {len(library)}", exact=True).click()
        settle(page)
        seen[f"vignette, case {number}"] = screen(page, library)
    open_from_sidebar(page, "Review a band")
    total = sum(len(v.proposals) for v in library)
    position = page.get_by_text(re.compile(rf"band \d+ of {total} in your queue"))
    expect(position).to_be_visible()
    found = re.search(r"band (\d+) of", position.inner_text())
    assert found, position.inner_text()

    def place(number: int):
        return page.get_by_text(re.compile(rf"band {number} of {total} in your queue"))

    def move(button: str, number: int) -> None:
        """Press `button` until band `number` shows. Under load a click can land while the
        page redraws and be lost (seen once in CI); pressing again is safe only because the
        band is checked not to have moved first."""
        for _ in range(3):
            press(page, button)
            try:
                expect(place(number)).to_be_visible(timeout=5000)
                return
            except AssertionError:
                expect(place(number - 1 if "Next" in button else number + 1)).to_be_visible()
        expect(place(number)).to_be_visible()

    # Back to the first band of the queue, then through every band, one position at a time (a
    # button counted while the last run's copy is still drawn may be gone when clicked).
    for number in range(int(found[1]) - 1, 0, -1):
        move("← Previous band", number)
    for number in range(1, total + 1):
        expect(place(number)).to_be_visible()
        seen[f"band {number}"] = screen(page, library)
        if number < total:
            move("Next band →", number + 1)
    return seen


def assert_no_priming(page: Page, demo_server, folder: Path) -> None:
    """A rater walks every page of the study in `folder`: no priming word on any screen."""
    library = load_library([folder])
    server = demo_server(folder, fresh=True)
    pattern = primers(library)
    found = {
        where: sorted({m.group(0) for m in pattern.finditer(text)})
        for where, text in walk(page, server.url, library).items()
    }
    leaks = {where: words for where, words in found.items() if words}
    assert not leaks, f"priming words on a rater's screen: {leaks}"
    # Every case and every band was read.
    assert len([w for w in found if w.startswith("vignette, case")]) == len(library)
    assert len([w for w in found if w.startswith("band ")]) == sum(
        len(v.proposals) for v in library
    )


def test_no_rater_page_of_the_demo_primes_the_rater(page: Page, demo_server):
    assert_no_priming(page, demo_server, Path(DEMO_VIGNETTES))


# Its own test, so that a clone without ../shared skips this one only (tests/shared_data.py).
def test_no_rater_page_of_the_fairmedagent_study_primes_the_rater(page: Page, demo_server):
    assert_no_priming(page, demo_server, Path(SHARED_VIGNETTES))


def test_the_attestation_page_names_no_id(page: Page, demo_server):
    library = load_library([DEMO_VIGNETTES])
    server = demo_server(DEMO_VIGNETTES, fresh=True)
    open_app(page, server.url)
    sign_in(page, "rater-01", DEMO_ACCOUNTS["rater-01"])
    submit_first_band(page)
    open_from_sidebar(page, "Sign attestation")
    frame = page.get_by_test_id("stDataFrame").first
    frame.wait_for()
    # The table draws on a canvas; its accessible grid carries the text (the page's HTML as a
    # whole would not do: its style sheets say "border" everywhere).
    cells = frame.locator('[role="gridcell"], [role="columnheader"]')
    expect(cells.first).to_be_attached()
    table = "\n".join(cells.all_inner_texts())
    assert re.search(rf"Case \d+ of {len(library)}", table), table
    assert not primers(library).search(page.get_by_test_id("stMain").inner_text() + table)
