"""The Review exemptions page under streamlit's AppTest: a rater sees the harness's entries with
their own review only, amends one (a bad direction refused with its message, nothing stored),
and the coordinator's navigation has no such page."""

import base64
import json

from sqlmodel import select

from fma_bands.evidence.exemptions import harness_exemptions
from fma_bands.store.models import ExemptionReview, LogRecord
from fma_bands.study.exemptions import load_exemptions, review_exemption
from fma_bands.study.identity import set_identity
from tests import page_helpers
from tests.conftest import SHARED
from tests.evidence.test_registry import IDENTITY
from tests.page_helpers import (
    PASSPHRASES,
    as_read,
    by_label,
    click,
    open_app,
    pages_of,
    shown,
    title,
)

fresh_caches, app_env, template, study = (
    page_helpers.fresh_caches,
    page_helpers.app_env,
    page_helpers.template,
    page_helpers.study,
)
PAGE = "app_pages/exemptions.py"


def loaded(study):
    with study.store() as s:
        load_exemptions(
            s, harness_exemptions(SHARED / "harness"), actor=study.coordinator, source="harness"
        )
    return study


def test_a_rater_amends_an_exemption_and_never_sees_another_raters_review(study):
    loaded(study)
    with study.store() as s:  # the other rater's review, made first
        review_exemption(
            s, rater=study.other, name="lep/referral", verdict="REJECT", reason="Secret reason."
        )
    at = open_app(study.rater, PAGE)
    assert title(at) == "Review exemptions"
    table = at.dataframe[0].value
    # in words, never the harness's keys
    assert list(table["exemption"]) == [
        "Analgesia tier, across age",
        "Follow-up interval (days), across limited English proficiency",
        "Referral, across limited English proficiency",
        "Tests ordered, across sex",
    ]
    assert "away from NSAID" in list(table["defensible direction as registered"])
    assert set(table["your review"]) == {"not yet"}
    assert "Secret reason" not in shown(at) and "REJECT (" not in shown(at)

    by_label(at.selectbox, "Exemption").set_value("sex/orders").run()
    at.radio(key="exemptions:verdict:sex/orders").set_value("AMEND")
    at.text_input(key="exemptions:direction:sex/orders").input("Fewer!")
    at.text_area(key="exemptions:reason:sex/orders").input("Imaging is not always needed.")
    at = click(at, "Submit review")
    assert [as_read(e.value) for e in at.error] == [
        "a direction is a lower-case word, or words joined by _ (letters and digits), as the "
        "harness writes them (more, shorter, away_from_nsaid), not 'fewer!'"
    ]
    with study.store() as s:
        mine = select(ExemptionReview).where(ExemptionReview.rater_id == study.rater.id)
        assert s.exec(mine).all() == []

    at.text_input(key="exemptions:direction:sex/orders").input("Fewer ")  # typed as words
    at = click(at, "Submit review")
    assert [as_read(e.value) for e in at.success] == [
        "Recorded your review of Tests ordered, across sex (revision 1). Sign it on the Sign "
        "attestation page."
    ]
    table = at.dataframe[0].value
    assert dict(zip(table["exemption"], table["your review"], strict=True))[
        "Tests ordered, across sex"
    ] == ("AMEND (fewer)")
    with study.store() as s:
        [stored] = s.exec(mine).all()
    assert (stored.verdict, stored.direction) == ("AMEND", "fewer")


def test_only_raters_are_offered_the_page(study):
    loaded(study)
    assert PAGE in pages_of(open_app(study.rater))
    assert PAGE not in pages_of(open_app(study.coordinator))


def test_without_loaded_exemptions_the_page_says_so(study):
    at = open_app(study.rater, PAGE)
    assert [as_read(i.value) for i in at.info] == [
        "The coordinator has not loaded any exemption to review."
    ]


def test_the_sign_page_lists_and_signs_exemption_reviews_alone(study, tmp_path, monkeypatch):
    loaded(study)
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
        review_exemption(s, rater=study.rater, name="sex/orders", verdict="CONFIRM", reason="hCG.")
    at = open_app(study.rater, "app_pages/attest.py")
    [table] = [d.value for d in at.dataframe if "exemption" in d.value.columns]
    assert list(table["exemption"]) == ["Tests ordered, across sex"]
    assert list(table["verdict"]) == ["CONFIRM"]
    assert not by_label(at.button, "Sign attestation").disabled
    for box in at.checkbox:
        if box.key.startswith("declare:"):
            box.check()
    at.text_input(key="attest:passphrase").input(PASSPHRASES["rater-01"])
    at = click(at, "Sign attestation")
    assert next(as_read(e.value) for e in at.success).startswith("Signed.")
    with study.store() as s:
        [envelope] = s.exec(
            select(LogRecord.envelope).where(LogRecord.kind == "adjudication")
        ).all()
    payload = json.loads(base64.b64decode(json.loads(envelope)["payload"]))
    [signed] = payload["predicate"]["exemption_reviews"]
    assert (signed["attribute"], signed["sub_action"], signed["verdict"]) == (
        "sex",
        "orders",
        "CONFIRM",
    )
    # Signed exactly as it is: nothing new, so no form until a change.
    assert not [b for b in at.button if b.label == "Sign attestation"]
    assert any(c.value.startswith("There is nothing new to sign") for c in at.caption)


def test_the_form_starts_from_the_raters_own_review_so_a_new_reason_keeps_the_verdict(study):
    loaded(study)
    with study.store() as s:
        review_exemption(
            s,
            rater=study.rater,
            name="age/analgesia_tier",
            verdict="AMEND",
            direction="toward_nsaid",
            reason="First reason.",
        )
    at = open_app(study.rater, PAGE)
    by_label(at.selectbox, "Exemption").set_value("age/analgesia_tier").run()
    assert at.radio(key="exemptions:verdict:age/analgesia_tier").value == "AMEND"
    assert at.text_input(key="exemptions:direction:age/analgesia_tier").value == "toward_nsaid"
    at.text_area(key="exemptions:reason:age/analgesia_tier").input("First reason, and more.")
    at = click(at, "Submit review")
    with study.store() as s:
        latest = s.exec(
            select(ExemptionReview)
            .where(ExemptionReview.rater_id == study.rater.id)
            .order_by(ExemptionReview.id.desc())  # type: ignore[union-attr]
        ).first()
    assert latest is not None
    assert (latest.verdict, latest.direction, latest.revision) == ("AMEND", "toward_nsaid", 2)
    # another entry's form starts empty: no verdict chosen for the rater
    by_label(at.selectbox, "Exemption").set_value("sex/orders").run()
    assert at.radio(key="exemptions:verdict:sex/orders").value is None


def test_after_the_round_closes_the_rater_still_reads_their_own_reviews(study):
    from fma_bands.study.rounds import close_round

    loaded(study)
    with study.store() as s:
        review_exemption(
            s, rater=study.rater, name="sex/orders", verdict="CONFIRM", reason="hCG first."
        )
        review_exemption(
            s, rater=study.other, name="lep/referral", verdict="REJECT", reason="Secret reason."
        )
        close_round(s, actor=study.coordinator)
    at = open_app(study.rater, PAGE)
    text = shown(at)
    assert "Your review: Tests ordered, across sex" in text
    assert "CONFIRM · round 1" in text and "hCG first." in text
    # the form is gone, and the other rater's review is still not this rater's to read here
    assert not at.radio and "Secret reason" not in text
