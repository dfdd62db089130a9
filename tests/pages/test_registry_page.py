"""The Band registry page on a three-rater study built through the store (root, enrolments,
policy and attestations signed into the log, published when round 1 closed): a short row per
band with filters, each status and warning explained once above it (what the harness cannot
score too), one band's full explanation on demand, and bands.yaml is a download or goes to the
one export folder, never to a typed path. A folder that does not verify grants nothing and
offers no export."""

import os
import re
import shutil

import pytest
import streamlit as st
import yaml
from sqlmodel import col, select
from streamlit.testing.v1 import AppTest

from fma_bands.core.actions import sub_action
from fma_bands.core.labels import HARNESS_WORDS, REASON_WORDS
from fma_bands.core.vignettes import load_library
from fma_bands.evidence.harness import harness_note
from fma_bands.evidence.head import check_head
from fma_bands.evidence.log import read_evidence
from fma_bands.evidence.provenance import REASONS, WARNINGS
from fma_bands.evidence.registry import decide
from fma_bands.store.db import make_engine, session_scope
from fma_bands.store.models import AuditEvent
from fma_bands.study.state import study as study_settings
from fma_bands.study.users import get_user
from tests.conftest import DEMO_VIGNETTES, ROOT
from tests.evidence.test_harness import build_three_raters
from tests.evidence.test_registry import COORDINATOR_PASS
from tests.page_helpers import as_read

PAGE = ROOT / "app_pages" / "registry_page.py"


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    root = tmp_path_factory.mktemp("page")
    url = build_three_raters(root)
    engine = make_engine(url)
    with session_scope(engine) as s:
        coordinator = get_user(s, "coordinator")
        rater = get_user(s, "rater-01")
    engine.dispose()
    return root, url, coordinator, rater


def open_page(study, attestations, tmp_path, monkeypatch) -> AppTest:
    """The registry page, as the coordinator, on the store and this attestations folder."""
    _, url, coordinator, _ = study
    for name, value in {
        "FMA_BANDS_DATABASE_URL": url,
        "FMA_BANDS_VIGNETTES": str(DEMO_VIGNETTES),
        "FMA_BANDS_ATTESTATIONS": str(attestations),
        # Relative, as the default is: the page names the folder by its whole path.
        "FMA_BANDS_EXPORT_DIR": "exports",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    st.cache_data.clear()
    st.cache_resource.clear()
    at = AppTest.from_file(str(PAGE), default_timeout=30)
    at.session_state["user"] = coordinator.model_dump()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.fixture
def page(study, tmp_path, monkeypatch):
    yield open_page(study, study[0] / "attestations", tmp_path, monkeypatch)
    st.cache_data.clear()
    st.cache_resource.clear()


def table(page) -> list[dict[str, str]]:
    [frame] = [d.value for d in page.dataframe if "warnings" in d.value.columns]
    return frame.to_dict("records")


def choose_band(page, title: str) -> list[str]:
    """Open one band's details; return what the page then says beyond the study's notes."""
    box = page.selectbox(key="registry:band")
    # The titles begin with the case's number as raters read it ("7 · demo_med_border_01 · ...").
    [numbered] = [o for o in box.options if re.fullmatch(rf"\d+ · {re.escape(title)}", o)]
    box.set_value(numbered).run()
    assert not page.exception, [e.value for e in page.exception]
    said = [as_read(e.value) for e in [*page.markdown, *page.caption]]
    return [s for s in said if not s.startswith("**What the statuses")]


def in_case_order(decisions: list, rows: list[dict]) -> list:
    """The decisions in the table's order: by case number, each case's in the registry's."""
    number = {r["case"].split(" · ")[1]: int(r["case"].split(" · ")[0]) for r in rows}
    return sorted(decisions, key=lambda d: number[d.vignette_id])


def test_the_registry_opens_on_one_short_row_per_band(study, page):
    library = load_library([DEMO_VIGNETTES])
    decisions = decide(library, study[0] / "attestations").decisions
    rows = table(page)
    assert list(rows[0]) == ["case", "sub-action", "status", "band", "raters", "warnings"]
    # Each case by its number as raters read it, then its id, in the order of the numbers.
    assert all(re.fullmatch(r"\d+ · \S+", r["case"]) for r in rows), rows
    numbers = [int(r["case"].split(" · ")[0]) for r in rows]
    assert numbers == sorted(numbers) and len(set(numbers)) > 1
    decisions = in_case_order(decisions, rows)
    assert [(r["case"].split(" · ")[1], r["sub-action"]) for r in rows] == [
        (d.vignette_id, sub_action(d.sub_action).label) for d in decisions
    ]
    for row, d in zip(rows, decisions, strict=True):
        assert row["status"].startswith(
            "clinician-adjudicated" if d.adjudicated else "not adjudicated"
        )
        assert row["raters"] == (", ".join(d.adjudicated_by) or "none")
    # Reasons in a few words, never their codes.
    refused = [r for r in rows if r["status"].startswith("not adjudicated")]
    assert {r["status"] for r in refused} == {
        "not adjudicated: declined, too few signatures",
        "not adjudicated: no consensus",
    }
    shown = " ".join(str(v) for r in rows for v in r.values())
    for code in (*REASONS, *WARNINGS):
        if "_" in code:  # "declined" is also a word
            assert code not in shown, code
    # Orders in the names clinicians read, not keys.
    assert "required: ECG; also defensible: CT pulmonary angiogram" in shown


def test_each_band_the_harness_cannot_score_is_tagged_and_said_once(study, page):
    root = study[0]
    decisions = decide(load_library([DEMO_VIGNETTES]), root / "attestations").decisions
    decisions = in_case_order(decisions, table(page))
    cannot = [harness_note(d.sub_action, d.adjudicated) is not None for d in decisions]
    assert sum(cannot) >= 2
    tagged = ["harness cannot check yet" in r["warnings"] for r in table(page)]
    assert tagged == cannot
    # What it means is said once for the study, per kind of band, with how many bands.
    [notes] = [m.value for m in page.markdown if m.value.startswith("**What the statuses")]
    notes = as_read(notes)
    booleans = sum(
        c and sub_action(d.sub_action).kind == "boolean"
        for c, d in zip(cannot, decisions, strict=True)
    )
    assert f"Harness cannot check yet: yes/no bands, {booleans} of 27 bands: " in notes
    assert notes.count(HARNESS_WORDS["boolean"].sentence) == 1
    assert notes.count(HARNESS_WORDS["multilabel"].sentence) == 1
    # Developer words stay in the export's note, off the screen.
    assert "TypeError" not in notes and "in_band" not in notes and "x_required" not in notes
    # Every tag and status reason in the table is explained there, beside its code.
    assert "Outside scope, 11 of 27 bands: " in notes and "(code: out_of_scope)" in notes
    assert "(code: no_consensus)" in notes and "(code: quorum_not_met)" in notes
    assert not page.info and not page.warning  # no box repeated per band
    assert any("25 of 27 bands are clinician-adjudicated." in c.value for c in page.caption)
    # A boolean band's details say it in full.
    first = next(d for d, c in zip(decisions, cannot, strict=True) if c and d.adjudicated)
    said = choose_band(page, f"{first.vignette_id} · {sub_action(first.sub_action).label}")
    assert any(HARNESS_WORDS[sub_action(first.sub_action).kind].sentence in s for s in said)


def test_the_filters_keep_the_bands_asked_for(page):
    everything = table(page)
    [status] = [s for s in page.selectbox if s.label == "Status"]
    status.set_value("not adjudicated").run()
    rows = table(page)
    assert [r["status"].startswith("not adjudicated") for r in rows] == [True] * 2
    [status] = [s for s in page.selectbox if s.label == "Status"]
    status.set_value("all").run()
    [actions] = [m for m in page.multiselect if m.label == "Sub-actions"]
    actions.set_value(["admit"]).run()
    rows = table(page)
    assert rows and {r["sub-action"] for r in rows} == {"Admit to hospital"}
    actions.set_value([]).run()
    [warning] = [s for s in page.selectbox if s.label == "Warning"]
    assert warning.options == ["any", "no warning", "harness cannot check yet", "outside scope"]
    warning.set_value("no warning").run()
    rows = table(page)
    assert rows and {r["warnings"] for r in rows} == {"none"}
    warning.set_value("outside scope").run()
    rows = table(page)
    assert len(rows) == 11 and all("outside scope" in r["warnings"] for r in rows)
    assert len(everything) == 27
    # A chosen band that a filter then hides is no longer shown: an adjudicated one, which the
    # "not adjudicated" filter hides (the table and the choice list the same bands in one order).
    [band] = [s for s in page.selectbox if s.label == "Details of one band"]
    assert len(band.options) == len(rows)
    kept = next(i for i, r in enumerate(rows) if not r["status"].startswith("not adjudicated"))
    band.set_value(band.options[kept]).run()
    assert any(m.value.startswith("Band: ") for m in page.markdown)
    [status] = [s for s in page.selectbox if s.label == "Status"]
    status.set_value("not adjudicated").run()
    assert not page.exception
    assert not any(m.value.startswith("Band: ") for m in page.markdown)


def test_a_refused_bands_details_say_why_in_words_beside_each_code(study, page):
    decisions = decide(load_library([DEMO_VIGNETTES]), study[0] / "attestations").decisions
    refused = [d for d in decisions if not d.adjudicated]
    for d in refused:
        said = "\n".join(choose_band(page, f"{d.vignette_id} · {sub_action(d.sub_action).label}"))
        for r in d.reasons:
            assert f"{REASON_WORDS[r.code].sentence} (code: {r.code})" in said, (r, said)
        assert said.count("(code: ") == len(d.reasons) + len({w.code for w in d.warnings})


def test_the_export_is_a_download_or_the_one_export_folder(study, page, tmp_path):
    root = study[0]
    assert [b.label for b in page.download_button] == ["Download bands.yaml"]
    # What the download holds is said beside it: pressing it shows nothing on the page.
    decisions = decide(load_library([DEMO_VIGNETTES]), root / "attestations").decisions
    granted = sum(d.adjudicated for d in decisions)
    assert (
        f"All {len(decisions)} bands, {granted} clinician-adjudicated; head not signed. Saved "
        "with your browser's downloads."
    ) in [c.value for c in page.caption]
    # No field where the browser could name a server path: the one field is a passphrase.
    assert [t.key for t in page.text_input] == ["export:passphrase"]
    exports = tmp_path / "exports"
    [write] = [b for b in page.button if b.label.startswith("Write bands.yaml")]
    assert as_read(write.label) == f"Write bands.yaml to the export folder, {exports}"
    write.click().run()
    assert not page.exception
    written = exports / "bands.yaml"
    assert [as_read(s.value) for s in page.success] == [f"Wrote {written}"]
    document = yaml.safe_load(written.read_text())
    header = document["attestations"]
    registry = decide(load_library([DEMO_VIGNETTES]), root / "attestations")
    assert registry.valid and registry.head[1]
    assert header["head"] == {"sequence": registry.head[0], "digest": registry.head[1]}
    assert (header["study"], header["valid"]) == (registry.study, True)
    assert (exports / header["folder"]).resolve() == (root / "attestations").resolve()
    for group in document["bands"].values():
        for entry in group:
            for attestation in entry["x_attestations"]:
                assert (exports / header["folder"] / attestation["file"]).is_file()
    # The export is in the audit log: who, where, and the head it was decided from.
    engine = make_engine(study[1])
    with session_scope(engine) as s:
        newest = col(AuditEvent.seq).desc()
        exported = select(AuditEvent).where(AuditEvent.kind == "bands_exported")
        [event] = s.exec(exported.order_by(newest).limit(1))
        assert (event.actor, event.payload) == (
            "coordinator",
            {
                "how": "written",
                "head": header["head"],
                "head_signed": False,
                "bands": len(decisions),
                "adjudicated": granted,
                "file": str(written),
            },
        )
    engine.dispose()


def test_the_page_is_the_coordinators(study, monkeypatch, tmp_path):
    root, url, _, rater = study
    monkeypatch.setenv("FMA_BANDS_DATABASE_URL", url)
    monkeypatch.setenv("FMA_BANDS_VIGNETTES", str(DEMO_VIGNETTES))
    monkeypatch.setenv("FMA_BANDS_ATTESTATIONS", str(root / "attestations"))
    monkeypatch.chdir(tmp_path)
    at = AppTest.from_file(str(PAGE), default_timeout=30)
    at.session_state["user"] = rater.model_dump()
    at.run()
    assert [e.value for e in at.error] == ["This page is not available to you."]
    assert len(at.download_button) == 0


def test_the_caption_names_the_study_and_the_head(study, page):
    root, url, _, _ = study
    engine = make_engine(url)
    with session_scope(engine) as s:
        study_id = study_settings(s).study_id
    engine.dispose()
    registry = decide(load_library([DEMO_VIGNETTES]), root / "attestations")
    assert registry.study == study_id
    assert f"Study {study_id}; the log's head: record {registry.head[0]}, {registry.head[1]}." in [
        as_read(c.value) for c in page.caption
    ]
    assert not page.error
    assert not [w for w in page.warning if "not part of the study's log" in w.value]


def test_a_hand_edited_policy_copy_grants_nothing_and_offers_no_export(
    study, tmp_path, monkeypatch
):
    """While the app runs, policy.yaml is edited by hand from quorum 2 to 1: the folder does not
    verify, the page says which file and why, grants nothing, and stops before the export."""
    attestations = tmp_path / "attestations"
    shutil.copytree(study[0] / "attestations", attestations)
    try:
        at = open_page(study, attestations, tmp_path, monkeypatch)
        assert [b.label for b in at.download_button] == ["Download bands.yaml"]
        assert any("25 of 27 bands are clinician-adjudicated." in c.value for c in at.caption)
        policy = attestations / "policy.yaml"
        edited = policy.read_text(encoding="utf-8").replace("quorum: 2", "quorum: 1")
        assert edited != policy.read_text(encoding="utf-8")
        policy.write_text(edited, encoding="utf-8")
        at.run()
    finally:
        st.cache_data.clear()
        st.cache_resource.clear()
    assert not at.exception, [e.value for e in at.exception]
    errors = [as_read(e.value) for e in at.error]
    assert errors[0].startswith("The attestations folder does not verify, so no band is")
    [problem] = errors[1:]  # the file and the reason, as `fma-bands verify` names them
    assert problem.startswith("policy.yaml: copy_differs: policy.yaml was edited"), problem
    assert any("0 of 27 bands are clinician-adjudicated." in c.value for c in at.caption)
    assert len(at.download_button) == 0
    assert not [b for b in at.button if b.label.startswith("Write bands.yaml")]
    assert not (tmp_path / "exports").exists()


def test_files_whose_names_or_text_are_not_utf8_are_named_and_the_page_stands(
    study, tmp_path, monkeypatch
):
    """A file named in bytes that are not UTF-8, and one whose JSON spells a lone surrogate:
    nothing a page shows can carry either, so each is named with escapes, as a stray, and the
    registry decides every band as it did."""
    attestations = tmp_path / "attestations"
    shutil.copytree(study[0] / "attestations", attestations)
    with open(os.path.join(os.fsencode(attestations), b"951-\xff\xfe.dsse.json"), "w") as f:
        f.write("{}")
    (attestations / "surrogate.dsse.json").write_text(
        '{"payload": "e30=", "payloadType": "\\ud800", "signatures": []}'
    )
    try:
        at = open_page(study, attestations, tmp_path, monkeypatch)
    finally:
        st.cache_data.clear()
        st.cache_resource.clear()
    said = [as_read(w.value) for w in at.warning]
    assert any(s.startswith("951-\\udcff\\udcfe.dsse.json: stray_file") for s in said), said
    assert any(s.startswith("surrogate.dsse.json: stray_file") for s in said), said
    assert any("25 of 27 bands are clinician-adjudicated." in c.value for c in at.caption)


def test_the_coordinators_passphrase_signs_the_exported_head(study, page, tmp_path):
    root = study[0]

    def sign_with(passphrase: str) -> None:
        page.text_input(key="export:passphrase").set_value(passphrase)
        [submit] = [b for b in page.button if b.label == "Sign the exported head"]
        submit.click().run()

    # Typed but not submitted: nothing is signed, and the screen says so.
    page.text_input(key="export:passphrase").set_value(COORDINATOR_PASS).run()
    assert any("are not signed" in c.value for c in page.caption)
    sign_with("not the passphrase")
    assert [e.value for e in page.error] == ["that passphrase is not right; nothing was signed"]
    assert page.text_input(key="export:passphrase").value == ""  # tried once, not on each rerun
    sign_with(COORDINATOR_PASS)
    assert not page.error
    assert [s.value for s in page.success] == [
        "The exports below sign their head with the study's root key. A file downloaded or "
        "written before is as it was: download or write it again to have it signed."
    ]
    [write] = [b for b in page.button if b.label.startswith("Write bands.yaml")]
    write.click().run()
    header = yaml.safe_load((tmp_path / "exports" / "bands.yaml").read_text())["attestations"]
    evidence = read_evidence(root / "attestations")
    study_id, sequence, digest, keyid, audit_head = check_head(
        header["head_signature"], evidence.root_public
    )
    assert audit_head == header["audit_head"] and audit_head["seq"] > 0
    assert (study_id, sequence, digest) == (evidence.study, *evidence.head)
    assert evidence.root_keys[keyid] == "coordinator"


def test_each_bands_details_show_each_of_its_cuts_and_whether_it_straddles_it(study, page):
    from app_pages.common import escaped
    from fma_bands.evidence.export import band_cuts, cut_line

    library = load_library([DEMO_VIGNETTES])
    decisions = decide(library, study[0] / "attestations").decisions
    shown = []
    for d in decisions:
        cuts = band_cuts(library.vignettes[d.vignette_id].proposal(d.sub_action), d.band)
        if not cuts:
            continue
        choose_band(page, f"{d.vignette_id} · {sub_action(d.sub_action).label}")
        line = "Cuts: " + "; ".join(escaped(cut_line(c)) for c in cuts)
        assert [c.value for c in page.caption if c.value.startswith("Cuts: ")] == [line]
        shown.append(line)
    # Analgesia's two cuts, and the follow-up cut its proposals name, are among them.
    assert any("any\\_opioid" in line and "strong\\_opioid" in line for line in shown)
    assert any("followup\\_within\\_14" in line for line in shown)


def test_a_bands_details_say_its_disputed_span_as_the_export_does(study, page):
    from fma_bands.evidence.export import span_words

    decisions = decide(load_library([DEMO_VIGNETTES]), study[0] / "attestations").decisions
    disputed = [d for d in decisions if d.disputed_span is not None]
    assert disputed, "the three raters' study leaves some band with a disputed span"
    for d in disputed:
        said = choose_band(page, f"{d.vignette_id} · {sub_action(d.sub_action).label}")
        assert f"Disputed span: {span_words(d.disputed_span)}" in said, said
    undisputed = next(d for d in decisions if d.disputed_span is None)
    said = choose_band(
        page, f"{undisputed.vignette_id} · {sub_action(undisputed.sub_action).label}"
    )
    assert not any(line.startswith("Disputed span:") for line in said)
