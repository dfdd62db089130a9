"""A rater enrolled by the coordinator, in a real browser, on FairMedAgent's vignettes and a
database `fma-bands demo` prepared (docs/design.md, Identity, keys and attestation): the coordinator
enrols the rater on the Raters page (the coordinator's passphrase unlocks the study's root key,
which signs the enrolment) and is shown a one-time enrolment code; the rater activates the account
with it and chooses a passphrase the coordinator never sees; the rater reviews a band and signs,
and is given a receipt; once the coordinator closes the round, the Band registry shows that band
clinician-adjudicated, on the rater's own key."""

import re
import sqlite3
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from fma_bands.core.protocol import DECLARATIONS
from tests.browser.case_numbers import in_queue
from tests.browser.conftest import DEMO_ACCOUNTS, AppServer
from tests.browser.helpers import (
    assert_no_exception,
    choose,
    close_the_round,
    eventually,
    follow_link,
    open_app,
    open_from_sidebar,
    press,
    registry_band,
    run_cli,
    shoot,
    sign_in,
    wait_for_app,
)

RATER = "adjudicator-07"
ROOT_PASSPHRASE = "Your passphrase (it unlocks the study's root key, which signs the enrolment)"
CHOSEN = "a passphrase only adjudicator-07 knows"
TRIAGE = ("draft_triage_01", "esi_acuity")
IDENTITY = """\
full_name: Dr Example Activator
primary_qualification: MBBS
postgraduate_qualification: FACEM
registration_number: MED0000000007
registering_body: Example Medical Board
institution: Example Hospital
email: activator@example.org
"""


@pytest.fixture(scope="module")
def server(demo_server, shared_vignettes):
    return demo_server(shared_vignettes, fresh=True)


def enrol_on_the_raters_page(desk: Page, url: str) -> str:
    open_app(desk, url)
    sign_in(desk, "coordinator", DEMO_ACCOUNTS["coordinator"])
    open_from_sidebar(desk, "Raters")
    expect(desk.get_by_role("heading", name="Raters", level=1)).to_be_visible()
    # The enrolled raters fit the page: their signing keys are cut short in their column rather
    # than running the table off its right edge.
    scroller = desk.get_by_test_id("stDataFrame").locator(".dvn-scroller")
    expect(scroller).to_have_count(1)

    def fits() -> None:
        width, shown = scroller.evaluate("e => [e.scrollWidth, e.clientWidth]")
        assert shown > 0 and width - shown <= 1, f"{width - shown} pixels out of sight"

    eventually(desk, fits)
    form = desk.get_by_test_id("stForm").first
    form.get_by_label("Pseudonym", exact=True).fill(RATER)
    form.get_by_label("Specialty", exact=True).fill("emergency medicine")
    form.get_by_label("Jurisdiction", exact=True).fill("Australia")
    form.get_by_label("Years since registration", exact=True).fill("8")
    # The one passphrase on the form is the coordinator's own, for the root key: none to set.
    expect(form.get_by_label("assphrase", exact=False)).to_have_count(1)
    form.get_by_label(ROOT_PASSPHRASE, exact=True).fill(DEMO_ACCOUNTS["coordinator"])
    press(desk, "Enrol rater")
    assert_no_exception(desk)
    expect(desk.get_by_text(f"Enrolled {RATER}. Give {RATER} this enrolment code")).to_be_visible()
    code = desk.get_by_test_id("stCode").inner_text().strip()
    # The form is empty again, ready for the next rater, and the code is the only copy.
    expect(form.get_by_label("Pseudonym", exact=True)).to_have_value("")
    expect(form.get_by_label(ROOT_PASSPHRASE, exact=True)).to_have_value("")
    assert re.fullmatch(r"([A-Z2-7]{4}-){7}[A-Z2-7]{4}", code), code
    shoot(desk, "enrol-code-shown-once")
    return code


def activate_in_the_browser(page: Page, url: str, code: str) -> None:
    open_app(page, url)
    page.get_by_role("link", name=re.compile("Activate your account")).click()
    wait_for_app(page)
    expect(page.get_by_role("heading", name="Activate your account", level=1)).to_be_visible()
    page.get_by_label("Your name in the study", exact=True).fill(RATER)
    page.get_by_label("Enrolment code", exact=True).fill(code)
    page.get_by_label("Choose a passphrase", exact=True).fill(CHOSEN)
    page.get_by_label("Repeat the passphrase", exact=True).fill(CHOSEN)
    shoot(page, "activate")
    press(page, "Activate")
    assert_no_exception(page)
    expect(page.get_by_role("heading", name="My queue", level=1)).to_be_visible()
    expect(page.get_by_test_id("stSidebar")).to_contain_text(f"Signed in as {RATER} (rater)")


def accept_triage(page: Page, server: AppServer) -> None:
    follow_link(page, in_queue(server, *TRIAGE))  # as a rater's queue names it
    expect(page.get_by_role("heading", name="ESI acuity level", level=1)).to_be_visible()
    for number, choice in ((1, "yes"), (2, "yes"), (3, "no"), (4, "no"), (6, "yes")):
        choose(page, f"Answer to question {number}", choice)
    choose(page, "Verdict", "ACCEPT: the band stands as written")
    reason = page.get_by_label("Reason", exact=True)
    reason.fill("ESI 2: high-risk chest pain without ESI 1 criteria.")
    reason.blur()
    wait_for_app(page)
    press(page, "Submit and next")
    assert_no_exception(page)
    expect(page.get_by_text(re.compile(r"^Review submitted \(revision 1\)\."))).to_be_visible()


def sign_attestation(page: Page) -> None:
    open_from_sidebar(page, "Sign attestation")
    expect(page.get_by_role("heading", name="The review this signature covers")).to_be_visible()
    form = page.get_by_test_id("stForm")
    for text in DECLARATIONS.values():
        form.get_by_text(text, exact=True).click()  # the input itself is hidden
        expect(form.get_by_role("checkbox", name=text, exact=True)).to_be_checked()
    page.get_by_label("Your passphrase, again", exact=True).fill(CHOSEN)
    press(page, "Sign attestation")
    assert_no_exception(page)
    expect(page.get_by_text("Signed. Your signature and your receipt:")).to_be_visible()
    expect(page.get_by_role("button", name="Download your receipt")).to_be_visible()
    expect(
        page.get_by_text(re.compile(r"^Signed .*, 1 band, sealed until round 1 closes \(record "))
    ).to_be_visible()
    shoot(page, "enrolled-rater-signed")


def test_a_rater_enrolled_with_a_code_activates_reviews_signs_and_is_adjudicated(
    page: Page, browser: Browser, server, tmp_path
):
    context = browser.new_context()
    try:
        desk = context.new_page()
        code = enrol_on_the_raters_page(desk, server.url)
        # The coordinator records the rater's private identity (the command, here).
        (tmp_path / "identity.yaml").write_text(IDENTITY, encoding="utf-8")
        run_cli(
            server.env,
            "--identity-key",
            str(tmp_path / "identity.key"),
            "identity",
            "set",
            RATER,
            "--from",
            str(tmp_path / "identity.yaml"),
        )

        # Before activation the rater cannot sign in, with the code or anything else.
        open_app(page, server.url)
        sign_in(page, RATER, code)
        expect(page.get_by_role("heading", name="Sign in", level=1)).to_be_visible()

        activate_in_the_browser(page, server.url, code)
        accept_triage(page, server)
        sign_attestation(page)

        # Once the coordinator closes round 1, the registry grants the band on the rater's key.
        close_the_round(desk)
        open_from_sidebar(desk, "Band registry")
        expect(desk.get_by_role("heading", name="Band registry", level=1)).to_be_visible()
        box = registry_band(desk, "draft_triage_01", "ESI acuity level")
        expect(
            box.get_by_text("draft_triage_01 · ESI acuity level: clinician-adjudicated")
        ).to_be_visible()
        expect(box.get_by_text("Band: 2 - emergent", exact=True)).to_be_visible()
        expect(box.get_by_text(re.compile(f"Adjudicated by {RATER} "))).to_be_visible()
        # A rater who chose their own passphrase is no demo account: no such warning.
        expect(box.get_by_text("demo_account")).to_have_count(0)
        shoot(desk, "enrolled-rater-registry")
    finally:
        context.close()
    folder = Path(server.env["FMA_BANDS_ATTESTATIONS"])
    published = (folder / "adjudicators.yaml").read_text(encoding="utf-8")
    assert RATER in published and "Example Activator" not in published
    # The code worked once, and the audit log holds neither it nor the chosen passphrase.
    log = run_cli(server.env, "audit", "verify")
    assert "chain intact" in log
    db = server.env["FMA_BANDS_DATABASE_URL"].removeprefix("sqlite:///")
    with sqlite3.connect(db) as connection:
        payloads = " ".join(
            str(row) for row in connection.execute("SELECT payload FROM audit_event")
        )
    assert code not in payloads and CHOSEN not in payloads
