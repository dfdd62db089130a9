"""The fma-bands command (click): one group, one module per noun group, errors in one place."""

import sys
from collections.abc import Sequence

from fma_bands.cli import (  # noqa: F401  (each module adds its commands to the group)
    agreement,
    assign,
    audit,
    db,
    handback,
    identity,
    impact,
    policy,
    registry,
    rounds,
    signing,
    study,
    users,
    vignettes,
)
from fma_bands.cli.base import cli


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return its exit status (for tests and the console script)."""
    try:
        cli.main(args=list(argv) if argv is not None else None, prog_name="fma-bands")
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    return 0


def run() -> None:
    sys.exit(main())
