"""Where a command writes a file the operator names (`export --out`, `--code-file`): a new file
or over a regular one, never into the attestations folder (only the study's signed log writes
there) and never onto a link, a device, a FIFO or a folder. Checked before anything is done, so a
refused path changes nothing."""

import os
import stat
from pathlib import Path

from fma_bands.cli.base import settings
from fma_bands.core.errors import FmaBandsError


def check_output(path: str | Path, what: str) -> Path:
    """The path, if a command may write `what` there; else an FmaBandsError naming it."""
    out = Path(path)
    folder = settings().attestations
    try:
        target = out.parent.resolve() / out.name
        log = folder.resolve()
    except (OSError, RuntimeError) as exc:  # a name too long, a loop of links
        raise FmaBandsError(f"cannot write the {what} there: {exc}", file=str(out)) from None
    if target == log or log in target.parents:
        raise FmaBandsError(
            f"{out} is inside the attestations folder {folder}: only the study's signed log "
            f"writes there; write the {what} elsewhere",
            file=str(out),
        )
    try:
        found = os.lstat(out)
    except FileNotFoundError:
        return out
    except OSError as exc:
        raise FmaBandsError(
            f"cannot write the {what} there: {exc.strerror}", file=str(out)
        ) from None
    if not stat.S_ISREG(found.st_mode):
        raise FmaBandsError(
            f"not a regular file (a link, a device, a FIFO or a folder): the {what} is written "
            "only to a new file or over a regular one",
            file=str(out),
        )
    return out
