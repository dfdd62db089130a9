"""The envelope files of an attestations folder as parsed before, kept between processes, so
that a command or the app's server parses as JSON only the records it has not read before.

What an envelope file's bytes are as a record (its parse, the statement it claims, what is wrong
with it before any signature is checked, what its content lacks, where its payload lies in the
bytes: envelope.py, shapes.py)
depends on those bytes and fma-bands' code alone. Each is kept under the SHA-256 of the file's
bytes, all of an attestations folder's in one answer (kept.py) in a private folder of this
user's (`envelope-parses`, in the kept answers' folder), authenticated with HMAC-SHA256 under a
key made there, and kept under a key naming the code (fma-bands, the libraries it reads with,
Python's version) and the folder. Nothing else is kept: every file is still read and hashed,
every signature checked against its bytes, the chain walked and every rule applied on every
read (a record whose content lacks its shape refused for it, after its signer's key). A file
changed by one byte has another digest and is parsed afresh.

The answer is Python's pickle of plain data (the statements as JSON reads them, the signatures'
bytes), unpickled only after its authentication holds, and then into no class at all: an answer
naming one is not used. A kept statement is read as its file's signed statement: whoever
could forge one holds this user's private key (docs/trust.md), and so could already change the
code that reads it. Anything that goes wrong (no usable folder, a damaged
answer, a full disk) leaves the files parsed as if nothing had been kept.

The front ends say where the parses are kept (`keep_parses_in`): the command line for the
length of a command, the app's server for its life. Read elsewhere (tests, a script of the
domain), nothing is kept.
"""

import contextlib
import hashlib
import os
import pickle
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

# Imported where used: every command says where parses are kept before it knows whether it
# reads a record at all, and the envelopes' cryptography is slow to import.
if TYPE_CHECKING:
    from fma_bands.evidence.envelope import Parse
    from fma_bands.evidence.kept import Answers

FORMAT = b"fma-bands envelope parses 3\n"
# A folder of its own inside the kept answers' (with a key of its own), as the vignette reads
# have: the commands' answers never push the parses out, nor the parses them.
FOLDER = "envelope-parses"
_DIGEST_LENGTH = 64


# One answer per attestations folder (named by its absolute path) in each kept answers' folder.
_Place = tuple[Path, str]


class _Kept:
    """Where this process keeps parses, and what it has done with the answers kept there."""

    def __init__(self) -> None:
        self.folder: Path | None = None
        self.recalled: set[_Place] = set()  # answers this process has taken
        self.holds: dict[_Place, frozenset[str]] = {}  # the file digests each answer holds
        self.written: set[_Place] = set()  # answers this process has written (or tried to)
        self.lock = threading.Lock()

    def forget(self) -> None:
        """As in a new process: no answer taken or written yet."""
        with self.lock:
            self.recalled, self.holds, self.written = set(), {}, set()


_kept = _Kept()


@contextmanager
def keep_parses_in(folder: Path | None) -> Iterator[None]:
    """Keep parses in the kept answers' folder `folder` (None: nowhere) until the block ends."""
    with _kept.lock:
        before, _kept.folder = _kept.folder, folder
    try:
        yield
    finally:
        with _kept.lock:
            _kept.folder = before


def keep_parses_for_life(folder: Path | None) -> None:
    """keep_parses_in for the rest of the process (the app's server: every run names the same
    folder, so this costs nothing after the first)."""
    with _kept.lock:
        _kept.folder = folder


def recall_parses(records: Path) -> None:
    """Take what the answer kept for the attestations folder `records` holds as parsed by this
    process, once a process (a parse it lets go of later is made again)."""
    with _kept.lock:
        place = _place(records)
        if place is None or place in _kept.recalled:
            return
        from fma_bands.evidence.envelope import take_parses

        parses: dict[str, Parse] = {}
        answers = _answers(place[0])
        if answers is not None:
            with answers.find(_key(place)) as found:
                if found is not None:
                    parses = _parses_in(found.handle)
        take_parses(parses)
        _kept.recalled.add(place)
        _kept.holds[place] = frozenset(parses)


def keep_parses(records: Path, digests: Iterable[str]) -> None:
    """Keep the parses of the files of these digests (the attestations folder `records`, just
    read) in place of what was kept for it, unless the answer holds exactly these already.
    Written once a process at most: the app's server, reading the folder again after each
    record, leaves the records made since to the next process (a command, or its own restart),
    rather than write the whole answer again on a page's way."""
    from fma_bands.evidence.envelope import parses_of

    wanted = frozenset(digests)
    with _kept.lock:
        place = _place(records)
        if place is None or place in _kept.written or _kept.holds.get(place) == wanted:
            return
        _kept.written.add(place)
    # Written outside the lock: the server's other runs read the folder meanwhile.
    parses = parses_of(wanted)
    if len(parses) < len(wanted):
        return  # more records than a process holds: what it would keep would not be found
    answers = _answers(place[0])
    if answers is None:
        return
    with answers.keep(_key(place)) as keeping:
        pickle.dump(parses, keeping, protocol=pickle.HIGHEST_PROTOCOL)
        keeping.done(0)


def _place(records: Path) -> _Place | None:
    """Where the parses of the attestations folder `records` are kept; None for nowhere."""
    if _kept.folder is None:
        return None
    return _kept.folder, os.path.abspath(records)


def _answers(folder: Path) -> "Answers | None":
    from fma_bands.evidence.kept import open_answers

    # The kept answers' folder must be this user's alone too: whoever may write it could put a
    # folder of their own choosing in the parses' place.
    return open_answers(folder / FOLDER) if open_answers(folder) is not None else None


def _key(place: _Place) -> str:
    """The answer's key: the code, and the attestations folder it is the parses of (two
    studies read in turn each find their own)."""
    from fma_bands.core.code import code_digest
    from fma_bands.evidence.kept import LIBRARIES

    named = FORMAT + code_digest(*LIBRARIES).encode() + b"\0" + os.fsencode(place[1])
    return hashlib.sha256(named).hexdigest()


class _PlainData(pickle.Unpickler):
    """An unpickler that makes Python's plain data and nothing else: no class, no function."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"{module}.{name}: a kept parse names no class")


def _parses_in(handle: IO[bytes]) -> "dict[str, Parse]":
    """The parses an authenticated answer holds; none when it holds anything else."""
    with contextlib.suppress(Exception):  # whatever is wrong with it, the files are parsed
        found = _PlainData(handle).load()
        if isinstance(found, dict) and all(map(_is_parse, found.items())):
            return found
    return {}


def _is_parse(item: tuple[Any, Any]) -> bool:
    """The shape envelope.py gives a parse: (None, (type, signatures) or None, the payload's
    digest or None, the statement), then None or (code, message), then None or what the
    statement's content lacks, then None or where the payload lies (start, end)."""
    digest, parse = item
    if type(digest) is not str or len(digest) != _DIGEST_LENGTH:
        return False
    if type(parse) is not tuple or len(parse) != 4:
        return False
    parsed, error, lacks, span = parse
    if lacks is not None and type(lacks) is not str:
        return False
    if span is not None and not (
        type(span) is tuple
        and len(span) == 2
        and type(span[0]) is int
        and type(span[1]) is int
        and 0 <= span[0] <= span[1]
    ):
        return False
    if error is not None and not (
        type(error) is tuple and len(error) == 2 and all(type(e) is str for e in error)
    ):
        return False
    if type(parsed) is not tuple or len(parsed) != 4 or parsed[0] is not None:
        return False
    kind, payload_digest = parsed[1], parsed[2]
    if payload_digest is not None and type(payload_digest) is not str:
        return False
    return kind is None or (
        type(kind) is tuple
        and len(kind) == 2
        and type(kind[0]) is str
        and type(kind[1]) is tuple
        and all(_is_signature(s) for s in kind[1])
    )


def _is_signature(found: Any) -> bool:
    return (
        type(found) is tuple
        and len(found) == 2
        and type(found[0]) is str
        and (type(found[1]) is bytes)
    )
