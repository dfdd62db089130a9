"""The vignette files as read before, kept between processes, so that a command or the app's
server parses as YAML and checks again only the files it has not read with the same bytes.

What fma-bands makes of a vignette file (core/vignettes.py, `read_vignette`) depends on the
file's bytes, the name it was read by and fma-bands' code alone. Each file read is kept under
its name and the SHA-256 of its bytes, all of them in one answer (kept.py) in a private folder
of this user's (`vignette-reads`, in the kept answers' folder), authenticated with HMAC-SHA256
under a key made there, and kept under a key naming the code (fma-bands, the libraries it reads
with, Python's version): another version parses every file afresh. Every file is still read
and hashed on every load; only its parse is skipped. A file changed is parsed again; files no
longer there are dropped from what is kept.

The answer is Python's pickle of the reads, unpickled only after its authentication holds, and
then only into the types a read is made of (a vignette, a proposal, a band, a threshold, a
problem): an answer naming anything else is not used. Whoever could forge one holds this
user's private key, and so could already change the code that reads it. Anything that goes
wrong (no usable folder, a forged or damaged answer, a full disk) leaves the files parsed as
if nothing had been kept.
"""

import contextlib
import hashlib
import io
import pickle
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fma_bands.core.actions import Threshold
from fma_bands.core.bands import IntervalBand, MultilabelBand, SetBand
from fma_bands.core.code import code_digest
from fma_bands.core.errors import Problem
from fma_bands.core.vignettes import Library, Proposal, Read, Reads, Vignette, load_library
from fma_bands.evidence.kept import LIBRARIES, open_answers

FORMAT = b"fma-bands vignette reads 1\n"
# A folder of its own inside the kept answers' (with a key of its own): the commands' answers,
# a hundred megabytes each in a large study, never push the reads out, nor the reads them.
FOLDER = "vignette-reads"


def load_library_kept(folders: Sequence[str | Path], kept: Path) -> Library:
    """load_library of the folders, with the reads kept in the folder `kept` (the kept answers'),
    and what it parsed kept there for the next load."""
    # The kept answers' folder must be this user's alone too: whoever may write it could put
    # a folder of their own choosing in the reads' place.
    answers = open_answers(Path(kept) / FOLDER) if open_answers(kept) is not None else None
    if answers is None:
        return load_library(folders)
    key = hashlib.sha256(FORMAT + code_digest(*LIBRARIES).encode()).hexdigest()
    reads = Reads()
    with answers.find(key) as found:
        if found is not None:
            reads.known = _reads_in(found.handle.read())
    library = load_library(folders, reads)
    if reads.made or len(reads.used) != len(reads.known):
        for vignette, _ in reads.used.values():
            if vignette is not None:
                vignette.compute_digests()
        with answers.keep(key) as keeping:
            keeping.write(pickle.dumps(reads.used, protocol=pickle.HIGHEST_PROTOCOL))
            keeping.done(0)
    return library


# The types a read is made of (beside Python's plain data), and nothing else: a kept answer can
# name no function, and no other class, whatever it holds.
_TYPES = {
    (kind.__module__, kind.__qualname__): kind
    for kind in (Vignette, Proposal, Problem, SetBand, IntervalBand, MultilabelBand, Threshold)
}


class _ReadsOnly(pickle.Unpickler):
    """An unpickler that makes nothing but the types of a read."""

    def find_class(self, module: str, name: str) -> Any:
        found = _TYPES.get((module, name))
        if found is None:
            raise pickle.UnpicklingError(f"{module}.{name} is not among the reads' types")
        return found


def _reads_in(body: bytes) -> dict[tuple[str, str], Read]:
    """The reads an authenticated answer holds; none when it holds anything else."""
    with contextlib.suppress(Exception):  # whatever is wrong with it, the files are parsed
        found = _ReadsOnly(io.BytesIO(body)).load()
        if isinstance(found, dict) and all(map(_is_read, found.items())):
            return found
    return {}


def _is_read(item: tuple[Any, Any]) -> bool:
    key, read = item
    return (
        type(key) is tuple
        and len(key) == 2
        and all(type(part) is str for part in key)
        and type(read) is tuple
        and len(read) == 2
        and (read[0] is None or type(read[0]) is Vignette)
        and type(read[1]) is list
        and all(type(problem) is Problem for problem in read[1])
    )
