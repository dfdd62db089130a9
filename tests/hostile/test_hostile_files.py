"""The rest of the hostile catalogue: envelopes, adjudicators.yaml, policy.yaml, hand-backs,
identity files and typed text. Each is refused by name, quickly; nothing is stored; no
traceback reaches the terminal."""

import base64
import json
import os
import threading
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


def verified(run, *extra: str) -> dict:
    """`verify --json` on the folder, parsed."""
    result = run("verify", "--json", *extra)
    assert result.exit_code in (0, 1), result.output
    found = json.loads(result.stdout)
    assert found["valid"] is (result.exit_code == 0), result.output
    return found


def registered(run) -> dict:
    """`registry --json`, parsed; its exit code agrees with its validity."""
    result = run("registry", "--json")
    assert result.exit_code in (0, 1), result.output
    found = json.loads(result.stdout)
    assert found["valid"] is (result.exit_code == 0), result.output
    return found


def stray(found: dict, name: str) -> str:
    """The message of the one stray_file line naming `name`."""
    [line] = [s for s in found["strays"] if s["file"] == name]
    assert line["code"] == "stray_file", line
    return line["message"]


@pytest.mark.parametrize(
    ("name", "content", "fragment"),
    [
        ("deep.dsse.json", DEEP, "nested more than"),
        ("huge.dsse.json", "[" + " " * (5 * 1024 * 1024) + "]", "larger than"),
        ("nul.dsse.json", '{"payload": "\x00"}', "NUL byte"),
        ("bad.dsse.json", "{not json", "not valid JSON"),
        # Base64 holds ASCII alone; JSON text may hold any character.
        (
            "accent.dsse.json",
            '{"payload": "QUJDé", "payloadType": "x", "signatures": []}',
            "payload is not valid base64",
        ),
        (
            "surrogate.dsse.json",
            '{"payload": "e30=", "payloadType": "\\ud800", "signatures": []}',
            "lone surrogate",
        ),
        (
            "sig.dsse.json",
            '{"payload": "e30=", "payloadType": "x", "signatures": [{"keyid": "k", "sig": "é"}]}',
            "not a well-formed DSSE envelope",
        ),
    ],
)
def test_a_hostile_envelope_is_a_named_stray_and_the_folder_still_verifies(
    demo, tmp_path, name, content, fragment
):
    before = registered(demo)
    assert before["valid"] and before["strays"] == []
    (tmp_path / "attestations" / name).write_text(content, encoding="utf-8")
    found = verified(demo)
    assert found["valid"] and found["problems"] == [], found
    assert fragment in stray(found, name)
    text = demo("verify")
    assert text.exit_code == 0 and f"stray {name}: stray_file:" in text.stdout, text.stdout
    after = registered(demo)  # the registry decides every band as it did without the file
    assert after["bands"] == before["bands"] and after["head"] == before["head"]
    assert fragment in stray(after, name)


def test_dev_zero_and_a_fifo_in_the_folder_are_strays_read_without_hanging(demo, tmp_path):
    before = registered(demo)
    folder = tmp_path / "attestations"
    (folder / "zero.dsse.json").symlink_to("/dev/zero")
    os.mkfifo(folder / "fifo.dsse.json")
    found = verified(demo)
    assert found["valid"] and found["problems"] == [], found
    for name in ("zero.dsse.json", "fifo.dsse.json"):
        assert "not a regular file" in stray(found, name)
    after = registered(demo)
    assert after["bands"] == before["bands"]
    assert {s["file"] for s in after["strays"]} == {"zero.dsse.json", "fifo.dsse.json"}


HOSTILE_COPIES = [
    pytest.param(LAUGHS.encode(), "was edited", id="yaml-bomb"),
    pytest.param(b"\xff\xfe" + "quorum: 1\n".encode("utf-16-le"), "was edited", id="not-utf8"),
    pytest.param(b"x" * (5 * 1024 * 1024), "larger than", id="huge"),
    pytest.param(None, "not a regular file", id="fifo"),
]


@pytest.mark.parametrize("name", ["policy.yaml", "adjudicators.yaml"])
@pytest.mark.parametrize(("content", "fragment"), HOSTILE_COPIES)
def test_a_hostile_copy_makes_the_folder_invalid_by_name_and_grants_nothing(
    demo, tmp_path, name, content, fragment
):
    """policy.yaml and adjudicators.yaml are copies of the signed records: whatever replaces
    one, the folder does not verify and the file is named; it is never parsed, so no YAML bomb,
    bad encoding, size or FIFO makes a traceback or a hang."""
    path = tmp_path / "attestations" / name
    path.unlink()
    if content is None:
        os.mkfifo(path)
    else:
        path.write_bytes(content)
    found = verified(demo)
    assert not found["valid"], found
    [problem] = found["problems"]
    assert problem["file"] == name and problem["code"] == "copy_differs", problem
    assert fragment in problem["message"], problem
    text = demo("verify")
    assert text.exit_code == 1 and f"FAIL  {name}: copy_differs:" in text.stdout, text.stdout
    listing = registered(demo)  # opening the database leaves an edited copy as it is
    assert not listing["valid"] and listing["problems"] == found["problems"]
    assert listing["bands"] and all(
        "folder_invalid" in band["reasons"] for band in listing["bands"]
    ), listing["bands"][:1]
    assert demo("registry").exit_code == 1


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
    assert decided.valid, decided.problems
    names = {p.file for p in decided.strays if p.code == "stray_file"}
    assert names == {f"deep{i}.dsse.json" for i in range(20)} | {"zero.dsse.json"}


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


BIG = "9" * 5000


def _envelope(statement: str) -> str:
    payload = base64.b64encode(statement.encode()).decode()
    return json.dumps(
        {"payload": payload, "payloadType": "application/vnd.in-toto+json", "signatures": []}
    )


def test_envelopes_with_a_huge_integer_or_a_key_twice_are_named_strays(demo, tmp_path):
    """An integer Python refuses to convert (more than 4,300 digits), in the envelope or in its
    signed statement, and a key given twice are strays named with the reason; every command
    that reads the folder goes on."""
    before = registered(demo)
    folder = tmp_path / "attestations"
    hostile = {
        "bigint.dsse.json": ('{"payload": ' + BIG + "}", "more than 4,300 digits"),
        "twice.dsse.json": (
            '{"payload": "e30=", "payload": "e30=", "payloadType": "x", "signatures": []}',
            "gives the key 'payload' twice",
        ),
        "bigstatement.dsse.json": (
            _envelope('{"_type": ' + BIG + "}"),
            "the signed payload is not a JSON statement: holds a number of more than 4,300",
        ),
    }
    for name, (content, _) in hostile.items():
        (folder / name).write_text(content)
    found = verified(demo)
    assert found["valid"] and found["problems"] == [], found
    for name, (_, fragment) in hostile.items():
        assert fragment in stray(found, name)
    after = registered(demo)
    assert after["bands"] == before["bands"] and after["head"] == before["head"]
    assert demo("policy", "show").exit_code == 0


def test_identity_files_with_a_mapping_a_number_or_an_escaped_nul_are_named(demo, tmp_path):
    good = {
        "full_name": "Dr A Person",
        "primary_qualification": "MBBS",
        "postgraduate_qualification": "FACEM",
        "registration_number": "MED0001234567",
        "registering_body": "AHPRA",
        "institution": "A Hospital",
        "email": "a@example.org",
    }
    cases = [
        ("full_name", "{first: A, last: Person}", "full_name: must be text"),
        ("full_name", "[A, Person]", "full_name: must be text"),
        ("registration_number", "0001234567", "registration_number: must be text"),
        ("full_name", '"A\\0Person"', "identity.yaml:1: full_name: holds a NUL byte"),
        ("institution", '"A\\bPlace"', "yaml:6: institution: holds the control character U+0008"),
        ("full_name", "!!binary QQ==", "the YAML tag !!binary is not accepted"),
    ]
    path = tmp_path / "identity.yaml"
    for key, value, fragment in cases:
        path.write_text("".join(f"{k}: {value if k == key else v}\n" for k, v in good.items()))
        one_error(demo("identity", "set", "rater-01", "--from", str(path), who=True), fragment)


def test_hostile_handback_bands_and_reasons_are_refused_whole(demo, tmp_path):
    """A band's JSON with a key given twice or an integer too long to read, and a reason with
    a control character (a terminal escape): each named, nothing imported."""
    cases = {
        'demo_doc_inter_01 | followup_days | AMEND {"min": 1, "min": 5, "max": 30} | x\n': (
            "gives the key 'min' twice"
        ),
        'demo_doc_inter_01 | followup_days | AMEND {"min": ' + BIG + ', "max": 30} | x\n': (
            "holds a number of more than 4,300 digits"
        ),
        "demo_med_clear_01 | analgesia_tier | AMEND {" + BIG + "} | x\n": "5,000 digits",
        "demo_med_clear_01 | analgesia_tier | ACCEPT | fine\x1b[31m red\n": "U+001B",
    }
    path = tmp_path / "paper.txt"
    for content, fragment in cases.items():
        path.write_text(content)
        one_error(demo("handback", "import", str(path), "--rater", "rater-01", who=True), fragment)
    # A byte-order mark (as some editors write) is no part of the first vignette id.
    path.write_bytes(b"\xef\xbb\xbfdemo_med_clear_01 | analgesia_tier | ACCEPT | fine\n")
    imported = demo("handback", "import", str(path), "--rater", "rater-01", who=True)
    assert imported.exit_code == 0, imported.output


def test_an_identity_key_that_is_a_fifo_or_a_device_is_refused_at_once(tmp_path):
    """The identity key is read like every other file: a FIFO neither hangs the command nor
    /dev/zero floods it."""
    from fma_bands.study.identity import _identity_key

    fifo = tmp_path / "identity.key"
    os.mkfifo(fifo)
    for path in (fifo, Path("/dev/zero")):
        outcome: list[BaseException] = []

        def read(path=path, outcome=outcome):
            try:
                _identity_key(path, create=False)
            except BaseException as exc:  # the test inspects what was raised
                outcome.append(exc)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(timeout=10)
        assert not reader.is_alive(), f"reading {path} hangs"
        [refused] = outcome
        assert isinstance(refused, FmaBandsError), refused
        assert "not a regular file" in str(refused) and str(path) in str(refused)
