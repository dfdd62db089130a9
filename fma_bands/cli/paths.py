"""Where a command writes a file the operator names (`export --out`, `exemptions export`,
`--code-file`): a new file or over a regular one, never into the attestations folder (only the
study's signed log writes there) or the vignettes folder (every file there is read as a
vignette), never over the study's own files (its SQLite database, the identity key, the log),
and never onto a link, a device, a FIFO or a folder. Checked before anything is done, so a
refused path changes nothing."""

import os
import stat
from pathlib import Path

from fma_bands.cli.base import settings, sqlite_file
from fma_bands.core.errors import FmaBandsError


def check_output(path: str | Path, what: str) -> Path:
    """The path, if a command may write `what` there; else an FmaBandsError naming it."""
    out = Path(path)
    found_settings = settings()
    folder = found_settings.attestations
    try:
        target = out.parent.resolve() / out.name
        log = folder.resolve()
        vignettes = found_settings.vignettes.resolve()
        own = {file.resolve(): name for name, file in _study_files().items()}
    except (OSError, RuntimeError) as exc:  # a name too long, a loop of links
        raise FmaBandsError(f"cannot write the {what} there: {exc}", file=str(out)) from None
    if target == log or log in target.parents:
        raise FmaBandsError(
            f"{out} is inside the attestations folder {folder}: only the study's signed log "
            f"writes there; write the {what} elsewhere",
            file=str(out),
        )
    if target == vignettes or vignettes in target.parents:
        raise FmaBandsError(
            f"{out} is inside the vignettes folder {found_settings.vignettes}: every file there "
            f"is read as a vignette; write the {what} elsewhere",
            file=str(out),
        )
    if target in own:
        raise FmaBandsError(
            f"{out} is the study's {own[target]}: write the {what} elsewhere", file=str(out)
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


def _study_files() -> dict[str, Path]:
    """The study's own files that a command must never write an output over, by what they are."""
    found = settings()
    files = {"identity key": found.identity_key, "log file": found.log_file}
    database = sqlite_file(found.database_url)
    if database is not None:
        files["database"] = Path(database)
    return files
