"""Reads kept for one state of the store (store_state.py): asked again while nothing new is
recorded in the audit log, a question is not read again; anything recorded, another question,
or a log with nothing in it reads afresh; a sign-in is no change."""

from fma_bands.store.db import session_scope
from fma_bands.study import audit, store_state
from fma_bands.study.store_state import KEPT, per_state


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
