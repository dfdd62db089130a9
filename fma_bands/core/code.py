"""fma-bands' own code, as one digest: what an answer kept for later is made with."""

import hashlib
import sys
from functools import lru_cache
from importlib.metadata import version
from pathlib import Path


@lru_cache(maxsize=8)
def code_digest(*libraries: str) -> str:
    """Every file of the fma_bands package (its code and the data it reads, such as the
    intervals' measured coverage), the versions of the `libraries` (distribution names) an
    answer is made with, and Python's."""
    here = Path(__file__).parents[1]
    digest = hashlib.sha256(sys.version.encode())
    for path in sorted(here.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(f"{path.relative_to(here).as_posix()}\n".encode() + path.read_bytes())
    for package in libraries:
        digest.update(f"{package}=={version(package)}\n".encode())
    return digest.hexdigest()
