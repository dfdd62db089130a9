"""Answers kept by everything they were derived from, so that the same question about the same
files is not decided again.

A command's answer (what `registry` prints, the bands.yaml `export` writes) is a function of the
code, the vignette files, the attestations folder and the command's options. Its key is the
SHA-256 of all of them, byte for byte: a file changed, added, removed or renamed, another
version of fma-bands or of a library it decides with, another option, and the key is another.
Nothing is trusted for being unchanged: every file is read and hashed again each time, which
costs a small part of parsing and checking its signatures.

An answer kept is authenticated with HMAC-SHA256 under a key made here on first use and readable
by this user alone, in a folder only this user may write (`kept_answers`, outside the study's
folders). Anyone who can write the attestations folder, or the study's folder beside it, cannot
plant an answer: without the key, an answer they write is not found, and the question is decided
afresh. Where the folder or the key cannot be trusted (another owner, writable by others), or a
study folder holds anything but plain files and folders, nothing is kept or found, and every
answer is decided as if no answer had ever been kept.
"""

import codecs
import contextlib
import hashlib
import hmac
import io
import json
import os
import secrets
import stat
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from fma_bands.core.code import code_digest

FORMAT = b"fma-bands kept answer 1\n"
KEY_BYTES = 32
KEY_FILE = "answers.key"
SUFFIX = ".answer"
# The newest answers kept; older ones are removed when another is kept. An answer is as large as
# what it answers (a large study's export is a hundred megabytes).
KEPT = 8
# A folder holding a file larger than this (far beyond what any of its readers accepts) is not
# hashed for a key, nor read: it is decided afresh, and its reader refuses the file by its size.
MAX_FILE_BYTES = 64 * 1024**2
_CHUNK = 1024 * 1024
# The libraries a decision is made with, beside fma-bands itself and Python.
LIBRARIES = ("PyYAML", "cryptography", "pydantic")


Stamp = tuple[bytes, int, int, int, int]


def _stamp(name: bytes, found: os.stat_result) -> Stamp:
    """What changes whenever an entry is written, replaced or renamed: its inode, size and
    times (the change time no one can set back)."""
    return (name, found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns)


def _framed(kind: bytes, data: bytes) -> bytes:
    """`data` with its kind and length before it: one entry's bytes can never be read as the
    framing of the next (a file's end carrying another file's name)."""
    return kind + len(data).to_bytes(8, "big") + data


def _walk(folder: Path, digest: "hashlib._Hash | None", stamps: list[Stamp]) -> bool:
    """Every entry under `folder`: its stamp into `stamps` and, with `digest`, its name and the
    SHA-256 of its content into `digest`. False when the folder is something else than a
    folder, holds an entry that is no plain file or folder (a link, a FIFO: what a reader
    refuses or follows elsewhere), or a file larger than any reader reads."""
    try:
        # The path itself as well as what it names: a link re-pointed and back is seen.
        stamps.append(_stamp(b"path:", os.lstat(folder)))
        top = os.stat(folder)
    except FileNotFoundError:
        stamps.append((b"", 0, 0, 0, 0))
        if digest is not None:
            digest.update(_framed(b"m", b""))
        return True
    if not stat.S_ISDIR(top.st_mode):
        return False
    pending = [Path(folder)]
    while pending:
        current = pending.pop()
        where = os.fsencode(current.relative_to(folder).as_posix())
        # The folder's own stamp first: an entry added or removed after the listing changes it.
        stamps.append(_stamp(b"dir:" + where, os.stat(current)))
        with os.scandir(current) as entries:
            found = sorted(entries, key=lambda e: e.name)
        for entry in found:
            name = os.fsencode(Path(entry.path).relative_to(folder).as_posix())
            if entry.is_dir(follow_symlinks=False):
                if digest is not None:
                    digest.update(_framed(b"d", name))
                pending.append(Path(entry.path))
                continue
            if not entry.is_file(follow_symlinks=False):
                return False
            if digest is None:
                stamps.append(_stamp(name, os.lstat(entry.path)))
                continue
            fd = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as handle:
                opened = os.fstat(handle.fileno())
                if not stat.S_ISREG(opened.st_mode) or opened.st_size > MAX_FILE_BYTES:
                    return False
                stamps.append(_stamp(name, opened))
                content = hashlib.sha256()
                read = 0
                while chunk := handle.read(_CHUNK):
                    read += len(chunk)
                    if read > MAX_FILE_BYTES:
                        return False
                    content.update(chunk)
            digest.update(_framed(b"f", name) + _framed(b"c", content.digest()))
    return True


@dataclass(frozen=True)
class Key:
    """An answer's key (`digest`), and the stamps of the files it was made from as they were
    hashed."""

    digest: str
    folders: tuple[Path, ...]
    stamps: tuple[Stamp, ...]

    def still_holds(self) -> bool:
        """Whether no file of the folders was written, replaced, added or removed since they
        were hashed: only then was an answer decided since made from the bytes hashed, and
        may be kept under this key (a file swapped while the question was decided, and swapped
        back, would otherwise leave the answer for other files under this key)."""
        stamps: list[Stamp] = []
        try:
            if not all(_walk(Path(f), None, stamps) for f in self.folders):
                return False
        except OSError:
            return False
        return tuple(stamps) == self.stamps


def answer_key(question: str, folders: Sequence[Path], asked: Mapping[str, Any]) -> Key | None:
    """The key of the answer to `question` (a command's name) asked with `asked` (its options and
    whatever else the answer depends on, as JSON) about `folders`, or None when one of them
    cannot be hashed (see _walk): such a question is always decided afresh."""
    digest = hashlib.sha256()
    digest.update(FORMAT)
    digest.update(code_digest(*LIBRARIES).encode())
    try:
        here = os.getcwd()
    except OSError:  # the working folder was removed under the command
        return None
    asked_here = [question, asked, os.fsdecode(here)]
    digest.update(
        json.dumps(asked_here, sort_keys=True, default=str).encode("utf-8", "surrogatepass")
    )
    stamps: list[Stamp] = []
    for folder in folders:
        try:
            # Named as given and as it resolves: an export's header names the folder resolved.
            for name in (str(folder), os.path.realpath(folder)):
                digest.update(_framed(b"p", os.fsencode(name)))
            if not _walk(Path(folder), digest, stamps):
                return None
        except OSError:
            return None
    return Key(digest.hexdigest(), tuple(Path(f) for f in folders), tuple(stamps))


@dataclass
class Answer:
    """An answer found: its exit status, what it says beside (`notes`, a JSON object) and its
    body, read from `handle` (already authenticated)."""

    status: int
    notes: dict[str, Any]
    handle: io.BufferedReader

    def copy_to(self, out: IO[bytes]) -> None:
        while chunk := self.handle.read(_CHUNK):
            out.write(chunk)

    def write_text_to(self, out: Any) -> None:
        """The body, kept as UTF-8 text, written to the text stream `out` (through whatever
        it does to text, as the answer was when first written)."""
        decoder = codecs.getincrementaldecoder("utf-8")("surrogatepass")
        while chunk := self.handle.read(_CHUNK):
            out.write(decoder.decode(chunk))
        out.write(decoder.decode(b"", final=True))


class Answers:
    """The answers kept in one private folder, under its key."""

    def __init__(self, folder: Path, key: bytes) -> None:
        self.folder = folder
        self._key = key

    def _mac(self) -> "hmac.HMAC":
        return hmac.new(self._key, digestmod=hashlib.sha256)

    @contextmanager
    def find(self, key: str) -> Iterator[Answer | None]:
        """The answer kept under `key`, once its authentication holds; None otherwise."""
        path = self.folder / (key + SUFFIX)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            yield None
            return
        try:
            # Anything but a plain file (a folder made there) is no answer.
            plain = stat.S_ISREG(os.fstat(fd).st_mode)
        except OSError:
            plain = False
        if not plain:
            os.close(fd)
            yield None
            return
        with os.fdopen(fd, "rb") as handle:
            answer = self._authentic(handle, key)
            yield answer

    def _authentic(self, handle: io.BufferedReader, key: str) -> Answer | None:
        try:
            if handle.readline(len(FORMAT) + 1) != FORMAT:
                return None
            given = handle.read(32)
            start = handle.tell()
            mac = self._mac()
            mac.update(key.encode())
            while chunk := handle.read(_CHUNK):
                mac.update(chunk)
            if not hmac.compare_digest(mac.digest(), given):
                return None
            handle.seek(start)
            head = json.loads(handle.readline(64 * 1024))
            status, notes = head["status"], head["notes"]
            if type(status) is not int or not isinstance(notes, dict):
                return None
            return Answer(status, notes, handle)
        except (OSError, ValueError, KeyError, TypeError):
            return None

    @contextmanager
    def keep(self, key: str) -> Iterator["Keeping"]:
        """Write an answer's body into the `Keeping` given; it is kept under `key` when
        `Keeping.done` was called and nothing was raised, never half. A folder that cannot be
        written (read only, full) keeps nothing, and the command goes on as if it had none."""
        tmp = self.folder / f".{key}.{secrets.token_hex(4)}.tmp"
        try:
            self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            keeping = Keeping(os.fdopen(fd, "w+b"))
        except OSError:
            yield Keeping(None)
            return
        try:
            yield keeping
            if keeping.head is not None and keeping.handle is not None:
                with contextlib.suppress(OSError):
                    self._seal(keeping.handle, keeping.head, key, tmp)
        finally:
            # Closing flushes what is buffered, which a full disk refuses too.
            with contextlib.suppress(OSError):
                if keeping.handle is not None:
                    keeping.handle.close()
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)

    def _seal(self, handle: IO[bytes], head: bytes, key: str, tmp: Path) -> None:
        """The body written, framed: the format, the MAC, the head line and the body."""
        handle.flush()
        sealed = tmp.with_suffix(".sealed")
        fd = os.open(sealed, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            with os.fdopen(fd, "wb") as out:
                mac = self._mac()
                mac.update(key.encode())
                mac.update(head)
                handle.seek(0)
                while chunk := handle.read(_CHUNK):
                    mac.update(chunk)
                out.write(FORMAT + mac.digest() + head)
                handle.seek(0)
                while chunk := handle.read(_CHUNK):
                    out.write(chunk)
                out.flush()
                os.fsync(out.fileno())
            os.replace(sealed, self.folder / (key + SUFFIX))
        finally:
            sealed.unlink(missing_ok=True)
        self._prune()

    def _prune(self) -> None:
        """Only the newest KEPT answers stay, and no leftover of a run killed while keeping
        (older than an hour); another run may be pruning at the same time."""
        found: list[tuple[int, Path]] = []
        stale = time.time_ns() - 3600 * 10**9
        for path in self.folder.iterdir():
            with contextlib.suppress(OSError):
                when = path.lstat().st_mtime_ns
                leftover = path.name.startswith(".") and path.suffix in (".tmp", ".sealed")
                if path.name.endswith(SUFFIX):
                    found.append((when, path))
                elif leftover and when < stale:
                    path.unlink()
        for _, old in sorted(found)[:-KEPT]:
            with contextlib.suppress(OSError):
                old.unlink()


class Keeping:
    """An answer being written: its body, then `done` with its status and notes. Once a write
    fails (a full disk), nothing is kept and the command goes on."""

    def __init__(self, handle: IO[bytes] | None) -> None:
        self.handle = handle
        self.head: bytes | None = None

    def write(self, data: bytes) -> None:
        if self.handle is None:
            return
        try:
            self.handle.write(data)
        except OSError:
            with contextlib.suppress(OSError):
                self.handle.close()
            self.handle = None

    def done(self, status: int, notes: Mapping[str, Any] | None = None) -> None:
        line = json.dumps({"status": status, "notes": dict(notes or {})}, sort_keys=True)
        self.head = line.encode() + b"\n"


def _private(path: Path, *, folder: bool) -> bool:
    """Whether `path` is this user's own, of the kind expected, and writable by no one else; a
    file (the key) readable by no one else either."""
    try:
        found = os.lstat(path)
    except OSError:
        return False
    kind = stat.S_ISDIR(found.st_mode) if folder else stat.S_ISREG(found.st_mode)
    mine = not hasattr(os, "getuid") or found.st_uid == os.getuid()
    return kind and mine and not found.st_mode & (0o022 if folder else 0o077)


def open_answers(folder: Path) -> Answers | None:
    """The answers kept in `folder`, made with its key on first use (0700, 0600); None when the
    folder or the key is not this user's alone, or cannot be made."""
    folder = Path(folder)
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not _private(folder, folder=True):
            return None
        key_path = folder / KEY_FILE
        if not key_path.exists():
            tmp = folder / f".{KEY_FILE}.{secrets.token_hex(4)}.tmp"
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
                with os.fdopen(fd, "wb") as out:
                    out.write(secrets.token_bytes(KEY_BYTES))
                    out.flush()
                    os.fsync(out.fileno())
                # Two commands started at once: the first key made stays, the other is dropped.
                with contextlib.suppress(FileExistsError):
                    os.link(tmp, key_path)
            finally:
                # Also when the disk is full: no half-made key is left behind, try after try.
                tmp.unlink(missing_ok=True)
        if not _private(key_path, folder=False):
            return None
        fd = os.open(key_path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as handle:
            key = handle.read(KEY_BYTES + 1)
    except OSError:
        return None
    if len(key) != KEY_BYTES:
        return None
    return Answers(folder, key)
