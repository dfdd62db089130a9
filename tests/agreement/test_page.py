"""The Agreement page under AppTest, on demo studies made with the command: an analgesia band of {1}
beside a boolean band of {true} draws (no exception, every band picture drawn); the page's short
rows say what the command's rows say, every other field and caution is in the details under them
and the whole rows in the CSV download; the bands are a short table with filters, one band's picture
on demand; the coordinator's figures of an open round are marked
provisional."""

import json
import re

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from app_pages.band_table import (
    AGREEMENT_IN_SIGHT,
    AGREEMENT_WIDTHS,
    LINE,
    MAX_LINES,
)
from app_pages.common import escaped
from fma_bands.agreement import METRICS
from fma_bands.agreement.views import (
    BAND_COLUMNS,
    DETAIL_LABELS,
    DETAILS,
    METRIC_LABELS,
    SHARE_NOTE,
    SUMMARY,
    scope_label,
)
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


def band_rows(at: AppTest) -> list[dict[str, str]]:
    """The table of bands, one short row per band, most disputed first."""
    [frame] = [d.value for d in at.dataframe if "outcome" in d.value.columns]
    assert tuple(frame.columns) == BAND_COLUMNS
    return frame.to_dict("records")


def open_band(at: AppTest, row: dict[str, str]) -> AppTest:
    """Choose one band of the table below it: its box opens, with its link and picture."""
    at.selectbox(key="agreement:band").set_value(f"{row['case']} · {row['sub-action']}")
    return checked(at.run())


@pytest.mark.parametrize("viewer", ["coordinator", "rater-01"])
def test_the_crash_sequence_draws_every_band_and_no_traceback(monkeypatch, tmp_path, viewer):
    # Two raters review; the coordinator closes the phase; the first band picture comes after
    # an analgesia band of {1} met a boolean band of {true}, values equal in Python.
    demo = demo_study(tmp_path, CRASH)
    serve(monkeypatch, demo)
    at = agreement_page(demo, viewer)
    rows = band_rows(at)
    assert len(rows) == 4 and not at.get("page_link")  # each band's box waits to be chosen
    assert len(charts(at)) == 1  # the alpha chart
    if viewer != "coordinator":  # a rater reads neutral case labels, never an id
        assert not any(r["case"].startswith("demo_") for r in rows)
    else:  # the coordinator reads each case by its number and id, as the Band registry does
        assert all(re.fullmatch(r"\d+ · demo_\w+", r["case"]) for r in rows), rows
    # both caution bands, never a bare "yes"
    assert [r["consensus"] for r in rows].count("the answer yes") == 2
    for row in rows:  # every band picture draws
        open_band(at, row)
        assert len(at.get("page_link")) == 1 and len(charts(at)) == 1 + 1
        if row["consensus"] == "1 - NSAID":  # demo_med_border_01 analgesia
            assert row["disputed span"] == "2 - weak opioid"
            assert texts(at) == ["Consensus: 1 - NSAID", "Disputed span: 2 - weak opioid"]
    for metric in METRICS:
        at.segmented_control[0].set_value(metric)
        checked(at.run())
        assert at.subheader[0].value == f"Krippendorff's alpha: {metric}, round 1"


def page_rows(at: AppTest) -> list[dict[str, str]]:
    [df] = [d.value for d in at.dataframe if "alpha" in d.value.columns]
    assert tuple(df.columns) == SUMMARY
    return [{k: str(v) for k, v in row.items()} for row in df.to_dict("records")]


def counted(n: str, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == "1" else "s")


def cautions_by_row(demo) -> dict[tuple[str, str], list[str]]:
    """(sub-action label, metric) -> the alpha's warnings, from the command's JSON."""
    data = json.loads(demo.fma("agreement", "--json"))
    return {
        (scope_label(scope), metric): alpha["warnings"]
        for scope, by_metric in data["metrics"].items()
        for metric, alpha in by_metric.items()
    }


def details_shown(at: AppTest) -> str:
    [expander] = [e for e in at.expander if e.label == "Details and cautions"]
    return "\n".join(m.value for m in [*expander.markdown, *expander.caption])


def test_the_page_shows_the_commands_rows_on_a_three_rater_study(monkeypatch, tmp_path):
    demo = demo_study(tmp_path, THREE_RATERS)
    serve(monkeypatch, demo)
    command = table_rows(demo.fma("agreement"))
    warnings = cautions_by_row(demo)
    at = agreement_page(demo, "rater-02")
    assert [o for o in at.segmented_control[0].options] == [METRIC_LABELS[m] for m in METRICS]
    assert not at.warning  # a closed round's figures are not provisional
    seen = 0
    for metric in METRICS:
        at.segmented_control[0].set_value(metric)
        checked(at.run())
        rows = page_rows(at)
        expected = [r for r in command if r["metric"] == metric]
        assert [r["sub-action"] for r in rows] == [r["sub-action"] for r in expected], metric
        shown = details_shown(at)
        for row, full in zip(rows, expected, strict=True):
            for heading in ("alpha", "95% interval", "reading", "left as proposed"):
                assert row[heading] == full[heading], (metric, heading, row, full)
            read = ", ".join(
                (
                    counted(full["bands"], "band"),
                    counted(full["vignettes read"], "vignette"),
                    counted(full["raters"], "rater"),
                )
            )
            reviewed = counted(full["bands reviewed"], "band")
            declined = f"{full['declined']} declined"
            if full["bands reviewed"] != "0":
                declined += f" of the reviews of {reviewed}"
            assert row["sizes"] == f"{read}; {declined}", (metric, row, full)
            cautions = warnings[(full["sub-action"], metric)]
            assert row["cautions"] == (
                "none" if not cautions else counted(str(len(cautions)), "caution")
            ), (metric, row)
            # The details carry each caution in full, and every field the short row leaves out.
            for caution in cautions:
                assert f"Caution: {escaped(caution)}" in shown, (metric, caution)
            for heading in DETAILS:
                if full[heading] not in ("-", "none"):
                    fact = f"{DETAIL_LABELS.get(heading, heading)}: {full[heading]}"
                    assert escaped(fact) in shown, (metric, fact)
        seen += len(rows)
        [download] = at.get("download_button")
        assert download.proto.label == "Download the table (CSV)"
    assert seen == len(command)
    # The rules wait in one expander, with the metric's own rule.
    [rules] = [e for e in at.expander if e.label == "How these are computed"]
    captions = " ".join(c.value for c in rules.caption)
    assert "raters held fixed" in captions and "stratified by sub" in captions
    assert "ACCEPT, AMEND and DECLINE" in captions  # the verdict metric's rule
    # Most disputed first: the bands without consensus lead, then the follow-up band of three
    # raters far apart.
    rows = band_rows(at)
    assert len(rows) == 14 and not at.get("page_link")
    # More bands than the table shows: the line above it says that it scrolls.
    said = " ".join(c.value for c in at.caption)
    assert "14 of 14 bands. The table shows 6 at a time: scroll inside it for the rest." in said
    # No cell cut short: each column as wide as the page says, and the rows three lines tall
    # (a list of tests needs more than two at these widths), so a cell wraps within its column.
    [table] = [d for d in at.dataframe if "outcome" in d.value.columns]
    config = json.loads(table.proto.columns)
    assert {name: config[name]["width"] for name in BAND_COLUMNS} == AGREEMENT_WIDTHS
    assert table.proto.row_height == LINE * MAX_LINES + 16
    outcomes = [r["outcome"] for r in rows]
    assert outcomes[0] == "no consensus"
    [top] = [r for r in rows if r["sub-action"] == "Follow-up interval (days)"]
    assert rows.index(top) < 10 and top["outcome"] == "agreed, span disputed"
    assert (top["consensus"], top["disputed span"]) == ("3 to 6 days", "1 to 2 and 7 to 30 days")
    assert top["raters"] == "3 with a band, 0 declined"
    open_band(at, top)
    assert texts(at) == ["Consensus: 3 to 6 days", "Disputed span: 1 to 2 and 7 to 30 days"]
    assert len(charts(at)) == 1 + 1 and len(at.get("page_link")) == 1
    # The filters keep the bands asked for; a chosen band they hide closes.
    [outcome] = [m for m in at.multiselect if m.label == "Outcome"]
    assert set(outcome.options) == {r["outcome"] for r in rows}
    outcome.set_value(["agreed"])
    checked(at.run())
    kept = band_rows(at)
    assert kept and {r["outcome"] for r in kept} == {"agreed"}
    assert len(kept) == sum(r["outcome"] == "agreed" for r in rows)
    assert not at.get("page_link") and len(charts(at)) == 1
    said = " ".join(c.value for c in at.caption)
    assert f"{len(kept)} of 14 bands. Choose a row" in said  # all in sight: no word of scrolling
    assert len(kept) <= AGREEMENT_IN_SIGHT
    [outcome] = [m for m in at.multiselect if m.label == "Outcome"]
    [actions] = [m for m in at.multiselect if m.label == "Sub-actions"]
    outcome.set_value([])
    actions.set_value(["esi_acuity"])
    checked(at.run())
    assert {r["sub-action"] for r in band_rows(at)} == {"ESI acuity level"}


def test_left_as_proposed_is_over_the_reviews_the_alpha_reads_and_says_so(monkeypatch, tmp_path):
    # Rater-01 alone reviews the referral band: its alpha reads no band, so no share beside it.
    alone = "demo_doc_inter_01 | referral | ACCEPT | Refer.\n"
    demo = demo_study(tmp_path, {**CRASH, "rater-01": CRASH["rater-01"] + alone})
    serve(monkeypatch, demo)
    at = agreement_page(demo, "coordinator")
    rows = {r["sub-action"]: r for r in page_rows(at)}
    referral = rows["Referral"]
    assert referral["sizes"] == (
        "0 bands, 0 vignettes, 0 raters; 0 declined of the reviews of 1 band"
    )
    assert referral["left as proposed"] == "0 reviews"
    # Each sub-action's two bands, two raters each: four reviews, two of them left as proposed
    # on analgesia (both AMENDs narrow or widen the proposal); the pool is over all eight.
    assert rows["Analgesia tier"]["left as proposed"] == "50% of 4 reviews"
    assert rows["pooled (stratified by sub-action)"]["left as proposed"].endswith(" of 8 reviews")
    # The cell is short; what it counts is said under the table and in its heading's help.
    assert any(c.value.endswith(escaped(SHARE_NOTE)) for c in at.caption)
    [table] = [d for d in at.dataframe if "alpha" in d.value.columns]
    assert SHARE_NOTE in json.loads(table.proto.columns)["left as proposed"]["help"]


PROVISIONAL = "Round open: provisional figures."


def test_while_the_round_is_open_a_rater_sees_nothing_and_the_coordinator_provisional_figures(
    monkeypatch, tmp_path
):
    demo = demo_study(tmp_path, CRASH, close=False)
    serve(monkeypatch, demo)
    at = agreement_page(demo, "rater-01")
    assert [i.value for i in at.info] == [
        "Round 1 is open: agreement between raters is shown once the coordinator closes it."
    ]
    assert not at.dataframe and not charts(at) and not at.get("page_link") and not at.warning
    coordinator = agreement_page(demo, "coordinator")
    [warning] = coordinator.warning
    assert warning.value.startswith(PROVISIONAL)
    assert len(page_rows(coordinator)) == 3  # analgesia, controlled substance, pooled
    assert len(band_rows(coordinator)) == 4
    demo.fma("phase", "closed")
    assert not agreement_page(demo, "coordinator").warning


def test_round_one_stays_final_while_round_two_is_open(monkeypatch, tmp_path):
    demo = demo_study(tmp_path, CRASH)
    demo.fma("round", "open", "2", "--band", "demo_med_border_01:analgesia_tier")
    serve(monkeypatch, demo)
    at = agreement_page(demo, "coordinator")
    [rounds] = [c for c in at.segmented_control if c.label == "Round"]
    assert rounds.value == 1 and not at.warning  # round 1 is closed: its figures are final
    rounds.set_value(2)
    checked(at.run())
    [warning] = at.warning
    assert warning.value.startswith(PROVISIONAL)


def test_a_vignette_changed_while_the_server_runs_changes_the_figures(monkeypatch, tmp_path):
    # The page keeps its screen under the vignettes' digests: a proposal edited after the
    # reviews makes them stale, and the very next visit must leave that band out.
    import shutil

    demo = demo_study(tmp_path, CRASH)
    folder = tmp_path / "vignettes"
    shutil.copytree(DEMO_VIGNETTES, folder)
    serve(monkeypatch, demo)
    monkeypatch.setenv("FMA_BANDS_VIGNETTES", str(folder))
    assert len(band_rows(agreement_page(demo, "coordinator"))) == 4
    path = folder / "demo_med_border_01.yaml"
    text = path.read_text(encoding="utf-8")
    edited = text.replace("reasoning: >-\n", "reasoning: >-\n      Edited after review.\n", 1)
    assert edited != text
    path.write_text(edited, encoding="utf-8")
    at = agreement_page(demo, "coordinator")
    # Its analgesia band was reviewed against the old reasoning, so it is stale now.
    assert len(band_rows(at)) == 4 - 1


def test_the_coordinator_alone_has_the_reports_downloads_and_each_raters_figures(
    monkeypatch, tmp_path
):
    demo = demo_study(tmp_path, THREE_RATERS)
    serve(monkeypatch, demo)
    report = json.loads(demo.fma("agreement", "--json"))
    rater = agreement_page(demo, "rater-02")
    assert [d.proto.label for d in rater.get("download_button")] == ["Download the table (CSV)"]
    assert not rater.toggle
    at = agreement_page(demo, "coordinator")
    assert [d.proto.label for d in at.get("download_button")] == [
        "Download the table (CSV)",
        "Download the methods report (markdown)",
        "Download the coincidence matrices (ZIP of CSV)",
    ]
    assert not [s for s in at.subheader if s.value == "Each rater"]  # made only when asked
    at.toggle(key="diagnostics").set_value(True)
    checked(at.run())
    headings = [s.value for s in at.subheader]
    at_rater = headings.index("Each rater")
    assert headings[at_rater : at_rater + 3] == [
        "Each rater",
        "Alpha by ambiguity stratum",
        "Vignettes needed",
    ]
    shown = at.dataframe[1].value  # after the alpha table, before the table of bands
    assert sorted(shown["rater"]) == sorted(r["rater"] for r in report["raters"])
