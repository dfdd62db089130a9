"""The peak of Python's own allocations while one call runs (tracemalloc), for tests that hold
a reader to a memory bound."""

import tracemalloc
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def peak_of(call: Callable[[], T]) -> tuple[T, int]:
    """What `call` returns, and the most bytes Python held at once while it ran."""
    tracemalloc.start()
    try:
        found = call()
        return found, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
