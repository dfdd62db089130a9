"""Atomic file writes: a crash or a full disk never leaves a half-written export or attestation."""

import contextlib
import os
import tempfile
from pathlib import Path


def write_atomically(path: str | Path, data: bytes | str, *, overwrite: bool = True) -> Path:
    """Write via a temporary file in the same folder, fsync, then rename over the target."""
    path = Path(path)
    if not overwrite and path.exists():
        raise FileExistsError(f"{path} already exists; refusing to overwrite it")
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        if not overwrite and path.exists():
            raise FileExistsError(f"{path} already exists; refusing to overwrite it")
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_folder(path.parent)
    return path


def _fsync_folder(folder: Path) -> None:
    # The rename is durable only once the folder entry itself reaches the disk.
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
