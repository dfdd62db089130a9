"""Reads kept for one state of the store (store_state.py): asked again while nothing new is
recorded in the audit log, a question is not read again; anything recorded, another question,
or a log with nothing in it reads afresh; a sign-in is no change. An answer that follows the
changes is brought up to date from them, or read afresh when it cannot be."""

from sqlmodel import delete

from fma_bands.store.db import session_scope
from fma_bands.store.models import AuditEvent
from fma_bands.study import audit, store_state
from fma_bands.study.store_state import KEPT, per_change, per_state


def test_a_question_is_read_once_per_state_of_the_store(engine):
    store_state.forget()
    reads: list[str] = []

    def read(answer: str):
        def run() -> str:
            reads.append(answer)
            return answer

        return run

    with session_scope(engine) as s:
        # Nothing ever recorded: no state to keep it under.
        assert per_state(s, "q", read("empty")) == "empty"
        assert per_state(s, "q", read("empty again")) == "empty again"
        audit.record(s, kind="test_event", actor="coordinator", payload={"n": 1})
    with session_scope(engine) as s:
        assert per_state(s, "q", read("first")) == "first"
        assert per_state(s, "q", read("unread")) == "first"
        assert per_state(s, ("q", 2), read("another question")) == "another question"
    # A sign-in, a refused passphrase, an identity read: recorded, yet no change of the store.
    for kind in sorted(audit.READINGS):
        with session_scope(engine) as s:
            audit.record(s, kind=kind, actor="coordinator", payload={})
    with session_scope(engine) as s:
        assert per_state(s, "q", read("unread after a sign-in")) == "first"
        audit.record(s, kind="test_event", actor="coordinator", payload={"n": 2})
    with session_scope(engine) as s:
        assert per_state(s, "q", read("after a record")) == "after a record"
    assert reads == ["empty", "empty again", "first", "another question", "after a record"]
    store_state.forget()
    with session_scope(engine) as s:
        assert per_state(s, "q", read("forgotten")) == "forgotten"


def test_only_the_newest_answers_are_kept(engine):
    store_state.forget()
    with session_scope(engine) as s:
        audit.record(s, kind="test_event", actor="coordinator", payload={})
    with session_scope(engine) as s:
        for n in range(KEPT + 1):
            per_state(s, n, lambda n=n: n)
        # The oldest went; the newest stay.
        assert per_state(s, 0, lambda: "read again") == "read again"
        assert per_state(s, KEPT, lambda: "not read") == KEPT


def test_an_answer_follows_the_changes_recorded_since_it_was_read(engine):
    store_state.forget()
    reads: list[str] = []
    seen: list[list[tuple[str, str | None]]] = []

    def read() -> str:
        reads.append("read")
        return f"read {len(reads)}"

    def update(before: str, changes: list[audit.Change]) -> str | None:
        seen.append([(c.kind, c.actor) for c in changes])
        if any(c.kind == "unfollowed" for c in changes):
            return None
        return f"{before} + {len(changes)}"

    def ask() -> str:
        with session_scope(engine) as s:
            return per_change(s, "q", read, update, most=3)

    def record(*kinds: str) -> None:
        for kind in kinds:
            with session_scope(engine) as s:
                audit.record(s, kind=kind, actor="rater-01", payload={"k": kind})

    record("a")
    assert ask() == "read 1"
    assert ask() == "read 1"  # nothing recorded since
    record("b", "sign_in", "c")  # a sign-in is no change: not among the changes
    assert ask() == "read 1 + 2"
    assert seen == [[("b", "rater-01"), ("c", "rater-01")]]
    record("d", "e", "f", "g")  # more than `most`: read afresh, update not asked
    assert ask() == "read 2"
    record("unfollowed")  # a change the answer cannot follow: read afresh
    assert ask() == "read 3"
    assert len(seen) == 2
    assert reads == ["read"] * 3


def test_an_answer_is_read_afresh_from_another_log_at_the_same_address(engine, tmp_path):
    store_state.forget()
    with session_scope(engine) as s:
        audit.record(s, kind="a", actor="rater-01", payload={})
    with session_scope(engine) as s:
        assert per_change(s, "q", lambda: "first log", lambda b, c: f"{b} followed") == "first log"
    # The log replaced under the same address (a study restored, a test's database made
    # again): its event at the head once read is another event, so nothing is followed.
    with session_scope(engine) as s:
        s.execute(delete(AuditEvent))
    with session_scope(engine) as s:
        audit.record(s, kind="other", actor="rater-02", payload={"n": 1})
        audit.record(s, kind="other", actor="rater-02", payload={"n": 2})
    with session_scope(engine) as s:
        found = per_change(s, "q", lambda: "second log", lambda b, c: f"{b} followed")
    assert found == "second log"
