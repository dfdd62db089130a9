"""Assignment and impact under streamlit's AppTest, on the FairMedAgent vignettes: the
coordinator's Study admin page flags the bands that cannot be adjudicated as assigned and
changes who reviews what; a rater's queue holds only their bands; Raters' progress shows each
band against the quorum; the registry page's impact section counts the harness's runs, and no
rater ever sees it."""

import pytest
from sqlalchemy import text

from app_pages.common import escaped
from fma_bands.core.labels import case_numbers
from fma_bands.study.case_keys import case_key
from fma_bands.study.impact import read_runs, reviewed_impact
from tests import page_helpers
from tests.page_helpers import (
    DOC,
    GOOD_ANSWERS,
    MED,
    ORDER,
    TRIAGE,
    band_params,
    go,
    open_app,
    pages_of,
    run,
    shown,
)
from tests.study.test_impact import TRAJECTORIES

fresh_caches, app_env, template, study = (
    page_helpers.fresh_caches,
    page_helpers.app_env,
    page_helpers.template,
    page_helpers.study,
)


@pytest.fixture
def scoped(study):
    """The study as the coordinator first finds it: no change made, every band by scope
    (rater-01 emergency medicine, rater-02 geriatrics)."""
    with study.store() as s:
        s.execute(text("DELETE FROM assignment"))
    return study


def queue_labels(at) -> list[str]:
    return [link.label for link in at.get("page_link")]


def frames(at) -> list:
    return [d.value for d in at.dataframe]


def test_the_admin_page_flags_bands_and_shows_every_bands_raters(scoped, tmp_path, monkeypatch):
    monkeypatch.setenv("FMA_BANDS_ATTESTATIONS", str(tmp_path / "att"))
    scoped.set_policy(tmp_path / "att", quorum=2)
    at = open_app(scoped.coordinator, "app_pages/admin.py")
    assert any(h.value == "Who reviews what" for h in at.subheader)
    [warning] = [w.value for w in at.warning if "cannot be adjudicated" in w.value]
    assert warning.startswith("4 of 4 bands cannot be adjudicated as assigned")
    flagged, every = frames(at)[:2]
    # By case number, as every page lists cases.
    assert list(flagged["case"]) == sorted(flagged["case"], key=lambda c: int(c.split()[1]))
    assert list(every["case"]) == sorted(every["case"], key=lambda c: int(c.split()[1]))
    assert set(flagged["vignette"]) == {b[0] for b in (DOC, MED, ORDER, TRIAGE)}
    followup = flagged[flagged["vignette"] == DOC[0]].iloc[0]
    assert followup["assigned raters"] == "rater-02"  # the geriatrician: follow-up is hers
    assert followup["why"] == "1 activated rater(s) assigned, too few for the quorum of 2"
    triage = every[every["vignette"] == TRIAGE[0]].iloc[0]
    assert (triage["assigned raters"], triage["in scope"]) == ("rater-01", "1 rater")
    # Each column holds one type (the browser's table is Arrow; a mixed column fails there and
    # fills the server log with tracebacks before Streamlit converts it).
    for frame in frames(at):
        for name in frame.columns:
            kinds = {type(v) for v in frame[name] if v is not None}
            assert len(kinds) <= 1, (name, kinds)


def test_the_coordinator_adds_a_rater_and_her_queue_follows(scoped):
    rater_queue = open_app(scoped.other, "app_pages/queue.py")  # rater-02, geriatrics
    assert len(queue_labels(rater_queue)) == 1  # the follow-up band only
    at = open_app(scoped.coordinator, "app_pages/admin.py")
    at.selectbox(key="assign:rater").set_value("rater-02")
    at.multiselect(key="assign:subs").set_value(["esi_acuity"])
    [add] = [b for b in at.button if b.label == "Add the rater"]
    add.click()
    run(at)
    # The heading and what changed in one box, the details escaped (they name raters).
    assert [s.value for s in at.success if s.value.startswith("Assignment")] == [
        "Assignment changed:  \n" + escaped("rater-02 added to every ESI acuity level band")
    ]
    # The form starts empty again: the next rater chosen is never given these bands unseen.
    assert at.selectbox(key="assign:rater").value is None
    assert at.multiselect(key="assign:subs").value == []
    [every] = [f for f in frames(at) if "assigned raters" in f.columns]  # nothing is flagged
    # What is said is about the assignment, and where the reviews against the quorum are.
    [fine] = [s.value for s in at.success if s.value.startswith("Every band has enough")]
    assert fine.endswith("activated raters assigned for a quorum (no policy saved yet), in scope.")
    assert any(c.value.startswith("This is about who is assigned.") for c in at.caption)
    triage = every[every["vignette"] == TRIAGE[0]].iloc[0]
    assert triage["assigned raters"] == "rater-01, rater-02"
    assert len(queue_labels(open_app(scoped.other, "app_pages/queue.py"))) == 3
    # The review screen opens an ESI band now; analgesia still leads back to her queue.
    review = open_app(scoped.other, "app_pages/review.py", **band_params(TRIAGE))
    assert not any("names no band in your queue" in w.value for w in review.warning)
    review = open_app(scoped.other, "app_pages/review.py", **band_params(MED))
    assert any("names no band in your queue" in w.value for w in review.warning)


def test_a_mistake_changes_nothing_and_says_why(scoped):
    at = open_app(scoped.coordinator, "app_pages/admin.py")
    [add] = [b for b in at.button if b.label == "Add the rater"]
    add.click()
    run(at)
    assert [e.value for e in at.error] == ["The assignment was not changed:  \nchoose a rater"]
    at.selectbox(key="assign:rater").set_value("rater-01")
    [remove] = [b for b in at.button if b.label == "Remove the rater"]
    remove.click()
    run(at)
    [refused] = [e.value for e in at.error]
    assert refused.endswith(escaped("say which bands: a band, a vignette or a sub-action"))
    with scoped.store() as s:
        assert s.execute(text("SELECT count(*) FROM assignment")).scalar() == 0


def test_a_raters_queue_holds_only_their_bands(scoped):
    at = open_app(scoped.rater, "app_pages/queue.py")  # rater-01, emergency medicine
    assert len(queue_labels(at)) == 3  # two ESI bands and analgesia; not follow-up
    review = open_app(scoped.rater, "app_pages/review.py", **band_params(DOC))
    assert any("names no band in your queue" in w.value for w in review.warning)
    assert "draft_documentation_01" not in shown(review)


def test_progress_shows_each_band_against_the_quorum(study, tmp_path, monkeypatch):
    monkeypatch.setenv("FMA_BANDS_ATTESTATIONS", str(tmp_path / "att"))
    study.set_policy(tmp_path / "att", quorum=2)
    study.save(study.rater, DOC, submit=True, verdict="ACCEPT", answers=GOOD_ANSWERS)
    study.save(study.other, DOC, submit=True, verdict="DECLINE", reason="cannot say")
    study.save(study.rater, TRIAGE, submit=True, verdict="ACCEPT", answers=GOOD_ANSWERS)
    study.save(study.other, TRIAGE, submit=True, verdict="ACCEPT", answers=GOOD_ANSWERS)
    at = open_app(study.coordinator, "app_pages/progress.py")
    assert any(h.value == "Bands against the quorum" for h in at.subheader)
    bands = frames(at)[1]
    assert TRIAGE[0] not in list(bands["vignette"])  # reached: left out while the toggle is on
    doc = bands[bands["vignette"] == DOC[0]].iloc[0]
    assert (doc["assigned"], doc["submitted"], doc["declined"]) == (2, 2, 1)
    with study.store() as s:  # the case as raters read it, beside its id
        assert doc["case"] == case_numbers(study.library, case_key(s))[DOC[0]]
    assert doc["status"] == "cannot reach quorum: needs 1 more, 0 to come"
    at.toggle(key="quorum:short").set_value(False).run()
    every = frames(at)[1]
    assert every[every["vignette"] == TRIAGE[0]].iloc[0]["status"] == "quorum reached"
    assert any(c.value.startswith("1 of 4 bands have current reviews") for c in at.caption)


def test_the_registry_page_counts_the_harness_runs(study, monkeypatch):
    monkeypatch.setenv("FMA_BANDS_TRAJECTORIES", str(TRAJECTORIES[0].parent))
    at = open_app(study.coordinator, "app_pages/registry_page.py")
    assert any(h.value == "Which bands decide the harness's pairs" for h in at.subheader)
    [table] = [f for f in frames(at) if "pairs in band" in f.columns]
    with study.store() as s:
        expected = reviewed_impact(
            s, study.library, read_runs(TRAJECTORIES), viewer=study.coordinator
        )
    assert list(table["vignette"]) == [r.vignette_id for r in expected]
    assert list(table["pairs in band"]) == [str(r.pairs_in_band) for r in expected]
    assert list(table["pairs across the threshold"]) == [
        "not counted" if r.pairs_across_threshold is None else str(r.pairs_across_threshold)
        for r in expected
    ]
    assert any(c.value.startswith("48 complete runs in 3 file(s)") for c in at.caption)


def test_a_bad_trajectories_file_is_named_on_the_page(study, monkeypatch, tmp_path):
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "broken.json").write_text('{"trajectories": 3}')
    monkeypatch.setenv("FMA_BANDS_TRAJECTORIES", str(tmp_path / "runs"))
    at = open_app(study.coordinator, "app_pages/registry_page.py")
    assert [e.value for e in at.error] == [
        "A trajectories file cannot be read, so nothing is counted."
    ]
    [line] = [t.value for t in at.text if "broken.json" in t.value]
    assert "no list of trajectories" in line
    assert not at.exception


def test_raters_never_see_impact_or_assignment(study, monkeypatch):
    monkeypatch.setenv("FMA_BANDS_TRAJECTORIES", str(TRAJECTORIES[0].parent))
    at = open_app(study.rater)
    offered = pages_of(at)
    for page in ("app_pages/registry_page.py", "app_pages/admin.py", "app_pages/progress.py"):
        assert page not in offered
    for page in offered:
        go(at, page)
        everything = shown(at)
        for words in ("pairs in band", "decide the harness", "Who reviews what", "quorum"):
            assert words not in everything, (page, words)
