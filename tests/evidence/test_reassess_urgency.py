"""The harness's optional urgency_score at reassess: a vignette carries it beside the triage
urgency band (`step: reassess`, or `reassess_urgency_score`), it is reviewed, signed, granted
and rated apart from the triage band, and the export lists it under `x_reassess_bands`, so the
README's loader and the harness's `as_acceptable_map` still give the triage band while the
reassess band builds the harness's own `Band` as well."""

import importlib
from pathlib import Path
from typing import Any

import pytest
import yaml

from fma_bands.core.actions import SUB_ACTIONS, sub_action, sub_action_at
from fma_bands.core.errors import FmaBandsError
from fma_bands.core.vignettes import load_library, load_vignette
from fma_bands.evidence.export import (
    REASSESS_BANDS,
    SECTIONS,
    check_harness,
    every_band,
    export_document,
    load_bands,
    write_bands,
)
from fma_bands.evidence.provenance import ADJUDICATED
from fma_bands.store.db import session_scope
from fma_bands.study.handback import parse_handback
from fma_bands.study.identity import set_identity
from fma_bands.study.ratings import study_ratings
from fma_bands.study.reviews import ReviewForm, save
from fma_bands.study.rounds import close_round
from tests.conftest import assign_all
from tests.evidence.test_harness import (
    HARNESS,
    enrol_and_activate,
    harness_fields,
    harness_package,
    new_study,
    policy,
    run_snippet,
    shipped_registry,
)
from tests.evidence.test_registry import ANSWERS, COORDINATOR_PASS, IDENTITY, sign

VID = "chest_pain_01"
REASSESS = "reassess_urgency_score"
VIGNETTE = f"""\
id: {VID}
domain: triage
clinical_core: >-
  Two hours of substernal chest pressure, diaphoretic. HR 96, BP 150/90, SpO2 97%.
tool_results:
  troponin: 1.2 ng/mL (elevated)
  ecg: ST depression V4-V6
canary: FMA-CANARY-reassess-urgency-01
proposals:
  - sub_action: urgency_score
    acceptable: {{min: 60, max: 90}}
    reasoning: High-risk chest pain on the history alone.
  - sub_action: urgency_score
    step: reassess
    acceptable: {{min: 70, max: 100}}
    reasoning: An elevated troponin, if ordered, makes this an acute coronary syndrome.
"""


def write_vignette(folder: Path, text: str = VIGNETTE) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{VID}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def proposals_of(text: str, tmp_path: Path) -> tuple[Any, list[str]]:
    vignette, problems = load_vignette(write_vignette(tmp_path, text))
    return vignette, [str(p) for p in problems]


# The catalogue and the vignette file ----------------------------------------------------------


def test_the_catalogue_has_a_reassess_urgency_under_the_harness_name():
    action = sub_action(REASSESS)
    assert (action.step, action.kind, action.forms, action.bounds) == (
        "reassess",
        "score",
        ("interval",),
        (0, 100),
    )
    assert action.harness_name == "urgency_score" and action.label.startswith("Urgency score")
    assert sub_action("urgency_score").harness_name == "urgency_score"
    # Every other sub-action is the harness's name at its own step.
    assert [a.name for a in SUB_ACTIONS.values() if a.harness_name != a.name] == [REASSESS]


def test_the_harness_asks_for_the_urgency_at_reassess_and_the_catalogue_follows_it():
    schemas = importlib.import_module(f"{harness_package().__name__}.runner").SCHEMAS
    for action in SUB_ACTIONS.values():
        assert action.harness_name in schemas[action.step]["properties"], action.name
    # Optional at reassess, required at triage: a reassess band may be left out.
    assert "urgency_score" not in schemas["reassess"]["required"]
    assert "urgency_score" in schemas["triage"]["required"]


def test_a_vignette_carries_a_triage_and_a_reassess_urgency_band(tmp_path):
    vignette, problems = proposals_of(VIGNETTE, tmp_path)
    assert problems == []
    assert [p.sub_action for p in vignette.proposals] == ["urgency_score", REASSESS]
    assert vignette.proposal(REASSESS).acceptable.values() == frozenset(range(70, 101))
    # What the rater sees: the clinical core at triage, the results as well at reassess.
    assert vignette.context_digest_for("urgency_score") == vignette.context_digest("triage")
    assert vignette.context_digest_for(REASSESS) == vignette.context_digest("reassess")
    assert vignette.context_digest("triage") != vignette.context_digest("reassess")


def test_the_catalogue_name_and_an_explicit_step_read_as_the_same_proposal(tmp_path):
    by_step, _ = proposals_of(VIGNETTE, tmp_path / "a")
    by_name, _ = proposals_of(
        VIGNETTE.replace(
            "  - sub_action: urgency_score\n    step: reassess\n",
            f"  - sub_action: {REASSESS}\n",
        ),
        tmp_path / "b",
    )
    explicit, _ = proposals_of(
        VIGNETTE.replace(
            "    acceptable: {min: 60, max: 90}\n",
            "    step: triage\n    acceptable: {min: 60, max: 90}\n",
        ),
        tmp_path / "c",
    )
    digests = [[p.proposal_digest for p in v.proposals] for v in (by_step, by_name, explicit)]
    assert digests[0] == digests[1] == digests[2]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            ("    step: reassess\n", "    step: order\n"),
            "14: proposals.1.step: urgency_score is decided at triage and reassess only: "
            "write step: triage or step: reassess",
        ),
        (("    step: reassess\n", "    step: lunch\n"), "proposals.1.step: unknown step 'lunch'"),
        (("    step: reassess\n", "    step: [reassess]\n"), "proposals.1.step: a step is written"),
        (
            ("    step: reassess\n", "    step: triage\n"),
            "proposals.1.sub_action: a second proposal for urgency_score",
        ),
        (
            (
                "  - sub_action: urgency_score\n    step: reassess\n",
                f"  - sub_action: {REASSESS}\n    step: triage\n",
            ),
            f"proposals.1.step: {REASSESS} is decided at reassess only",
        ),
    ],
)
def test_a_step_the_harness_does_not_ask_for_is_refused_by_field_and_line(tmp_path, edit, message):
    vignette, problems = proposals_of(VIGNETTE.replace(*edit), tmp_path)
    assert vignette is None
    assert any(message in p for p in problems), problems


def test_a_second_reassess_urgency_band_is_refused(tmp_path):
    twice = VIGNETTE + (
        "  - sub_action: reassess_urgency_score\n    acceptable: {min: 50, max: 100}\n"
    )
    vignette, problems = proposals_of(twice, tmp_path)
    assert vignette is None
    assert [p for p in problems if f"a second proposal for {REASSESS}" in p]


def test_sub_action_at_names_the_steps_of_an_action():
    assert sub_action_at("urgency_score", "reassess").name == REASSESS
    assert sub_action_at("urgency_score", "triage").name == "urgency_score"
    assert sub_action_at("admit", "reassess").name == "admit"
    with pytest.raises(FmaBandsError, match="unknown sub_action 'urgency'"):
        sub_action_at("urgency", "triage")
    with pytest.raises(FmaBandsError, match="admit is decided at reassess only"):
        sub_action_at("admit", "triage")


def test_a_hand_back_line_names_the_reassess_band_by_its_catalogue_name(tmp_path):
    library = load_library([write_vignette(tmp_path / "v").parent])
    lines = parse_handback(
        f"{VID} | urgency_score | ACCEPT | high risk\n"
        f'{VID} | {REASSESS} | AMEND {{"min": 80, "max": 100}} | troponin up\n',
        library,
    )
    assert [(line.sub_action, line.verdict) for line in lines] == [
        ("urgency_score", "ACCEPT"),
        (REASSESS, "AMEND"),
    ]


# Reviewed, signed, granted and exported -----------------------------------------------------


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> dict[str, Any]:
    """One rater accepts the triage urgency band and amends the reassess one; both signed,
    round 1 closed, exported beside the attestations folder."""
    root = tmp_path_factory.mktemp("reassess")
    library = load_library([write_vignette(root / "vignettes").parent])
    engine, coordinator, folder = new_study(root)
    from fma_bands.study.library import sync_vignettes

    with session_scope(engine) as s:
        sync_vignettes(s, library, actor="test")
    fields = dict(
        pseudonym="rater-01",
        role="rater",
        specialty="emergency medicine",
        jurisdiction="Australia",
        years_post_registration=9,
    )
    rater = enrol_and_activate(engine, coordinator, fields, "passphrase of rater-01", folder)
    policy(engine, coordinator, folder, 1)
    with session_scope(engine) as s:
        assign_all(s, library, coordinator, [rater])
        set_identity(
            s,
            actor=coordinator,
            pseudonym="rater-01",
            record=dict(IDENTITY),
            key_path=root / "id.key",
            passphrase=COORDINATOR_PASS,
            folder=None,
        )
        for name, form in (
            ("urgency_score", ReviewForm(verdict="ACCEPT", answers=ANSWERS)),
            (
                REASSESS,
                ReviewForm(
                    verdict="AMEND",
                    band={"min": 80, "max": 100},
                    reason="With the troponin up, nothing below 80 is defensible.",
                    answers=ANSWERS,
                ),
            ),
        ):
            save(s, library, rater, VID, name, form, expected_version=0, submit=True)
        ratings = study_ratings(s, library, viewer=coordinator)
    sign(engine, library, rater, "passphrase of rater-01", folder)
    with session_scope(engine) as s:
        close_round(s, actor=coordinator, folder=folder)
    engine.dispose()
    out = root / "out" / "bands.yaml"
    document = export_document(library, folder, relative_to=out.parent)
    write_bands(out, document)
    return {"path": out, "document": yaml.safe_load(out.read_text()), "ratings": ratings}


def test_the_two_urgency_bands_are_rated_apart(study):
    ratings = {r.sub_action: r for r in study["ratings"]}
    assert sorted(ratings) == sorted(["urgency_score", REASSESS])
    assert ratings[REASSESS].band.values() == frozenset(range(80, 101))
    assert ratings["urgency_score"].band.values() == frozenset(range(60, 91))


def test_the_export_lists_the_reassess_band_apart_under_the_harness_name(study):
    document = study["document"]
    assert SECTIONS == ("bands", REASSESS_BANDS)
    [triage] = document["bands"][VID]
    [reassess] = document[REASSESS_BANDS][VID]
    assert (triage["sub_action"], triage["x_step"]) == ("urgency_score", "triage")
    assert (reassess["sub_action"], reassess["x_step"]) == ("urgency_score", "reassess")
    assert triage["acceptable"] == {"min": 60, "max": 90}
    assert reassess["acceptable"] == {"min": 80, "max": 100}
    assert triage["provenance"] == reassess["provenance"] == ADJUDICATED
    assert triage["adjudicated_by"] == reassess["adjudicated_by"] == ["rater-01"]
    # Each band is granted from its own signed subject.
    assert reassess["x_proposal"]["acceptable"] == {"min": 70, "max": 100}
    assert "nothing below 80" in reassess["reasoning"]
    assert len(every_band(document)) == 2
    # Read back with fma-bands' checked reader, section by section.
    assert load_bands(study["path"])[VID][0]["acceptable"] == {"min": 60, "max": 90}
    loaded = load_bands(study["path"], section=REASSESS_BANDS)
    assert loaded[VID] == [harness_fields(reassess)]
    with pytest.raises(FmaBandsError, match="no section 'x_triage_bands'"):
        load_bands(study["path"], section="x_triage_bands")


def test_an_export_without_reassess_bands_still_has_the_section(tmp_path):
    triage_only = VIGNETTE.split("  - sub_action: urgency_score\n    step: reassess")[0]
    library = load_library([write_vignette(tmp_path / "v", triage_only).parent])
    document = export_document(library, tmp_path / "attestations", provisional=True)
    assert document[REASSESS_BANDS] == {} and list(document["bands"]) == [VID]


def test_the_readme_snippet_gives_the_harness_the_triage_band(study, monkeypatch):
    harness = harness_package()
    with shipped_registry(harness):
        namespace = run_snippet(study["path"].parent, monkeypatch)
        bands = namespace["bands"][VID]
        mapping = harness.bands.as_acceptable_map(bands)
        assert mapping == {"urgency_score": {"min": 60, "max": 90}}
        # The reassess band, built the same way from its own section, is the harness's Band.
        export = namespace["export"]
        [reassess] = [harness.bands.Band(**harness_fields(b)) for b in export[REASSESS_BANDS][VID]]
        assert reassess.is_adjudicated and reassess.sub_action == "urgency_score"
        assert harness.bands.as_acceptable_map([reassess]) == {
            "urgency_score": {"min": 80, "max": 100}
        }
        in_band = harness.metrics.in_band
        # An urgency of 75 is in the triage band and out of the reassess one: they differ.
        assert in_band(75, mapping["urgency_score"]) is True
        assert in_band(75, reassess.acceptable) is False


def test_listing_both_under_bands_would_lose_the_triage_band(study):
    """Why the section exists: the harness's map keeps the last band of a sub_action."""
    harness = harness_package()
    document = study["document"]
    with shipped_registry(harness):
        for fields in document["adjudicators"]:
            harness.adjudicators.ADJUDICATORS[fields["pseudonym"]] = (
                harness.adjudicators.Adjudicator(**fields)
            )
        both = [
            harness.bands.Band(**harness_fields(b))
            for b in document["bands"][VID] + document[REASSESS_BANDS][VID]
        ]
        assert harness.bands.as_acceptable_map(both) == {"urgency_score": {"min": 80, "max": 100}}


def test_check_harness_builds_the_reassess_bands_too(study, tmp_path):
    check = check_harness(study["path"], HARNESS)
    assert check.problems == [] and check.bands == 2
    # A reassess band the harness refuses is named in its own section.
    broken = yaml.safe_load(study["path"].read_text())
    broken[REASSESS_BANDS][VID][0]["provenance"] = "guideline-derived"
    broken[REASSESS_BANDS][VID][0]["source"] = None
    broken[REASSESS_BANDS][VID][0]["adjudicated_by"] = []
    path = tmp_path / "bands.yaml"
    path.write_text(yaml.safe_dump(broken, sort_keys=False))
    check = check_harness(path, HARNESS)
    assert [p.field for p in check.problems] == [f"{REASSESS_BANDS}.{VID}[0] (urgency_score)"]
    assert "must name its source" in check.problems[0].message
