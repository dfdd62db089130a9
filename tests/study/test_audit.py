"""The audit log on a real SQLite file and a real PostgreSQL: chaining, tampering, concurrency."""

import hashlib
import itertools
import json
import threading
from datetime import UTC, timedelta

import pytest
from sqlalchemy import JSON, bindparam, select, text
from sqlmodel import Session, col

from fma_bands.store.db import session_scope
from fma_bands.store.models import AuditEvent, StudySettings, UTCDateTime
from fma_bands.study import audit
from fma_bands.study.state import study

PAYLOADS: list[dict[str, object]] = [
    {"vignette": "draft_documentation_01", "sub_action": "followup_days"},
    {"verdict": "AMEND", "band": {"min": 1, "max": 30}, "note": "café, 30 días"},
    {},
    {"values": [1, 3], "nested": {"ok": True, "none": None}},
    {"n": 12345678901234567890},
    {"phase": "closed"},
]


def append(engine, n: int) -> list[tuple[int, str]]:
    heads = []
    for i in range(n):
        with session_scope(engine) as s:
            event = audit.record(
                s, kind=f"test.kind{i % 3}", actor=f"rater-{i % 2}", payload=PAYLOADS[i % 6]
            )
            heads.append((event.seq, event.hash))
    return heads


def sql(engine, statement: str, **params) -> None:
    clause = text(statement)
    if "payload" in params:
        clause = clause.bindparams(bindparam("payload", type_=JSON))
    if "at" in params:
        clause = clause.bindparams(bindparam("at", type_=UTCDateTime))
    with engine.begin() as conn:
        conn.execute(clause, params)


def check(engine, **kwargs) -> audit.AuditReport:
    with Session(engine) as s:
        return audit.verify(s, **kwargs)


def rows(engine) -> list[AuditEvent]:
    with Session(engine, expire_on_commit=False) as s:
        return list(s.scalars(select(AuditEvent).order_by(col(AuditEvent.seq))))


# --- appending ---------------------------------------------------------------------------------


def test_appending_builds_a_valid_chain(engine):
    heads = append(engine, 6)
    stored = rows(engine)
    assert [r.seq for r in stored] == [1, 2, 3, 4, 5, 6]
    assert stored[0].prev_hash == audit.GENESIS == "sha256:" + "0" * 64
    for before, after in itertools.pairwise(stored):
        assert after.prev_hash == before.hash
    assert all(r.at.tzinfo is not None and r.at.utcoffset() == timedelta(0) for r in stored)
    assert [(r.seq, r.hash) for r in stored] == heads
    report = check(engine)
    assert report.ok and report.problems == []
    assert report.n_events == 6 and report.head == heads[-1]
    with Session(engine) as s:
        assert audit.head(s) == heads[-1]
    assert "chain intact" in str(report)


def test_empty_log(engine):
    with Session(engine) as s:
        assert audit.head(s) is None
        assert audit.events(s) == []
        report = audit.verify(s)
    assert report.ok and report.n_events == 0 and report.head is None


def test_hashes_are_reproducible_independently(engine):
    append(engine, 6)
    for row in rows(engine):
        at = row.at.astimezone(UTC).isoformat(timespec="microseconds")
        assert len(at) == len("2026-11-29T18:00:00.123456+00:00") and at.endswith("+00:00")
        document = {
            "at": at,
            "actor": row.actor,
            "kind": row.kind,
            "payload": row.payload,
            "prev_hash": row.prev_hash,
        }
        body = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        assert row.hash == "sha256:" + hashlib.sha256(body.encode("utf-8")).hexdigest()
    assert [r.payload for r in rows(engine)] == PAYLOADS


def test_events_are_plain_dicts_newest_first(engine):
    append(engine, 6)
    with Session(engine) as s:
        everything = audit.events(s)
        latest_two = audit.events(s, limit=2)
        only = audit.events(s, kinds=["test.kind0"])
    assert [e["seq"] for e in everything] == [6, 5, 4, 3, 2, 1]
    assert all(type(e) is dict for e in everything)
    assert set(everything[0]) == {"seq", "at", "actor", "kind", "payload", "prev_hash", "hash"}
    assert everything[-1]["payload"] == PAYLOADS[0]
    assert [e["seq"] for e in latest_two] == [6, 5]
    assert [e["seq"] for e in only] == [4, 1]


# --- atomicity and refusals ----------------------------------------------------------------------


def test_rolled_back_transaction_leaves_no_event(engine):
    append(engine, 2)

    def close_phase_then_fail() -> None:
        with session_scope(engine) as s:
            study(s)  # the one study row, made by the migrations (or here on PostgreSQL)
        with session_scope(engine) as s:
            s.execute(select(StudySettings)).scalar_one().phase = "closed"
            audit.record(s, kind="phase.closed", actor="coordinator", payload={"phase": "closed"})
            raise RuntimeError("the audited action failed after recording")

    with pytest.raises(RuntimeError):
        close_phase_then_fail()
    with Session(engine) as s:
        assert s.execute(select(StudySettings)).scalar_one().phase == "open"
        assert audit.head(s)[0] == 2
    append(engine, 1)
    assert check(engine).ok and check(engine).n_events == 3


UNHASHABLE = [
    {"score": 0.5},
    {"nested": {"values": [1, 2.0]}},
    {"x": float("nan")},
    {1: "non-string key"},
    {"when": object()},
    {"values": {1, 2}},
    ["not", "a", "dict"],
]
SECRET_NAMED = [
    {"passphrase": "hunter2"},
    {"new_password": "x"},
    {"privateKey": "-----BEGIN"},
    {"encrypted_private_key": "..."},
    {"registration_number": "MED0001234567"},
    {"rater": {"full_name": "Dr A. Person"}},
    {"contacts": [{"E-mail": "a@example.org"}]},
]


# One store per test, not per payload: creating a PostgreSQL database is the slow part.
def test_unhashable_payloads_are_refused_before_writing(engine):
    with session_scope(engine) as s:
        for payload in UNHASHABLE:
            with pytest.raises(ValueError, match="payload"):
                audit.record(s, kind="test", payload=payload)
        # The refusals leave the session usable and wrote nothing.
        assert audit.head(s) is None
    with Session(engine) as s:
        assert audit.head(s) is None


def test_secret_named_keys_are_refused(engine):
    with session_scope(engine) as s:
        for payload in SECRET_NAMED:
            with pytest.raises(ValueError, match="secret or private identity"):
                audit.record(s, kind="user.created", payload=payload)
        audit.record(s, kind="user.created", payload={"pseudonym": "adjudicator-01"})
    with Session(engine) as s:
        assert [e["payload"] for e in audit.events(s)] == [{"pseudonym": "adjudicator-01"}]


def test_kind_is_required(engine):
    with pytest.raises(ValueError, match="kind"), session_scope(engine) as s:
        audit.record(s, kind=" ")


# --- tampering -----------------------------------------------------------------------------------


def kinds(report: audit.AuditReport) -> list[tuple[int | None, str]]:
    return [(p.seq, p.kind) for p in report.problems]


def test_edited_payload_is_reported_once(engine):
    append(engine, 6)
    sql(engine, "UPDATE audit_event SET payload = :payload WHERE seq = 3", payload={"x": 1})
    report = check(engine)
    assert not report.ok
    assert kinds(report) == [(3, "edited")]
    assert "event 3" in report.problems[0].message
    assert "edited" in str(report) and "1 problem" in str(report)


@pytest.mark.parametrize("column", ["at", "actor", "kind", "prev_hash"])
def test_edited_fields_are_reported(engine, column):
    append(engine, 4)
    original = rows(engine)[1]
    if column == "at":
        sql(
            engine,
            "UPDATE audit_event SET at = :at WHERE seq = 2",
            at=original.at + timedelta(0, 1),
        )
    else:
        sql(engine, f"UPDATE audit_event SET {column} = :v WHERE seq = 2", v="sha256:forged")
    assert kinds(check(engine)) == [(2, "edited")]


def test_deleted_middle_event(engine):
    append(engine, 6)
    sql(engine, "DELETE FROM audit_event WHERE seq = 4")
    report = check(engine)
    assert kinds(report) == [(5, "deleted")]
    assert "event 4 is missing (between 3 and 5)" in report.problems[0].message


def test_deleted_run_and_first_event(engine):
    append(engine, 6)
    sql(engine, "DELETE FROM audit_event WHERE seq IN (1, 3, 4)")
    report = check(engine)
    assert kinds(report) == [(2, "deleted"), (5, "deleted")]
    assert "event 1 is missing (before 2)" in report.problems[0].message
    assert "events 3-4 are missing (between 2 and 5)" in report.problems[1].message


def test_deleted_and_renumbered(engine):
    append(engine, 6)
    sql(engine, "DELETE FROM audit_event WHERE seq = 4")
    sql(engine, "UPDATE audit_event SET seq = 4 WHERE seq = 5")
    sql(engine, "UPDATE audit_event SET seq = 5 WHERE seq = 6")
    report = check(engine)
    assert kinds(report) == [(4, "deleted")]


def test_truncated_tail_needs_the_recorded_head(engine):
    heads = append(engine, 6)
    assert check(engine, expected_head=heads[-1]).ok
    sql(engine, "DELETE FROM audit_event WHERE seq = 6")
    # A chain cut at its end is still a valid chain...
    assert check(engine).ok
    # ...which only the head recorded at signing can contradict.
    report = check(engine, expected_head=heads[-1])
    assert kinds(report) == [(6, "truncated")]
    assert "ends at event 5" in report.problems[0].message
    # A later head still vouches for an earlier one: events may follow the attested head.
    assert check(engine, expected_head=heads[2]).ok


def test_truncated_and_rewritten_tail(engine):
    heads = append(engine, 4)
    sql(engine, "DELETE FROM audit_event WHERE seq >= 3")
    append(engine, 2)
    report = check(engine, expected_head=heads[-1])
    assert report.head[0] == 4 and report.head != heads[-1]
    assert kinds(report) == [(4, "truncated")]


def test_swapped_rows_are_reordered_not_edited(engine):
    append(engine, 6)
    sql(engine, "UPDATE audit_event SET seq = -1 WHERE seq = 2")
    sql(engine, "UPDATE audit_event SET seq = 2 WHERE seq = 3")
    sql(engine, "UPDATE audit_event SET seq = 3 WHERE seq = -1")
    report = check(engine)
    assert not report.ok
    assert {kind for _, kind in kinds(report)} == {"reordered"}
    assert 2 in {seq for seq, _ in kinds(report)}
    assert "event 2 is chained after event 3" in report.problems[0].message


# --- concurrency ---------------------------------------------------------------------------------


def test_concurrent_appenders_never_fork_the_chain(engine):
    n_threads, per_thread = 4, 20
    start = threading.Barrier(n_threads)
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            start.wait()
            for j in range(per_thread):
                with session_scope(engine) as s:
                    audit.record(s, kind="test.concurrent", actor=f"t{i}", payload={"j": j})
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n_threads)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == []
    report = check(engine)
    assert report.ok, str(report)
    total = n_threads * per_thread
    assert [r.seq for r in rows(engine)] == list(range(1, total + 1))
    assert len({r.prev_hash for r in rows(engine)}) == total
