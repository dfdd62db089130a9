"""Changing a signed review in the browser signs the attestation again, so the old signature
never stands for a review the rater has since changed; and the new signature covers what the
rater signed before plus the change, never a hand-back the coordinator imported since.
Signed while round 1 is open, every attestation waits sealed in the store: the folder holds it
once the coordinator closes the round."""

import pytest
from sqlmodel import col, select
from streamlit.testing.v1 import AppTest

from app_pages.review_screen import screen_key
from fma_bands.core.protocol import DECLARATIONS
from fma_bands.evidence.registry import decide
from fma_bands.store.db import make_engine, session_scope, upgrade
from fma_bands.store.models import LogRecord
from fma_bands.study.enrolment import create_user
from fma_bands.study.governance import set_policy
from fma_bands.study.handback import import_handback
from fma_bands.study.identity import set_identity
from fma_bands.study.rounds import close_round
from fma_bands.study.signing import attest
from tests.conftest import HANDBACK, ROOT, SHARED_VIGNETTES, assign_all
from tests.page_helpers import case_params

IDENTITY = {
    "full_name": "Example Clinician",
    "primary_qualification": "MBBS",
    "postgraduate_qualification": "FACEM",
    "registration_number": "MED0000000001",
    "registering_body": "Example Medical Board",
    "institution": "Example Hospital",
    "email": "clinician@example.org",
}
PASSPHRASE = "rater passphrase"
KEY = screen_key("draft_triage_01", "esi_acuity")


@pytest.fixture
def signed_study(tmp_path, monkeypatch, shared_library):
    url = f"sqlite:///{tmp_path / 'x.db'}"
    folder = tmp_path / "attestations"
    for name, value in {
        "FMA_BANDS_DATABASE_URL": url,
        "FMA_BANDS_VIGNETTES": str(SHARED_VIGNETTES),
        "FMA_BANDS_ATTESTATIONS": str(folder),
        "FMA_BANDS_IDENTITY_KEY": str(tmp_path / "identity.key"),
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(ROOT)
    engine = make_engine(url)
    upgrade(engine)
    with session_scope(engine) as s:
        from fma_bands.study.library import sync_vignettes

        sync_vignettes(s, shared_library, actor="test")
        coordinator = create_user(
            s,
            actor=None,
            pseudonym="coordinator",
            passphrase="coordinator pass",
            role="coordinator",
        )
        rater = create_user(
            s,
            actor="coordinator",
            pseudonym="rater-01",
            passphrase=PASSPHRASE,
            root_passphrase="coordinator pass",
            role="rater",
            specialty="emergency medicine",
            jurisdiction="Australia",
            years_post_registration=9,
        )
        # The hand-back's follow-up band is outside her scope: the coordinator assigns first.
        assign_all(s, shared_library, coordinator, [rater])
        import_handback(
            s,
            shared_library,
            actor=coordinator,
            rater_pseudonym="rater-01",
            text=HANDBACK.read_text(),
            source="handback",
        )
        set_identity(
            s,
            actor=coordinator,
            pseudonym="rater-01",
            record=IDENTITY,
            key_path=tmp_path / "identity.key",
            passphrase="coordinator pass",
            folder=None,
        )
        set_policy(
            s, folder, actor=coordinator, passphrase="coordinator pass", quorum=1, scope="warn"
        )
    with session_scope(engine) as s:
        attest(
            s,
            shared_library,
            rater=rater,
            passphrase=PASSPHRASE,
            meaning="adjudication",
            declarations=list(DECLARATIONS),
            folder=folder,
            confirm_imported=True,
        )
    engine.dispose()
    import streamlit as st

    st.cache_data.clear()
    st.cache_resource.clear()
    return rater, folder, coordinator, engine


def signed_records(engine) -> list[str]:
    """The rater's attestation records in the store, sealed or not, in the log's order."""
    with session_scope(engine) as s:
        query = select(LogRecord.file_name).where(LogRecord.kind == "adjudication")
        names = list(s.exec(query.order_by(col(LogRecord.sequence))))
    engine.dispose()
    return names


def close(engine, coordinator, folder, library) -> dict:
    """The coordinator closes round 1, which publishes its sealed attestations to the folder;
    the registry's decisions from the folder then, by vignette."""
    with session_scope(engine) as s:
        close_round(s, actor=coordinator, folder=folder)
    engine.dispose()
    return {d.vignette_id: d for d in decide(library, folder).decisions}


def adjudications(folder) -> list:
    return sorted(folder.glob("*-adjudication-rater-01-*.dsse.json"))


def revise_triage(rater) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=30)
    at.session_state["user"] = rater.model_dump()
    at.run()
    at.switch_page("app_pages/review.py")
    for name, value in case_params("draft_triage_01", "esi_acuity").items():
        at.query_params[name] = value
    at.run()
    [revise] = [b for b in at.button if b.label == "Revise this review"]
    revise.click().run()
    at.radio(key=f"{KEY}:verdict").set_value("DECLINE").run()
    at.text_area(key=f"{KEY}:reason").set_value("On reflection, outside my scope.").run()
    return at


def submit(at: AppTest) -> AppTest:
    [button] = [b for b in at.button if b.label == "Submit and next"]
    return button.click().run()


def test_a_wrong_passphrase_submits_nothing_and_signs_nothing(signed_study, shared_library):
    rater, folder, coordinator, engine = signed_study
    before = signed_records(engine)
    assert len(before) == 1 and not adjudications(folder)  # sealed while round 1 is open
    at = revise_triage(rater)
    at.text_input(key=f"{KEY}:passphrase").set_value("not the passphrase").run()
    submit(at)
    assert not at.exception
    assert any("that passphrase is not right" in e.value for e in at.error)
    assert signed_records(engine) == before
    decisions = close(engine, coordinator, folder, shared_library)
    assert [p.name for p in adjudications(folder)] == before
    # The signed ACCEPT still stands.
    assert decisions["draft_triage_01"].provenance == "clinician-adjudicated"


def test_submitting_a_change_signs_again_and_supersedes(signed_study, shared_library):
    rater, folder, coordinator, engine = signed_study
    at = revise_triage(rater)
    assert any("Your signed attestation covers this band" in i.value for i in at.info)
    at.text_input(key=f"{KEY}:passphrase").set_value(PASSPHRASE).run()
    submit(at)
    assert not at.exception
    [success] = [s.value for s in at.success]
    assert success.startswith("Review submitted (revision 2) and your attestation signed again.")
    assert len(signed_records(engine)) == 2  # two attestations
    decisions = close(engine, coordinator, folder, shared_library)
    assert len(adjudications(folder)) == 2
    # The newer signature carries the DECLINE, which counts for nothing: the band falls back.
    assert decisions["draft_triage_01"].provenance == "author-derived"
    assert "declined" in [r.code for r in decisions["draft_triage_01"].reasons]
    assert decisions["draft_documentation_01"].provenance == "clinician-adjudicated"


def statement_reviews(path):
    import base64
    import json

    payload = json.loads(base64.b64decode(json.loads(path.read_text())["payload"]))
    return {(r["vignette_id"], r["sub_action"]): r for r in payload["predicate"]["reviews"]}


def test_signing_again_from_the_review_page_covers_no_later_import(signed_study, shared_library):
    """The attack: after she signed, the coordinator imports a hand-back in her name;
    she revises one other band and gives her passphrase. The imported line must not ride in."""
    rater, folder, coordinator, engine = signed_study
    with session_scope(engine) as s:
        import_handback(
            s,
            shared_library,
            actor=coordinator,
            rater_pseudonym="rater-01",
            text="draft_ordering_01 | esi_acuity | AMEND {1, 2, 3, 4, 5} | entered for her\n",
            source="not-hers.txt",
        )
    engine.dispose()
    at = revise_triage(rater)
    at.text_input(key=f"{KEY}:passphrase").set_value(PASSPHRASE).run()
    submit(at)
    assert not at.exception
    decisions = close(engine, coordinator, folder, shared_library)
    first, second = adjudications(folder)  # the log's order: the file names begin with it
    before, after = statement_reviews(first), statement_reviews(second)
    ordering = ("draft_ordering_01", "esi_acuity")
    assert after[ordering] == before[ordering]  # her own signed AMEND {2, 3}, not the import
    assert after[ordering]["attested_band"] == [2, 3]
    assert after[("draft_triage_01", "esi_acuity")]["verdict"] == "DECLINE"
    assert after[("draft_triage_01", "esi_acuity")]["origin"] == "app"
    assert decisions["draft_ordering_01"].as_dict()["acceptable"] == [2, 3]


def test_the_coordinators_passphrase_signs_nothing_on_any_page(signed_study, shared_library):
    """Even in a rater's browser session, the coordinator's passphrase neither signs an
    attestation nor signs again after a change: the rater's key opens with hers alone."""
    rater, _, _, engine = signed_study
    before = signed_records(engine)
    at = revise_triage(rater)
    at.text_input(key=f"{KEY}:passphrase").set_value("coordinator pass").run()
    submit(at)
    assert any("that passphrase is not right" in e.value for e in at.error)

    # The refused change was not submitted: the Sign attestation page has nothing new to sign,
    # whatever passphrase is typed (tests/study/test_signing.py refuses the coordinator's there).
    at.switch_page("app_pages/attest.py").run()
    assert not at.exception
    assert any(
        s.value.startswith("Your latest review of every band you submitted is signed")
        for s in at.success
    )
    # No form to sign nothing: no passphrase asked for, no greyed button.
    assert not [b for b in at.button if b.label == "Sign attestation"]
    assert not at.text_input and not at.checkbox
    assert any(c.value.startswith("There is nothing new to sign") for c in at.caption)
    assert signed_records(engine) == before
