"""The Sign attestation page under streamlit's AppTest: the statement it shows before signing is
exactly the one the signature carries, and it is true of the mode of each review it covers
(docs/design.md, Blinding and rounds)."""

import base64
import json

import pytest
from sqlmodel import col, select

from fma_bands.core.protocol import statement_text
from fma_bands.store.models import LogRecord
from fma_bands.study.identity import set_identity
from fma_bands.study.state import set_mode
from tests import page_helpers
from tests.page_helpers import (
    DOC,
    GOOD_ANSWERS,
    MED,
    ORDER,
    PASSPHRASES,
    TRIAGE,
    as_read,
    click,
    open_app,
    title,
)

fresh_caches, app_env, template, study = (
    page_helpers.fresh_caches,
    page_helpers.app_env,
    page_helpers.template,
    page_helpers.study,
)
IDENTITY = {
    "full_name": "Example Clinician",
    "primary_qualification": "MBBS",
    "postgraduate_qualification": "FACEM",
    "registration_number": "MED0000000001",
    "registering_body": "Example Medical Board",
    "institution": "Example Hospital",
    "email": "clinician@example.org",
}
BLIND_BANDS = {DOC: {"min": 1, "max": 14}, TRIAGE: [2]}


@pytest.fixture
def identified(study, tmp_path, monkeypatch):
    """The coordinator has recorded rater-01's private identity: she can sign."""
    monkeypatch.setenv("FMA_BANDS_IDENTITY_KEY", str(tmp_path / "identity.key"))
    with study.store() as s:
        set_identity(
            s,
            actor=study.coordinator,
            pseudonym="rater-01",
            record=IDENTITY,
            key_path=tmp_path / "identity.key",
            passphrase=PASSPHRASES["coordinator"],
            folder=None,
        )
    return study


def review_in(study, mode: str, bands) -> None:
    """rater-01 submits a review of each band in `mode`: ACCEPT after reading the proposal in
    review mode, her own band in blind mode."""
    with study.store() as s:
        set_mode(s, actor=study.coordinator, mode=mode)
    for band in bands:
        if mode == "review":
            study.save(study.rater, band, submit=True, verdict="ACCEPT", answers=GOOD_ANSWERS)
        else:
            written = BLIND_BANDS[band]
            study.save(
                study.rater, band, submit=True, verdict="AMEND", band=written, reason="my own"
            )


def statement_shown(at) -> str:
    [heading] = [i for i, h in enumerate(at.main.children.values()) if _is(h, "Statement")]
    return as_read(list(at.main.children.values())[heading + 1].value)


def _is(element, text: str) -> bool:
    return getattr(element, "type", "") == "subheader" and element.value == text


def sign(at):
    for box in at.checkbox:
        if box.key.startswith("declare:"):
            box.check()
    at.text_input(key="attest:passphrase").input(PASSPHRASES["rater-01"])
    return click(at, "Sign attestation")


def signed_statement(study) -> str:
    with study.store() as s:
        [envelope] = s.exec(
            select(LogRecord.envelope)
            .where(LogRecord.kind == "adjudication")
            .order_by(col(LogRecord.sequence))
        ).all()
    payload = json.loads(base64.b64decode(json.loads(envelope)["payload"]))
    return payload["predicate"]["declarations"]["statement"]


@pytest.mark.parametrize(
    ("modes", "kinds"),
    [
        (("blind",), [(1, "blind")]),
        (("review", "blind"), [(1, "review"), (1, "blind")]),
    ],
    ids=["blind", "review-and-blind"],
)
def test_the_page_shows_the_exact_statement_it_signs(identified, modes, kinds):
    if modes == ("blind",):
        review_in(identified, "blind", [DOC, TRIAGE])
    else:
        review_in(identified, "review", [MED, ORDER])
        review_in(identified, "blind", [DOC, TRIAGE])
    at = open_app(identified.rater, "app_pages/attest.py")
    assert title(at) == "Sign your attestation"
    expected = statement_text(kinds)
    assert statement_shown(at) == expected
    if modes == ("blind",):
        assert "written without seeing the proposed band" in expected
        assert "after reading the proposed band" not in expected
    else:
        assert "those of round 1 in blind mode written without seeing" in expected
        assert "those of round 1 in review mode made after reading the proposed band" in expected
    sign(at)
    assert "Signed. Your signature and your receipt:" in [s.value for s in at.success]
    assert signed_statement(identified) == expected


def test_signed_after_the_round_closed_the_receipt_says_the_records_are_in_the_folder(
    identified,
):
    from fma_bands.study.rounds import close_round

    review_in(identified, "review", [MED])
    with identified.store() as s:
        close_round(s, actor=identified.coordinator)
    at = sign(open_app(identified.rater, "app_pages/attest.py"))
    said = " ".join(as_read(c.value) for c in at.caption)
    assert "They are in the attestations folder now: no round is open." in said
    assert "while the round is open" not in said
    assert "once your records are in the folder" not in said


def test_a_declaration_left_unticked_is_named_in_its_own_words(identified):
    from fma_bands.core.protocol import DECLARATIONS

    review_in(identified, "review", [MED])
    at = open_app(identified.rater, "app_pages/attest.py")
    first, *others = [box for box in at.checkbox if box.key.startswith("declare:")]
    first.check()
    at.text_input(key="attest:passphrase").input(PASSPHRASES["rater-01"])
    at = click(at, "Sign attestation")
    [error] = at.error
    said = as_read(error.value)
    assert said.startswith("Nothing was signed: tick every declaration first. Not yet ticked:")
    for box in others:
        assert f"“{DECLARATIONS[box.key.removeprefix('declare:')]}”" in said
        assert box.key.removeprefix("declare:") not in said  # no code beside the words
    assert f"“{DECLARATIONS[first.key.removeprefix('declare:')]}”" not in said
    assert not signed_records(identified)


def signed_records(study) -> list[str]:
    with study.store() as s:
        return list(s.exec(select(LogRecord.kind).where(LogRecord.kind == "adjudication")))


def test_the_receipt_can_be_downloaded_again_on_a_later_visit(identified):
    review_in(identified, "review", [MED])
    first = open_app(identified.rater, "app_pages/attest.py")
    assert not downloads(first)  # nothing on file yet
    sign(first)
    later = open_app(identified.rater, "app_pages/attest.py")
    assert "Download your receipt (every record above)" in downloads(later)


def downloads(at) -> list[str]:
    return [e.proto.label for e in at.get("download_button")]
