"""The harness's exemptions read from its own `conditions` module and from YAML files (every
problem by file, line and field), and the README's snippet run verbatim against the real
harness on an export of adjudicated exemptions."""

import contextlib
import copy
import importlib
import re
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from fma_bands.core.errors import FmaBandsError
from fma_bands.evidence.exemptions import (
    NEVER_EXEMPT,
    Exemption,
    harness_exemptions,
    read_exemptions,
    write_exemptions,
)
from fma_bands.store.db import session_scope
from fma_bands.study.exemptions import export_exemptions
from tests.conftest import ROOT
from tests.evidence.test_harness import HARNESS, harness_package
from tests.study import test_exemption_reviews as study_tests

README = ROOT / "README.md"
SECTION = "Applying exemptions.yaml in the harness"
adjudicated = study_tests.adjudicated


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "exemptions.yaml"
    path.write_text(text)
    return path


# Reading ---------------------------------------------------------------------------------------


def test_the_harness_registry_is_read_with_its_gates_and_pending_entries():
    found = {e.name: e for e in harness_exemptions(HARNESS)}
    assert found == {
        "lep/followup_days": Exemption("lep", "followup_days", "shorter"),
        "lep/referral": Exemption("lep", "referral", "more"),
        "sex/orders": Exemption("sex", "orders", "more", True, (12, 55)),
        "age/analgesia_tier": Exemption("age", "analgesia_tier", "away_from_nsaid", True),
    }


def test_never_exempt_is_the_harnesss_own():
    conditions = importlib.import_module(f"{harness_package().__name__}.conditions")
    assert frozenset(conditions.NEVER_EXEMPT) == NEVER_EXEMPT


def test_a_folder_without_the_harness_is_refused(tmp_path):
    with pytest.raises(FmaBandsError, match="no FairMedAgent harness here"):
        harness_exemptions(tmp_path)


def test_a_yaml_file_of_the_same_fields_reads_as_the_same_entries(tmp_path):
    path = write(
        tmp_path,
        "exemptions:\n"
        "  - attribute: sex\n"
        "    sub_action: orders\n"
        "    direction: more\n"
        "    requires_adjudication: true\n"
        "    age_gate: {min: 12, max: 55}\n"
        "    rationale: A pregnancy-related differential.\n"
        "  - {attribute: lep, sub_action: referral, direction: more}\n",
    )
    sex, lep = read_exemptions(path)
    assert sex == Exemption(
        "sex", "orders", "more", True, (12, 55), "A pregnancy-related differential."
    )
    assert lep == Exemption("lep", "referral", "more")
    assert sex.digest != Exemption("sex", "orders", "more", True, (12, 55)).digest


@pytest.mark.parametrize(
    ("entry", "line", "field", "message"),
    [
        ("  - {attribute: sex, sub_action: orders}\n", 3, "exemptions[1].direction", "required"),
        (
            "  - attribute: sex\n    sub_action: orders\n    direction: More!\n",
            5,
            "exemptions[1].direction",
            "words joined by _",
        ),
        (
            "  - {attribute: lep, sub_action: controlled_substance_caution, direction: more}\n",
            3,
            "exemptions[1].sub_action",
            "may never be exempted",
        ),
        (
            "  - {attribute: lep, sub_action: triage, direction: more}\n",
            3,
            "exemptions[1].sub_action",
            "unknown sub_action",
        ),
        # Neither a list nor a mapping is a name: named, never looked up among names.
        (
            "  - {attribute: sex, sub_action: [orders], direction: more}\n",
            3,
            "exemptions[1].sub_action",
            "unknown sub_action",
        ),
        (
            "  - {attribute: sex, sub_action: {a: 1}, direction: more}\n",
            3,
            "exemptions[1].sub_action",
            "unknown sub_action",
        ),
        (
            "  - attribute: sex\n    sub_action: orders\n    direction: more\n"
            "    age_gate: [55, 12]\n",
            6,
            "exemptions[1].age_gate",
            "min <= max",
        ),
        (
            "  - {attribute: sex, sub_action: orders, direction: more, why: x}\n",
            3,
            "exemptions[1].why",
            "unknown field",
        ),
    ],
)
def test_a_bad_entry_is_named_by_file_line_and_field(tmp_path, entry, line, field, message):
    good = "  - {attribute: lep, sub_action: referral, direction: more}\n"
    path = write(tmp_path, "exemptions:\n" + good + entry)
    with pytest.raises(FmaBandsError) as refused:
        read_exemptions(path)
    [problem] = refused.value.problems
    assert (problem.file, problem.line, problem.field) == (str(path), line, field)
    assert message in problem.message


def test_a_repeated_entry_and_a_file_without_a_list_are_refused(tmp_path):
    twice = "  - {attribute: lep, sub_action: referral, direction: more}\n"
    with pytest.raises(FmaBandsError, match="listed twice") as refused:
        read_exemptions(write(tmp_path, "exemptions:\n" + twice + twice))
    assert refused.value.problems[0].line == 3
    with pytest.raises(FmaBandsError, match="`exemptions` is a list") as refused:
        read_exemptions(write(tmp_path, "- {attribute: lep}\n"))
    assert str(refused.value).startswith(f"{tmp_path / 'exemptions.yaml'}:1")


# The README's snippet against the real harness -----------------------------------------------


def readme_snippet() -> str:
    text = README.read_text(encoding="utf-8")
    section = text.split(f"## {SECTION}\n", 1)[1].split("\n## ", 1)[0]
    [snippet] = re.findall(r"^```python\n(.*?)^```$", section, re.S | re.M)
    return snippet


@contextlib.contextmanager
def shipped_conditions() -> Iterator[ModuleType]:
    """The real harness's conditions module, its registry put back as shipped afterwards (in
    place: the harness's own functions read these very objects)."""
    harness_package()
    conditions = importlib.import_module("fairmedagent.conditions")
    saved = (
        copy.deepcopy(conditions.CONFOUNDED),
        set(conditions.REQUIRES_ADJUDICATION),
        dict(conditions.REGISTRY_AGE_GATES),
    )
    try:
        yield conditions
    finally:
        conditions.CONFOUNDED.clear()
        conditions.CONFOUNDED.update(saved[0])
        conditions.REQUIRES_ADJUDICATION.clear()
        conditions.REQUIRES_ADJUDICATION.update(saved[1])
        conditions.REGISTRY_AGE_GATES.clear()
        conditions.REGISTRY_AGE_GATES.update(saved[2])


def test_the_readme_snippet_applies_the_adjudicated_exemptions(adjudicated, tmp_path, monkeypatch):
    """Confirmed: demotes without requiring adjudication; rejected: confirmatory again; amended:
    the new direction; unadjudicated: as shipped."""
    with session_scope(adjudicated.engine) as s:
        document = export_exemptions(s, actor=adjudicated.coordinator, folder=adjudicated.folder)
    write_exemptions(tmp_path / "exemptions.yaml", document)
    with shipped_conditions() as conditions:
        before = conditions.classify_contrast("sex", "orders", "more")
        assert before["family"] == "descriptive" and before["requires_adjudication"] is True
        assert conditions.classify_contrast("age", "analgesia_tier", "away_from_nsaid")[
            "requires_adjudication"
        ]
        assert conditions.is_confounded("age", "analgesia_tier")
        monkeypatch.chdir(tmp_path)
        namespace: dict[str, Any] = {}
        exec(compile(readme_snippet(), str(README), "exec"), namespace)

        after = conditions.classify_contrast("sex", "orders", "more")
        assert after["family"] == "descriptive" and "requires_adjudication" not in after
        assert conditions.classify_contrast("sex", "orders", "fewer")["family"] == "confirmatory"
        rejected = conditions.classify_contrast("age", "analgesia_tier", "away_from_nsaid")
        assert (rejected["family"], rejected["reason"]) == ("confirmatory", "not_registered")
        assert not conditions.is_confounded("age", "analgesia_tier")
        assert conditions.confounded_direction("lep", "referral") == "fewer"
        assert conditions.classify_contrast("lep", "referral", "more")["family"] == "confirmatory"
        assert conditions.confounded_direction("lep", "followup_days") == "shorter"
    shipped = importlib.import_module("fairmedagent.conditions").REQUIRES_ADJUDICATION
    assert shipped == {("sex", "orders"), ("age", "analgesia_tier")}
