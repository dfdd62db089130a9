"""Atomic file writes: a crash or a full disk never leaves a half-written export or attestation."""

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from fma_bands.errors import FmaBandsError


def write_atomically(path: str | Path, data: bytes | str, *, overwrite: bool = True) -> Path:
    """Write via a temporary file in the same folder, fsync, then rename over the target.

    Any failure (a folder where the file should be, no permission, a full disk, /proc) is an
    FmaBandsError naming the file; the target is then as it was before.
    """
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    try:
        if path.is_dir():
            raise FmaBandsError("this is a folder: name a file to write", file=str(path))
        if not overwrite and path.exists():
            raise FmaBandsError("already exists; refusing to overwrite it", file=str(path))
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(payload)
                handle.flush()
                os.fsync(handle.fileno())
            if not overwrite and path.exists():
                raise FmaBandsError("already exists; refusing to overwrite it", file=str(path))
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        _fsync_folder(path.parent)
    except OSError as exc:
        raise FmaBandsError(f"cannot write: {exc.strerror or exc}", file=str(path)) from None
    return path


def write_json_atomically(path: str | Path, obj: Any, *, overwrite: bool = False) -> Path:
    data = json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    return write_atomically(path, data, overwrite=overwrite)


def _fsync_folder(folder: Path) -> None:
    # The rename is durable only once the folder entry itself reaches the disk.
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
