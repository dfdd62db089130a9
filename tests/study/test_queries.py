"""Queries between the coordinator and one rater about one band, on a real store (SQLite file
and PostgreSQL): who writes, who reads, what waits for whom, and what the audit log keeps."""

import pytest
from sqlmodel import select

from fma_bands.core.errors import AccessDenied, FmaBandsError
from fma_bands.store.db import session_scope
from fma_bands.store.models import QueryMessage
from fma_bands.study import audit
from fma_bands.study.assignment import change
from fma_bands.study.queries import (
    MAX_BODY,
    ask,
    awaiting,
    awaiting_words,
    close,
    threads,
    write,
)
from tests.conftest import enrol_study

DOC = ("draft_documentation_01", "followup_days")
MED = ("draft_medication_01", "analgesia_tier")
QUESTION = "Is the follow-up counted from discharge or from the visit?"
ANSWER = "From discharge: the vignette says so in its second line."


@pytest.fixture
def study(engine, shared_library):
    with session_scope(engine) as s:
        coordinator, a, b = enrol_study(s, shared_library)
    return engine, shared_library, coordinator, a, b


def test_a_rater_asks_the_coordinator_answers_and_the_rater_reads_it(study):
    engine, library, coordinator, a, _ = study
    with session_scope(engine) as s:
        ask(s, library, a, DOC, f"  {QUESTION}\n")
    with session_scope(engine) as s:
        assert awaiting(s, coordinator) == 1 and awaiting(s, a) == 0
        [thread] = threads(s, coordinator)
        assert (thread.band, thread.rater, thread.awaits) == (DOC, a.pseudonym, "coordinator")
        assert thread.messages[0].body == QUESTION  # stripped of the spaces around it
        write(s, library, coordinator, a.pseudonym, DOC, ANSWER)
    with session_scope(engine) as s:
        [thread] = threads(s, a)
        assert [(m.author, m.by_rater, m.body) for m in thread.messages] == [
            (a.pseudonym, True, QUESTION),
            (coordinator.pseudonym, False, ANSWER),
        ]
        assert thread.is_open and thread.awaits == "rater"
        assert awaiting(s, a) == 1 and awaiting(s, coordinator) == 0


def test_a_rater_never_reads_another_raters_query(study):
    engine, library, coordinator, a, b = study
    with session_scope(engine) as s:
        ask(s, library, a, DOC, QUESTION)
        write(s, library, coordinator, a.pseudonym, DOC, ANSWER)
        write(s, library, coordinator, b.pseudonym, MED, "Which tier did you mean?")
    with session_scope(engine) as s:
        theirs = threads(s, b)
        assert [(t.rater, t.band) for t in theirs] == [(b.pseudonym, MED)]
        assert QUESTION not in repr(theirs) and ANSWER not in repr(theirs)
        assert awaiting(s, b) == 1  # the coordinator's question to them, not a's thread
        # Asking about the same band makes b's own thread, never a message in a's.
        ask(s, library, b, DOC, "A question of my own.")
    with session_scope(engine) as s:
        [mine] = [t for t in threads(s, a) if t.band == DOC]
        assert len(mine.messages) == 2
        assert {(t.rater, t.band) for t in threads(s, coordinator)} == {
            (a.pseudonym, DOC),
            (b.pseudonym, MED),
            (b.pseudonym, DOC),
        }


def test_a_rater_asks_only_about_a_band_of_their_queue(study):
    engine, library, coordinator, a, _ = study
    with session_scope(engine) as s:
        change(s, library, actor=coordinator, rater=a.pseudonym, bands=[MED], assigned=False)
    with session_scope(engine) as s, pytest.raises(FmaBandsError) as refused:
        ask(s, library, a, MED, QUESTION)
    assert refused.value.fields == {"band": "you can ask only about a band of your own queue"}
    with session_scope(engine) as s, pytest.raises(FmaBandsError):
        ask(s, library, a, ("no_such_vignette", "esi_acuity"), QUESTION)
    # The coordinator's question about that band can still be answered in the rater's thread.
    with session_scope(engine) as s:
        write(s, library, coordinator, a.pseudonym, MED, "Why did you leave this one?")
    with session_scope(engine) as s:
        ask(s, library, a, MED, "It is outside my scope.")
        [thread] = threads(s, a)
        assert len(thread.messages) == 2


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("   ", "write the message first: one sentence is enough"),
        ("x" * (MAX_BODY + 1), f"keep the message under {MAX_BODY} characters"),
    ],
)
def test_an_empty_or_overlong_message_is_refused_by_name_and_nothing_is_kept(study, body, message):
    engine, library, coordinator, a, _ = study
    with session_scope(engine) as s, pytest.raises(FmaBandsError) as refused:
        ask(s, library, a, DOC, body)
    assert refused.value.fields == {"message": message}
    with session_scope(engine) as s, pytest.raises(FmaBandsError) as refused:
        write(s, library, coordinator, a.pseudonym, DOC, body)
    assert refused.value.fields == {"message": message}
    with session_scope(engine) as s:
        assert s.exec(select(QueryMessage)).all() == []
        ask(s, library, a, DOC, "x" * MAX_BODY)  # the bound itself is allowed


def test_the_coordinator_closes_a_query_and_only_the_coordinator(study):
    engine, library, coordinator, a, _ = study
    with session_scope(engine) as s:
        ask(s, library, a, DOC, QUESTION)
    with session_scope(engine) as s, pytest.raises(AccessDenied, match="only"):
        close(s, a, a.pseudonym, DOC)
    with session_scope(engine) as s:
        close(s, coordinator, a.pseudonym, DOC, ANSWER)
    with session_scope(engine) as s:
        [thread] = threads(s, a)
        assert not thread.is_open and thread.awaits is None
        assert thread.messages[-1].closes and thread.messages[-1].body == ANSWER
        assert awaiting(s, a) == 0 and awaiting(s, coordinator) == 0
    with session_scope(engine) as s, pytest.raises(FmaBandsError, match="not open"):
        close(s, coordinator, a.pseudonym, DOC)
    # Asking again about the band opens the thread again, waiting for the coordinator.
    with session_scope(engine) as s:
        ask(s, library, a, DOC, "One more thing.")
        [thread] = threads(s, coordinator)
        assert thread.is_open and thread.awaits == "coordinator" and len(thread.messages) == 3


def test_the_coordinator_writes_only_to_raters(study):
    engine, library, coordinator, a, _ = study
    with session_scope(engine) as s, pytest.raises(FmaBandsError) as refused:
        write(s, library, coordinator, coordinator.pseudonym, DOC, QUESTION)
    assert refused.value.fields == {"rater": "coordinator is not a rater of this study"}
    with session_scope(engine) as s, pytest.raises(FmaBandsError, match="a band of the study"):
        write(s, library, coordinator, a.pseudonym, ("no_such", "esi_acuity"), QUESTION)
    with session_scope(engine) as s, pytest.raises(AccessDenied, match="only"):
        write(s, library, a, a.pseudonym, DOC, QUESTION)


def test_each_message_is_audited_by_its_length_never_its_words(study):
    engine, library, coordinator, a, _ = study
    with session_scope(engine) as s:
        ask(s, library, a, DOC, QUESTION)
        write(s, library, coordinator, a.pseudonym, DOC, ANSWER)
        close(s, coordinator, a.pseudonym, DOC)
    with session_scope(engine) as s:
        found = audit.events(s, kinds=["query_message", "query_closed"])
        ids = [m.id for m in threads(s, coordinator)[0].messages]
    assert [(e["kind"], e["actor"]) for e in reversed(found)] == [
        ("query_message", a.pseudonym),
        ("query_message", coordinator.pseudonym),
        ("query_closed", coordinator.pseudonym),
    ]
    assert [e["payload"] for e in reversed(found)] == [
        {
            "vignette_id": DOC[0],
            "sub_action": DOC[1],
            "rater": a.pseudonym,
            "message": i,
            "length": n,
        }
        for i, n in zip(ids, (len(QUESTION), len(ANSWER), 0), strict=True)
    ]
    assert QUESTION not in repr(found) and ANSWER not in repr(found)


def test_the_count_of_queries_awaiting_a_reply_reads_as_words():
    assert awaiting_words(1, "coordinator") == "1 query waits for your answer"
    assert awaiting_words(3, "coordinator") == "3 queries wait for your answer"
    # Still true once the rater has read it, and whether the coordinator answered or asked.
    assert awaiting_words(1, "rater") == "1 open query ends with a message from the coordinator"
    assert awaiting_words(3, "rater") == "3 open queries end with a message from the coordinator"
