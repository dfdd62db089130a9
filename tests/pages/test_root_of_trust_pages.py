"""The pages of the study's root of trust under streamlit's AppTest (docs/trust.md): the
coordinator signs the registry policy with the root key on Study admin; a rater who signs is shown
and offered a receipt, and sees their attestation sealed while the round is open; the steward
co-signs a pending policy on Approve changes, and only then does it take effect."""

import json

import pytest
from sqlmodel import col, select

from fma_bands.evidence.log import read_evidence
from fma_bands.evidence.policy import Policy
from fma_bands.store.models import AuditEvent, LogRecord, User
from fma_bands.study.enrolment import activate, enrol
from fma_bands.study.governance import awaiting, policy_in_force
from fma_bands.study.identity import set_identity
from fma_bands.study.rounds import close_round
from tests import page_helpers
from tests.page_helpers import (
    BANDS,
    GOOD_ANSWERS,
    PASSPHRASES,
    as_read,
    by_label,
    click,
    go,
    open_app,
    run,
    shown,
    title,
)

fresh_caches, app_env, template, study = (
    page_helpers.fresh_caches,
    page_helpers.app_env,
    page_helpers.template,
    page_helpers.study,
)

POLICY_PASSPHRASE = "Your passphrase (it unlocks the study's root key, which signs the policy)"
IDENTITY = {
    "full_name": "Example Clinician",
    "primary_qualification": "MBBS",
    "postgraduate_qualification": "FACEM",
    "registration_number": "MED0000000001",
    "registering_body": "Example Medical Board",
    "institution": "Example Hospital",
    "email": "clinician@example.org",
}
STEWARD_PASS = "the steward's own passphrase"


@pytest.fixture
def folder(study, tmp_path):
    return tmp_path / "attestations"  # where app_env points the app


def log_kinds(study) -> list[str]:
    with study.store() as s:
        return list(s.exec(select(LogRecord.kind).order_by(col(LogRecord.sequence))))


# The registry policy -----------------------------------------------------------------------


def sign_policy(at, quorum: int, scope: str, passphrase: str):
    by_label(at.number_input, "Quorum: attesting adjudicators a band needs").set_value(quorum)
    by_label(at.radio, "Specialty scope rule").set_value(scope)
    by_label(at.text_input, POLICY_PASSPHRASE).input(passphrase)
    return click(at, "Sign the policy")


def test_the_coordinator_signs_the_policy_with_the_root_passphrase(study, folder):
    at = open_app(study.coordinator)
    assert title(at) == "Study admin"
    assert any("No policy is signed yet" in w.value for w in at.warning)
    before = log_kinds(study)
    sign_policy(at, 2, "require", "not the passphrase")
    assert [e.value for e in at.error] == ["that passphrase is not right; nothing was signed"]
    assert not [s for s in at.success if s.value.startswith("Policy signed")]
    assert log_kinds(study) == before
    with study.store() as s:
        assert policy_in_force(s) is None

    sign_policy(at, 2, "require", PASSPHRASES["coordinator"])
    assert not at.error
    assert [s.value for s in at.success if s.value.startswith("Policy signed")] == [
        "Policy signed into the study's log: quorum 2, scope require, no chair."
    ]
    assert at.text_input(key="policy:passphrase").value == ""  # the passphrase is not kept
    assert log_kinds(study) == [*before, "policy"]
    with study.store() as s:
        assert policy_in_force(s) == Policy(2, "require")
    evidence = read_evidence(folder)
    assert evidence.valid, evidence.problems
    assert evidence.policy == Policy(2, "require")
    assert "quorum: 2" in (folder / "policy.yaml").read_text(encoding="utf-8")


# A rater's identity: its commitment is root-signed into the roster ---------------------------

IDENTITY_PASSPHRASE = (
    "Your passphrase (it unlocks the study's root key, which signs the commitment)"
)


def record_identity(at, passphrase: str):
    at.selectbox[0].set_value("rater-01")
    for field, value in IDENTITY.items():
        at.text_input(key=f"identity:{field}").input(value)
    by_label(at.text_input, IDENTITY_PASSPHRASE).input(passphrase)
    return click(at, "Record identity")


def test_a_rater_identity_is_signed_into_the_roster_with_the_root_passphrase(
    study, folder, tmp_path, monkeypatch
):
    monkeypatch.setenv("FMA_BANDS_IDENTITY_KEY", str(tmp_path / "identity.key"))
    at = go(open_app(study.coordinator), "app_pages/identity.py")
    before = log_kinds(study)
    record_identity(at, "not the passphrase")
    assert [e.value for e in at.error] == ["that passphrase is not right; nothing was signed"]
    assert at.text_input(key="identity:passphrase").value == ""  # not left on screen
    assert at.text_input(key="identity:full_name").value == IDENTITY["full_name"]  # kept
    assert log_kinds(study) == before
    with study.store() as s:
        assert not s.exec(
            select(User.identity_commitment).where(User.pseudonym == "rater-01")
        ).first()

    record_identity(at, PASSPHRASES["coordinator"])
    assert not at.error
    assert [s.value for s in at.success if s.value.startswith("Identity of rater-01")]
    assert at.text_input(key="identity:passphrase").value == ""
    assert at.text_input(key="identity:full_name").value == ""
    assert log_kinds(study) == [*before, "identity"]
    with study.store() as s:
        commitment = s.exec(
            select(User.identity_commitment).where(User.pseudonym == "rater-01")
        ).first()
    published = read_evidence(folder).records()["rater-01"]
    assert commitment and published["identity_commitment"] == commitment
    at.selectbox[0].set_value("rater-01").run()
    assert any("Recording it again replaces it" in c.value for c in at.caption)

    # Revealed for an editor: a table of the fields in words and the file the editor checks
    # (the same record the command prints), never raw JSON; the reveal is audited.
    click(at, "Reveal rater-01's identity (audited)")
    assert not at.exception and not at.get("json")
    [table] = [d.value for d in at.dataframe if "field" in d.value.columns]
    assert list(zip(table["field"], table["value"], strict=True)) == [
        (f.replace("_", " ").capitalize(), v) for f, v in IDENTITY.items()
    ]  # in the order the form asks for them
    [download] = at.get("download_button")
    assert download.proto.label == "Download the record for the editor (YAML)"
    with study.store() as s:
        kinds = [e.kind for e in s.exec(select(AuditEvent))]
    assert kinds[-1] == "identity_revealed"


# Signing: the receipt, and the seal ------------------------------------------------------


@pytest.fixture
def reviewed(study, tmp_path, monkeypatch):
    """rater-01 has submitted a review of every band, and the coordinator has recorded her
    private identity: she can sign."""
    monkeypatch.setenv("FMA_BANDS_IDENTITY_KEY", str(tmp_path / "identity.key"))
    for band in BANDS:
        study.save(study.rater, band, submit=True, verdict="ACCEPT", answers=GOOD_ANSWERS)
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


def sign(at, passphrase: str = PASSPHRASES["rater-01"]):
    for box in at.checkbox:
        if box.key.startswith("declare:"):
            box.check()
    at.text_input(key="attest:passphrase").input(passphrase)
    return click(at, "Sign attestation")


@pytest.fixture
def served(monkeypatch) -> dict[str, dict]:
    """What each download button the app draws would serve, by label: AppTest shows the
    button, not the bytes behind it."""
    import streamlit as st

    found: dict[str, dict] = {}
    original = st.download_button

    def download_button(label, data, *args, **kwargs):
        found[label] = {"data": data, "file_name": kwargs.get("file_name")}
        return original(label, data, *args, **kwargs)

    monkeypatch.setattr(st, "download_button", download_button)
    return found


def test_signing_shows_and_offers_the_receipt(reviewed, folder, served):
    at = open_app(reviewed.rater, "app_pages/attest.py")
    assert title(at) == "Sign your attestation"
    assert not at.download_button
    sign(at)
    assert [s.value for s in at.success] == [
        "Signed. Your signature and your receipt:",
        # Signed exactly as it is now: nothing is offered to sign again.
        "Your latest review of every band you submitted is signed, exactly as it is now. While "
        "the round is open, change a review or submit a new one, and you can sign again.",
    ]
    # No form to sign nothing: no passphrase asked for, no greyed button.
    assert not [b for b in at.button if b.label == "Sign attestation"]
    assert any(c.value.startswith("There is nothing new to sign") for c in at.caption)
    with reviewed.store() as s:
        close_round(s, actor=reviewed.coordinator)
    closed = open_app(reviewed.rater, "app_pages/attest.py")
    assert (
        "Your latest review of every band you submitted is signed, exactly as it is now. No "
        "round is open: there is nothing more to sign unless a new round opens."
    ) in [s.value for s in closed.success]
    fields = {m.value for m in at.markdown}
    with reviewed.store() as s:
        [record] = s.exec(select(LogRecord).where(LogRecord.kind == "adjudication")).all()
        keyid = json.loads(record.envelope)["signatures"][0]["keyid"]
        sequence, digest, name = record.sequence, record.digest, record.file_name
    assert keyid == reviewed.rater.keyid  # her own key, the one her activation named
    assert {
        "**Printed name:** rater\\-01",  # a name is escaped, never markup
        "**Meaning:** adjudication",
        f"**Place in the study's log:** {sequence}",
        "**Key fingerprint**",
        "**Head after signing**",
    } <= fields
    # The long values whole, each in a block of its own (never cut).
    assert [c.value for c in at.code] == [keyid, f"{sequence}:{digest}"]
    # The receipt to keep: the same key, record and head, and where the record is.
    assert [b.label for b in at.download_button] == ["Download your receipt"]
    assert served["Download your receipt"]["file_name"] == "receipt-rater-01.json"
    receipt = json.loads(served["Download your receipt"]["data"])
    assert receipt["pseudonym"] == "rater-01"
    assert receipt["key_fingerprint"] == keyid
    assert receipt["records"] == [{"sequence": sequence, "digest": digest, "file": name}]
    assert receipt["head"] == {"sequence": sequence, "digest": digest}
    assert receipt["since"] == f"{sequence}:{digest}"
    assert receipt["in_folder"] == "when round 1 closes"
    assert any(
        f"fma-bands verify --since {sequence}:{digest}" in c.value
        and "reach the attestations folder when round 1 closes" in c.value
        for c in at.caption
    )
    # No form is left, and the passphrase with it: nothing is on screen to sign.
    assert not [t for t in at.text_input if t.key == "attest:passphrase"]


def test_an_attestation_signed_in_an_open_round_is_sealed_until_it_closes(reviewed, folder):
    at = open_app(reviewed.rater, "app_pages/attest.py")
    sign(at)
    run(at)  # the next visit
    assert any(h.value == "Your attestations on file" for h in at.subheader)
    [line] = [as_read(c.value) for c in at.caption if "-adjudication-rater-01-" in as_read(c.value)]
    assert "4 bands, sealed until round 1 closes (record " in line
    # Nobody who reads the folder sees her work while the round is open.
    assert not list(folder.glob("*-adjudication-*"))
    with reviewed.store() as s:
        close_round(s, actor=reviewed.coordinator, folder=folder)
    [published] = folder.glob("*-adjudication-rater-01-*.dsse.json")
    at = open_app(reviewed.rater, "app_pages/attest.py")
    [line] = [as_read(c.value) for c in at.caption if "-adjudication-rater-01-" in as_read(c.value)]
    record = int(published.name.split("-")[0])
    assert line.endswith(
        f"4 bands, in the attestations folder (record {record}, file {published.name})"
    )
    assert "sealed until" not in shown(at)


# The steward ---------------------------------------------------------------------------------


def enrol_steward(study, folder):
    """The coordinator enrols a steward with the root key; the steward activates with the code
    and a passphrase of their own: from now on the root's threshold is 2."""
    with study.store() as s:
        _, code = enrol(
            s,
            actor=study.coordinator,
            passphrase=PASSPHRASES["coordinator"],
            folder=folder,
            pseudonym="steward-01",
            role="steward",
        )
    with study.store() as s:
        steward = activate(
            s, pseudonym="steward-01", code=code, passphrase=STEWARD_PASS, folder=folder
        )
    assert steward is not None
    return steward


def test_the_steward_approves_a_pending_policy_on_their_page(study, folder):
    steward = enrol_steward(study, folder)
    admin = sign_policy(open_app(study.coordinator), 2, "require", PASSPHRASES["coordinator"])
    assert not admin.error
    assert [s.value for s in admin.success if s.value.startswith("Policy signed")] == [
        "Policy signed; it takes effect once the steward approves it."
    ]
    with study.store() as s:
        assert policy_in_force(s) is None  # awaiting the steward's signature
        [pending] = awaiting(s, "steward-01")
        pending_file = pending.file_name
    at = open_app(steward)
    assert title(at) == "Approve changes"
    [frame] = [d.value for d in at.dataframe]
    assert frame.to_dict("records") == [
        {
            "record": pending.sequence,
            "change": "registry policy",
            "concerns": "the whole study",
            "signed by": "coordinator",
            "file": pending_file,
        }
    ]
    [button] = [b for b in at.button if b.label.startswith("Sign my approval")]
    assert button.label == "Sign my approval of 1 change(s)"

    at.text_input(key="approve:passphrase").input(PASSPHRASES["coordinator"])
    click(at, "Sign my approval of 1 change(s)")
    assert [e.value for e in at.error] == ["that passphrase is not right; nothing was signed"]
    with study.store() as s:
        assert policy_in_force(s) is None

    at.text_input(key="approve:passphrase").input(STEWARD_PASS)
    click(at, "Sign my approval of 1 change(s)")
    assert not at.error
    assert [as_read(s.value) for s in at.success] == ["Approved 1 change(s)."]
    assert [i.value for i in at.info] == ["No change awaits your signature."]
    with study.store() as s:
        assert policy_in_force(s) == Policy(2, "require")
        assert awaiting(s, "steward-01") == []
    evidence = read_evidence(folder)
    assert evidence.valid, evidence.problems
    assert evidence.policy == Policy(2, "require")
    assert evidence.chain[-1].kind == "approval"


def test_the_stewards_pages_are_approvals_and_their_passphrase(study, folder):
    steward = enrol_steward(study, folder)
    at = open_app(steward)
    assert [i.value for i in at.info] == ["No change awaits your signature."]
    go(at, "app_pages/passphrase.py")
    assert title(at) == "Change your passphrase"
    for page in ("app_pages/admin.py", "app_pages/attest.py", "app_pages/review.py"):
        with pytest.raises(ValueError, match="page"):
            at.switch_page(page)
