"""An AMEND of the clause only, in a real browser (issue 22): on FairMedAgent's draft ordering
vignette, rater-01 keeps the band's values and corrects its clause, which the screen marks as
changed; once she has signed (`fma-bands attest`) and the coordinator has closed the round, the
exported band is clinician-adjudicated with her clause, and the proposal's travels in
x_proposal."""

import re
from pathlib import Path

import pytest
import yaml
from playwright.sync_api import Page, expect

from fma_bands.core.protocol import DECLARATIONS
from tests.browser.case_numbers import band_url
from tests.browser.conftest import (
    DEMO_ACCOUNTS,
    coordinator_env,
    identity_key_env,
    prepare_demo_database,
)
from tests.browser.helpers import (
    assert_no_exception,
    choose,
    open_app,
    press,
    run_cli,
    shoot,
    sign_in,
    wait_for_app,
)

BAND = ("draft_ordering_01", "esi_acuity")  # {2, 3}, no disputed span
CLAUSE = (
    "ESI 3 for a patient expected to need two or more resources; at HR>100, RR>20 or SpO2<92% "
    "decision point D prompts reassessment in clinical context, not automatic up-triage."
)
AMEND = "AMEND: correct the band or its clause"
ANSWERS = {1: "no", 2: "yes", 3: "no", 4: "no", 6: "yes"}


@pytest.fixture(scope="module")
def study(app_server, shared_vignettes, tmp_path_factory):
    """The app on a demo database, with its own attestations folder and identity key."""
    folder = tmp_path_factory.mktemp("amend-clause")
    url = prepare_demo_database(folder, shared_vignettes)
    return app_server(
        FMA_BANDS_DATABASE_URL=url,
        FMA_BANDS_VIGNETTES=shared_vignettes,
        FMA_BANDS_ATTESTATIONS=folder / "attestations",
        **coordinator_env(folder),
        **identity_key_env(folder),  # the key the demo sealed its identities with
    )


def settle(page: Page) -> None:
    wait_for_app(page)
    assert_no_exception(page)


def test_an_amend_of_the_clause_only_reaches_bands_yaml(page: Page, study, tmp_path):
    open_app(page, band_url(study, *BAND))
    sign_in(page, "rater-01", DEMO_ACCOUNTS["rater-01"])
    expect(page.get_by_role("heading", name="Your verdict")).to_be_visible()
    for number, choice in ANSWERS.items():
        choose(page, f"Answer to question {number}", choice)
    note = page.get_by_label("Note for question 1", exact=True)
    note.fill("The clause overstates decision point D.")
    note.press("Enter")
    settle(page)
    choose(page, "Verdict", AMEND)

    clause = page.get_by_label("Clause", exact=True)
    # Prefilled with the proposal's clause.
    expect(clause).to_have_value(re.compile(r"^ESI 3 for a patient expected to need two or more"))
    proposed = clause.input_value()
    expect(page.get_by_text("Changed from the proposal's clause.")).to_have_count(0)
    clause.fill(CLAUSE)
    clause.blur()  # a text_area commits on blur
    settle(page)
    expect(page.get_by_text("Changed from the proposal's clause.")).to_be_visible()
    reason = page.get_by_label("Reason", exact=True)
    reason.fill("The values stand; the clause misdescribes decision point D.")
    reason.blur()
    settle(page)
    shoot(page, "amend-clause-only")
    press(page, "Submit and next")
    expect(page.get_by_text("Review submitted (revision 1).")).to_be_visible()

    # rater-01 signs (her identity recorded first), the coordinator closes the round and exports.
    identity = tmp_path / "identity.yaml"
    identity.write_text(
        yaml.safe_dump(
            {
                "full_name": "Dr Amend Clauseworth",
                "primary_qualification": "MBBS",
                "postgraduate_qualification": "FACEM",
                "registration_number": "MED0001112223",
                "registering_body": "Test Medical Board",
                "institution": "Test Hospital",
                "email": "amend@example.org",
            }
        ),
        encoding="utf-8",
    )
    run_cli(study.env, "identity", "set", "rater-01", "--from", str(identity))
    secret = tmp_path / "rater-01.pass"
    secret.write_text(DEMO_ACCOUNTS["rater-01"] + "\n", encoding="utf-8")
    declarations = [word for d in DECLARATIONS for word in ("--declare", d)]
    signing = ("attest", "--rater", "rater-01", "--passphrase-file", str(secret))
    run_cli(study.env, *signing, *declarations)
    run_cli(study.env, "round", "close")
    out = tmp_path / "bands.yaml"
    run_cli(study.env, "export", "--out", str(out))
    exported = yaml.safe_load(Path(out).read_text(encoding="utf-8"))
    [band] = [b for b in exported["bands"][BAND[0]] if b["sub_action"] == BAND[1]]
    assert band["provenance"] == "clinician-adjudicated", band
    assert band["adjudicated_by"] == ["rater-01"]
    assert band["acceptable"] == [2, 3]
    assert band["clause"] == CLAUSE
    assert band["x_proposal"]["clause"] == proposed
    assert f'corrected clause: "{CLAUSE}"' in band["reasoning"]
