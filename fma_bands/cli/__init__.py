"""The fma-bands command (click): one group, one module per noun group, errors in one place.
The only place that tunes the interpreter (collector): a command is one short process.

A command imports the domain it needs inside its own function: imported at the top, the
database, the bands and the agreement code would load for every command, `--help` included
(docs/performance.md, "Command-line imports"). What every command loads anyway is imported at
the top of its module.

May import: every fma_bands package. Never Streamlit or the pages."""

import gc
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from fma_bands.cli import (  # noqa: F401  (each module adds its commands to the group)
    agreement,
    assign,
    audit,
    chair,
    collector,
    db,
    exemptions,
    handback,
    identity,
    impact,
    policy,
    queries,
    registry,
    report,
    rounds,
    serve,
    signing,
    steward,
    study,
    users,
    vignettes,
)
from fma_bands.cli.base import cli
from fma_bands.core.markup import terminal_text


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return its exit status (tests call this in their own process:
    the cyclic garbage collector is as it was afterwards)."""
    with collector.paused():
        return _command(argv)


def run() -> None:
    """The console script. A command runs for seconds and ends, and what it holds is freed by
    reference counting: the cyclic collector would only rescan the objects of the signed
    statements and the ratings again and again, a large share of a command's time
    (docs/performance.md, "The collector"), and would free no memory. So it stays off, and is
    frozen at the end so the interpreter's last collection has nothing to scan."""
    gc.disable()
    code = _command(None)
    gc.freeze()
    sys.exit(code)


def _command(argv: Sequence[str] | None) -> int:
    streams = sys.stdout, sys.stderr
    # Whatever a command prints may hold names and texts from files: none may act on the
    # terminal (erase a line, hide the rest), whichever command prints it.
    sys.stdout, sys.stderr = _Escaping(streams[0]), _Escaping(streams[1])
    try:
        cli.main(args=list(argv) if argv is not None else None, prog_name="fma-bands")
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    finally:
        sys.stdout, sys.stderr = streams
    return 0


class _Escaping:
    """A text stream that writes every control and reordering character but newline and tab
    as its escape (core.markup.terminal_text); all else is the stream's own."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(terminal_text(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
