"""Hostile vignette files: each is refused by name, in well under a second, and nothing else in
the folder is lost (docs/design.md, Quality bar)."""

import os
import time

import pytest
from click.testing import CliRunner

from fma_bands.cli import cli
from fma_bands.core.vignettes import load_library, load_vignette
from tests.conftest import DEMO_VIGNETTES

GOOD = (DEMO_VIGNETTES / "demo_med_clear_01.yaml").read_text()
HEADER = "id: evil_01\ndomain: triage\nclinical_core: x\ncanary: FMA-CANARY-evil\n"


def laughs(field: str) -> str:
    """A billion laughs: nine levels of aliases, each ten times the one before."""
    lines = ['a0: &a0 "lol"']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 10)]
    return "\n".join(lines) + f"\n{field}: *a9\n"


CATALOGUE = {
    # 20,000 block sequences nested on one line: "- - - - ... x".
    "deep_yaml": (HEADER + "proposals: \n  " + "- " * 20000 + "x\n", "nested"),
    "deep_flow": (HEADER + "proposals: " + "[" * 20000 + "]" * 20000 + "\n", "nesting depth"),
    "laughs_ambiguity": (HEADER + laughs("ambiguity"), "anchors and aliases"),
    "laughs_acceptable": (HEADER + laughs("proposals"), "anchors and aliases"),
    "laughs_sub_action": (
        HEADER + "x: &s esi_acuity\nproposals:\n  - sub_action: *s\n",
        "anchors and aliases",
    ),
    "duplicate_key": (HEADER + "domain: medication\n", "the key 'domain' is given twice"),
    "nul_byte": (HEADER + "tool_results:\n  inr: '1.0\x00'\n", "NUL byte"),
    "huge": (
        HEADER + "clinical_core_extra: " + "x" * (50 * 1024 * 1024) + "\n",
        "larger than the 512 KB limit",
    ),
}


@pytest.mark.parametrize("name", sorted(CATALOGUE))
def test_a_hostile_file_is_refused_by_name_quickly(tmp_path, name):
    text, message = CATALOGUE[name]
    path = tmp_path / f"{name}.yaml"
    path.write_bytes(text.encode())
    started = time.perf_counter()
    vignette, problems = load_vignette(path)
    assert time.perf_counter() - started < 0.5
    assert vignette is None
    assert any(message in p.message for p in problems), problems
    assert all(p.file == str(path) for p in problems)


def test_a_link_to_dev_zero_a_fifo_and_a_folder_are_refused(tmp_path):
    (tmp_path / "zero.yaml").symlink_to("/dev/zero")
    os.mkfifo(tmp_path / "fifo.yaml")
    (tmp_path / "folder.yaml").mkdir()
    (tmp_path / "demo_med_clear_01.yaml").write_text(GOOD)
    started = time.perf_counter()
    library = load_library([tmp_path])
    assert time.perf_counter() - started < 1.0
    assert list(library.vignettes) == ["demo_med_clear_01"]  # the good one still loads
    refused = {os.path.basename(p.file): p.message for p in library.problems}
    assert set(refused) == {"zero.yaml", "fifo.yaml", "folder.yaml"}
    assert all("not a regular file" in m for m in refused.values())


def test_the_command_line_lists_each_hostile_file_and_never_a_traceback(tmp_path):
    for name, (text, _) in CATALOGUE.items():
        if name != "huge":
            (tmp_path / f"{name}.yaml").write_bytes(text.encode())
    (tmp_path / "zero.yaml").symlink_to("/dev/zero")
    result = CliRunner().invoke(cli, ["vignettes", "check", str(tmp_path)], catch_exceptions=False)
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    for name in CATALOGUE:
        if name != "huge":
            assert f"{name}.yaml" in result.stdout


def test_results_and_text_fields_are_kept_as_written(tmp_path):
    text = GOOD.replace(
        '  cbc: "haemoglobin 136 g/L"\n',
        "  cbc: 1.0\n  pregnancy_test: no\n  lactate: 2.10\n  marker: null\n",
    ).replace("ambiguity: clear", "ambiguity: clear")
    path = tmp_path / "demo_med_clear_01.yaml"
    path.write_text(text)
    vignette, problems = load_vignette(path)
    assert problems == []
    assert vignette.tool_results["cbc"] == "1.0"
    assert vignette.tool_results["pregnancy_test"] == "no"
    assert vignette.tool_results["lactate"] == "2.10"
    assert vignette.tool_results["marker"] == "null"
