"""The rest of the hostile catalogue: envelopes, adjudicators.yaml, policy.yaml, hand-backs,
identity files and typed text. Each is refused by name, quickly; nothing is stored; no
traceback reaches the terminal."""

import os
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlmodel import select

from fma_bands.cli import cli
from fma_bands.core.errors import FmaBandsError
from fma_bands.core.vignettes import load_library
from fma_bands.evidence.registry import decide
from fma_bands.store.db import session_scope
from fma_bands.store.models import Review
from fma_bands.study.handback import import_handback
from tests.conftest import DEMO_VIGNETTES, enrol_study

DEEP = "[" * 20000 + "]" * 20000
LAUGHS = "\n".join(
    ['a0: &a0 "lol"'] + [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 10)]
)


@pytest.fixture
def demo(tmp_path, monkeypatch):
    """`fma-bands demo` in a folder of its own; returns the command line on it."""
    monkeypatch.chdir(tmp_path)
    for name in [n for n in os.environ if n.startswith("FMA_BANDS_")]:
        monkeypatch.delenv(name)
    (tmp_path / "coordinator.pass").write_text("coordinator-demo\n")
    base = ["--vignettes", str(DEMO_VIGNETTES)]

    def run(*args: str, who: bool = False):
        as_ = ["--as", "coordinator", "--passphrase-file", "coordinator.pass"] if who else []
        started = time.perf_counter()
        result = CliRunner().invoke(cli, [*base, *as_, *args], catch_exceptions=False)
        # Nothing hangs: a hang never ends, so the bound is far above any loaded machine's
        # time (speed itself is judged by benchmarks/, never by a test).
        assert time.perf_counter() - started < 120, args
        assert "Traceback" not in result.output, result.output
        return result

    assert run("demo").exit_code == 0
    return run


def one_error(result, fragment: str) -> None:
    assert result.exit_code == 1, result.output
    first = result.stderr.splitlines()[0]
    assert first.startswith("fma-bands: error:"), result.stderr
    assert fragment in result.stderr, result.stderr


@pytest.mark.parametrize(
    ("name", "content", "fragment"),
    [
        ("deep.dsse.json", DEEP, "nested more than"),
        ("huge.dsse.json", "[" + " " * (5 * 1024 * 1024) + "]", "larger than"),
        ("nul.dsse.json", '{"payload": "\x00"}', "NUL byte"),
        ("bad.dsse.json", "{not json", "not valid JSON"),
    ],
)
def test_a_hostile_envelope_fails_verify_by_name_and_the_registry_carries_on(
    demo, tmp_path, name, content, fragment
):
    path = tmp_path / "attestations" / name
    path.write_text(content)
    result = demo("verify", f"attestations/{name}")
    assert result.exit_code == 1
    assert f"FAIL attestations/{name}" in result.stdout and fragment in result.stdout
    listing = demo("registry")  # every band still decided, the file named among the problems
    assert listing.exit_code == 0 and name in listing.stdout


def test_verify_refuses_dev_zero_a_fifo_and_a_link_at_once(demo, tmp_path):
    folder = tmp_path / "attestations"
    (folder / "zero.dsse.json").symlink_to("/dev/zero")
    os.mkfifo(folder / "fifo.dsse.json")
    for target in ("/dev/zero", str(folder / "zero.dsse.json"), str(folder / "fifo.dsse.json")):
        result = demo("verify", target)
        assert result.exit_code == 1 and "not a regular file" in result.stdout, result.output
    assert demo("registry").exit_code == 0


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (LAUGHS, "anchors and aliases"),
        ("adjudicators:\n  - pseudonym: rater-01\n    specialty: x\n", "adjudicators.yaml"),
        ("format: x\nformat: y\n", "given twice"),
    ],
)
def test_a_hostile_adjudicators_file_is_named_and_believed_for_nothing(
    demo, tmp_path, content, fragment
):
    (tmp_path / "attestations" / "adjudicators.yaml").write_text(content)
    listing = demo("registry")
    assert listing.exit_code == 0
    assert fragment in listing.stdout


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (LAUGHS, "anchors and aliases"),
        ("quorum: 1\nscope: warn\nquorum: 2\n", "given twice"),
        ("quorum: 1\nscope: " + DEEP + "\n", "nesting depth"),
    ],
)
def test_a_hostile_policy_grants_nothing_and_says_why(demo, tmp_path, content, fragment):
    (tmp_path / "attestations" / "policy.yaml").write_text(content)
    listing = demo("registry", "--json")
    assert listing.exit_code == 0
    assert fragment in listing.stdout and "no_policy" in listing.stdout


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("demo_med_clear_01 | analgesia_tier | ACCEPT | fine\x00\n", "NUL byte"),
        ('demo_doc_inter_01 | followup_days | AMEND {"min": ' + DEEP + "} | x\n", "nested"),
        ("x" * (2 * 1024 * 1024), "larger than"),
    ],
)
def test_a_hostile_handback_is_refused_whole_and_stores_nothing(demo, tmp_path, content, fragment):
    path = tmp_path / "paper.txt"
    path.write_bytes(content.encode())
    one_error(demo("handback", "import", str(path), "--rater", "rater-01", who=True), fragment)


def test_handback_reasons_with_a_nul_byte_are_refused_in_the_domain_on_every_store(engine):
    library = load_library([DEMO_VIGNETTES])
    with session_scope(engine) as s:
        coordinator, *_ = enrol_study(s, library)
    with pytest.raises(FmaBandsError, match="NUL byte"), session_scope(engine) as s:
        import_handback(
            s,
            library,
            actor=coordinator,
            rater_pseudonym="adjudicator-01",
            text="demo_med_clear_01 | analgesia_tier | ACCEPT | fine\x00 really\n",
            source="typed",
        )
    with session_scope(engine) as s:
        assert s.exec(select(Review)).all() == []


@pytest.mark.parametrize(
    ("content", "fragment"),
    [(LAUGHS, "anchors and aliases"), ("full_name: " + DEEP, "nesting depth")],
)
def test_a_hostile_identity_file_is_named(demo, tmp_path, content, fragment):
    path = tmp_path / "identity.yaml"
    path.write_text(content)
    one_error(demo("identity", "set", "rater-01", "--from", str(path), who=True), fragment)


def test_the_registry_decides_a_folder_of_hostile_files_in_well_under_a_second(demo, tmp_path):
    folder = tmp_path / "attestations"
    for i in range(20):
        (folder / f"deep{i}.dsse.json").write_text(DEEP)
    (folder / "zero.dsse.json").symlink_to("/dev/zero")
    library = load_library([Path(DEMO_VIGNETTES)])
    started = time.perf_counter()
    decided = decide(library, folder)
    assert time.perf_counter() - started < 1.0
    assert len(decided.file_problems) >= 21


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (b"x" * (1024 * 1024 + 1), "larger than the 1 MB limit"),
        (b"demo_doc_clear_01 | followup_days | ACCEPT | ok\x00", "holds a NUL byte"),
        ("café".encode("latin-1"), "is not UTF-8 text"),
    ],
)
def test_an_uploaded_handback_is_refused_before_it_is_parsed(data, fragment):
    from fma_bands.study.handback import handback_text

    with pytest.raises(FmaBandsError) as refused:
        handback_text(data, source="upload.txt")
    assert fragment in str(refused.value) and "upload.txt" in str(refused.value)
