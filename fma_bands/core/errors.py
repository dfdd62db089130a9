"""The one error class of fma-bands: a message a person reads, and where the problem is.

The command line catches FmaBandsError in one place and prints it on one line; pages show it
with st.error. Anything else that escapes is a bug, reported as such, never as a traceback.
"""

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

# A lone surrogate: what a file name that is not UTF-8 (read with surrogateescape) or JSON's
# "\ud800" leaves in a str. No UTF-8 output can carry one (a page's messages, a terminal set to
# UTF-8, a log), so a message naming it would stop whatever shows it.
SURROGATE = re.compile("[\ud800-\udfff]")


def escape_surrogates(text: str) -> str:
    """text with each lone surrogate written as its escape (\\udcff, as JSON writes it)."""
    if SURROGATE.search(text) is None:
        return text
    return SURROGATE.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


def _shown(text: str | None) -> str | None:
    return escape_surrogates(text) if isinstance(text, str) else text


@dataclass(frozen=True)
class Problem:
    """One thing wrong, and where: a file, a line in it, a field (any may be unknown)."""

    message: str
    file: str | None = None
    line: int | None = None
    field: str | None = None

    def __post_init__(self) -> None:
        # What a problem says is shown (a page, a terminal): a file's name may hold anything.
        for name in ("message", "file", "field"):
            object.__setattr__(self, name, _shown(getattr(self, name)))

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
        self.message = escape_surrogates(message)
        self.file = _shown(file)
        self.line = line
        self.field = _shown(field)
        self.fields = {key: escape_surrogates(said) for key, said in (fields or {}).items()}
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
