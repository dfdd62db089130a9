"""`fma-bands queries list [--json]` and `fma-bands due set | show | clear`, in-process on the
demo study's store (tests/cli/conftest.py): coordinator only, bands in words, bad dates
refused by name."""

import json
from datetime import timedelta

import pytest

from fma_bands.cli.base import FAILED_EXIT, REFUSED_EXIT
from fma_bands.core.actions import sub_action
from fma_bands.core.labels import case_label, case_numbers
from fma_bands.core.vignettes import load_library
from fma_bands.store.db import make_engine, session_scope
from fma_bands.study import queries
from fma_bands.study.case_keys import case_key
from fma_bands.study.due_dates import long_date, today
from fma_bands.study.users import require_user
from tests.cli.json_schema import check_outputs
from tests.conftest import DEMO_VIGNETTES


@pytest.fixture
def store(tmp_path):
    """The store the `fma` fixture runs on (its copy in this test's folder)."""
    engine = make_engine(f"sqlite:///{tmp_path / 'x.db'}")
    yield engine
    engine.dispose()


def test_queries_list_shows_the_open_threads_with_each_band_in_words(fma, store):
    library = load_library([DEMO_VIGNETTES])
    first, second = [(v.id, p.sub_action) for v in library for p in v.proposals][:2]
    with session_scope(store) as s:
        coordinator = require_user(s, "coordinator")
        rater = require_user(s, "geri-01")
        queries.write(s, library, coordinator, "geri-01", first, "Why this band?")
        queries.ask(s, library, rater, first, "Because of the second line.")
        queries.write(s, library, coordinator, "emerg-01", second, "And this one?")
        queries.write(s, library, coordinator, "geri-01", second, "Settled already.")
        queries.close(s, coordinator, "geri-01", second)
        numbers = case_numbers(library, case_key(s))
    words = f"{case_label(numbers, first[0])} · {sub_action(first[1]).label}"

    result = fma("queries", "list")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "2 open queries, 1 awaiting your reply"
    assert lines[1].startswith(
        f"  {case_label(numbers, first[0])} ({first[0]}) · {sub_action(first[1]).label} · "
        "geri-01 · awaits your reply · 2 messages, the last "
    )
    assert "emerg-01 · awaits emerg-01's reply · 1 message," in lines[2]
    assert "Why this band?" not in result.stdout  # the list names threads, not their words

    listed = fma("queries", "list", "--json").stdout
    check_outputs("queries list", [listed])
    found = json.loads(listed)
    assert [(t["vignette_id"], t["sub_action"], t["rater"], t["awaits"]) for t in found] == [
        (*first, "geri-01", "coordinator"),
        (*second, "emerg-01", "rater"),
    ]
    assert found[0]["band"] == words and found[0]["messages"] == 2


def test_queries_list_is_the_coordinators_alone(fma):
    result = fma("queries", "list", who="geri-01")
    assert result.exit_code == REFUSED_EXIT
    assert "only the study coordinator can query any rater" in result.stderr


def test_due_set_show_and_clear(fma):
    day = today() + timedelta(days=8)
    unset = fma("due", "show", "--json").stdout
    assert json.loads(unset) == {
        "round": 1,
        "phase": "open",
        "due_on": None,
        "days_left": None,
        "set_by": None,
    }
    assert fma("due", "show").stdout == "Round 1 has no due date.\n"
    result = fma("due", "set", day.isoformat())
    assert result.exit_code == 0, result.output
    assert result.stdout == f"Round 1 is due on {long_date(day)}.\n"
    assert fma("due", "show").stdout == f"Round 1 is due on {long_date(day)} (in 8 days).\n"
    due = fma("due", "show", "--json").stdout
    check_outputs("due show", [unset, due])
    assert json.loads(due) == {
        "round": 1,
        "phase": "open",
        "due_on": day.isoformat(),
        "days_left": 8,
        "set_by": "coordinator",
    }
    assert fma("due", "clear").stdout == "Round 1 has no due date now.\n"
    assert fma("due", "clear").stdout == "Round 1 had no due date: nothing changed.\n"
    # A closed round is due no more, as Study admin says.
    assert fma("due", "set", day.isoformat()).exit_code == 0
    assert fma("round", "close").exit_code == 0
    assert fma("due", "show").stdout == (
        f"Round 1 is closed (it was due on {long_date(day)}): a due date is set for an open "
        "round only.\n"
    )
    assert json.loads(fma("due", "show", "--json").stdout)["phase"] == "closed"


@pytest.mark.parametrize(
    ("day", "message"),
    [
        ("10/12/2026", "write the due date as year-month-day, such as 2026-12-10"),
        ((today() - timedelta(days=1)).isoformat(), "choose today or a later day"),
    ],
)
def test_due_set_refuses_a_bad_date_by_name(fma, day, message):
    result = fma("due", "set", day)
    assert result.exit_code == FAILED_EXIT
    assert result.stderr.startswith("fma-bands: error: due date: ")
    assert message in result.stderr and "Traceback" not in result.output


def test_due_set_is_the_coordinators_alone(fma):
    result = fma("due", "set", today().isoformat(), who="geri-01")
    assert result.exit_code == REFUSED_EXIT
    assert "only the study coordinator can set the round's due date" in result.stderr
