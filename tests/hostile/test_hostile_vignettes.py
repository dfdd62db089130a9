"""Hostile vignette files: each is refused by name, in well under a second, and nothing else in
the folder is lost (docs/design.md, Quality bar)."""

import os
import re
import shutil
import time

import pytest
from click.testing import CliRunner

from fma_bands.cli import cli
from fma_bands.core import vignettes
from fma_bands.core.vignettes import load_library, load_vignette
from fma_bands.store.db import session_scope
from fma_bands.store.models import VignetteRecord
from fma_bands.study.library import sync_vignettes
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
    "huge_integer": (HEADER + "ambiguity: " + "9" * 5000 + "\n", "a number of 5,000 digits"),
    # Hexadecimal digits are the densest: the shortest text that is too long a number.
    "huge_hex_integer": (
        HEADER + "ambiguity: 0x" + "f" * 3572 + "\n",
        "a number of about 4,302 digits",
    ),
    "anchor_alone": (HEADER + "ambiguity: &a clear\n", "anchors and aliases"),
    "escaped_control_key": (HEADER + 'tool_labels:\n  "in\\er": INR\n', "a key here holds"),
    "escaped_nul": (HEADER + 'tool_results:\n  inr: "1.0\\0"\n', "holds a NUL byte"),
    "escaped_control": (HEADER + 'tool_labels:\n  inr: "INR\\e"\n', "U+001B"),
    "set_tag": (
        HEADER + "proposals:\n  - sub_action: esi_acuity\n    acceptable: !!set {2: null}\n",
        "the YAML tag !!set is not accepted",
    ),
    "binary_tag": (HEADER + "ambiguity: !!binary Y2xlYXI=\n", "!!binary is not accepted"),
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


@pytest.mark.parametrize("vid", ["demo_med_\u0441lear_01", "demo_med_\uff43lear_01", "Demo_01"])
def test_an_id_that_is_not_plain_lowercase_ascii_is_refused_by_name(tmp_path, vid):
    """A Cyrillic "с" or a full-width "ｃ" looks like a "c": refused even where the file is
    named to match."""
    path = tmp_path / f"{vid}.yaml"
    path.write_text(GOOD.replace("id: demo_med_clear_01", f"id: {vid}"))
    vignette, problems = load_vignette(path)
    assert vignette is None
    [problem] = problems
    assert (problem.field, problem.line) == ("id", 2)
    assert "is not an id: use lowercase ASCII letters" in problem.message


def test_an_orderable_that_is_not_plain_ascii_is_refused(tmp_path):
    path = tmp_path / "demo_med_clear_01.yaml"
    path.write_text(GOOD.replace("  cbc:", "  \u0441bc:"))
    vignette, problems = load_vignette(path)
    assert vignette is None
    assert any(
        p.field == "tool_results.\u0441bc" and "lowercase ASCII" in p.message for p in problems
    ), problems


@pytest.mark.parametrize("written", ["[no]", "[yes]", "[off]"])
def test_yes_and_no_are_text_so_a_boolean_band_written_with_them_is_refused(tmp_path, written):
    path = tmp_path / "demo_med_clear_01.yaml"
    path.write_text(GOOD.replace("acceptable: [false]", f"acceptable: {written}"))
    vignette, problems = load_vignette(path)
    assert vignette is None
    [problem] = problems
    assert problem.field == "proposals.1.acceptable"
    assert "is text but controlled_substance_caution takes true or false" in problem.message


def test_a_file_the_check_refuses_is_left_out_of_the_study_and_the_rest_is_synced(tmp_path, engine):
    """One validator: the escaped NUL that `vignettes check` used to pass (and the store then
    refused, naming no file) is named by the check, and the sync leaves it out, on SQLite and
    PostgreSQL alike."""
    folder = tmp_path / "vignettes"
    shutil.copytree(DEMO_VIGNETTES, folder)
    path = folder / "demo_med_clear_01.yaml"
    path.write_text(re.sub(r"canary: .*", lambda _: r'canary: "before\0after"', GOOD))
    result = CliRunner().invoke(cli, ["vignettes", "check", str(folder)], catch_exceptions=False)
    assert result.exit_code == 1
    assert f"{path}:15: canary: holds a NUL byte" in result.stdout
    library = load_library([folder])
    assert "demo_med_clear_01" not in library.vignettes and len(library) == 11
    with session_scope(engine) as s:
        report = sync_vignettes(s, library, actor=None)
    assert len(report.added) == 11
    with session_scope(engine) as s:
        assert s.get(VignetteRecord, "demo_med_clear_01") is None


def test_a_file_fma_bands_fails_on_is_left_out_and_named(tmp_path, monkeypatch):
    """Whatever goes wrong reading one file, the others load and that file is named."""
    (tmp_path / "demo_med_clear_01.yaml").write_text(GOOD)
    (tmp_path / "odd_01.yaml").write_text(GOOD.replace("demo_med_clear_01", "odd_01"))
    real = vignettes.parse_vignette

    def fails_on_odd(data, name, *args, **kwargs):
        if name.endswith("odd_01.yaml"):
            raise ValueError("an unforeseen input")
        return real(data, name, *args, **kwargs)

    monkeypatch.setattr(vignettes, "parse_vignette", fails_on_odd)
    library = load_library([tmp_path])
    assert list(library.vignettes) == ["demo_med_clear_01"]
    [problem] = library.problems
    assert problem.file == str(tmp_path / "odd_01.yaml")
    assert "could not read this file (ValueError), so it is left out" in problem.message
