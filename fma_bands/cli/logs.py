"""The command line's one logging configuration: each event a line of JSON in the log file.

A line holds `time` (UTC), `level`, `event`, `actor` (the name given with --as, else null) and
the event's own fields (docs/cli.md, "Logging"). The file is the `log_file` setting, readable by
its owner only; `log_level` says which events reach it (ERROR by default: bugs only).

Nothing secret reaches the file: the password of any database URL is shown as ***, and every
secret a command reads from a file (passphrases, enrolment codes) is replaced wherever it appears.
"""

import contextlib
import datetime
import json
import logging
import os
import stat
import tempfile
import traceback
from pathlib import Path
from typing import Any

LOGGER = logging.getLogger("fma_bands")
# Where the details of a bug go when the configured file cannot be written.
FALLBACK = Path(tempfile.gettempdir()) / "fma-bands.log"
HIDDEN = "***"
# A secret shorter than this is not searched for: replacing it would garble the line, and
# nothing that short is accepted as a passphrase or issued as a code.
SHORTEST_SECRET = 8

_secrets: set[str] = set()


class PrivateFile(logging.Handler):
    """Appends to the log file, created on the first line it writes, readable by its owner only
    and never through a link planted where it goes. If that file cannot be written, the lines go
    to FALLBACK; if neither can, they are dropped (a log must never stop a command)."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self.where: Path | None = None
        self._fd: int | None = None

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = (self.format(record) + "\n").encode("utf-8")
        except Exception:  # a field the formatter cannot show: the line is lost, not the command
            return
        if self._fd is None:
            self._open()
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.write(self._fd, line)

    def _open(self) -> None:
        # Without a wait: a FIFO named as the log would hold the command until something read
        # it (and the log is opened when a bug is reported). Only a regular file is a log.
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
        for path in (self.path, FALLBACK):
            try:
                fd = os.open(path, flags, 0o600)
            except OSError:
                continue
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                os.close(fd)
                continue
            # A log left readable by others is made private when next written.
            with contextlib.suppress(OSError):
                os.fchmod(fd, 0o600)
            self._fd, self.where = fd, path.resolve()
            return

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None
        super().close()


class JsonLine(logging.Formatter):
    """One JSON object per line; every text in it is cleaned of secrets first."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.datetime.fromtimestamp(record.created, datetime.UTC).isoformat(),
            "level": record.levelname,
            "event": record.getMessage(),
            "actor": None,
            **getattr(record, "fields", {}),
        }
        if record.exc_info and record.exc_info[1] is not None:
            entry["traceback"] = "".join(traceback.format_exception(record.exc_info[1]))
        return json.dumps(_cleaned(entry))


def _cleaned(value: Any) -> Any:
    if isinstance(value, str):
        return hide_secrets(value)
    if isinstance(value, dict):
        return {key: _cleaned(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_cleaned(item) for item in value]
    return value


def hide_secrets(text: str) -> str:
    """The text with every secret read by this command, and every URL's password, as ***."""
    from fma_bands.store.db import hide_passwords

    for secret in sorted(_secrets, key=len, reverse=True):
        text = text.replace(secret, HIDDEN)
    return hide_passwords(text)


def keep_secret(secret: str) -> None:
    """Say that this text is secret: no log line shows it."""
    if len(secret) >= SHORTEST_SECRET:
        _secrets.add(secret)


def configure(path: Path, level: str) -> PrivateFile:
    """Send the fma_bands logger's events at `level` and above to `path`, replacing whatever
    the last command configured (tests run many commands in one process)."""
    handler = PrivateFile(path)
    handler.setFormatter(JsonLine())
    release()
    LOGGER.addHandler(handler)
    LOGGER.setLevel(level)
    # Only this file: the events are not repeated on the terminal, which has the one-line message.
    LOGGER.propagate = False
    return handler


def configured() -> PrivateFile | None:
    found = [h for h in LOGGER.handlers if isinstance(h, PrivateFile)]
    return found[0] if found else None


def release() -> None:
    """Close the log file and forget this command's secrets."""
    for handler in list(LOGGER.handlers):
        LOGGER.removeHandler(handler)
        handler.close()
    _secrets.clear()


def note(level: int, event: str, **fields: Any) -> None:
    """Log `event` with its fields (`actor` among them, when known)."""
    LOGGER.log(level, event, extra={"fields": fields})
