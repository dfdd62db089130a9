"""Due dates per round on a real store, and the reminder line each rater's queue shows."""

from datetime import UTC, date, datetime, timedelta

import pytest

from fma_bands.core.errors import AccessDenied, FmaBandsError
from fma_bands.store.db import session_scope
from fma_bands.study import audit
from fma_bands.study.due_dates import (
    Due,
    clear_due,
    due_date,
    long_date,
    overdue,
    parse_due,
    reminder,
    set_due,
    today,
    when_due,
)
from fma_bands.study.rounds import close_round
from tests.conftest import enrol_study

SET_AT = datetime(2026, 12, 1, tzinfo=UTC)
DUE = Due(1, date(2026, 12, 10), "coordinator", SET_AT)


@pytest.fixture
def study(engine, shared_library):
    with session_scope(engine) as s:
        coordinator, a, _ = enrol_study(s, shared_library)
    return engine, coordinator, a


def test_the_coordinator_sets_moves_and_clears_the_rounds_due_date(study):
    engine, coordinator, _ = study
    first, later = today() + timedelta(days=8), today() + timedelta(days=15)
    with session_scope(engine) as s:
        assert due_date(s) is None
        set_due(s, actor=coordinator, due_on=first)
    with session_scope(engine) as s:
        found = due_date(s)
        assert found is not None and (found.round, found.due_on) == (1, first)
        assert found.set_by == "coordinator"
        set_due(s, actor=coordinator, due_on=later)
        set_due(s, actor=coordinator, due_on=later)  # the day it is due already: no event
    with session_scope(engine) as s:
        assert due_date(s, 1).due_on == later  # type: ignore[union-attr]
        assert due_date(s, 2) is None
        assert clear_due(s, actor=coordinator) is True
    with session_scope(engine) as s:
        assert due_date(s) is None
        assert clear_due(s, actor=coordinator) is False
        found_events = audit.events(s, kinds=["due_date_set", "due_date_cleared"])
    assert [(e["kind"], e["payload"]) for e in reversed(found_events)] == [
        ("due_date_set", {"round": 1, "from": None, "to": first.isoformat()}),
        ("due_date_set", {"round": 1, "from": first.isoformat(), "to": later.isoformat()}),
        ("due_date_cleared", {"round": 1, "from": later.isoformat()}),
    ]


def test_a_day_already_past_is_refused_by_name(study):
    engine, coordinator, _ = study
    with session_scope(engine) as s, pytest.raises(FmaBandsError) as refused:
        set_due(s, actor=coordinator, due_on=today() - timedelta(days=1))
    assert refused.value.fields == {
        "due date": "choose today or a later day: a due date already past helps nobody"
    }
    with session_scope(engine) as s:
        assert due_date(s) is None
        set_due(s, actor=coordinator, due_on=today())  # today itself is allowed


def test_only_the_coordinator_sets_a_due_date_and_only_in_an_open_round(study):
    engine, coordinator, a = study
    with session_scope(engine) as s, pytest.raises(AccessDenied, match="only"):
        set_due(s, actor=a, due_on=today())
    with session_scope(engine) as s, pytest.raises(AccessDenied, match="only"):
        clear_due(s, actor=a)
    with session_scope(engine) as s:
        close_round(s, actor=coordinator)
    with session_scope(engine) as s, pytest.raises(AccessDenied, match="closed"):
        set_due(s, actor=coordinator, due_on=today())


@pytest.mark.parametrize(
    ("now", "left", "line"),
    [
        (
            date(2026, 12, 2),
            12,
            "Round 1 is due on 10 December 2026 (in 8 days): 12 of your bands are left.",
        ),
        (
            date(2026, 12, 9),
            1,
            "Round 1 is due on 10 December 2026 (in 1 day): 1 of your bands is left.",
        ),
        (
            date(2026, 12, 10),
            3,
            "Round 1 is due today, 10 December 2026: 3 of your bands are left.",
        ),
        (
            date(2026, 12, 12),
            3,
            "Round 1 was due on 10 December 2026 (overdue by 2 days): 3 of your bands are left.",
        ),
        (
            date(2026, 12, 11),
            0,
            "Round 1 was due on 10 December 2026 (overdue by 1 day): all your bands are submitted.",
        ),
    ],
)
def test_the_reminder_says_when_how_far_off_and_how_many_bands_are_left(now, left, line):
    assert reminder(DUE, left, now) == line


def test_overdue_counts_from_the_day_after():
    assert not overdue(DUE, date(2026, 12, 10))
    assert overdue(DUE, date(2026, 12, 11))
    assert when_due(DUE, date(2026, 12, 10)) == "Round 1 is due today, 10 December 2026"
    assert long_date(date(2027, 1, 3)) == "3 January 2027"


@pytest.mark.parametrize("text", ["10/12/2026", "tomorrow", "", "2026-13-01"])
def test_a_date_not_written_as_year_month_day_is_refused_by_name(text):
    with pytest.raises(FmaBandsError) as refused:
        parse_due(text)
    assert refused.value.field == "due date"
    assert "year-month-day" in refused.value.message


def test_a_date_written_as_year_month_day_is_read():
    assert parse_due(" 2026-12-10 ") == date(2026, 12, 10)
