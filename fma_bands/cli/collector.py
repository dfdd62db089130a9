"""The cyclic garbage collector, paused while a command runs in a caller's process (`main`):
a command builds a great many objects in no cycle (parsed signed statements, a whole study's
ratings and their report), and each collection on the way rescans everything built so far
(docs/performance.md, "The collector"). Reference counting still frees whatever is dropped;
the collector runs again afterwards."""

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
