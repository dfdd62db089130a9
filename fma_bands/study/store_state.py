"""Reads kept for one state of the store, in one process: the pages ask the same questions of
the reviews on every click, and the answers change only when something is recorded.

The state is the audit log's newest event that records a change (audit.state_head: a sign-in
or a refused passphrase changes nothing else). Every write a page's figures read from (a review
saved or submitted, a hand-back imported or confirmed, a rater enrolled, an assignment changed,
a flag, a mode, a round, a signature) appends to the audit log in the write's own transaction,
so while that event is the newest, they stand. The event is read before the data, so what is
kept under it is never older than it. A change made to the database outside fma-bands, which
the audit log does not record, is seen once a change is next recorded. Nothing a signature or
the hash chain vouches for is decided from here (docs/performance.md, What keeps trust).
"""

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from sqlmodel import Session

from fma_bands.study import audit

T = TypeVar("T")
KEPT = 8  # answers kept per process: a few pages' questions for the present state

_kept: "OrderedDict[tuple[Any, ...], Any]" = OrderedDict()
_lock = threading.Lock()


def per_state(session: Session, question: Hashable, read: Callable[[], T]) -> T:
    """`read()`, or what it gave before in this process for the same database, the same newest
    change in its audit log (audit.state_head) and the same `question` (which names the read
    and everything else it depends on: a rater, a round, the vignettes' digests). Shared
    between the sessions of a server: the caller authorises the viewer first, and never changes
    what it gets."""
    head = audit.state_head(session)
    if head is None:
        return read()  # nothing ever recorded: no state to keep it under
    key = (str(session.get_bind().engine.url), head, question)
    with _lock:
        if key in _kept:
            _kept.move_to_end(key)
            return _kept[key]  # type: ignore[no-any-return]
    found = read()
    with _lock:
        _kept[key] = found
        while len(_kept) > KEPT:
            _kept.popitem(last=False)
    return found


def forget() -> None:
    """Keep nothing (for a benchmark's first load, and tests)."""
    with _lock:
        _kept.clear()
