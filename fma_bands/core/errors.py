"""The one error class of fma-bands: a message a person reads, and where the problem is.

The command line catches FmaBandsError in one place and prints it on one line; pages show it
with st.error. Anything else that escapes is a bug, reported as such, never as a traceback.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One thing wrong, and where: a file, a line in it, a field (any may be unknown)."""

    message: str
    file: str | None = None
    line: int | None = None
    field: str | None = None

    def __str__(self) -> str:
        where = self.file or ""
        if self.file and self.line:
            where = f"{self.file}:{self.line}"
        elif self.line:
            where = f"line {self.line}"
        parts = [p for p in (where, self.field) if p]
        return ": ".join([*parts, self.message])


class FmaBandsError(Exception):
    """Something a person asked for cannot be done; the message says why and what to do.

    `file`, `line` and `field` say where; `fields` maps form fields to their own messages (a
    page shows each beside its field); `problems` lists every problem of a refused file;
    `code` is a stable name for scripts and the registry.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        field: str | None = None,
        fields: Mapping[str, str] | None = None,
        problems: Iterable[Problem] = (),
        code: str | None = None,
    ) -> None:
        self.message = message
        self.file = file
        self.line = line
        self.field = field
        self.fields = dict(fields or {})
        self.problems = list(problems)
        self.code = code
        super().__init__(str(self))

    def __str__(self) -> str:
        head = str(Problem(self.message, self.file, self.line, self.field))
        if not self.problems:
            return head
        return "\n".join([head, *(f"  {p}" for p in self.problems)])


class ConflictError(FmaBandsError):
    """What was on screen changed elsewhere since it was read: reload, never overwrite."""


class AccessDenied(FmaBandsError):
    """The person asking may not do or see this (a role, the blinding, a frozen round)."""


class WrongPassphrase(FmaBandsError):
    """The passphrase does not unlock what it should; said the same way whatever it guards."""
