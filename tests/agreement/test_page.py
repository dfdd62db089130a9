"""The Agreement page under AppTest, on demo studies made with the command: an analgesia band of {1}
beside a boolean band of {true} draws (no exception, every band picture drawn), and the page shows
the command's rows."""

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from fma_bands.agreement import METRICS
from fma_bands.agreement.views import HEADINGS, METRIC_LABELS
from fma_bands.store.db import make_engine, session_scope
from fma_bands.study.users import get_user
from tests.agreement.demo import CRASH, THREE_RATERS, demo_study
from tests.conftest import DEMO_VIGNETTES, ROOT
from tests.study.test_ratings import table_rows

PAGE = "app_pages/agreement.py"


@pytest.fixture(autouse=True)
def fresh_caches():
    st.cache_data.clear()
    st.cache_resource.clear()
    yield
    st.cache_data.clear()
    st.cache_resource.clear()


def serve(monkeypatch, demo) -> None:
    monkeypatch.setenv("FMA_BANDS_DATABASE_URL", demo.url)
    monkeypatch.setenv("FMA_BANDS_VIGNETTES", str(DEMO_VIGNETTES))
    monkeypatch.setenv("FMA_BANDS_ATTESTATIONS", str(demo.attestations))
    monkeypatch.chdir(ROOT)


def user(demo, name: str):
    engine = make_engine(demo.url)
    try:
        with session_scope(engine) as s:
            return get_user(s, name)
    finally:
        engine.dispose()


def agreement_page(demo, name: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.session_state["user"] = user(demo, name).model_dump()
    at.run()
    at.switch_page(PAGE)
    return checked(at.run())


def checked(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    return at


def charts(at: AppTest) -> list:
    return [e for e in at.main if getattr(e, "type", None) == "vega_lite_chart"]


def texts(at: AppTest) -> list[str]:
    return [t.value for t in at.text]


@pytest.mark.parametrize("viewer", ["coordinator", "rater-01"])
def test_the_crash_sequence_draws_every_band_and_no_traceback(monkeypatch, tmp_path, viewer):
    # Two raters review; the coordinator closes the phase; the first band picture comes after
    # an analgesia band of {1} met a boolean band of {true}, values equal in Python.
    demo = demo_study(tmp_path, CRASH)
    serve(monkeypatch, demo)
    at = agreement_page(demo, viewer)
    links = [p.proto.label for p in at.get("page_link")]
    assert len(links) == 4
    assert len(charts(at)) == 1 + 4  # the alpha chart, and one picture per band
    shown = texts(at)
    assert "Consensus: 1 - NSAID" in shown  # demo_med_border_01 analgesia
    assert "Disputed span: 2 - weak opioid" in shown
    assert shown.count("Consensus: yes") == 2  # both controlled-substance bands
    for metric in METRICS:
        at.segmented_control[0].set_value(metric)
        checked(at.run())
        assert at.subheader[0].value == f"Krippendorff's alpha: {metric}"


def page_rows(at: AppTest) -> list[dict[str, str]]:
    [frame] = at.dataframe
    df = frame.value
    assert tuple(df.columns) == HEADINGS
    return [{k: str(v) for k, v in row.items()} for row in df.to_dict("records")]


def test_the_page_shows_the_commands_rows_on_a_three_rater_study(monkeypatch, tmp_path):
    demo = demo_study(tmp_path, THREE_RATERS)
    serve(monkeypatch, demo)
    command = table_rows(demo.fma("agreement"))
    at = agreement_page(demo, "rater-02")
    assert [o for o in at.segmented_control[0].options] == [METRIC_LABELS[m] for m in METRICS]
    seen = []
    for metric in METRICS:
        at.segmented_control[0].set_value(metric)
        checked(at.run())
        rows = page_rows(at)
        assert rows == [r for r in command if r["metric"] == metric], metric
        seen += rows
    assert len(seen) == len(command)
    captions = " ".join(c.value for c in at.caption)
    assert "raters held fixed" in captions and "stratified by sub-action" in captions
    # Most disputed first: the follow-up band of three raters far apart leads.
    links = [p.proto.label for p in at.get("page_link")]
    assert len(links) == 14
    shown = texts(at)
    assert "Consensus: 3 to 6 days" in shown
    assert "Disputed span: 1 to 2 and 7 to 30 days" in shown
    assert len(charts(at)) == 1 + 14


def test_a_rater_sees_no_figure_while_the_phase_is_open(monkeypatch, tmp_path):
    demo = demo_study(tmp_path, CRASH, close=False)
    serve(monkeypatch, demo)
    at = agreement_page(demo, "rater-01")
    assert [i.value for i in at.info] == [
        "Agreement between raters is shown once the coordinator closes the review phase."
    ]
    assert not at.dataframe and not charts(at) and not at.get("page_link")
    coordinator = agreement_page(demo, "coordinator")
    assert len(coordinator.get("page_link")) == 4


def test_a_vignette_changed_while_the_server_runs_changes_the_figures(monkeypatch, tmp_path):
    # The page keeps its screen under the vignettes' digests: a proposal edited after the
    # reviews makes them stale, and the very next visit must leave that band out.
    import shutil

    demo = demo_study(tmp_path, CRASH)
    folder = tmp_path / "vignettes"
    shutil.copytree(DEMO_VIGNETTES, folder)
    serve(monkeypatch, demo)
    monkeypatch.setenv("FMA_BANDS_VIGNETTES", str(folder))
    assert len(agreement_page(demo, "coordinator").get("page_link")) == 4
    path = folder / "demo_med_border_01.yaml"
    text = path.read_text(encoding="utf-8")
    edited = text.replace("reasoning: >-\n", "reasoning: >-\n      Edited after review.\n", 1)
    assert edited != text
    path.write_text(edited, encoding="utf-8")
    at = agreement_page(demo, "coordinator")
    # Its analgesia band was reviewed against the old reasoning, so it is stale now.
    assert len(at.get("page_link")) == 4 - 1
