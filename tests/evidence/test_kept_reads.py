"""The vignette files as read before (fma_bands/evidence/kept_reads.py): a second load parses
nothing and gives the same library, a changed file alone is parsed again, and an answer not
made here, or holding anything but the core's types, is never used."""

import hashlib
import os
import pickle
import shutil
from pathlib import Path

import pytest

from fma_bands.core import bands, vignettes
from fma_bands.core.files import write_json_atomically
from fma_bands.core.vignettes import Reads, load_library
from fma_bands.evidence import kept_reads
from fma_bands.evidence.kept import SUFFIX
from fma_bands.evidence.kept_reads import FOLDER, load_library_kept
from tests.evidence.kept_answers import replace_the_answer

DEMO = Path(__file__).parents[2] / "vignettes"


@pytest.fixture
def folder(tmp_path):
    """The demo's vignettes and one file with a problem (its id is not its name)."""
    found = tmp_path / "vignettes"
    shutil.copytree(DEMO, found)
    text = (found / "demo_med_clear_01.yaml").read_text()
    (found / "wrong_name.yaml").write_text(text.replace("canary:", "canary: x", 1))
    return found


def parsed(monkeypatch) -> list[str]:
    """The names of the files parsed from now on."""
    names: list[str] = []
    real = Reads.read

    def counted(self, data, path, digest):
        before = self.made
        found = real(self, data, path, digest)
        if self.made > before:
            names.append(path.name)
        return found

    monkeypatch.setattr(Reads, "read", counted)
    return names


def same(a, b) -> bool:
    return (a.vignettes, a.problems, a.sources, a.files) == (
        b.vignettes,
        b.problems,
        b.sources,
        b.files,
    )


def test_a_second_load_parses_nothing_and_gives_the_same_library(folder, tmp_path, monkeypatch):
    names = parsed(monkeypatch)
    first = load_library_kept([folder], tmp_path / "kept")
    assert len(names) == len(list(folder.glob("*.yaml")))
    assert any(p.file and p.file.endswith("wrong_name.yaml") for p in first.problems)
    names.clear()
    second = load_library_kept([folder], tmp_path / "kept")
    assert names == []
    assert same(second, first) and same(second, load_library([folder]))
    assert second.digests == load_library([folder]).digests


def test_a_kept_read_carries_its_vignettes_digests(folder, tmp_path, monkeypatch):
    """The context, band and proposal digests come back with the parse: a process reading
    reviews hashes no vignette again."""
    first = load_library_kept([folder], tmp_path / "kept")
    hashed: list[object] = []

    def counted(obj):
        hashed.append(obj)
        return "sha256:" + "0" * 64

    monkeypatch.setattr(vignettes, "sha256_digest", counted)
    monkeypatch.setattr(bands, "sha256_digest", counted)
    second = load_library_kept([folder], tmp_path / "kept")
    found = [
        (v.context_digest_for(p.sub_action), p.band_digest, p.proposal_digest)
        for v in second
        for p in v.proposals
    ]
    assert second.digests == first.digests
    assert hashed == []
    monkeypatch.undo()
    assert found == [
        (v.context_digest_for(p.sub_action), p.band_digest, p.proposal_digest)
        for v in load_library([folder])
        for p in v.proposals
    ]


def test_a_changed_file_alone_is_parsed_again_and_a_removed_one_forgotten(
    folder, tmp_path, monkeypatch
):
    load_library_kept([folder], tmp_path / "kept")
    path = folder / "demo_triage_border_01.yaml"
    path.write_text(path.read_text().replace("canary:", "canary: changed-", 1))
    (folder / "wrong_name.yaml").unlink()
    names = parsed(monkeypatch)
    changed = load_library_kept([folder], tmp_path / "kept")
    assert names == ["demo_triage_border_01.yaml"]
    assert same(changed, load_library([folder])) and changed.ok
    names.clear()
    load_library_kept([folder], tmp_path / "kept")
    assert names == []
    # What is kept holds the files there now, and nothing of the file removed.
    (answer,) = (tmp_path / "kept" / FOLDER).glob("*" + SUFFIX)
    assert b"wrong_name" not in answer.read_bytes()


def test_another_version_of_the_code_parses_every_file(folder, tmp_path, monkeypatch):
    load_library_kept([folder], tmp_path / "kept")
    monkeypatch.setattr(kept_reads, "code_digest", lambda *libraries: "another version")
    names = parsed(monkeypatch)
    load_library_kept([folder], tmp_path / "kept")
    assert len(names) == len(list(folder.glob("*.yaml")))


def test_an_answer_planted_without_the_key_is_not_used(folder, tmp_path, monkeypatch):
    load_library_kept([folder], tmp_path / "kept")
    (answer,) = (tmp_path / "kept" / FOLDER).glob("*" + SUFFIX)
    data = bytearray(answer.read_bytes())
    data[-20] ^= 1  # one bit of the reads changed: the authentication no longer holds
    answer.write_bytes(bytes(data))
    assert_parsed_afresh(folder, tmp_path / "kept", monkeypatch)


def plant(folder: Path, kept: Path, reads: dict) -> None:
    """`reads` in place of what a load kept, under this user's own key: what only someone
    holding the key could write."""
    load_library_kept([folder], kept)
    replace_the_answer(kept / FOLDER, pickle.dumps(reads))


def assert_parsed_afresh(folder: Path, kept: Path, monkeypatch) -> None:
    names = parsed(monkeypatch)
    found = load_library_kept([folder], kept)
    assert len(names) == len(list(folder.glob("*.yaml")))
    assert same(found, load_library([folder]))


class _Calls:
    """Unpickled, calls `function` with `args`: what an answer naming a function could do."""

    def __init__(self, function, *args) -> None:
        self.function, self.args = function, args

    def __reduce__(self):
        return (self.function, self.args)


@pytest.mark.parametrize(
    ("function", "more"),
    [(os.mkdir, ()), (write_json_atomically, ({"made": True},))],
    ids=["outside the core", "a function of the core"],
)
def test_an_authenticated_answer_naming_anything_but_a_reads_types_is_not_unpickled(
    folder, tmp_path, monkeypatch, function, more
):
    """Even under this user's key, the answer makes nothing but the types a read is made of:
    no function, whether of fma-bands' core or not."""
    marker = tmp_path / "made"
    called = _Calls(function, str(marker), *more)
    plant(folder, tmp_path / "kept", {("x.yaml", "0" * 64): (called, [])})
    assert_parsed_afresh(folder, tmp_path / "kept", monkeypatch)
    assert not marker.exists()


def test_an_answer_of_the_wrong_shape_is_not_used(folder, tmp_path, monkeypatch):
    # Under the names and digests of the files there: used, it would give their vignettes.
    wrong = {
        (str(p), hashlib.sha256(p.read_bytes()).hexdigest()): ("not a vignette", [])
        for p in folder.glob("*.yaml")
    }
    plant(folder, tmp_path / "kept", wrong)
    assert_parsed_afresh(folder, tmp_path / "kept", monkeypatch)


def test_a_folder_others_may_write_keeps_nothing(folder, tmp_path, monkeypatch):
    kept = tmp_path / "kept"
    kept.mkdir(mode=0o700)
    kept.chmod(0o777)
    load_library_kept([folder], kept)
    assert_parsed_afresh(folder, kept, monkeypatch)
    assert list(kept.iterdir()) == []


def test_a_file_fma_bands_failed_on_is_never_kept_as_failed(folder, tmp_path, monkeypatch):
    """A parse that failed for a passing reason (memory, file handles) is read again next time."""
    real = vignettes.read_vignette

    def failing(data, path):
        if path.name == "demo_doc_clear_01.yaml":
            raise MemoryError
        return real(data, path)

    monkeypatch.setattr(vignettes, "read_vignette", failing)
    first = load_library_kept([folder], tmp_path / "kept")
    assert "demo_doc_clear_01" not in first.vignettes
    assert any("could not read this file (MemoryError)" in p.message for p in first.problems)
    monkeypatch.setattr(vignettes, "read_vignette", real)
    names = parsed(monkeypatch)
    again = load_library_kept([folder], tmp_path / "kept")
    assert names == ["demo_doc_clear_01.yaml"]
    assert same(again, load_library([folder]))
