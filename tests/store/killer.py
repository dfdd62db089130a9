"""Run `fma-bands ARGS` and SIGKILL it inside a named crash window (tests/store/test_kills.py).

    python -m tests.store.killer WINDOW ARGS...

The windows are the renames of the write paths (fma_bands.core.files.write_atomically,
fma_bands.store.db.write_on_commit), so the process dies exactly between two of its writes:

- pending-written: a signed record has just reached its pending file, before the commit;
- before-publish: the commit is done, the pending record not yet renamed into place;
- adjudicators: the store is committed, adjudicators.yaml not yet written again;
- export: bands.yaml is written and synced, not yet renamed over the old one.
"""

import os
import signal
import sys
from pathlib import Path

PENDING = ".pending"
WINDOWS = ("pending-written", "before-publish", "adjudicators", "export")
_replace = os.replace


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _replace_then_maybe_die(window: str):
    def replace(src, dst, *args, **kwargs):
        source, target = Path(src), Path(dst)
        if window == "before-publish" and source.name.endswith(PENDING):
            _die()
        if window == "adjudicators" and target.name == "adjudicators.yaml":
            _die()
        if window == "export" and target.name == "bands.yaml":
            _die()
        _replace(src, dst, *args, **kwargs)
        if window == "pending-written" and target.name.endswith(PENDING):
            _die()

    return replace


def main() -> None:
    window, args = sys.argv[1], sys.argv[2:]
    if window not in WINDOWS:
        raise SystemExit(f"unknown window {window!r}: one of {', '.join(WINDOWS)}")
    os.replace = _replace_then_maybe_die(window)
    from fma_bands.cli import cli

    cli.main(args, prog_name="fma-bands")


if __name__ == "__main__":
    main()
