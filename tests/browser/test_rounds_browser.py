"""Round 2 in a real browser (docs/design.md, Blinding and rounds; Who reviews what), on one demo
vignette and a database `fma-bands demo` prepared, with a third rater enrolled and activated by
command.

Round 1 (paper hand-backs) leaves the ESI band with an empty intersection: {2}, {3} and {2, 3}.
The coordinator closes round 1 on Raters' progress (confirmed), notes the round-1 alpha on the
Agreement page, and opens round 2 on Study admin for its one candidate, chosen by reason (no
consensus, the reason written out beside it), once confirmed. rater-01 and rater-02 see round 1
as Rater A, B and C (no pseudonym; rater-02 never sees rater-01's round-2 answer) and revise in
the browser, rater-03 keeps her band on paper; the round closes,
all three sign, and the band is clinician-adjudicated by consensus with `x_round: 2` in the
export, while the Agreement page's round-1 alpha is what it was."""

import base64
import json
import shutil
from pathlib import Path

import pytest
import yaml
from playwright.sync_api import Browser, Page, expect

from fma_bands.study.rounds import REASONS
from tests.browser.conftest import (
    DEMO_ACCOUNTS,
    coordinator_env,
    identity_key_env,
    prepare_demo_database,
)
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
    settle,
    shoot,
    sign_in,
    tick,
    wait_for_app,
)
from tests.conftest import DEMO_VIGNETTES

VID = "demo_triage_border_01"  # esi_acuity proposed [2, 3]; urgency_score {min: 55, max: 85}
PASSPHRASES = DEMO_ACCOUNTS | {"rater-03": "rater-03 chose this passphrase"}
ROUND_ONE = {
    "rater-01": "AMEND {2} | Chest pain with a normal ECG is still emergent: ESI 2.",
    "rater-02": "AMEND {3} | Stable vitals and two resources: urgent, ESI 3.",
    "rater-03": "ACCEPT | ESI 2 or 3 are both defensible here.",
}
SECRET_REASON = "Round two: the panel shows 2 and 3 both defended; I accept either."
IDENTITY = {
    "full_name": "Dr Person Roundtest",
    "primary_qualification": "MBBS",
    "postgraduate_qualification": "FACEM",
    "registration_number": "MED0001234567",
    "registering_body": "Roundtest Board",
    "institution": "Roundtest Hospital",
    "email": "round@example.org",
}
DECLARE = ("not-an-author", "no-financial-interest", "consent-editor-disclosure")
ALPHA_COLUMNS = ("sub-action", "alpha", "95% interval", "sizes")


@pytest.fixture(scope="module")
def study(app_server, tmp_path_factory):
    """The app on one demo vignette, three raters, and round 1 handed back on paper."""
    folder = tmp_path_factory.mktemp("rounds-study")
    vignettes = folder / "vignettes"
    vignettes.mkdir()
    shutil.copy(DEMO_VIGNETTES / f"{VID}.yaml", vignettes)
    url = prepare_demo_database(folder, vignettes)
    server = app_server(
        FMA_BANDS_DATABASE_URL=url,
        FMA_BANDS_VIGNETTES=vignettes,
        FMA_BANDS_ATTESTATIONS=folder / "attestations",
        **coordinator_env(folder),
        **identity_key_env(folder),
    )
    code, secret = folder / "rater-03.code", folder / "rater-03.pass"
    secret.write_text(PASSPHRASES["rater-03"] + "\n", encoding="utf-8")
    run_cli(server.env, "user", "add", "rater-03", "--role", "rater", "--specialty",
            "emergency medicine", "--jurisdiction", "Australia", "--years", "8",
            "--code-file", str(code))  # fmt: skip
    run_cli(server.env, "user", "activate", "rater-03", "--code-file", str(code),
            "--passphrase-file", str(secret))  # fmt: skip
    for name, line in ROUND_ONE.items():
        paper = folder / f"{name}.txt"
        paper.write_text(
            f"{VID} | esi_acuity | {line}\n{VID} | urgency_score | ACCEPT | Fits the case.\n",
            encoding="utf-8",
        )
        run_cli(server.env, "handback", "import", str(paper), "--rater", name)
        record = folder / f"{name}-identity.yaml"
        record.write_text(yaml.safe_dump(IDENTITY | {"email": f"{name}@example.org"}))
        run_cli(server.env, "identity", "set", name, "--from", str(record))
    server.folder = folder  # type: ignore[attr-defined]
    return server


def sign_in_as(page: Page, url: str, name: str, landing: str) -> None:
    open_app(page, url)
    sign_in(page, name, PASSPHRASES[name])
    expect(page.get_by_role("heading", name=landing, level=1)).to_be_visible()


def round_one_alpha(page: Page) -> dict[str, dict[str, str]]:
    """The Agreement page's band-metric table of round 1, row by sub-action."""
    open_from_sidebar(page, "Agreement")
    frame = page.get_by_test_id("stDataFrame").first
    rows: dict[str, dict[str, str]] = {}

    def read() -> None:
        rows.clear()
        rows.update(dataframe_rows(frame))
        assert "pooled (stratified by sub-action)" in rows, rows

    eventually(page, read)
    return {k: {c: v.get(c, "") for c in ALPHA_COLUMNS} for k, v in rows.items()}


def revise_in_round_two(page: Page, reason: str) -> None:
    """From the queue: the panel as letters, then ACCEPT after it, with a reason."""
    open_from_sidebar(page, "My queue")
    follow_link(page, "Case 1 of 1 · ESI acuity level")
    expect(page.get_by_role("heading", name="Round 1: the panel's bands")).to_be_visible()
    main = page.get_by_test_id("stMain")
    for letter in ("Rater A", "Rater B", "Rater C"):
        expect(main.get_by_text(f"{letter}:", exact=False).first).to_be_visible()
    expect(main.get_by_text("Each admitted by 2 of 3: 2 - emergent to 3 - urgent")).to_be_visible()
    for name in ("rater-01", "rater-02", "rater-03"):
        expect(main.get_by_text(name, exact=False)).to_have_count(0)
    assert SECRET_REASON not in page.content()
    shoot(page, "rounds-panel")
    for number, choice in ((1, "yes"), (2, "yes"), (3, "no"), (4, "no"), (6, "yes")):
        choose(page, f"Answer to question {number}", choice)
    choose(page, "Verdict", "ACCEPT: the band stands as written")
    press(page, "Submit and next")
    expect(page.get_by_text("keep or revise your band", exact=False).first).to_be_visible()
    field = page.get_by_label("Reason", exact=True)
    field.fill(reason)
    field.blur()
    wait_for_app(page)
    press(page, "Submit and next")
    assert_no_exception(page)
    expect(page.get_by_text("Review submitted (round 2)", exact=False)).to_be_visible()


def test_a_disputed_band_reaches_consensus_in_round_two(study, browser: Browser, tmp_path):
    desk = browser.new_context().new_page()
    sign_in_as(desk, study.url, "coordinator", "Study admin")
    close_the_round(desk)
    before = round_one_alpha(desk)

    open_from_sidebar(desk, "Study admin")
    expect(desk.get_by_text("Round 1 is closed.", exact=True)).to_be_visible()
    expect(desk.get_by_text("1 band to re-review after round 1", exact=False)).to_be_visible()
    label = f"Case 1 of 1 · {VID} · ESI acuity level"
    candidates: dict[str, dict[str, str]] = {}

    def read_candidates() -> None:
        candidates.clear()
        candidates.update(dataframe_rows(desk.get_by_test_id("stDataFrame").first))
        assert label in candidates, candidates

    eventually(desk, read_candidates)
    assert candidates[label]["why"] == "no consensus"
    assert candidates[label]["admitted by some raters, not all"] == "2 - emergent to 3 - urgent"
    main = desk.get_by_test_id("stMain")
    expect(main.get_by_text(REASONS["no_consensus"].sentence, exact=False)).to_be_visible()
    chosen = main.get_by_test_id("stMultiSelect").filter(has_text="Bands for round 2")
    expect(chosen).to_contain_text(label)
    expect(chosen).not_to_contain_text("Urgency")
    # By reason: the candidates without consensus (here the same band).
    choose(desk, "Choose the candidates", "by reason")
    # The box is drawn by the run the choice starts: once it is there, that run is the one to
    # wait for (a click while it still runs lands on a box about to be drawn again).
    # In the middle of the window, as a person scrolls to a box at the window's lower edge
    # before opening it (its list opens below it).
    reasons = main.get_by_role("combobox", name="Reasons", exact=True)
    expect(reasons).to_be_visible()
    settle(desk)
    reasons.evaluate("box => box.scrollIntoView({block: 'center'})")
    reasons.click()
    desk.get_by_role("option", name="no consensus (1 band)", exact=True).click()
    desk.keyboard.press("Escape")  # the list stays open after a choice, over the page
    wait_for_app(desk)
    assert_no_exception(desk)
    expect(chosen).to_contain_text(label)
    expect(chosen).not_to_contain_text("Urgency")
    shoot(desk, "rounds-admin-candidates")
    opener = desk.get_by_role("button", name="Open round 2", exact=True)
    expect(opener).to_be_disabled()
    tick(desk, "I understand: open round 2 for these bands now")
    opener.click()
    wait_for_app(desk)
    assert_no_exception(desk)
    expect(
        desk.get_by_text(
            "Round 2 opened for 1 band: each is in its raters' queues now.", exact=True
        )
    ).to_be_visible()
    shoot(desk, "rounds-admin-round-two-open")

    for name, reason in (("rater-01", SECRET_REASON), ("rater-02", "The panel: 2 or 3.")):
        page = browser.new_context().new_page()
        sign_in_as(page, study.url, name, "My queue")
        revise_in_round_two(page, reason)
        shoot(page, f"rounds-{name}-after-round-two")
        page.context.close()
    paper = tmp_path / "rater-03-round-2.txt"
    paper.write_text(f"{VID} | esi_acuity | ACCEPT | Kept after the panel.\n", encoding="utf-8")
    run_cli(study.env, "handback", "import", str(paper), "--rater", "rater-03")

    close_the_round(desk)
    # What rater-01 will sign, shown before she signs: true of her round-2 review.
    page = browser.new_context().new_page()
    sign_in_as(page, study.url, "rater-01", "My queue")
    open_from_sidebar(page, "Sign attestation")
    shown = page.get_by_test_id("stMain").get_by_text("I adjudicated the acceptable-action bands")
    expect(shown).to_be_visible()
    statement = shown.inner_text().strip()
    # Her round-2 review alone: nothing in it says she judged alone.
    assert "after being shown the anonymised round-1 reviews of the same band" in statement
    assert "without seeing any other rater's work" not in statement
    # Her round-1 hand-back of the urgency band, once she confirms it: each part says its own.
    tick(page, "These are my verdicts: cover them with my signature")
    expect(shown).to_contain_text("those of round 1 in review mode")
    statement = shown.inner_text().strip()
    assert "; those of round 2 in review mode made after reading the proposed band" in statement
    shoot(page, "rounds-sign-statement-round-two")
    page.context.close()
    for name in ("rater-01", "rater-02", "rater-03"):
        secret = tmp_path / f"{name}.pass"
        secret.write_text(PASSPHRASES[name] + "\n", encoding="utf-8")
        declared = [part for d in DECLARE for part in ("--declare", d)]
        run_cli(study.env, "attest", "--rater", name, "--passphrase-file", str(secret),
                *declared, "--confirm-imported")  # fmt: skip
    (signed,) = Path(study.env["FMA_BANDS_ATTESTATIONS"]).glob("*-adjudication-rater-01-*")
    payload = json.loads(base64.b64decode(json.loads(signed.read_text())["payload"]))
    assert payload["predicate"]["declarations"]["statement"] == statement
    out = tmp_path / "bands.yaml"
    run_cli(study.env, "export", "--out", str(out))
    exported = {b["sub_action"]: b for b in yaml.safe_load(out.read_text())["bands"][VID]}
    esi = exported["esi_acuity"]
    assert (esi["provenance"], esi["x_round"], esi["acceptable"]) == (
        "clinician-adjudicated",
        2,
        [2, 3],
    )
    assert esi["adjudicated_by"] == ["rater-01", "rater-02", "rater-03"]
    assert esi["x_agreement"] == {"n_raters": 3, "intersection_rule": "applied"}
    assert exported["urgency_score"]["x_round"] == 1

    assert round_one_alpha(desk) == before
    expect(desk.get_by_text("Round 1, the independent round", exact=False)).to_be_visible()
    desk.get_by_test_id("stButtonGroup").get_by_text("Round 2: consensus-building").click()
    wait_for_app(desk)
    expect(desk.get_by_text("Round 2, consensus-building", exact=False)).to_be_visible()
    # The table of bands: round 2's one band, agreed on after the panel.
    bands: dict[str, dict[str, str]] = {}

    def read_bands() -> None:
        bands.clear()
        for frame in desk.get_by_test_id("stDataFrame").all():
            headers = frame.locator('[role="columnheader"]').all_inner_texts()
            if "consensus" in headers:
                # The coordinator reads each case by its number and id: "1 · demo_...".
                bands.update(
                    (case.split(" · ")[-1], row) for case, row in dataframe_rows(frame).items()
                )
        assert VID in bands, bands

    eventually(desk, read_bands)
    assert bands[VID]["consensus"] == "2 - emergent to 3 - urgent"
    shoot(desk, "rounds-agreement-round-two")
    desk.context.close()
