"""A hand-back counts only for the bands assigned to its rater, as a review in the browser does:
in round 1 a line for any other band refuses the whole file, with its line number and the
command that assigns the band, and nothing of the file is stored; from round 2 the raters chosen
when the round opened decide, as for a review (SQLite file and PostgreSQL)."""

import pytest
from sqlmodel import select

from fma_bands.core.errors import FmaBandsError
from fma_bands.store.db import session_scope
from fma_bands.store.models import Review
from fma_bands.study import audit
from fma_bands.study.assignment import change
from fma_bands.study.handback import import_handback, parse_handback
from tests.conftest import HANDBACK, enrol_study
from tests.study.test_rounds import ESI, VID, closed, library, second  # noqa: F401

# The real hand-back's lines (after its four comment lines) and their bands.
LINES = {
    5: "draft_triage_01:esi_acuity",
    6: "draft_ordering_01:esi_acuity",
    7: "draft_medication_01:analgesia_tier",
    8: "draft_documentation_01:followup_days",
}


@pytest.fixture
def unassigned(engine, shared_library):
    """A coordinator and two raters, each assigned only the bands their specialty covers."""
    with session_scope(engine) as s:
        coordinator, geriatrician, _ = enrol_study(s, shared_library, assign_everything=False)
    return engine, shared_library, coordinator, geriatrician


def imported(engine, lib, coordinator, rater="adjudicator-01"):
    with session_scope(engine) as s:
        return import_handback(
            s,
            lib,
            actor=coordinator,
            rater_pseudonym=rater,
            text=HANDBACK.read_text(),
            source=HANDBACK.name,
        )


def stored(engine) -> tuple[list[Review], list[dict]]:
    with session_scope(engine) as s:
        return list(s.exec(select(Review)).all()), audit.events(s, kinds=["handback_imported"])


def test_lines_for_bands_outside_the_assignment_refuse_the_whole_file(unassigned):
    engine, lib, coordinator, _ = unassigned
    with pytest.raises(FmaBandsError, match="nothing was imported") as caught:
        imported(engine, lib, coordinator)
    problems = caught.value.problems
    # A geriatrician's specialty covers follow-up, not the three emergency bands.
    assert [p.line for p in problems] == [5, 6, 7]
    for problem in problems:
        band = LINES[problem.line]
        assert problem.file == HANDBACK.name
        assert f"{band.replace(':', ' ')} is not assigned to adjudicator-01" in problem.message
        assert "the coordinator assigns it first" in problem.message
        assert f"fma-bands assign --rater adjudicator-01 --band {band}" in problem.message
    assert stored(engine) == ([], [])  # not the follow-up line either


def test_once_the_coordinator_assigns_the_bands_the_file_imports(unassigned):
    engine, lib, coordinator, _ = unassigned
    with session_scope(engine) as s:
        bands = [tuple(LINES[n].split(":")) for n in (5, 6, 7)]
        change(s, lib, actor=coordinator, rater="adjudicator-01", bands=bands)
    created = imported(engine, lib, coordinator)
    assert sorted(f"{r.vignette_id}:{r.sub_action}" for r in created) == sorted(LINES.values())
    reviews, events = stored(engine)
    assert len(reviews) == 4 and len(events) == 1


def test_a_band_taken_off_the_rater_is_refused_again(unassigned):
    engine, lib, coordinator, _ = unassigned
    with session_scope(engine) as s:
        everything = [tuple(band.split(":")) for band in LINES.values()]
        change(s, lib, actor=coordinator, rater="adjudicator-01", bands=everything)
        # The latest change decides: follow-up, in the geriatrician's scope, taken off.
        change(
            s,
            lib,
            actor=coordinator,
            rater="adjudicator-01",
            bands=[("draft_documentation_01", "followup_days")],
            assigned=False,
        )
    with pytest.raises(FmaBandsError) as caught:
        imported(engine, lib, coordinator)
    assert [p.line for p in caught.value.problems] == [8]
    assert stored(engine) == ([], [])


def test_round_two_takes_the_raters_it_opened_with_whatever_the_assignment_says(second):  # noqa: F811
    engine, library, _, coordinator, _ = second  # noqa: F811
    with session_scope(engine) as s:  # rater-b2 is taken off the band after round 2 opened
        change(s, library, actor=coordinator, rater="rater-b2", bands=[ESI], assigned=False)
    with session_scope(engine) as s:
        [review] = import_handback(
            s,
            library,
            actor=coordinator,
            rater_pseudonym="rater-b2",
            text=f"{VID} | esi_acuity | AMEND {{2, 3}} | on paper, after the panel\n",
            source="paper.txt",
        )
    assert (review.round, review.origin) == (2, "handback")


def test_a_handback_breaks_lines_where_an_editor_does_and_nowhere_else(shared_library):
    """Lines end at \\n, \\r\\n or \\r; a reason may hold U+2028 or U+2029 as a review's may, and
    a form feed or a vertical tab is named on its own line, never taken for a line break."""
    first = "draft_triage_01 | esi_acuity | ACCEPT | first\u2028still the first\u2029reason"
    other = "draft_ordering_01 | esi_acuity | DECLINE | second"
    for text in (f"{first}\n{other}\n", f"{first}\r\n{other}", f"{first}\r{other}\r"):
        lines = parse_handback(text, shared_library)
        assert [(line.number, line.reason) for line in lines] == [
            (1, "first\u2028still the first\u2029reason"),
            (2, "second"),
        ]
    for control in ("\x0c", "\x0b", "\x1c", "\x85"):
        with pytest.raises(FmaBandsError) as refused:
            parse_handback(f"{other}\n{first}{control}more\n", shared_library)
        [problem] = refused.value.problems
        assert problem.line == 2 and f"U+{ord(control):04X}" in problem.message, problem


def test_a_handbacks_verdict_is_the_word_in_any_case_and_nothing_that_upper_case_makes_it(
    shared_library,
):
    line = "draft_ordering_01 | esi_acuity | {} | a reason"
    assert [x.verdict for x in parse_handback(line.format("decline"), shared_library)] == [
        "DECLINE"
    ]
    for lookalike in ("decl\u0131ne", "DECL\u0130NE", "\uff24ECLINE"):
        with pytest.raises(FmaBandsError) as refused:
            parse_handback(line.format(lookalike), shared_library)
        [problem] = refused.value.problems
        assert problem.line == 1 and "is not ACCEPT" in problem.message, problem
