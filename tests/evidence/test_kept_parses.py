"""The envelope files as parsed before (fma_bands/evidence/kept_parses.py): a second read of a
folder parses no record and finds what the first found, with every signature still checked; a
changed or new file alone is parsed; an answer not made here, or holding anything but plain
data, is never used; and where no front end said where to keep them, nothing is kept."""

import json
import os
import pickle
import shutil
from pathlib import Path

import pytest

from benchmarks.study_files import build_study
from fma_bands.core.errors import FmaBandsError
from fma_bands.evidence import envelope, kept_parses
from fma_bands.evidence.envelope import envelope_files
from fma_bands.evidence.kept import SUFFIX
from fma_bands.evidence.kept_parses import FOLDER, keep_parses_in
from fma_bands.evidence.log import read_evidence
from tests.evidence.kept_answers import replace_the_answer


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """A small study signed as a study signs it: root, roster, policy, every rater's reviews."""
    return build_study(tmp_path_factory.mktemp("study"), n_vignettes=6, n_raters=2)


@pytest.fixture
def folder(study, tmp_path):
    found = tmp_path / "attestations"
    shutil.copytree(study.attestations, found)
    return found


@pytest.fixture(autouse=True)
def new_process():
    """Each read below starts as a new process does: nothing parsed or verified yet, and no
    kept answer taken."""

    def start() -> None:
        envelope.clear_cache()
        kept_parses._kept.forget()

    start()
    yield start
    start()


def parsed(monkeypatch) -> list[str]:
    """The digests of the envelope files parsed from now on."""
    digests: list[str] = []
    real = envelope._parse

    def counted(data, source):
        digests.append(Path(source).name)
        return real(data, source)

    monkeypatch.setattr(envelope, "_parse", counted)
    return digests


def verified(monkeypatch) -> list[str]:
    """The keyids whose signatures are checked from now on."""
    keyids: list[str] = []
    real = envelope.verify_parsed

    def counted(parsed, trusted):
        keyids.extend(trusted)
        return real(parsed, trusted)

    monkeypatch.setattr(envelope, "verify_parsed", counted)
    return keyids


def found(folder: Path):
    evidence = read_evidence(folder)
    return (
        evidence.valid,
        evidence.head,
        evidence.study,
        [(p.code, p.message) for p in evidence.problems],
        [(r.digest, r.kind, r.statement, r.keyid) for r in evidence.chain],
        sorted(evidence.adjudicators),
        sorted(evidence.revoked),
    )


def test_a_second_read_parses_no_record_checks_every_signature_and_finds_the_same(
    folder, tmp_path, monkeypatch, new_process
):
    kept = tmp_path / "kept"
    fresh = found(folder)
    assert fresh[0], fresh[3]
    new_process()
    names = parsed(monkeypatch)
    with keep_parses_in(kept):
        first = found(folder)
    assert len(names) == len(envelope_files(folder)) and first == fresh
    new_process()
    names.clear()
    keyids = verified(monkeypatch)
    with keep_parses_in(kept):
        second = found(folder)
    assert names == [] and second == fresh
    # What was kept is how the files parse, never whether a signature holds: each is checked.
    assert len(keyids) >= len(envelope_files(folder))


def test_a_changed_file_alone_is_parsed_again_and_a_removed_one_forgotten(
    folder, tmp_path, monkeypatch, new_process
):
    kept = tmp_path / "kept"
    with keep_parses_in(kept):
        found(folder)
    *_, last = envelope_files(folder)
    data = bytearray(last.read_bytes())
    data[data.index(b'"sig"') + 8] ^= 1  # another signature: refused, and the chain with it
    last.write_bytes(bytes(data))
    new_process()
    names = parsed(monkeypatch)
    with keep_parses_in(kept):
        changed = found(folder)
    assert names == [last.name]
    new_process()
    assert changed == found(folder) and not changed[0]
    last.unlink()
    (folder / "adjudicators.yaml").unlink()  # the readable copy of the records, made again
    new_process()
    names.clear()
    with keep_parses_in(kept):
        after = found(folder)
    assert after[0], after[3]
    assert names == []
    # What is kept holds the files there now, and nothing of the file removed.
    new_process()
    with keep_parses_in(kept):
        kept_parses.recall_parses(folder)
    held = {envelope.load_envelope(p).file_sha256 for p in envelope_files(folder)}
    assert set(envelope._parsed) == held


def test_another_version_of_the_code_parses_every_file(folder, tmp_path, monkeypatch, new_process):
    with keep_parses_in(tmp_path / "kept"):
        found(folder)
    monkeypatch.setattr("fma_bands.core.code.code_digest", lambda *libraries: "another version")
    new_process()
    names = parsed(monkeypatch)
    with keep_parses_in(tmp_path / "kept"):
        found(folder)
    assert len(names) == len(envelope_files(folder))


def test_nothing_is_kept_where_no_front_end_said_where(folder, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    found(folder)
    assert not (tmp_path / "kept").exists()
    assert kept_parses._kept.folder is None


def test_an_answer_changed_without_the_key_is_not_used(folder, tmp_path, monkeypatch, new_process):
    kept = tmp_path / "kept"
    with keep_parses_in(kept):
        found(folder)
    (answer,) = (kept / FOLDER).glob("*" + SUFFIX)
    data = bytearray(answer.read_bytes())
    data[-20] ^= 1  # one bit of the parses changed: the authentication no longer holds
    answer.write_bytes(bytes(data))
    assert_parsed_afresh(folder, kept, monkeypatch, new_process)


def plant(folder: Path, kept: Path, parses: object, new_process) -> None:
    """`parses` in place of what a read kept, under this user's own key: what only someone
    holding the key could write."""
    with keep_parses_in(kept):
        found(folder)
    replace_the_answer(kept / FOLDER, pickle.dumps(parses))
    new_process()


def assert_parsed_afresh(folder: Path, kept: Path, monkeypatch, new_process) -> None:
    new_process()
    fresh = found(folder)
    new_process()
    names = parsed(monkeypatch)
    with keep_parses_in(kept):
        assert found(folder) == fresh
    assert len(names) == len(envelope_files(folder))


class _Calls:
    """Unpickled, calls `function` with `args`: what an answer naming a function could do."""

    def __init__(self, function, *args) -> None:
        self.function, self.args = function, args

    def __reduce__(self):
        return (self.function, self.args)


class _Statement(dict):
    """A class of its own, however plain the data it holds."""


def _kept_parse(folder: Path) -> tuple[str, tuple]:
    """One file's digest and its parse as envelope.py makes it."""
    path = envelope_files(folder)[0]
    checked = envelope.load_envelope(path)
    assert checked.file_sha256 is not None
    return checked.file_sha256, envelope._parsed[checked.file_sha256]


@pytest.mark.parametrize(
    "planted",
    [
        lambda marker, digest, parse: {digest: (_Calls(os.mkdir, str(marker)), None, None, None)},
        lambda marker, digest, parse: {
            digest: ((None, parse[0][1], parse[0][2], _Statement(parse[0][3])), None, None, None)
        },
        lambda marker, digest, parse: {digest: (parse[0], "malformed", None, parse[3])},
        lambda marker, digest, parse: {digest: ((b"payload", *parse[0][1:]), None, None, None)},
        lambda marker, digest, parse: {digest: (parse[0], parse[1], ["its reviews"], parse[3])},
        lambda marker, digest, parse: {digest: (*parse[:3], (parse[3][0], str(parse[3][1])))},
        lambda marker, digest, parse: {digest: (*parse[:3], (parse[3][1], parse[3][0]))},
        lambda marker, digest, parse: {digest: (*parse[:3], (-1, parse[3][1]))},
        lambda marker, digest, parse: {digest: (*parse[:3], (True, parse[3][1]))},
        lambda marker, digest, parse: {digest: parse[:3]},
        lambda marker, digest, parse: [(digest, parse)],
    ],
    ids=[
        "a function",
        "a class",
        "an error of another shape",
        "a payload",
        "what it lacks, not text",
        "where the payload lies, not numbers",
        "where the payload lies, its end first",
        "where the payload lies, before the file",
        "where the payload lies, a truth value",
        "a parse of the format before",
        "a list",
    ],
)
def test_an_authenticated_answer_of_anything_but_plain_parses_is_not_used(
    folder, tmp_path, monkeypatch, new_process, planted
):
    """Even under this user's key, the answer makes no object of a class and no call, and a
    parse of another shape than envelope.py's is not taken."""
    marker = tmp_path / "made"
    digest, parse = _kept_parse(folder)
    plant(folder, tmp_path / "kept", planted(marker, digest, parse), new_process)
    assert_parsed_afresh(folder, tmp_path / "kept", monkeypatch, new_process)
    assert not marker.exists()


def envelopes_parsed(monkeypatch) -> list[str]:
    """The payload texts of the envelopes parsed as DSSE from now on (a signature checked on a
    record read from its kept parse parses its envelope again only when its payload's place in
    the bytes is not known)."""
    payloads: list[str] = []
    real = envelope.parse_envelope

    def counted(found):
        payloads.append(found["payload"])
        return real(found)

    monkeypatch.setattr(envelope, "parse_envelope", counted)
    return payloads


def read_with_parses_kept(folder: Path, kept: Path, new_process) -> tuple:
    """What a read of the folder finds with nothing kept; then a read that keeps its parses in
    `kept`, and a new process, so that the caller's read is a second one."""
    fresh = found(folder)
    assert fresh[0], fresh[3]
    new_process()
    with keep_parses_in(kept):
        found(folder)
    new_process()
    return fresh


def test_a_second_read_checks_each_signature_on_the_payload_where_the_first_found_it(
    folder, tmp_path, monkeypatch, new_process
):
    """The second read parses no envelope as JSON again, not even to check a signature: the
    payload is decoded from the bytes just read, where the first read found it, and every
    signature is checked on it."""
    kept = tmp_path / "kept"
    fresh = read_with_parses_kept(folder, kept, new_process)
    payloads = envelopes_parsed(monkeypatch)
    keyids = verified(monkeypatch)
    with keep_parses_in(kept):
        second = found(folder)
    assert payloads == [] and second == fresh
    assert len(keyids) >= len(envelope_files(folder))


def test_a_payload_spelled_with_json_escapes_is_read_again_from_its_envelope(
    folder, tmp_path, monkeypatch, new_process
):
    """JSON may spell the payload's base64 with escapes (`\\u0041` for `A`): the payload is the
    same and the record as good, but it lies nowhere in the bytes as written, so a second read
    parses that envelope (and no other) again to check its signature, and finds the same."""
    path = envelope_files(folder)[-1]
    data = json.loads(path.read_bytes())
    text = json.dumps(data)
    payload = data["payload"]
    escaped = "".join(f"\\u{ord(c):04x}" if i % 7 == 0 else c for i, c in enumerate(payload))
    path.write_text(text.replace(payload, escaped), encoding="utf-8")
    assert envelope.load_envelope(path).payload_span is None
    new_process()
    kept = tmp_path / "kept"
    fresh = read_with_parses_kept(folder, kept, new_process)
    names = parsed(monkeypatch)
    payloads = envelopes_parsed(monkeypatch)
    keyids = verified(monkeypatch)
    with keep_parses_in(kept):
        second = found(folder)
    assert names == [] and second == fresh
    assert payloads == [payload]
    assert len(keyids) >= len(envelope_files(folder))


def test_a_kept_parse_does_not_stand_for_the_signature(folder, tmp_path, monkeypatch, new_process):
    """Bytes that parsed before are still checked against the key the walk trusts: a signature
    that no longer verifies (the key rostered changed in the walk) refuses the record."""
    kept = tmp_path / "kept"
    with keep_parses_in(kept):
        found(folder)
    *_, last = envelope_files(folder)
    signer = envelope.load_envelope(last).claimed["predicate"]["signer"]["keyid"]
    new_process()
    real = envelope.verify_parsed

    def refused(parsed, trusted):
        if signer in trusted:
            raise FmaBandsError("the signature does not verify", code="bad_signature")
        return real(parsed, trusted)

    monkeypatch.setattr(envelope, "verify_parsed", refused)
    names = parsed(monkeypatch)
    with keep_parses_in(kept):
        evidence = read_evidence(folder)
    assert names == [] and not evidence.valid
    # The rater's own activation is the first record their key signs.
    assert [p.code for p in evidence.problems] == ["bad_signature"]


def test_two_folders_read_in_turn_each_find_their_own_parses(
    folder, study, tmp_path, monkeypatch, new_process
):
    other = tmp_path / "other"
    shutil.copytree(study.attestations, other)
    *_, last = envelope_files(other)
    last.unlink()
    (other / "adjudicators.yaml").unlink()
    kept = tmp_path / "kept"
    with keep_parses_in(kept):
        found(folder)
        found(other)
    for read in (folder, other):
        new_process()
        names = parsed(monkeypatch)
        with keep_parses_in(kept):
            found(read)
        assert names == [], read


def test_a_process_writes_a_folders_parses_once_and_the_next_keeps_what_came_since(
    folder, tmp_path, monkeypatch, new_process
):
    """The app's server reads the folder again after every record: it leaves them to the next
    process rather than write the whole answer again on a page's way."""
    kept = tmp_path / "kept"
    with keep_parses_in(kept):
        found(folder)
        (answer,) = (kept / FOLDER).glob("*" + SUFFIX)
        written = answer.stat()
        (folder / "999999-stray.dsse.json").write_text("{}")
        found(folder)
        assert answer.stat().st_ino == written.st_ino
    new_process()
    names = parsed(monkeypatch)
    with keep_parses_in(kept):
        found(folder)
    assert names == ["999999-stray.dsse.json"]
    new_process()
    names.clear()
    with keep_parses_in(kept):
        found(folder)
    assert names == []


def test_a_folder_of_more_records_than_a_process_holds_keeps_nothing(folder, tmp_path, monkeypatch):
    """What it would keep would never all be found again (the planted files of someone who can
    write the folder would have the answer written on every read)."""
    monkeypatch.setattr(envelope, "_CACHE_ENTRIES", 3)
    assert len(envelope_files(folder)) > 3
    with keep_parses_in(tmp_path / "kept"):
        found(folder)
    assert list((tmp_path / "kept" / FOLDER).glob("*" + SUFFIX)) == []
