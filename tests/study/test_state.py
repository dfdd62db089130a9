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
