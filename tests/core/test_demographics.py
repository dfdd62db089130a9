"""Demographic words in a clinical core: found as whole words in any case, each a warning that
names its file, line and word, never a refusal; checked against the harness's own descriptor
and its real vignettes, and through `fma-bands vignettes check`."""

import importlib
import json
from pathlib import Path

import pytest

from fma_bands.core.demographics import (
    AGE,
    INSURANCE,
    LANGUAGE,
    MAX_LISTED,
    RACE,
    SEX,
    clinical_core_warnings,
    demographic_words,
)
from fma_bands.core.vignettes import load_library, load_vignette
from tests.cli.test_cli import fma
from tests.evidence.test_harness import harness_package


def found(text: str) -> list[tuple[str, str]]:
    return [(w.kind, w.word) for w in demographic_words(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("54-year-old with chest pain", [(AGE, "54-year-old")]),
        ("A 54 year old", [(AGE, "54 year old")]),
        ("aged 54, alert", [(AGE, "aged 54")]),
        ("54 yo, alert", [(AGE, "54 yo")]),
        ("54 y/o, alert", [(AGE, "54 y/o")]),
        ("54M with chest pain", [(f"{AGE} and {SEX}", "54M")]),
        ("an elderly patient", [(AGE, "elderly")]),
        ("a man with chest pain", [(SEX, "man")]),
        ("Woman, alert", [(SEX, "Woman")]),
        ("FEMALE patient", [(SEX, "FEMALE")]),
        ("she reports pain", [(SEX, "she")]),
        ("pain in his flank", [(SEX, "his")]),
        ("Mr Jones has pain", [(SEX, "Mr")]),
        ("a Black patient", [(RACE, "Black")]),
        ("native american patient", [(RACE, "native american")]),
        ("Caucasian, alert", [(RACE, "Caucasian")]),
        ("covered by Medicaid", [(INSURANCE, "Medicaid")]),
        ("uninsured", [(INSURANCE, "uninsured")]),
        ("has private insurance", [(INSURANCE, "private insurance")]),
        ("limited English proficiency", [(LANGUAGE, "limited English proficiency")]),
        ("through an interpreter", [(LANGUAGE, "interpreter")]),
        ("an LEP patient", [(LANGUAGE, "LEP")]),
        ("non-English speaking", [(LANGUAGE, "non-English speaking")]),
        ("Spanish-speaking", [(LANGUAGE, "Spanish-speaking")]),
    ],
)
def test_each_kind_of_word_is_found_as_written(text, expected):
    assert found(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Pain management after a fall",  # "man" inside a word
        "Hershey's sign, themselves",  # "her", "he", "hem" inside words
        "History of MS and MR on echo",  # multiple sclerosis, mitral regurgitation
        "White cell count 14, black tarry stools, white blood cells in urine",
        "2 years of pain, worse while speaking",
        "T 38.1C, HR 104, 7mm stone, 10/10 pain, SpO2 98%",
        "Recurrent presentations for poorly-controlled diabetes, mild DKA resolving.",
    ],
)
def test_clinical_words_that_look_alike_are_not_demographic(text):
    assert found(text) == []


def test_every_word_the_harness_descriptor_varies_is_found():
    conditions = importlib.import_module(f"{harness_package().__name__}.conditions")
    levels = conditions.ATTRIBUTE_LEVELS
    for race in levels["race"]:
        assert found(f"A {race} patient with chest pain") == [(RACE, race)], race
    for sex in levels["sex"]:
        assert found(f"A {sex} with chest pain") == [(SEX, sex)], sex
    assert found("on Medicaid") == [(INSURANCE, "Medicaid")]
    # Every descriptor the harness writes states all five kinds, each of them found.
    for age in levels["age"]:
        for lep in levels["lep"]:
            descriptor = conditions.make_descriptor(age, "Asian", "woman", "Medicaid", lep)
            kinds = {kind for kind, _ in found(descriptor)}
            assert kinds == {AGE, RACE, SEX, INSURANCE, LANGUAGE}, descriptor


def test_each_v2_vignette_of_the_harness_is_warned_about_its_age_on_its_line(shared_vignettes):
    library = load_library([shared_vignettes])
    assert library.ok and len(library) == 16  # warnings refuse nothing
    about_the_core = [w for w in library.warnings if w.field == "clinical_core"]
    warned = {Path(w.file or "").stem: w for w in about_the_core}
    assert sorted(warned) == sorted(p.stem for p in shared_vignettes.glob("v2_*.yaml"))
    assert len(about_the_core) == 12
    for stem, warning in warned.items():
        text = (shared_vignettes / f"{stem}.yaml").read_text().splitlines()
        age = warning.message.split("'")[1]
        assert warning.line is not None
        assert age.endswith("-year-old") and age in text[warning.line - 1], stem
        assert warning.field == "clinical_core"
        assert "34, 50 and 78" in warning.message


def write(tmp_path: Path, core: str, name: str = "case_01") -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(f"id: {name}\ndomain: triage\n{core}\ncanary: C-{name}\n", encoding="utf-8")
    return path


def test_each_word_is_placed_on_its_own_line_of_a_folded_block(tmp_path):
    path = write(
        tmp_path,
        "clinical_core: >-\n"
        "  Chest pain for two hours, alert.\n"
        "  Says he takes no medicines, needs a limited\n"
        "  English interpreter. HR 92.",
    )
    vignette, problems = load_vignette(path)
    assert problems == [] and vignette is not None
    assert [(w.line, w.message.split("'")[1]) for w in vignette.warnings] == [
        (5, "he"),
        (5, "limited English"),  # broken over two lines: found where it starts
        (6, "interpreter"),
    ]
    assert all(w.file == str(path) and w.field == "clinical_core" for w in vignette.warnings)


def test_a_word_written_as_an_escape_is_placed_on_the_fields_line(tmp_path):
    path = write(tmp_path, 'clinical_core: "Chest pain, \\x6Dale, alert"')
    vignette, _ = load_vignette(path)
    assert vignette is not None
    assert [(w.line, w.message.split("'")[1]) for w in vignette.warnings] == [(3, "male")]


def test_without_the_file_the_warning_names_the_field_and_the_line_given():
    [warning] = clinical_core_warnings("A woman in pain", file="x.yaml", line=4)
    assert str(warning).startswith("x.yaml:4: clinical_core: holds 'woman', the patient's sex")
    assert "the other sex" in warning.message


def test_warnings_are_no_part_of_the_vignette(tmp_path):
    path = write(tmp_path, "clinical_core: A 54-year-old in pain")
    vignette, _ = load_vignette(path)
    assert vignette is not None and vignette.warnings
    assert vignette == type(vignette)(**{**vignette.__dict__, "warnings": ()})


def test_check_lists_the_warnings_and_still_exits_0(tmp_path):
    write(tmp_path, "clinical_core: A 54-year-old on Medicaid in pain")
    write(tmp_path, "clinical_core: Chest pain, alert", name="case_02")
    result = fma("vignettes", "check", str(tmp_path))
    assert result.returncode == 0, result.stdout
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"warning: {tmp_path / 'case_01.yaml'}:3: clinical_core: holds")
    assert "'54-year-old'" in lines[0] and "'Medicaid'" in lines[1]
    assert lines[-1].endswith("in 2 file(s); 2 warning(s)")
    listed = json.loads(fma("vignettes", "check", str(tmp_path), "--json").stdout)
    assert listed["valid"] is True
    assert [(w["line"], w["field"]) for w in listed["warnings"]] == [(3, "clinical_core")] * 2


def test_check_warns_about_the_real_vignettes_and_passes(shared_vignettes):
    result = fma("vignettes", "check", str(shared_vignettes))
    assert result.returncode == 0, result.stdout
    warned = [line for line in result.stdout.splitlines() if line.startswith("warning: ")]
    assert sum(": clinical_core: " in line for line in warned) == 12
    # and four proposal texts that speak of the study's figures (tests/core/test_priming.py)
    assert len(warned) == 16
    assert result.stdout.splitlines()[-1].endswith("; 16 warning(s)")


def test_a_flood_of_words_is_listed_up_to_a_limit_then_said_once(tmp_path):
    path = write(tmp_path, "clinical_core: >-\n  " + "he " * 5000 + "\n  54M")
    vignette, problems = load_vignette(path)
    assert problems == [] and vignette is not None
    listed, rest = vignette.warnings[:MAX_LISTED], vignette.warnings[MAX_LISTED:]
    assert [w.message.split("'")[1] for w in listed] == ["he"] * MAX_LISTED
    assert [w.message for w in rest] == [
        f"holds more demographic words than the {MAX_LISTED} listed: check all of it"
    ]
