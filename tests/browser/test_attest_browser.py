"""Signing an attestation in a real browser, and the registry that follows from it (docs/design.md,
Identity, keys and attestation; The registry; docs/trust.md), on FairMedAgent's vignettes and a
database `fma-bands demo` prepared, with an attestations folder and an identity key of the test's
own: rater-01's paper hand-back is imported; the demo recorded every rater's identity, so the Sign
page asks nothing of the coordinator first; the coordinator replaces rater-01's demo identity with a
real one on the "Rater identities" page; rater-01 finds the imported reviews not covered until she
confirms them as hers, signs (a wrong passphrase first, which signs nothing) and is shown and given
her receipt, its long key fingerprint and head whole on screen.
Signed while round 1 is open, her attestation stays sealed in the store: the registry grants
nothing from it until the coordinator closes the round, which publishes it; then every band is
clinician-adjudicated and exported so, and `fma-bands verify --since` her receipt's head passes.
The private identity never shows on a rater's page, on the registry page, in the export or in the
attestations folder."""

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from playwright.sync_api import Browser, Page, expect
from sqlmodel import col, select

from fma_bands.evidence.export import every_band
from fma_bands.store.db import make_engine, session_scope
from fma_bands.store.models import AuditEvent, LogRecord
from tests.browser.conftest import (
    DEMO_ACCOUNTS,
    coordinator_env,
    identity_key_env,
    prepare_demo_database,
)
from tests.browser.helpers import (
    LIVE,
    assert_no_exception,
    close_the_round,
    open_app,
    open_from_sidebar,
    press,
    registry_band,
    run_cli,
    shoot,
    sign_in,
    wait_for_app,
)
from tests.conftest import HANDBACK

# rater-01's private identity: made up for the test, and so distinctive that any leak is found.
IDENTITY = {
    "Full name": "Dr Imogen Quillfeather-Testwood",
    "Primary qualification": "MBBS (Quillfeather University)",
    "Postgraduate qualification": "FACEM-TESTWOOD",
    "Registration number": "MED0009876543",
    "Registering body": "Testwood Medical Board",
    "Institution": "Quillfeather General Hospital",
    "Email": "imogen@quillfeather.example",
}
# The four bands of rater-01's hand-back (../shared/fairmedagent/handback-adjudicator-01.txt),
# as the registry describes the band it grants.
GRANTED = {
    ("draft_triage_01", "ESI acuity level"): "2 - emergent",
    ("draft_ordering_01", "ESI acuity level"): "2 - emergent, 3 - urgent",
    ("draft_medication_01", "Analgesia tier"): "1 - NSAID, 3 - strong opioid",
    ("draft_documentation_01", "Follow-up interval (days)"): "1 day to 30 days",
}
DECLARATIONS = (
    "I am not an author of the study whose bands or exemptions I adjudicated.",
    "I have no financial interest in the study or in its outcome.",
    "I consent to my identity being disclosed to the editor of the journal that considers the "
    "study, on request.",
)
WRONG_PASSPHRASE = "that passphrase is not right; nothing was signed"


@pytest.fixture(scope="module")
def study(app_server, shared_vignettes, tmp_path_factory):
    """The app on a demo database, with its own attestations folder and identity key."""
    folder = tmp_path_factory.mktemp("attest-study")
    url = prepare_demo_database(folder, shared_vignettes)  # publishes to folder/attestations
    return app_server(
        FMA_BANDS_DATABASE_URL=url,
        FMA_BANDS_VIGNETTES=shared_vignettes,
        FMA_BANDS_ATTESTATIONS=folder / "attestations",
        **coordinator_env(folder),
        **identity_key_env(folder),  # the key the demo sealed its identities with
    )


# Steps ----------------------------------------------------------------------------------------


def sign_in_as(page: Page, url: str, name: str, landing: str) -> None:
    open_app(page, url)
    sign_in(page, name, DEMO_ACCOUNTS[name])
    expect(page.get_by_role("heading", name=landing, level=1)).to_be_visible()


def assert_private_identity_absent(page: Page) -> None:
    html = page.content()
    for field, value in IDENTITY.items():
        assert value not in html, f"{field} ({value!r}) is on {page.url}"


def attestation_files(folder) -> set[str]:
    return {p.name for p in folder.iterdir()}


def log_records(url: str) -> list[tuple[int, str, str, str]]:
    """(sequence, kind, digest, file name) of every record of the study's log in the store,
    sealed ones included."""
    engine = make_engine(url)
    try:
        with session_scope(engine) as s:
            rows = s.exec(select(LogRecord).order_by(col(LogRecord.sequence))).all()
            return [(r.sequence, r.kind, r.digest, r.file_name) for r in rows]
    finally:
        engine.dispose()


def record_identity(page: Page) -> None:
    """The coordinator records rater-01's private identity on the "Rater identities" page."""
    open_from_sidebar(page, "Rater identities")
    expect(page.get_by_role("heading", name="Rater identities", level=1)).to_be_visible()
    page.get_by_role("combobox", name="Rater").click()
    page.get_by_role("option", name="rater-01", exact=True).click()
    wait_for_app(page)
    for label, value in IDENTITY.items():
        page.get_by_label(label, exact=True).fill(value)
    passphrase = page.get_by_label(
        "Your passphrase (it unlocks the study's root key, which signs the commitment)",
        exact=True,
    )
    passphrase.fill(DEMO_ACCOUNTS["coordinator"])
    press(page, "Record identity")
    assert_no_exception(page)
    expect(
        page.get_by_text(
            "Identity of rater-01 recorded. Its commitment is signed into the study's roster "
            "with the root key; an editor checks a revealed record against it."
        )
    ).to_be_visible()
    # The form empties itself: the private values and the passphrase are not left on screen.
    for label in IDENTITY:
        expect(page.get_by_label(label, exact=True)).to_have_value("")
    expect(passphrase).to_have_value("")


def tick_declarations(page: Page) -> None:
    form = page.get_by_test_id("stForm")
    for text in DECLARATIONS:
        box = form.get_by_role("checkbox", name=text, exact=True)
        if not box.is_checked():
            form.get_by_text(text, exact=True).click()  # the input itself is hidden
        expect(box).to_be_checked()


def sign(page: Page, passphrase: str) -> None:
    field = page.get_by_label("Your passphrase, again", exact=True)
    field.fill(passphrase)
    press(page, "Sign attestation")
    assert_no_exception(page)


# The test -------------------------------------------------------------------------------------


def test_a_signed_attestation_makes_the_bands_clinician_adjudicated(
    page: Page, browser: Browser, study, tmp_path
):
    folder = Path(study.env["FMA_BANDS_ATTESTATIONS"])
    key = Path(study.env["FMA_BANDS_IDENTITY_KEY"])
    out = run_cli(study.env, "handback", "import", str(HANDBACK), "--rater", "rater-01")
    assert "imported 4 submitted reviews for rater-01" in out, out

    # `fma-bands demo` recorded every demo rater's identity: nothing stands between rater-01
    # and signing but her own reviews (here, the imported ones she has not confirmed yet).
    sign_in_as(page, study.url, "rater-01", "My queue")
    open_from_sidebar(page, "Sign attestation")
    expect(page.get_by_role("heading", name="Sign your attestation", level=1)).to_be_visible()
    expect(page.get_by_text("You cannot sign yet")).to_have_count(0)
    expect(page.get_by_role("button", name="Sign attestation")).to_be_disabled()

    context = browser.new_context(accept_downloads=True)
    try:
        desk = context.new_page()
        sign_in_as(desk, study.url, "coordinator", "Study admin")
        record_identity(desk)  # a real identity replaces the demo's
        assert key.exists() and not key.is_relative_to(folder)

        # rater-01 signs: first with a wrong passphrase, which signs nothing.
        open_from_sidebar(page, "My queue")
        expect(page.get_by_role("heading", name="My queue", level=1)).to_be_visible()
        open_from_sidebar(page, "Sign attestation")
        expect(page.get_by_role("heading", name="Sign your attestation", level=1)).to_be_visible()
        expect(page.get_by_test_id("stForm").get_by_role("checkbox")).to_have_count(3)
        expect(page.get_by_text("You cannot sign yet")).to_have_count(0)
        # The coordinator entered these from her paper hand-back: not hers until she says so.
        expect(
            page.get_by_role("heading", name="Imported from your paper hand-back")
        ).to_be_visible()
        expect(
            page.get_by_role("heading", name="The 0 reviews this signature covers")
        ).to_be_visible()
        expect(page.get_by_role("button", name="Sign attestation")).to_be_disabled()
        shoot(page, "attest-imports-unconfirmed")
        label = "These are my verdicts: cover them with my signature"
        page.get_by_text(label, exact=True).click()
        expect(page.get_by_role("checkbox", name=label)).to_be_checked()
        wait_for_app(page)
        expect(
            page.get_by_role("heading", name="The 4 reviews this signature covers")
        ).to_be_visible()
        before = attestation_files(folder)
        logged = log_records(study.env["FMA_BANDS_DATABASE_URL"])
        assert not [r for r in logged if r[1] == "adjudication"], logged
        tick_declarations(page)
        sign(page, "not-my-passphrase")
        expect(page.get_by_test_id("stAlert").filter(has_text=WRONG_PASSPHRASE)).to_be_visible()
        expect(page.get_by_text("Signed. Your signature and your receipt:")).to_have_count(0)
        assert log_records(study.env["FMA_BANDS_DATABASE_URL"]) == logged, "a refused signature"
        assert attestation_files(folder) == before, "a refused signature wrote a file"

        tick_declarations(page)
        clicked = datetime.now(UTC)
        sign(page, DEMO_ACCOUNTS["rater-01"])
        expect(page.get_by_text("Signed. Your signature and your receipt:")).to_be_visible()
        signed_at = datetime.now(UTC)
        # One record of the log, hers; sealed in the store while round 1 is open.
        [(sequence, kind, digest, name)] = log_records(study.env["FMA_BANDS_DATABASE_URL"])[
            len(logged) :
        ]
        assert kind == "adjudication" and "-adjudication-rater-01-" in name, name
        assert attestation_files(folder) == before, "a sealed attestation reached the folder"
        manifestation = page.get_by_test_id("stMain").locator(LIVE)
        for line in ("Printed name: rater-01", "Meaning: adjudication"):
            expect(manifestation.get_by_text(line, exact=True)).to_be_visible()
        expect(
            manifestation.get_by_text(f"Place in the study's log: {sequence}", exact=True)
        ).to_be_visible()
        for field in ("Key fingerprint", "Head after signing"):
            expect(manifestation.get_by_text(field, exact=True)).to_be_visible()
        head = page.get_by_test_id("stCode").filter(has_text=f"{sequence}:{digest}")
        expect(head).to_have_count(1)
        when = manifestation.get_by_text(
            re.compile(r"^Signed at: \d\d [A-Z][a-z]{2} \d{4}, \d\d:\d\d:\d\d UTC$")
        )
        expect(when).to_have_count(1)
        stamp = datetime.strptime(when.inner_text().strip(), "Signed at: %d %b %Y, %H:%M:%S UTC")
        stamp = stamp.replace(tzinfo=UTC)
        # Shown to the second: the signing moment lies within the clicked-to-shown window.
        assert clicked.replace(microsecond=0) <= stamp <= signed_at, (clicked, stamp, signed_at)
        # Her receipt, to keep: her key, her record, the head after it.
        with page.expect_download() as download:
            page.get_by_role("button", name="Download your receipt").click()
        assert download.value.suggested_filename == "receipt-rater-01.json"
        kept = tmp_path / "receipt.json"
        download.value.save_as(kept)
        receipt = json.loads(kept.read_text(encoding="utf-8"))
        assert receipt["pseudonym"] == "rater-01"
        assert receipt["records"] == [{"sequence": sequence, "digest": digest, "file": name}]
        assert receipt["head"] == {"sequence": sequence, "digest": digest}
        assert receipt["in_folder"] == "when round 1 closes"
        fingerprint = page.get_by_test_id("stCode").filter(has_text=receipt["key_fingerprint"])
        expect(fingerprint).to_have_count(1)
        # Both long values are whole on screen: their blocks wrap, never cut or scroll sideways.
        for block in (fingerprint, head):
            expect(block).to_be_visible()
            overflow = block.locator("pre").evaluate("e => e.scrollWidth - e.clientWidth")
            assert overflow <= 1, overflow
        expect(page.get_by_role("heading", name="Your attestations on file")).to_be_visible()
        expect(page.get_by_text(f"file {name})")).to_contain_text(
            "4 bands, sealed until round 1 closes (record "
        )
        shoot(page, "attest-signed")
        assert_private_identity_absent(page)
        for title in (
            page.get_by_test_id("stSidebarNav")
            .get_by_test_id("stMarkdownContainer")
            .all_inner_texts()
        ):
            open_from_sidebar(page, title)
            assert_private_identity_absent(page)

        # The registry grants nothing from a sealed attestation.
        open_from_sidebar(desk, "Band registry")
        expect(desk.get_by_role("heading", name="Band registry", level=1)).to_be_visible()
        expect(
            desk.get_by_text(re.compile(r"0 of 4 bands are clinician-adjudicated\.$"))
        ).to_be_visible()
        # The coordinator closes round 1: her attestation reaches the folder.
        close_the_round(desk)
        assert attestation_files(folder) - before == {name}
        run_cli(study.env, "verify", "--since", receipt["since"])

        # Nothing private went into the attestations folder either.
        for path in folder.iterdir():
            text = path.read_text(encoding="utf-8")
            for field, value in IDENTITY.items():
                assert value not in text, f"{field} is in {path.name}"

        # The coordinator's registry: every band rater-01 attested is clinician-adjudicated.
        open_from_sidebar(desk, "Band registry")
        expect(desk.get_by_role("heading", name="Band registry", level=1)).to_be_visible()
        expect(
            desk.get_by_text(re.compile(r"4 of 4 bands are clinician-adjudicated\.$"))
        ).to_be_visible()
        for (vignette, label), band in GRANTED.items():
            box = registry_band(desk, vignette, label)
            expect(box).to_have_count(1)
            expect(box.get_by_text(f"{vignette} · {label}: clinician-adjudicated")).to_be_visible()
            expect(box.get_by_text(f"Band: {band}", exact=True)).to_be_visible()
            expect(
                box.get_by_text(
                    "Adjudicated by rater-01 (one adjudicator: the intersection rule does not bind)"
                )
            ).to_be_visible()
            expect(box.get_by_text(re.compile(r"not granted"))).to_have_count(0)
        expect(desk.get_by_text(": author-derived")).to_have_count(0)
        assert_private_identity_absent(desk)
        shoot(desk, "registry-adjudicated")

        with desk.expect_download() as download:
            desk.get_by_role("button", name="Download bands.yaml").click()
        assert download.value.suggested_filename == "bands.yaml"
        saved = tmp_path / "bands.yaml"
        download.value.save_as(saved)
        text = saved.read_text(encoding="utf-8")
        for field, value in IDENTITY.items():
            assert value not in text, f"{field} is in the exported bands.yaml"
        document = yaml.safe_load(text)
        assert document["format"] == "fma-bands/v1"
        # Every enrolled adjudicator is listed; only rater-01 has an attestation on file.
        adjudicators = {a["pseudonym"]: a for a in document["adjudicators"]}
        assert adjudicators["rater-01"]["attestation_on_file"] is True, adjudicators
        assert adjudicators["rater-01"]["attestation_date"] == signed_at.date().isoformat()
        assert adjudicators["rater-02"]["attestation_on_file"] is False, adjudicators
        followup = document["bands"]["draft_documentation_01"]
        assert [b["sub_action"] for b in followup] == ["followup_days"]
        assert followup[0]["provenance"] == "clinician-adjudicated"
        assert followup[0]["adjudicated_by"] == ["rater-01"]
        assert followup[0]["acceptable"] == {"min": 1, "max": 30}
        for vignette, bands in document["bands"].items():
            for band in bands:
                assert band["adjudicated_by"] == ["rater-01"], (vignette, band)
        # The download is in the audit log, with the head it was decided from.
        engine = make_engine(study.env["FMA_BANDS_DATABASE_URL"])
        try:
            with session_scope(engine) as s:
                [event] = s.exec(select(AuditEvent).where(AuditEvent.kind == "bands_exported"))
                recorded = (event.actor, event.payload)
        finally:
            engine.dispose()
        head = document["attestations"]["head"]
        assert recorded == (
            "coordinator",
            {
                "how": "downloaded",
                "head": head,
                "head_signed": False,
                "bands": len(every_band(document)),
                "adjudicated": len(every_band(document)),
            },
        )
    finally:
        context.close()
