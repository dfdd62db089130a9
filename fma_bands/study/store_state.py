"""Reads kept for one state of the store, in one process: the pages ask the same questions of
the reviews on every click, and the answers change only when something is recorded.

The state is the audit log's newest event that records a change (audit.state_head: a sign-in
or a refused passphrase changes nothing else). Every write a page's figures read from (a review
saved or submitted, a hand-back imported or confirmed, a rater enrolled, an assignment changed,
a flag, a mode, a round, a signature) appends to the audit log in the write's own transaction,
so while that event is the newest, they stand. The event is read before the data, so what is
kept under it is never older than it. A change made to the database outside fma-bands, which
the audit log does not record, is seen once a change is next recorded; by an answer that
follows the changes (per_change), once a change it does not follow is. Nothing a signature or
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


# The last answer to each question followed from change to change, by database and question:
# one per rater's queue, so a server's raters do not push each other's out.
FOLLOWED = 256
_followed: "OrderedDict[tuple[Any, ...], tuple[tuple[int, str], Any]]" = OrderedDict()


def per_change(
    session: Session,
    question: Hashable,
    read: Callable[[], T],
    update: Callable[[T, list[audit.Change]], T | None],
    *,
    most: int = 64,
) -> T:
    """per_state for an answer that follows the changes recorded since it was read:
    `update(before, changes)` gives the answer after them (`before` itself when none touches
    it), or None when one changes what it cannot follow, and the answer is read afresh. Read
    afresh too when more than `most` changes came between, or the log is not the one it was."""
    head = audit.state_head(session)
    if head is None:
        return read()  # nothing ever recorded: no state to keep it under
    key = (str(session.get_bind().engine.url), question)
    with _lock:
        last = _followed.get(key)
    found: T | None = None
    if last is not None and last[0] == head:
        found = last[1]
    elif last is not None:
        changes = audit.changes_since(session, last[0], head, most=most)
        found = None if changes is None else update(last[1], changes)
    if found is None:
        found = read()
    with _lock:
        _followed[key] = (head, found)
        _followed.move_to_end(key)
        while len(_followed) > FOLLOWED:
            _followed.popitem(last=False)
    return found


def forget() -> None:
    """Keep nothing (for a benchmark's first load, and tests)."""
    with _lock:
        _kept.clear()
        _followed.clear()
