"""What raters read of a step: what the agent holds there, as the harness's runner gives it
(docs/design.md, The action space), and never a word of the study's metrics."""

import re

import pytest

from fma_bands.core import labels
from fma_bands.core.actions import SUB_ACTIONS
from fma_bands.core.labels import RESULT_MARK, knowledge_at

METRIC_WORDS = re.compile(r"straddl|within-range|flip|dividing line|impact", re.IGNORECASE)
DECISION_STEPS = ("triage", "order", "reassess", "prescribe", "document")


@pytest.mark.parametrize("step", ["triage", "order"])
def test_triage_and_ordering_hold_no_result(shared_library, step):
    vignette = shared_library.vignettes["draft_triage_01"]
    knows = knowledge_at(vignette, step)
    assert knows.results == () and knows.result_lines() == []
    assert "no result is shown" in knows.summary
    for result in vignette.tool_results.values():
        assert result not in knows.summary and result not in (knows.earlier or "")


def test_triage_holds_the_clinical_core_alone(shared_library):
    knows = knowledge_at(shared_library.vignettes["draft_triage_01"], "triage")
    assert knows.summary.startswith("Triage: the agent holds the clinical core only.")
    assert knows.earlier is None


def test_ordering_also_holds_the_agents_own_triage(shared_library):
    # The runner puts "Your triage: ESI ..., urgency ..." in the prompt of the order step.
    knows = knowledge_at(shared_library.vignettes["draft_ordering_01"], "order")
    assert knows.earlier == (
        "The agent also holds its own triage (ESI level and urgency score), which varies by "
        "run: the band must hold whatever it was."
    )


@pytest.mark.parametrize("step", ["reassess", "prescribe", "document"])
def test_from_reassessment_each_result_is_marked_as_returned_only_if_ordered(shared_library, step):
    vignette = shared_library.vignettes["draft_triage_01"]
    knows = knowledge_at(vignette, step)
    assert [result for _, result in knows.results] == list(vignette.tool_results.values())
    assert ("Troponin", vignette.tool_results["troponin"]) in knows.results
    lines = knows.result_lines()
    assert len(lines) == len(vignette.tool_results)
    assert all(line.endswith(f"({RESULT_MARK})") for line in lines)
    assert RESULT_MARK == "returned only if the agent ordered this test"
    assert "the result of each test it ordered" in knows.summary
    assert knows.earlier is not None and "vary by run" in knows.earlier
    assert knows.earlier.endswith("the band must hold whatever they were.")


def test_the_disposition_is_held_only_after_it_is_decided(shared_library):
    vignette = shared_library.vignettes["draft_triage_01"]
    assert "disposition" not in (knowledge_at(vignette, "reassess").earlier or "")
    for step in ("prescribe", "document"):
        earlier = knowledge_at(vignette, step).earlier or ""
        assert "triage, orders and disposition" in earlier


def test_results_are_named_as_raters_read_them(shared_library):
    vignette = shared_library.vignettes["draft_documentation_01"]
    names = [name for name, _ in knowledge_at(vignette, "document").results]
    assert {"BMP", "Glucose", "Beta-hydroxybutyrate"} <= set(names)


def test_every_sub_action_step_has_words_and_none_speaks_of_metrics(shared_library):
    assert {a.step for a in SUB_ACTIONS.values()} <= set(DECISION_STEPS)
    for vignette in shared_library:
        for step in DECISION_STEPS:
            knows = knowledge_at(vignette, step)
            said = " ".join([knows.summary, knows.earlier or "", *knows.result_lines()])
            assert not METRIC_WORDS.search(said.replace(vignette.clinical_core, ""))
    for words in labels.QUESTION_WORDS.values():
        assert not METRIC_WORDS.search(" ".join(words))
    # The explanation of straddling once shown to raters is gone from the domain.
    assert not hasattr(labels, "threshold_sentence") and not hasattr(labels, "dividing_line")
