"""Signing again from Review a band, in a real browser: a rater whose signed attestation covers a
band revises it, types her passphrase, leaves the box with Tab and presses Submit and next. The
box's "Show password" button once took the focus from Tab, and Streamlit never sent the typed
passphrase: the page refused it as empty while the box still showed it (app_pages.page_script,
the guard that sends Tab past the button)."""

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import (
    DEMO_ACCOUNTS,
    coordinator_env,
    identity_key_env,
    prepare_demo_database,
)
from tests.browser.helpers import (
    assert_no_exception,
    open_app,
    open_from_sidebar,
    press,
    run_cli,
    shoot,
    sign_in,
    wait_for_app,
)
from tests.conftest import HANDBACK

DECLARED = ("not-an-author", "no-financial-interest", "consent-editor-disclosure")


@pytest.fixture(scope="module")
def study(app_server, shared_vignettes, tmp_path_factory):
    """The app on a demo database where rater-01 has signed her paper hand-back's reviews."""
    folder = tmp_path_factory.mktemp("sign-again-study")
    url = prepare_demo_database(folder, shared_vignettes)
    server = app_server(
        FMA_BANDS_DATABASE_URL=url,
        FMA_BANDS_VIGNETTES=shared_vignettes,
        FMA_BANDS_ATTESTATIONS=folder / "attestations",
        **coordinator_env(folder),
        **identity_key_env(folder),
    )
    out = run_cli(server.env, "handback", "import", str(HANDBACK), "--rater", "rater-01")
    assert "imported 4 submitted reviews for rater-01" in out, out
    secret = folder / "rater-01.passphrase"
    secret.write_text(DEMO_ACCOUNTS["rater-01"] + "\n", encoding="utf-8")
    declared = [arg for d in DECLARED for arg in ("--declare", d)]
    run_cli(
        server.env,
        "attest",
        "--rater",
        "rater-01",
        "--passphrase-file",
        str(secret),
        "--confirm-imported",
        *declared,
    )
    return server


def test_a_passphrase_left_with_tab_signs_the_revision_again(page: Page, study):
    open_app(page, study.url)
    sign_in(page, "rater-01", DEMO_ACCOUNTS["rater-01"])
    open_from_sidebar(page, "Review a band")
    # Her four signed bands are submitted: an ESI band among them, whose proposal has no
    # disputed span to read.
    revise = page.get_by_role("button", name="Revise this review")
    title = page.get_by_role("heading", level=1)
    for _ in range(40):
        if revise.count() and "ESI acuity level" in title.first.inner_text():
            break
        press(page, "Next band →")
    revise.click()
    wait_for_app(page)
    # A paper hand-back carries no answers to the six questions: she gives them now.
    unsure = page.get_by_role("radio", name="unsure", exact=True)
    expect(unsure.first).to_be_visible()
    for index in range(unsure.count()):
        unsure.nth(index).locator("xpath=ancestor::label[1]").click()  # the input is hidden
        wait_for_app(page)
        expect(unsure.nth(index)).to_be_checked()
    for box in page.get_by_role("textbox").all():
        if box.is_visible() and box.get_attribute("type") != "password" and not box.input_value():
            box.fill("On reflection I keep this band.")
            box.press("Tab")
            wait_for_app(page)
    box = page.get_by_label("Your passphrase, to sign again", exact=True)
    box.fill(DEMO_ACCOUNTS["rater-01"])
    box.press("Tab")
    # Tab leaves the box for the next control, never for its own "Show password" button.
    focused = page.evaluate("document.activeElement.getAttribute('aria-label') || ''")
    assert "password" not in focused.lower(), focused
    wait_for_app(page)
    press(page, "Submit and next")
    assert_no_exception(page)
    expect(page.get_by_text("the passphrase must not be empty")).to_have_count(0)
    expect(page.get_by_text("and your attestation signed again", exact=False).first).to_be_visible()
    shoot(page, "sign-again-after-tab")
