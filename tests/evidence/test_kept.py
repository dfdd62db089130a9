"""Answers kept by everything they were derived from (fma_bands/evidence/kept.py): a key that
changes with any byte, file, option or version, and answers no one without this user's key can
plant or change."""

import hashlib
import hmac
import io
import json
import os
import stat
import time

import pytest

from fma_bands.evidence import kept
from fma_bands.evidence.kept import FORMAT, KEPT, KEY_FILE, SUFFIX, answer_key, open_answers

ASKED = {"json": True, "quorum": None}


@pytest.fixture
def folders(tmp_path):
    vignettes, attestations = tmp_path / "vignettes", tmp_path / "attestations"
    vignettes.mkdir()
    attestations.mkdir()
    (vignettes / "a.yaml").write_text("id: a\n")
    (attestations / "000000-root.dsse.json").write_bytes(b'{"payload": "x"}')
    (attestations / "policy.yaml").write_text("quorum: 2\n")
    return vignettes, attestations


def body(found) -> bytes:
    out = io.BytesIO()
    found.copy_to(out)
    return out.getvalue()


def key(folders, question="registry", asked=ASKED):
    found = answer_key(question, folders, asked)
    return None if found is None else found.digest


def test_the_key_changes_with_every_byte_file_name_option_and_question(folders):
    vignettes, attestations = folders
    seen = {key(folders)}
    assert key(folders) in seen  # the same files, the same key

    def changed() -> str:
        found = key(folders)
        assert found is not None and found not in seen
        seen.add(found)
        return found

    record = attestations / "000000-root.dsse.json"
    record.write_bytes(b'{"payload": "y"}')  # one byte
    changed()
    (attestations / "000001-more.dsse.json").write_bytes(b"{}")  # a file added
    changed()
    (attestations / "000001-more.dsse.json").rename(attestations / "000002-more.dsse.json")
    changed()
    (attestations / "000002-more.dsse.json").unlink()  # back to a state seen before
    assert key(folders) in seen
    (vignettes / "sub").mkdir()  # an empty folder is a change too
    changed()
    (vignettes / "sub" / "b.yaml").write_text("id: b\n")
    changed()
    assert key(folders, asked={**ASKED, "quorum": 2}) not in seen
    assert key(folders, question="export") not in seen
    # A file's bytes are not its name's: moving bytes between files changes the key.
    (vignettes / "sub" / "b.yaml").unlink()
    (vignettes / "a.yaml").write_text("id: a\nid: b\n")
    changed()


def test_the_code_and_the_working_folder_are_in_the_key(folders, monkeypatch, tmp_path):
    before = key(folders)
    monkeypatch.setattr(kept, "code_digest", lambda *libraries: "another fma-bands")
    assert key(folders) != before
    monkeypatch.undo()
    monkeypatch.chdir(tmp_path)  # relative paths in an answer read from here
    assert key(folders) != before


def test_a_missing_folder_is_not_an_empty_one(folders, tmp_path):
    vignettes, _ = folders
    empty = tmp_path / "empty"
    empty.mkdir()
    assert key((vignettes, empty)) != key((vignettes, tmp_path / "missing")) is not None


def test_no_key_for_a_folder_holding_a_link_or_a_fifo_or_no_folder(folders, tmp_path):
    vignettes, attestations = folders
    (attestations / "elsewhere.dsse.json").symlink_to(tmp_path / "outside")
    assert key(folders) is None  # what the link points to may change behind it
    (attestations / "elsewhere.dsse.json").unlink()
    os.mkfifo(attestations / "pipe")
    assert key(folders) is None  # never opened for reading: it would wait for a writer
    (attestations / "pipe").unlink()
    assert key((vignettes, vignettes / "a.yaml")) is None
    assert key(folders) is not None


def test_a_folder_named_through_a_link_is_read_through_it(folders, tmp_path):
    vignettes, attestations = folders
    link = tmp_path / "linked"
    link.symlink_to(attestations)
    before = key((vignettes, link))
    (attestations / "policy.yaml").write_text("quorum: 3\n")
    assert key((vignettes, link)) not in (before, None)


def test_an_answer_is_found_as_kept_with_its_status_and_notes(tmp_path):
    answers = open_answers(tmp_path / "kept")
    assert answers is not None
    with answers.keep("k1") as keeping:
        keeping.write(b"first part, ")
        keeping.write(b"second part\n")
        keeping.done(1, {"stamp": "2026-12-06T00:00:00Z"})
    with answers.find("k1") as found:
        assert found is not None
        assert (found.status, found.notes) == (1, {"stamp": "2026-12-06T00:00:00Z"})
        assert body(found) == b"first part, second part\n"
    with answers.find("k2") as found:
        assert found is None
    folder = tmp_path / "kept"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE((folder / KEY_FILE).stat().st_mode) == 0o600
    assert stat.S_IMODE((folder / ("k1" + SUFFIX)).stat().st_mode) == 0o600


def test_an_answer_not_finished_is_never_kept(tmp_path):
    answers = open_answers(tmp_path / "kept")
    assert answers is not None
    with pytest.raises(RuntimeError), answers.keep("k1") as keeping:
        keeping.write(b"half")
        raise RuntimeError("the command failed half way")
    with answers.keep("k2") as keeping:
        keeping.write(b"never done")
    for name in ("k1", "k2"):
        with answers.find(name) as found:
            assert found is None
    assert sorted(p.name for p in (tmp_path / "kept").iterdir()) == [KEY_FILE]


def _forged(key: bytes, name: str, head: dict, body: bytes) -> bytes:
    line = json.dumps(head).encode() + b"\n"
    mac = hmac.new(key, name.encode() + line + body, hashlib.sha256).digest()
    return FORMAT + mac + line + body


def test_an_answer_planted_or_changed_without_the_key_is_not_found(tmp_path):
    folder = tmp_path / "kept"
    answers = open_answers(folder)
    assert answers is not None
    with answers.keep("k1") as keeping:
        keeping.write(b'{"valid": false}\n')
        keeping.done(1)
    path = folder / ("k1" + SUFFIX)
    good = path.read_bytes()
    # One byte of the body changed.
    path.write_bytes(good.replace(b"false", b"true "))
    with answers.find("k1") as found:
        assert found is None
    # A whole answer planted under the key of the question, authenticated with a key of the
    # planter's own (anyone can compute the question's key: it is no secret).
    planted = _forged(os.urandom(32), "k1", {"status": 0, "notes": {}}, b'{"valid": true}\n')
    path.write_bytes(planted)
    with answers.find("k1") as found:
        assert found is None
    # The true answer to another question moved under this one's name.
    with answers.keep("k2") as keeping:
        keeping.write(b'{"valid": true}\n')
        keeping.done(0)
    os.replace(folder / ("k2" + SUFFIX), path)
    with answers.find("k1") as found:
        assert found is None
    # With the folder's own key, the same framing is found: the test forges what a planter
    # would need the key for.
    real = (folder / KEY_FILE).read_bytes()
    path.write_bytes(_forged(real, "k1", {"status": 0, "notes": {}}, b"{}\n"))
    with answers.find("k1") as found:
        assert found is not None and body(found) == b"{}\n"


def test_a_folder_where_an_answer_would_be_is_no_answer(tmp_path):
    answers = open_answers(tmp_path / "kept")
    assert answers is not None
    (tmp_path / "kept" / ("k1" + SUFFIX)).mkdir()
    with answers.find("k1") as found:
        assert found is None


def test_a_folder_or_key_others_can_write_keeps_nothing(tmp_path):
    folder = tmp_path / "kept"
    assert open_answers(folder) is not None
    folder.chmod(0o777)
    assert open_answers(folder) is None
    folder.chmod(0o700)
    (folder / KEY_FILE).chmod(0o660)
    assert open_answers(folder) is None
    (folder / KEY_FILE).chmod(0o644)  # a key others can read lets them forge an answer
    assert open_answers(folder) is None
    (folder / KEY_FILE).chmod(0o600)
    (folder / KEY_FILE).write_bytes(b"short")
    assert open_answers(folder) is None
    (folder / KEY_FILE).unlink()
    (folder / KEY_FILE).symlink_to(tmp_path / "elsewhere")
    assert open_answers(folder) is None
    assert open_answers(tmp_path / "a-file") is not None  # made on first use
    (tmp_path / "not-a-folder").write_text("")
    assert open_answers(tmp_path / "not-a-folder") is None


def test_only_the_newest_answers_stay(tmp_path):
    answers = open_answers(tmp_path / "kept")
    assert answers is not None
    for n in range(KEPT + 3):
        with answers.keep(f"k{n}") as keeping:
            keeping.write(b"x")
            keeping.done(0)
        os.utime(tmp_path / "kept" / f"k{n}{SUFFIX}", ns=(n * 10**9, n * 10**9))
    left = sorted(p.name for p in (tmp_path / "kept").glob("*" + SUFFIX))
    assert left == sorted(f"k{n}{SUFFIX}" for n in range(3, KEPT + 3))


def test_a_key_no_longer_holds_once_a_file_is_written_replaced_added_or_removed(folders):
    vignettes, attestations = folders
    record = attestations / "000000-root.dsse.json"
    original = record.read_bytes()

    def after(change) -> bool:
        found = answer_key("registry", folders, ASKED)
        assert found is not None and found.still_holds()
        change()
        return found.still_holds()

    # Written with the same bytes, swapped out and back: the bytes read while deciding may have
    # been others, so nothing decided meanwhile may be kept under the key.
    assert not after(lambda: record.write_bytes(original))
    aside = attestations / "aside"

    def swapped_and_back() -> None:
        record.rename(aside)
        aside.rename(record)

    assert not after(swapped_and_back)
    assert not after(lambda: (vignettes / "b.yaml").write_text("id: b\n"))
    assert not after(lambda: (vignettes / "b.yaml").unlink())
    # Read only: it holds.
    assert after(lambda: record.read_bytes())


def test_files_split_differently_over_the_same_bytes_are_another_key(tmp_path):
    """One file's bytes cannot carry the framing of the next: a policy with a stray beside it,
    then the same bytes run together into the policy, in the same folder, are two keys."""
    folder = tmp_path / "attestations"
    folder.mkdir()
    (folder / "policy.yaml").write_bytes(b"quorum: 1\n")
    (folder / "policy.yaml~").write_bytes(b"stray\n")
    apart = key((folder,))
    # What a framing without lengths would have hashed for the two files, as one file.
    run_together = b"quorum: 1\n" + b"\0end\0" + b"\0file\0policy.yaml~\0" + b"stray\n"
    (folder / "policy.yaml~").unlink()
    (folder / "policy.yaml").write_bytes(run_together)
    assert key((folder,)) != apart


def test_a_folder_link_repointed_and_back_no_longer_holds(tmp_path):
    real, copy = tmp_path / "real", tmp_path / "copy"
    real.mkdir()
    (real / "policy.yaml").write_text("quorum: 1\n")
    copy.mkdir()
    (copy / "policy.yaml").write_text("quorum: 2\n")
    link = tmp_path / "attestations"
    link.symlink_to(real)
    found = answer_key("registry", (link,), ASKED)
    assert found is not None and found.still_holds()
    # Re-pointed while the question is decided, then back: the same files, another link.
    link.unlink()
    link.symlink_to(copy)
    link.unlink()
    link.symlink_to(real)
    assert not found.still_holds()
    # And a folder reached through a link is another key than the same files elsewhere.
    assert key((link,)) != key((copy,))


def test_a_file_past_any_readers_bound_is_never_read_for_a_key(tmp_path):
    folder = tmp_path / "attestations"
    folder.mkdir()
    with open(folder / "huge.dsse.json", "wb") as sparse:
        sparse.truncate(100 * 1024**3)  # a hundred gigabytes of nothing, at once
    assert key((folder,)) is None


def test_a_folder_that_cannot_be_written_keeps_nothing_and_fails_nothing(tmp_path, monkeypatch):
    answers = open_answers(tmp_path / "kept")
    assert answers is not None
    opened = os.open

    def full(path, *args, **kwargs):
        if str(path).endswith((".tmp", ".sealed")):
            raise OSError(28, "No space left on device")
        return opened(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", full)
    with answers.keep("k1") as keeping:
        keeping.write(b"an answer")
        keeping.done(0)
    monkeypatch.undo()

    class Full(io.BytesIO):
        def write(self, data):  # type: ignore[override]
            raise OSError(28, "No space left on device")

    with answers.keep("k2") as keeping:
        keeping.handle.close()
        keeping.handle = Full()
        keeping.write(b"half an answer")  # the disk filled: nothing is kept, nothing raised
        keeping.done(0)

    class RefusesToFlush(io.BytesIO):
        """A buffered file on a full disk: its writes are taken, their flush (and so its close)
        is refused."""

        def flush(self):
            raise OSError(28, "No space left on device")

        def close(self):
            raise OSError(28, "No space left on device")

    with answers.keep("k3") as keeping:
        keeping.handle.close()
        keeping.handle = RefusesToFlush()
        keeping.write(b"an answer the disk cannot hold")
        keeping.done(0)
    for name in ("k1", "k2", "k3"):
        with answers.find(name) as found:
            assert found is None


def test_leftovers_of_a_killed_run_go_once_an_hour_old(tmp_path):
    folder = tmp_path / "kept"
    answers = open_answers(folder)
    assert answers is not None
    old, recent = folder / ".k0.1234.tmp", folder / ".k1.5678.tmp"
    old.write_bytes(b"killed")
    recent.write_bytes(b"still being written")
    two_hours_ago = time.time_ns() - 2 * 3600 * 10**9
    os.utime(old, ns=(two_hours_ago, two_hours_ago))
    with answers.keep("k2") as keeping:
        keeping.write(b"x")
        keeping.done(0)
    assert not old.exists() and recent.exists()


def test_no_key_when_the_working_folder_is_gone(folders, tmp_path, monkeypatch):
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    assert answer_key("registry", folders, ASKED) is None


def test_a_key_that_cannot_be_written_leaves_nothing_behind(tmp_path, monkeypatch):
    """A full disk refusing the key: no answers, and no half-made key left, try after try."""
    import errno

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(kept.os, "fsync", full)
    for _ in range(2):
        assert open_answers(tmp_path / "kept") is None
    assert list((tmp_path / "kept").iterdir()) == []
