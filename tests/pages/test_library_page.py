"""The library and vignette pages under streamlit's AppTest."""

import os
import re

import pytest
from streamlit.testing.v1 import AppTest

from fma_bands.core.labels import RESULT_MARK
from tests.conftest import ROOT
from tests.page_helpers import as_read, case_params

METRIC_WORDS = re.compile(r"straddl|within-range|flip|dividing line", re.IGNORECASE)


@pytest.fixture
def app(monkeypatch, shared_vignettes, tmp_path):
    """The app on the FairMedAgent vignettes with a signed-in rater."""
    from fma_bands.store.db import make_engine, session_scope, upgrade
    from fma_bands.study.enrolment import create_user

    url = f"sqlite:///{tmp_path / 'fma-bands.db'}"
    monkeypatch.setenv("FMA_BANDS_VIGNETTES", str(shared_vignettes))
    monkeypatch.setenv("FMA_BANDS_DATABASE_URL", url)
    monkeypatch.setenv("FMA_BANDS_ATTESTATIONS", str(tmp_path / "attestations"))
    monkeypatch.chdir(ROOT)
    engine = make_engine(url)
    upgrade(engine)
    with session_scope(engine) as s:
        create_user(
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
            passphrase="rater passphrase",
            root_passphrase="coordinator pass",
            role="rater",
            specialty="emergency medicine",
            jurisdiction="Australia",
            years_post_registration=5,
        )
    engine.dispose()
    import streamlit as st

    st.cache_data.clear()
    st.cache_resource.clear()
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=20)
    at.session_state["user"] = rater.model_dump()
    at.run()
    at.switch_page("app_pages/library.py")
    return at


def text_of(at) -> str:
    parts = [as_read(m.value) for m in (*at.markdown, *at.caption, *at.title, *at.subheader)]
    parts += [t.value for t in at.text]
    return "\n".join(parts)


def test_library_lists_every_vignette_without_canaries(app):
    app.run()
    assert not app.exception
    shown = text_of(app)
    assert "16 vignettes in the study" in shown
    assert "CANARY" not in shown
    # A rater reads case labels, ten to a page, never ids or strata.
    links = [link.label for link in app.get("page_link")]
    assert len(links) == 10 and all(label.startswith("Case ") for label in links)
    assert "draft_" not in shown and "Stratum" not in shown and "stratum" not in shown
    # One domain's cases (the study's key decides which cases the first page of all holds).
    app.segmented_control(key="library_domain").set_value("medication").run()
    shown = text_of(app)
    assert "**Analgesia tier**" in shown and "1 - NSAID, 2 - weak opioid" in shown
    app.segmented_control(key="library_domain").set_value("triage").run()
    assert "substernal chest pressure" in text_of(app)


def open_vignette(app, vid: str):
    app.run()
    app.switch_page("app_pages/vignette.py")
    app.query_params["case"] = case_params(vid)["case"]  # a rater's address: the case's token
    app.run()
    assert not app.exception
    return text_of(app)


def test_vignette_page_shows_core_results_and_proposal(app):
    shown = open_vignette(app, "draft_documentation_01")
    assert app.title[0].value.startswith("Case ")
    assert "poorly-controlled diabetes" in shown
    assert "**The proposed band: what it accepts**" in shown and "1 day to 14 days" in shown
    assert "**Disputed span**" in shown and "15 days to 30 days" in shown
    assert "CANARY" not in shown
    # Follow-up is decided at documentation: the results are shown, each marked, with the
    # agent's own earlier actions said in one line.
    subheaders = [h.value for h in app.subheader]
    assert "Reassessment, prescribing and documentation: after the results" in subheaders
    assert not any(h.startswith("Triage and ordering") for h in subheaders)
    marked = [t.value for t in app.text if t.value.endswith(f"({RESULT_MARK})")]
    assert {m.split(":")[0] for m in marked} >= {"BMP", "Glucose", "Beta-hydroxybutyrate"}
    assert len(marked) == len(app_library().vignettes["draft_documentation_01"].tool_results)
    assert "Documentation: the agent holds the clinical core, its own triage, orders" in shown
    assert "which vary by run: the band must hold whatever they were." in shown
    assert not METRIC_WORDS.search(_without(shown, file_texts("draft_documentation_01")))


def test_a_triage_band_is_never_shown_beside_results(app):
    open_vignette(app, "draft_triage_01")
    for vid in ("draft_triage_01", "draft_ordering_01"):
        app.selectbox(key="vignette_id").set_value(vid).run()
        shown = text_of(app)
        assert not app.exception
        vignette = app_library().vignettes[vid]
        assert "**The proposed band: what it accepts**" in shown  # the triage band is on the page
        for result in vignette.tool_results.values():
            assert result not in shown, (vid, result)
        assert RESULT_MARK not in shown
        assert "Triage: the agent holds the clinical core only." in shown
        # The study's metrics are never explained to a rater (the proposal's own text, from
        # the harness's files, is the authors' and shown as written).
        assert not METRIC_WORDS.search(_without(shown, file_texts(vid)))


def app_library():
    from fma_bands.core.vignettes import load_library

    return load_library([os.environ["FMA_BANDS_VIGNETTES"]])


def file_texts(vid: str) -> list[str]:
    """The texts the vignette's file gives (core and proposals), shown as written."""
    vignette = app_library().vignettes[vid]
    texts = [vignette.clinical_core]
    for p in vignette.proposals:
        texts += [t for t in (p.source, p.clause, p.reasoning, p.notes) if t]
    return texts


def _without(shown: str, texts: list[str]) -> str:
    for text in texts:
        shown = shown.replace(text, "")
    return shown


def test_broken_files_are_reported_not_raised(app, tmp_path, monkeypatch, shared_vignettes):
    import shutil

    shutil.copy(shared_vignettes / "draft_triage_01.yaml", tmp_path)
    (tmp_path / "broken.yaml").write_text("id: [unclosed\n")
    monkeypatch.setenv("FMA_BANDS_VIGNETTES", str(tmp_path))
    app.run()
    assert not app.exception
    assert "1 vignettes in the study" in text_of(app)
    assert not app.code  # file problems are the coordinator's business, not a rater's
    from fma_bands.store.db import make_engine, session_scope
    from fma_bands.study.users import get_user

    engine = make_engine(os.environ["FMA_BANDS_DATABASE_URL"])
    with session_scope(engine) as s:
        coordinator = get_user(s, "coordinator")
    engine.dispose()
    app.session_state["user"] = coordinator.model_dump()
    app.run()
    assert any("broken.yaml" in c.value for c in app.code)
    # the copied draft loads, and the coordinator sees what its texts would tell raters
    warned = [c.value for c in app.code if "proposals.0.reasoning" in c.value]
    assert warned and "draft_triage_01.yaml" in warned[0] and "'straddle'" in warned[0]


def test_a_rater_never_sees_the_warnings_about_the_files(app):
    assert not app.exception
    assert not app.code
    assert "warning(s) about what raters read" not in text_of(app)


def test_an_empty_folder_is_refused_and_retires_nothing(app, tmp_path, monkeypatch):
    from sqlmodel import select

    from fma_bands.store.db import make_engine, session_scope
    from fma_bands.store.models import AuditEvent, VignetteRecord
    from fma_bands.study.users import get_user

    app.run()
    engine = make_engine(os.environ["FMA_BANDS_DATABASE_URL"])

    def store_state():
        with session_scope(engine) as s:
            rows = sorted((r.id, r.present) for r in s.exec(select(VignetteRecord)))
            return rows, [e.kind for e in s.exec(select(AuditEvent))]

    before = store_state()
    assert len(before[0]) == 16 and all(present for _, present in before[0])
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("FMA_BANDS_VIGNETTES", str(empty))
    app.run()
    assert not app.exception
    # A rater is told to ask the coordinator; where the files are is not theirs to see.
    [error] = [e.value for e in app.error]
    assert "vignettes cannot be loaded" in error and str(empty) not in error
    assert not app.code and "vignettes in the study" not in text_of(app)

    with session_scope(engine) as s:
        coordinator = get_user(s, "coordinator")
    app.session_state["user"] = coordinator.model_dump()
    app.run()
    assert not app.exception
    [error] = [as_read(e.value) for e in app.error]
    assert f"no vignettes loaded from {empty}, so nothing was synced" in error
    assert "FMA_BANDS_VIGNETTES" in error
    assert any("no vignette files" in c.value for c in app.code)
    assert store_state() == before  # nothing retired, nothing audited
    engine.dispose()


def test_blind_mode_hides_the_proposals_from_a_rater_on_every_page(app):
    from fma_bands.store.db import make_engine, session_scope
    from fma_bands.study.state import set_mode
    from fma_bands.study.users import get_user

    engine = make_engine(os.environ["FMA_BANDS_DATABASE_URL"])
    with session_scope(engine) as s:
        coordinator = get_user(s, "coordinator")
        set_mode(s, actor=coordinator, mode="blind")
    engine.dispose()
    proposed = "1 - NSAID, 2 - weak opioid"
    app.run()
    assert not app.exception
    assert "to be written by each rater (blind mode)" in text_of(app)
    assert proposed not in text_of(app)
    app.switch_page("app_pages/vignette.py")
    app.query_params["case"] = case_params("draft_medication_01")["case"]
    app.run()
    assert [i.value for i in app.info] == [
        "Blind mode: the proposed bands are not shown to raters; each rater writes their own."
    ]
    assert proposed not in text_of(app)
    app.switch_page("app_pages/queue.py")
    app.run()
    assert "Round 1 is open; blind mode: you write each band." in text_of(app)

    app.session_state["user"] = coordinator.model_dump()
    app.switch_page("app_pages/vignette.py")
    app.query_params["id"] = "draft_medication_01"
    app.run()
    assert proposed in text_of(app) and not app.info
    app.switch_page("app_pages/library.py")
    app.run()
    # Its case in sight whatever its number: the medication cases are fewer than a page.
    app.segmented_control(key="library_domain").set_value("medication").run()
    assert proposed in text_of(app)
