"""Run `fma-bands ARGS` and SIGKILL it inside a named crash window (tests/store/test_kills.py).

    python -m tests.store.killer WINDOW ARGS...

The windows sit between two steps of a write path, so the process dies exactly between them:

- appended: a record of the study's log is signed into the open transaction, before the commit
  (fma_bands.study.ledger.append);
- before-publish: the commit is done, the first record it publishes not yet renamed into
  attestations/ (fma_bands.study.ledger.publish, through fma_bands.core.files.write_atomically);
- adjudicators: the records are in attestations/, adjudicators.yaml not yet written again;
- export: bands.yaml is written and synced, not yet renamed over the old one.
"""

import os
import signal
import sys
from pathlib import Path

from fma_bands.evidence.envelope import ENVELOPE_SUFFIX

WINDOWS = ("appended", "before-publish", "adjudicators", "export")
_replace = os.replace


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _replace_then_maybe_die(window: str):
    def replace(src, dst, *args, **kwargs):
        target = Path(dst)
        if window == "before-publish" and target.name.endswith(ENVELOPE_SUFFIX):
            _die()
        if window == "adjudicators" and target.name == "adjudicators.yaml":
            _die()
        if window == "export" and target.name == "bands.yaml":
            _die()
        _replace(src, dst, *args, **kwargs)

    return replace


def _die_after_append() -> None:
    from fma_bands.study import ledger

    append = ledger.append

    def append_then_die(*args, **kwargs):
        append(*args, **kwargs)
        _die()

    ledger.append = append_then_die  # type: ignore[assignment]


def main() -> None:
    window, args = sys.argv[1], sys.argv[2:]
    if window not in WINDOWS:
        raise SystemExit(f"unknown window {window!r}: one of {', '.join(WINDOWS)}")
    os.replace = _replace_then_maybe_die(window)
    if window == "appended":
        _die_after_append()
    from fma_bands.cli import cli

    cli.main(args, prog_name="fma-bands")


if __name__ == "__main__":
    main()
