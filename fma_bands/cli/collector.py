"""The cyclic garbage collector, paused for work that builds a great many objects in no cycle
(a parsed signed statement, a whole study's ratings and their report): each collection on the
way rescans everything built so far, which multiplies the work (docs/performance.md). Reference
counting still frees whatever is dropped; the collector runs again afterwards."""

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def paused() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
