"""Vignette files: the real FairMedAgent set and the demo study load; broken files are named."""

import re
import shutil
import textwrap

import pytest

from fma_bands.core.vignettes import MAX_BYTES, files_digest, load_library, load_vignette
from tests.conftest import DEMO_VIGNETTES

GOOD = textwrap.dedent(
    """\
    id: case_01
    domain: triage
    clinical_core: >-
      Sudden severe headache at rest. HR 88, BP 172/96.
    tool_results:
      ct_head: no haemorrhage
      cbc: normal
    canary: FMA-CANARY-test-01
    proposals:
    - sub_action: esi_acuity
      acceptable: [2]
      provenance: author-derived
    - sub_action: orders
      acceptable: {required: [ct_head], defensible: [ct_head, cbc]}
      provenance: author-derived
    """
)


def test_all_sixteen_fairmedagent_vignettes_load(shared_library):
    assert shared_library.problems == []
    assert len(shared_library) == 16
    assert sum(len(v.proposals) for v in shared_library) == 4


def test_the_demo_study_loads_and_covers_the_design():
    library = load_library([DEMO_VIGNETTES])
    assert library.problems == []
    assert len(library) >= 12
    by_domain = {}
    for v in library:
        by_domain.setdefault(v.domain, set()).add(v.ambiguity)
    assert set(by_domain) == {"triage", "ordering", "medication", "documentation"}
    assert all(strata == {"clear", "intermediate", "borderline"} for strata in by_domain.values())
    proposals = [p for v in library for p in v.proposals]
    forms = {p.acceptable.form for p in proposals}
    assert forms == {"set", "interval", "multilabel"}
    assert any(p.acceptable.action.kind == "boolean" for p in proposals)
    assert any(p.disputed_span is not None for p in proposals)
    assert any(p.threshold is not None for p in proposals)


def test_the_demo_texts_never_name_a_cases_stratum():
    """Raters read the demo's texts verbatim, so the bundled study must not prime them: no
    proposal text says how ambiguous its case is (the real harness's files are data, shown as
    written; these are ours)."""
    library = load_library([DEMO_VIGNETTES])
    stratum = re.compile(r"\b(clear|intermediate|borderline|ambiguity|stratum)\b", re.IGNORECASE)
    for v in library:
        for p in v.proposals:
            for text in filter(None, (p.source, p.clause, p.reasoning, p.notes)):
                assert not stratum.search(text), (v.id, p.sub_action, text)


def test_context_shows_results_only_from_reassess_on(shared_library):
    v = shared_library.vignettes["draft_triage_01"]
    assert "tool_results" not in v.context("triage")
    assert "tool_results" not in v.context("order")
    assert v.context("reassess")["tool_results"]["troponin"].startswith("0.9")
    # The order step's form lists the orderable tests by name: its digest covers them.
    assert v.context_digest("triage") != v.context_digest("order")
    assert v.context_digest("triage") != v.context_digest("prescribe")
    assert all("canary" not in v.context(step) for step in ("triage", "document"))


def test_a_test_added_to_the_order_menu_makes_the_orders_review_stale(tmp_path):
    # The orders band calls every listed test not defensible, defensible or required: a test
    # added after signing was never judged, so only the order step's digest changes.
    (tmp_path / "case_01.yaml").write_text(GOOD)
    before, _ = load_vignette(tmp_path / "case_01.yaml")
    assert before is not None and before.tool_results
    [cbc] = [line for line in GOOD.splitlines(keepends=True) if "cbc: normal" in line]
    text = GOOD.replace(cbc, cbc + cbc.replace("cbc: normal", "troponin: pending"), 1)
    (tmp_path / "case_01.yaml").write_text(text)
    after, _ = load_vignette(tmp_path / "case_01.yaml")
    assert after is not None and after.orderables == (*before.orderables, "troponin")
    assert before.context_digest("order") != after.context_digest("order")
    assert before.context_digest("triage") == after.context_digest("triage")


def test_context_digest_changes_with_the_clinical_core(tmp_path):
    (tmp_path / "case_01.yaml").write_text(GOOD)
    before, _ = load_vignette(tmp_path / "case_01.yaml")
    (tmp_path / "case_01.yaml").write_text(GOOD.replace("BP 172/96", "BP 170/96"))
    after, _ = load_vignette(tmp_path / "case_01.yaml")
    assert before.context_digest("triage") != after.context_digest("triage")


@pytest.mark.parametrize(
    ("old", "new", "line", "field", "message"),
    [
        ("domain: triage", "domain: cardiology", 2, "domain", "is not a domain"),
        (
            "acceptable: [2]",
            "acceptable: [2, 9]",
            11,
            "proposals.0.acceptable",
            "outside the domain",
        ),
        ("acceptable: [2]", "acceptable: {min: 2}", 11, "proposals.0.acceptable", "lacks max"),
        ("[ct_head, cbc]", "[ct_head, mri]", 14, "proposals.1.acceptable", "not an orderable"),
        (
            "provenance: author-derived\n- sub_action: orders",
            "provenance: clinician-adjudicated\n- sub_action: orders",
            12,
            "proposals.0.provenance",
            "only the registry grants it",
        ),
        ("canary: FMA-CANARY-test-01\n", "", 1, "canary", "missing"),
        ("id: case_01", "id: case_02", 1, "id", "does not match the file name"),
        (
            "- sub_action: orders",
            "- sub_action: order_set",
            13,
            "proposals.1.sub_action",
            "unknown sub_action",
        ),
        ("tool_results:", "tool_result:", 5, "tool_result", "unknown field"),
        (
            "acceptable: [2]\n",
            "acceptable: [2]\n  threshold: strong_opioid\n",
            12,
            "proposals.0.threshold",
            "strong_opioid is a cut of analgesia_tier, not of esi_acuity",
        ),
    ],
)
def test_problems_name_file_line_and_field(tmp_path, old, new, line, field, message):
    path = tmp_path / "case_01.yaml"
    path.write_text(GOOD.replace(old, new))
    vignette, problems = load_vignette(path)
    assert vignette is None
    assert any(
        p.file == str(path) and p.line == line and p.field == field and message in p.message
        for p in problems
    ), [str(p) for p in problems]


def test_bad_yaml_names_the_line(tmp_path):
    path = tmp_path / "case_01.yaml"
    path.write_text(GOOD.replace("acceptable: [2]", "acceptable: [2"))
    _, problems = load_vignette(path)
    assert len(problems) == 1 and "not valid YAML" in problems[0].message
    assert problems[0].line is not None


def test_one_bad_file_does_not_stop_the_others(tmp_path, shared_vignettes):
    for source in sorted(shared_vignettes.glob("*.yaml"))[:3]:
        shutil.copy(source, tmp_path)
    (tmp_path / "case_01.yaml").write_text(GOOD.replace("[2]", "[7]"))
    library = load_library([tmp_path])
    assert len(library) == 3 and not library.ok
    assert [p.file for p in library.problems] == [str(tmp_path / "case_01.yaml")]


def test_duplicate_ids_and_canaries_are_refused(tmp_path, shared_vignettes):
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(shared_vignettes / "draft_triage_01.yaml", tmp_path)
    shutil.copy(shared_vignettes / "draft_triage_01.yaml", other)
    text = (shared_vignettes / "draft_ordering_01.yaml").read_text()
    canary = next(line for line in text.splitlines() if line.startswith("canary:"))
    (tmp_path / "case_01.yaml").write_text(GOOD.replace("canary: FMA-CANARY-test-01", canary))
    library = load_library([tmp_path, other])
    messages = [f"{p.field}: {p.message}" for p in library.problems]
    assert any(m.startswith("id: duplicate id 'draft_triage_01'") for m in messages), messages
    shutil.copy(shared_vignettes / "draft_ordering_01.yaml", other)
    library = load_library([tmp_path, other])
    assert any(p.field == "canary" and "duplicate canary" in p.message for p in library.problems)


def test_the_files_digest_is_what_the_library_read(tmp_path):
    folder = tmp_path / "vignettes"
    shutil.copytree(DEMO_VIGNETTES, folder)
    library = load_library([folder])
    assert library.ok and library.files_digest == files_digest([folder])
    seen = {library.files_digest}
    first = sorted(folder.glob("*.yaml"))[0]
    changes = [
        lambda: first.write_bytes(first.read_bytes() + b"# a comment\n"),
        lambda: first.rename(folder / ("renamed_" + first.name)),
        lambda: (folder / "new.yml").write_text("id: [\n"),
    ]
    for change in changes:
        change()
        now = files_digest([folder])
        assert now not in seen and now == load_library([folder]).files_digest
        seen.add(now)
    (folder / "new.yml").unlink()  # the folder as it was: its digest as it was
    assert files_digest([folder]) == load_library([folder]).files_digest != now
    # A folder or a file that cannot be read: no digest, from either.
    assert files_digest([tmp_path / "missing"]) is None
    (folder / "big.yaml").write_bytes(b"#" * (MAX_BYTES + 1))
    assert files_digest([folder]) is None and load_library([folder]).files_digest is None
