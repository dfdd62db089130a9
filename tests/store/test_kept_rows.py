"""Copies written apart from the caller's transaction (store/kept_rows.py): committed at once,
whatever becomes of the caller's transaction; never waiting on the caller's own write lock;
not kept, and said so, when they cannot be written."""

import time

from sqlmodel import select

from fma_bands.store.db import session_scope
from fma_bands.store.kept_rows import keep_apart, put
from fma_bands.store.models import KeptReport


def bodies(engine) -> dict[str, str]:
    with session_scope(engine) as s:
        return {row.key: row.body for row in s.exec(select(KeptReport))}


def test_a_copy_is_committed_apart_and_replaces_the_one_before(engine):
    class Refused(Exception):
        pass

    try:
        with session_scope(engine) as s:
            assert keep_apart(s, lambda own: put(own, "k", "one"))
            assert keep_apart(s, lambda own: put(own, "k", "two"))
            raise Refused  # the caller's transaction rolls back: the copy stands
    except Refused:
        pass
    assert bodies(engine) == {"k": "two"}


def test_a_caller_that_already_writes_keeps_the_copy_in_its_own_transaction(engine):
    # On SQLite a transaction apart would wait for the caller's lock, which waits for it: the
    # copy goes into the caller's transaction, at once (PostgreSQL writes it apart all the same).
    with session_scope(engine) as s:
        s.add(KeptReport(key="the caller's", body="written first"))
        s.flush()
        start = time.monotonic()
        assert keep_apart(s, lambda own: put(own, "k", "with the caller"))
        assert time.monotonic() - start < 5
    assert bodies(engine) == {"the caller's": "written first", "k": "with the caller"}


def test_a_copy_that_fails_is_not_kept_and_nothing_else_is_lost(engine):
    def fails(own):
        put(own, "k", "half")
        own.add(KeptReport(key="k", body="the same key twice"))
        own.flush()

    with session_scope(engine) as s:
        assert keep_apart(s, lambda own: put(own, "before", "kept"))
        assert not keep_apart(s, fails)
    assert bodies(engine) == {"before": "kept"}
