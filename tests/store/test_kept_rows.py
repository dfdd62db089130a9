"""Copies written apart from the transaction that computed them (store/kept_rows.py): once a
session_scope has committed and given its connection back, each in a transaction of its own;
never while the computing session runs; dropped when they cannot be made, unless required."""

import time

import pytest
from sqlmodel import Session, select

from fma_bands.core.errors import ConflictError
from fma_bands.store.db import session_scope
from fma_bands.store.kept_rows import keep_apart, put
from fma_bands.store.models import KeptReport
from tests.conftest import lock_is_free


def bodies(engine) -> dict[str, str]:
    with session_scope(engine) as s:
        return {row.key: row.body for row in s.exec(select(KeptReport))}


def test_copies_are_written_once_the_session_is_over_and_replace_the_ones_before(engine):
    with session_scope(engine) as s:
        keep_apart(s, lambda own: put(own, "k", "one"))
        keep_apart(s, lambda own: put(own, "k", "two"))
        assert lock_is_free(engine)  # nothing written while the session computes
        assert bodies(engine) == {}
    assert bodies(engine) == {"k": "two"}


def test_a_session_that_fails_leaves_no_copy(engine):
    class Refused(Exception):
        pass

    with pytest.raises(Refused), session_scope(engine) as s:
        keep_apart(s, lambda own: put(own, "k", "made before the failure"))
        raise Refused
    assert bodies(engine) == {}


def fails(own) -> None:
    put(own, "k", "half")
    own.add(KeptReport(key="k", body="the same key twice"))
    own.flush()


def test_a_copy_that_cannot_be_made_is_dropped_alone_unless_it_is_required(engine):
    with session_scope(engine) as s:
        keep_apart(s, lambda own: put(own, "before", "kept"))
        keep_apart(s, fails)
        keep_apart(s, lambda own: put(own, "after", "kept"))
    assert bodies(engine) == {"before": "kept", "after": "kept"}
    with pytest.raises(ConflictError), session_scope(engine) as s:
        keep_apart(s, fails, required=True)
    assert bodies(engine) == {"before": "kept", "after": "kept"}


def test_outside_a_session_scope_a_copy_is_made_at_once_without_waiting_on_the_caller(engine):
    # A plain session has no "after": the copy is made at once, apart; on SQLite a caller that
    # already writes holds the one lock a transaction apart would wait for, so the copy goes
    # into the caller's transaction instead (PostgreSQL writes it apart all the same).
    with Session(engine) as s:
        keep_apart(s, lambda own: put(own, "first", "apart"))
        assert bodies(engine) == {"first": "apart"}
        s.add(KeptReport(key="the caller's", body="written first"))
        s.flush()
        start = time.monotonic()
        keep_apart(s, lambda own: put(own, "k", "with the caller"))
        assert time.monotonic() - start < 5
        s.commit()
    assert bodies(engine) == {
        "first": "apart",
        "the caller's": "written first",
        "k": "with the caller",
    }
