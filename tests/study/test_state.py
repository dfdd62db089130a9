"""The study's rules that need no store: who sees the proposed bands."""

from datetime import UTC, datetime

import pytest

from fma_bands.core.people import UserPublic
from fma_bands.study.state import StudyPublic, sees_proposals

COORDINATOR = UserPublic(id=1, pseudonym="coordinator", role="coordinator")
RATER = UserPublic(id=2, pseudonym="rater-01", role="rater", specialty="geriatrics")


def settings(mode: str, phase: str = "open", number: int = 1) -> StudyPublic:
    return StudyPublic(mode=mode, phase=phase, round=number, updated_at=datetime.now(UTC))


@pytest.mark.parametrize(("phase", "number"), [("open", 1), ("closed", 1), ("open", 2)])
def test_blind_mode_hides_the_proposals_from_raters_alone(phase, number):
    blind = settings("blind", phase, number)
    assert sees_proposals(blind, COORDINATOR)
    # In every round and phase: a closed round ends the blinding between raters, not this one.
    assert not sees_proposals(blind, RATER)


@pytest.mark.parametrize(("phase", "number"), [("open", 1), ("closed", 1), ("open", 2)])
def test_review_mode_shows_the_proposals_to_everyone(phase, number):
    review = settings("review", phase, number)
    assert sees_proposals(review, COORDINATOR)
    assert sees_proposals(review, RATER)


# Who may do what: the rules of queries and due dates ------------------------------------------


def test_queries_and_due_dates_go_through_the_one_rule_table(engine, shared_library):
    """Each rule a query or a due date adds to fma_bands.study.state.RULES is refused to the
    other role by authorize, whichever function asks (as tests/study/test_reviews.py checks
    for the rules before them)."""
    from fma_bands.core.errors import AccessDenied
    from fma_bands.store.db import session_scope
    from fma_bands.study.due_dates import clear_due, set_due, today
    from fma_bands.study.queries import ask, close, threads, write
    from fma_bands.study.state import RULES, authorize
    from tests.conftest import enrol_study

    with session_scope(engine) as s:
        coordinator, rater, _ = enrol_study(s, shared_library)
    band = ("draft_documentation_01", "followup_days")
    attempts = {
        "ask_coordinator": [lambda s, who: ask(s, shared_library, who, band, "A question.")],
        "answer_queries": [
            lambda s, who: write(s, shared_library, who, "adjudicator-02", band, "A question."),
            lambda s, who: close(s, who, "adjudicator-02", band),
        ],
        "set_due_date": [
            lambda s, who: set_due(s, actor=who, due_on=today()),
            lambda s, who: clear_due(s, actor=who),
        ],
    }
    for action, tries in attempts.items():
        rule = RULES[action]
        outsider = rater if "coordinator" in rule.roles else coordinator
        for attempt in tries:
            with session_scope(engine) as s, pytest.raises(AccessDenied, match="only"):
                attempt(s, outsider)
        with session_scope(engine) as s, pytest.raises(AccessDenied, match="only"):
            authorize(s, outsider, action)
    # A steward reads no query either way.
    steward = UserPublic(id=coordinator.id, pseudonym="steward-01", role="steward")
    with session_scope(engine) as s, pytest.raises(AccessDenied, match="only"):
        threads(s, steward)
