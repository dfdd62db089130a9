"""The Import a hand-back page under streamlit's AppTest: a file with a line for a band not
assigned to its rater is refused whole, the page naming that line and the command that assigns
the band, and nothing is stored; once the coordinator assigns it, the same file imports.

AppTest cannot choose a file in an uploader, so the uploader hands the page the real hand-back's
bytes, as streamlit's own uploader would after the coordinator chose it."""

from types import SimpleNamespace

import pytest
import streamlit
from sqlmodel import select

from fma_bands.store.models import Review
from fma_bands.study.assignment import change
from tests import page_helpers
from tests.conftest import HANDBACK
from tests.page_helpers import TRIAGE, as_read, by_label, click, open_app, title

fresh_caches, app_env, template, study = (
    page_helpers.fresh_caches,
    page_helpers.app_env,
    page_helpers.template,
    page_helpers.study,
)


@pytest.fixture
def uploaded(monkeypatch):
    """The uploader returns the real hand-back, as if the coordinator had chosen it."""
    upload = SimpleNamespace(name=HANDBACK.name, getvalue=HANDBACK.read_bytes)
    monkeypatch.setattr(streamlit, "file_uploader", lambda *args, **kwargs: upload)


def import_as(study, rater: str):
    at = open_app(study.coordinator, "app_pages/handbacks.py")
    assert title(at) == "Import a hand-back"
    by_label(at.selectbox, "Rater").set_value(rater)
    return click(at, "Import")


def test_an_unassigned_band_is_refused_with_its_line_and_how_to_assign_it(study, uploaded):
    with study.store() as s:  # rater-02 (geriatrics) is taken off the triage band
        change(
            s,
            study.library,
            actor=study.coordinator,
            rater="rater-02",
            bands=[TRIAGE],
            assigned=False,
        )
    at = import_as(study, "rater-02")
    [error] = [as_read(e.value) for e in at.error]
    assert error == (
        f"{HANDBACK.name} was not imported; nothing was stored. 1 problem(s); nothing was imported"
    )
    [listed] = [c.value for c in at.code]
    assert listed.splitlines() == [
        f"{HANDBACK.name}:5: draft_triage_01 esi_acuity is not assigned to rater-02; the "
        "coordinator assigns it first (fma-bands assign --rater rater-02 --band "
        "draft_triage_01:esi_acuity, or Study admin), then imports the file again"
    ]
    assert not at.success
    with study.store() as s:
        assert s.exec(select(Review)).all() == []

    with study.store() as s:
        change(s, study.library, actor=study.coordinator, rater="rater-02", bands=[TRIAGE])
    at = import_as(study, "rater-02")
    assert not at.error
    assert [s.value for s in at.success] == [
        "Imported 4 submitted reviews for rater-02; they wait for rater-02 to confirm them when "
        "signing."
    ]


def test_a_refusal_is_said_as_a_sentence_after_nothing_was_stored(study, uploaded):
    """The closed phase's refusal is a sentence of its own after "nothing was stored."."""
    from fma_bands.study.rounds import close_round

    with study.store() as s:
        close_round(s, actor=study.coordinator)
    [error] = [as_read(e.value) for e in import_as(study, "rater-02").error]
    prefix = f"{HANDBACK.name} was not imported; nothing was stored. "
    assert error.startswith(prefix) and error[len(prefix)].isupper(), error
