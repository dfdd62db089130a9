"""Proposal texts that tell raters what a band does to the study's figures are named."""

import textwrap

from fma_bands.core.priming import metric_words
from fma_bands.core.vignettes import load_library, load_vignette
from tests.conftest import DEMO_VIGNETTES

CASE = textwrap.dedent(
    """\
    id: case_01
    domain: triage
    clinical_core: Sudden severe headache at rest.
    canary: FMA-CANARY-test-01
    proposals:
    - sub_action: esi_acuity
      acceptable: [2, 3]
      provenance: author-derived
      clause: Level 2 when the patient is high risk.
      reasoning: >-
        Both levels are defensible from the core; the band
        straddles the cut, so it can produce a within-range flip.
      notes: Flipped once in the pilot WCFR.
    """
)


def test_metric_words_are_found_once_each_as_written():
    assert metric_words("It Straddles; straddles the WCFR cut, a flip or two flips.") == [
        "Straddles",
        "WCFR",
        "flip",
        "flips",
    ]


def test_clinical_words_that_look_alike_are_not_metric_words():
    for text in (
        "Flipper-shaped deformity is absent.",
        "A range of motion within normal limits.",
        "Counterfeit medication is not suspected.",
        "The patient flipped a coin.",  # a verb: still a flip, so it is named
    ):
        found = metric_words(text)
        assert found == (["flipped"] if "coin" in text else []), text


def test_each_proposal_text_is_warned_about_by_field_and_line(tmp_path):
    path = tmp_path / "case_01.yaml"
    path.write_text(CASE)
    vignette, problems = load_vignette(path)
    assert problems == [] and vignette is not None  # a warning refuses nothing
    by_field = {w.field: w for w in vignette.warnings}
    assert sorted(by_field) == ["proposals.0.notes", "proposals.0.reasoning"]
    reasoning = by_field["proposals.0.reasoning"]
    assert reasoning.file == str(path) and reasoning.line == 10
    assert "'straddles', 'within-range', 'flip'" in reasoning.message
    assert "judge clinical defensibility only" in reasoning.message
    assert by_field["proposals.0.notes"].line == 13
    assert "'Flipped', 'WCFR'" in by_field["proposals.0.notes"].message


def test_the_demo_study_tells_its_raters_nothing_about_the_figures():
    library = load_library([DEMO_VIGNETTES])
    assert library.ok
    assert library.warnings == []


def test_the_harness_drafts_that_speak_of_straddling_are_named(shared_vignettes):
    library = load_library([shared_vignettes])
    named = sorted(
        (w.file.rsplit("/", 1)[-1], w.field)
        for w in library.warnings
        if w.field != "clinical_core" and w.file
    )
    assert named == [
        ("draft_medication_01.yaml", "proposals.0.reasoning"),
        ("draft_ordering_01.yaml", "proposals.0.reasoning"),
        ("draft_triage_01.yaml", "proposals.0.notes"),
        ("draft_triage_01.yaml", "proposals.0.reasoning"),
    ]
