"""The review screen on a vignette with a triage and a reassess urgency band (AppTest): each is
its own band in the rater's queue, named by its own label, the reassess one shown with the
results the agent holds by then and the triage one without, and an AMEND of the reassess band
is stored under its own name."""

import pytest

from fma_bands.core.actions import sub_action
from fma_bands.core.labels import RESULT_MARK
from fma_bands.core.vignettes import load_library
from fma_bands.store.db import make_engine, session_scope, upgrade
from fma_bands.study.enrolment import create_user
from fma_bands.study.library import sync_vignettes
from fma_bands.study.reviews import my_reviews
from tests import page_helpers
from tests.conftest import ROOT
from tests.evidence.test_reassess_urgency import REASSESS, VID, write_vignette
from tests.page_helpers import click, key, open_review, shown, title

fresh_caches = page_helpers.fresh_caches
TRIAGE_BAND, REASSESS_BAND = (VID, "urgency_score"), (VID, REASSESS)


@pytest.fixture
def rater(monkeypatch, tmp_path):
    """The app on the one vignette, with a coordinator and one rater (urgency has no scope
    rule, so every band is the rater's)."""
    folder = write_vignette(tmp_path / "vignettes").parent
    library = load_library([folder])
    url = f"sqlite:///{tmp_path / 'study.db'}"
    monkeypatch.setenv("FMA_BANDS_DATABASE_URL", url)
    monkeypatch.setenv("FMA_BANDS_ATTESTATIONS", str(tmp_path / "attestations"))
    monkeypatch.setenv("FMA_BANDS_VIGNETTES", str(folder))
    monkeypatch.chdir(ROOT)
    engine = make_engine(url)
    upgrade(engine)
    with session_scope(engine) as s:
        sync_vignettes(s, library, actor=None)
        create_user(
            s,
            actor=None,
            pseudonym="coordinator",
            passphrase="coordinator pass",
            role="coordinator",
        )
        made = create_user(
            s,
            actor="coordinator",
            pseudonym="rater-01",
            passphrase="rater-01 pass",
            root_passphrase="coordinator pass",
            role="rater",
            specialty="emergency medicine",
            jurisdiction="Australia",
            years_post_registration=4,
        )
    yield made, library, engine
    engine.dispose()


def test_the_reassess_urgency_band_is_reviewed_with_the_results_and_stored_apart(rater):
    user, library, engine = rater
    vignette = library.vignettes[VID]

    at = open_review(user, TRIAGE_BAND)
    assert title(at) == sub_action("urgency_score").label
    screen = shown(at)
    assert RESULT_MARK not in screen
    assert all(result not in screen for result in vignette.tool_results.values())

    at = open_review(user, REASSESS_BAND)
    assert title(at) == sub_action(REASSESS).label
    screen = shown(at)
    assert all(result in screen for result in vignette.tool_results.values())
    assert RESULT_MARK in screen
    at.radio(key=key(REASSESS_BAND, "verdict")).set_value("AMEND").run()
    at.number_input(key=key(REASSESS_BAND, "band", "lo")).set_value(80).run()
    at.number_input(key=key(REASSESS_BAND, "band", "hi")).set_value(100).run()
    for q, choice in (("q1", "yes"), ("q2", "yes"), ("q3", "no"), ("q4", "no"), ("q6", "yes")):
        at.radio(key=key(REASSESS_BAND, q, "choice")).set_value(choice).run()
    at.text_area(key=key(REASSESS_BAND, "reason")).input("Troponin up: 80 or more.").run()
    click(at, "Submit and next")

    with session_scope(engine) as s:
        [reassess] = my_reviews(s, library, user, *REASSESS_BAND)
        assert my_reviews(s, library, user, *TRIAGE_BAND) == []
    assert (reassess.status, reassess.verdict) == ("submitted", "AMEND")
    assert reassess.band == {"min": 80, "max": 100}
    # What the rater judged at reassess: the core and the results.
    assert reassess.context_digest == vignette.context_digest("reassess")
