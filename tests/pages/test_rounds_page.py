"""Rounds under streamlit's AppTest: the Study admin page lists round 2's candidates with their
reasons in words (a band without consensus, a band with a disputed span), chooses them by group
(every candidate, by reason, by sub-action) and opens round 2 once confirmed; a round-2 rater's
review screen shows round 1 as Rater A, B (no pseudonym, no answer of round 2) and asks a reason;
the queue holds round 2's band only; the Agreement page keeps round 1's alpha and labels round 2
as consensus-building."""

from app_pages.common import escaped
from fma_bands.agreement.views import CONSENSUS_SCOPE_NOTE
from fma_bands.study.rounds import REASONS as WHY
from fma_bands.study.rounds import band_labels, close_round, open_round
from fma_bands.study.state import study as study_settings
from tests import page_helpers
from tests.page_helpers import (
    BANDS,
    GOOD_ANSWERS,
    MED,
    TRIAGE,
    answer_questions,
    click,
    key,
    open_app,
    open_review,
    run,
    shown,
)

fresh_caches, app_env, template, study = (
    page_helpers.fresh_caches,
    page_helpers.app_env,
    page_helpers.template,
    page_helpers.study,
)
REASONS = {"rater-01": "high-risk chest pain: ESI 1", "rater-02": "stable vitals: ESI 3"}


def round_one(study, amend: dict | None = None, skip: tuple = ()) -> None:
    """Every band accepted by both raters but triage's ESI, where they share no value, the
    bands of `amend`, where the first rater amends to the values given, and those of `skip`,
    which no one reviews."""
    amend = amend or {}
    for band in BANDS:
        if band == TRIAGE or band in skip:
            continue
        for rater in (study.rater, study.other):
            if rater == study.rater and band in amend:
                study.save(
                    rater,
                    band,
                    submit=True,
                    verdict="AMEND",
                    band=amend[band],
                    answers=GOOD_ANSWERS,
                    reason="a narrower reading",
                )
                continue
            study.save(rater, band, submit=True, verdict="ACCEPT", answers=GOOD_ANSWERS)
    for rater, values in ((study.rater, [1]), (study.other, [3])):
        reason = REASONS[rater.pseudonym]
        study.save(
            rater,
            TRIAGE,
            submit=True,
            verdict="AMEND",
            band=values,
            answers=GOOD_ANSWERS,
            reason=reason,
        )
    with study.store() as s:
        close_round(s, actor=study.coordinator)


def round_two(study) -> None:
    round_one(study)
    with study.store() as s:
        open_round(s, study.library, actor=study.coordinator, number=2, folder=_folder())


def amend_to_two(study, rater, reason: str) -> None:
    """`rater` submits triage's ESI band as 2 in the round open, with `reason`."""
    study.save(
        rater, TRIAGE, submit=True, verdict="AMEND", band=[2], answers=GOOD_ANSWERS, reason=reason
    )


def _folder():
    from fma_bands.core.settings import load_settings

    return load_settings().attestations


def labels(study) -> dict:
    with study.store() as s:
        return band_labels(s, study.library)


def in_case_order(named: dict, bands: list) -> list:
    """`bands` in the order of their cases' numbers (the study's case key is drawn afresh)."""
    return sorted(bands, key=lambda band: int(named[band].split(" ")[1]))


def candidates_table(at) -> list[dict]:
    [table] = [d.value for d in at.dataframe if "why" in d.value.columns]
    return table.to_dict("records")


def bands_for_round_two(at) -> list:
    [chosen] = [m for m in at.multiselect if m.label == "Bands for round 2"]
    return chosen.value


def test_study_admin_opens_round_two_for_the_band_without_consensus_once_confirmed(study):
    round_one(study)
    at = open_app(study.coordinator)
    assert any(m.value == "Round 1 is **closed**." for m in at.markdown)
    assert bands_for_round_two(at) == [TRIAGE]  # the one candidate, by default
    label = labels(study)[TRIAGE]
    assert label.startswith("Case ") and label.endswith(" · draft_triage_01 · ESI acuity level")
    assert candidates_table(at) == [
        {
            "band": label,
            "raters with a band": "2",
            "why": "no consensus",
            "admitted by some raters, not all": "1 - resuscitation and 3 - urgent",
        }
    ]
    assert f"- **no consensus**: {WHY['no_consensus'].sentence}" in [m.value for m in at.markdown]
    [button] = [b for b in at.button if b.label == "Open round 2"]
    assert button.disabled
    with study.store() as s:
        assert study_settings(s).round == 1
    at.checkbox(key="round_two_sure").check().run()
    click(at, "Open round 2")
    with study.store() as s:
        assert (study_settings(s).round, study_settings(s).phase) == (2, "open")
    assert "Round 2 opened for 1 band: each is in its raters' queues now." in [
        s.value for s in at.success
    ]
    assert any(m.value == "Round 2 is **open**." for m in at.markdown)
    assert not [b for b in at.button if b.label == "Open round 2"]
    # Round 2's raters see round 1's panel, so the page no longer calls the round blind.
    captions = " ".join(c.value for c in at.caption)
    assert "see round 1 anonymised" in captions
    assert "blind to each other" not in captions
    # Where to close it is a link away, not a hunt through the pages.
    links = [(p.proto.label, p.proto.page) for p in at.get("page_link")]
    assert ("Close round 2 on Raters' progress", "progress") in links, links


def test_study_admin_chooses_round_two_by_reason_and_by_sub_action(study):
    """Analgesia: one rater admits tier 1, the other accepts tiers 1 and 2, so they meet in a
    consensus (tier 1) with a disputed span (tier 2), as the Agreement page shows it; triage has
    no consensus. Both are candidates, each for its own reason, and each group picks its own."""
    round_one(study, amend={MED: [1]})
    at = open_app(study.coordinator)
    named = labels(study)
    rows = candidates_table(at)
    both = in_case_order(named, [MED, TRIAGE])
    why = {MED: "disputed span", TRIAGE: "no consensus"}
    assert [(r["band"], r["why"]) for r in rows] == [(named[b], why[b]) for b in both]
    [med] = [r for r in rows if r["band"] == named[MED]]
    assert med["admitted by some raters, not all"].startswith("2")
    legend = [m.value for m in at.markdown if m.value.startswith("- **")]
    assert legend == [
        f"- **no consensus**: {WHY['no_consensus'].sentence}\n"
        f"- **disputed span**: {WHY['disputed_span'].sentence}"
    ]
    assert bands_for_round_two(at) == both  # every candidate, by default
    assert not [w for w in at.warning if "No round follows" in w.value]
    at.radio(key="round2:by").set_value("reason").run()
    [reasons] = [m for m in at.multiselect if m.label == "Reasons"]
    assert reasons.options == ["no consensus (1 band)", "disputed span (1 band)"]
    reasons.set_value(["disputed_span"]).run()
    assert bands_for_round_two(at) == [MED]
    # What is left out now is never re-reviewed: said before the round opens.
    assert [w.value for w in at.warning if "No round follows" in w.value] == [
        "1 band listed above is not chosen. No round follows round 2: a band not chosen now is "
        "not reviewed again, and the Band registry decides it from round 1's signed reviews."
    ]
    at.radio(key="round2:by").set_value("sub_action").run()
    [kinds] = [m for m in at.multiselect if m.label == "Sub-actions"]
    assert kinds.options == ["Analgesia tier (1 band)", "ESI acuity level (1 band)"]
    kinds.set_value(["esi_acuity"]).run()
    assert bands_for_round_two(at) == [TRIAGE]
    at.radio(key="round2:by").set_value("all").run()
    assert bands_for_round_two(at) == both
    # Any band by hand, then round 2 opens for exactly those.
    [chosen] = [m for m in at.multiselect if m.label == "Bands for round 2"]
    chosen.set_value([MED]).run()
    at.checkbox(key="round_two_sure").check().run()
    click(at, "Open round 2")
    assert "Round 2 opened for 1 band: each is in its raters' queues now." in [
        s.value for s in at.success
    ]
    [table] = [d.value for d in at.dataframe if "raters" in d.value.columns]
    assert list(table["band"]) == [named[MED]]


def test_a_band_no_one_reviewed_in_round_one_is_listed_but_not_chosen(study):
    """The analgesia band has no review at all: it is a candidate (no quorum), said to be one no
    one reviewed, and left out of the default choice and of "every candidate someone
    reviewed"; its own reason chooses it."""
    round_one(study, skip=(MED,))
    at = open_app(study.coordinator)
    named = labels(study)
    # The dispute first, whatever the cases' numbers: the band no one reviewed after it.
    assert [(r["band"], r["raters with a band"], r["why"]) for r in candidates_table(at)] == [
        (named[TRIAGE], "2", "no consensus"),
        (named[MED], "0", "too few raters; no one reviewed"),
    ]
    assert bands_for_round_two(at) == [TRIAGE]
    captions = " ".join(c.value for c in at.caption)
    assert "1 band to re-review after round 1: " in captions  # the dispute alone
    assert "Besides, 1 band no one reviewed in round 1: listed, not chosen" in captions
    at.radio(key="round2:by").set_value("reason").run()
    [reasons] = [m for m in at.multiselect if m.label == "Reasons"]
    reasons.set_value(["not_reviewed"]).run()
    assert bands_for_round_two(at) == [MED]
    at.radio(key="round2:by").set_value("all").run()
    assert bands_for_round_two(at) == [TRIAGE]


def test_study_admin_lists_the_bands_of_round_two_still_in_dispute(study):
    """Round 2 closes with triage re-reviewed by one rater only: only that band is still in
    dispute (too few raters); the bands round 2 did not hold keep their round 1."""
    round_two(study)
    amend_to_two(study, study.rater, "the panel: 2")
    study.set_policy(_folder(), quorum=2)
    with study.store() as s:
        close_round(s, actor=study.coordinator)
    at = open_app(study.coordinator)
    assert "**Still disputed after round 2**: 1 band" in [m.value for m in at.markdown]
    # What becomes of them is said: the registry may grant some (a disputed span, the chair's).
    assert any(c.value.startswith("What the Band registry then grants, ") for c in at.caption)
    assert [(r["band"], r["why"]) for r in candidates_table(at)] == [
        (labels(study)[TRIAGE], "too few raters")
    ]
    assert not [m for m in at.multiselect if m.label == "Bands for round 2"]
    # The round closed, the rater's screen no longer asks to keep or revise.
    panel = [
        c.value for c in open_review(study.rater, TRIAGE).caption if "Rater A, B, C" in c.value
    ]
    assert panel and panel[0].endswith("Round 2 is closed: your review of it stands as submitted.")


def test_round_ones_candidates_left_out_of_round_two_stay_listed_with_what_becomes_of_them(study):
    """Round 2 holds triage only: the analgesia band no one reviewed, a candidate of round 1,
    is still listed while round 2 is open and once it is closed, as `round show` lists it."""
    round_one(study, skip=(MED,))
    with study.store() as s:
        open_round(s, study.library, actor=study.coordinator, number=2, folder=_folder())

    def left_out(at) -> list:
        heading = "**Round 1's candidates not chosen for round 2**: 1 band"
        assert heading in [m.value for m in at.markdown]
        assert any(c.value.startswith("Not re-reviewed in round 2, and no ") for c in at.caption)
        tables = [d.value for d in at.dataframe if "why" in d.value.columns]
        return [(r["band"], r["why"]) for r in tables[-1].to_dict("records")]

    expected = [(labels(study)[MED], "too few raters; no one reviewed")]
    at = open_app(study.coordinator)
    assert left_out(at) == expected
    # Said as no round follows: nothing can be chosen now.
    legend = " ".join(m.value for m in at.markdown)
    assert "no round follows round 2: it keeps the authors' provenance" in legend
    assert "choose it by hand" not in legend
    amend_to_two(study, study.rater, "the panel: 2")
    amend_to_two(study, study.other, "the panel: 2")
    with study.store() as s:
        close_round(s, actor=study.coordinator)
    assert left_out(open_app(study.coordinator)) == expected


def test_the_bands_of_round_two_are_listed_in_case_order(study):
    round_one(study, amend={MED: [1]})
    with study.store() as s:
        open_round(s, study.library, actor=study.coordinator, number=2, folder=_folder())
    at = open_app(study.coordinator)
    named = labels(study)
    [table] = [d.value for d in at.dataframe if "raters" in d.value.columns]
    # The case numbers are keyed afresh for each study: half the time they differ from the
    # order of the vignettes' ids, which the round's bands are stored in.
    assert list(table["band"]) == [named[b] for b in in_case_order(named, [MED, TRIAGE])]


def test_with_nothing_for_the_chair_the_chair_page_says_where_the_rest_is(study):
    """Round 2 ends in a consensus on triage: no band awaits the chair, and the page says so
    without calling the study settled (Study admin lists any band still in dispute)."""
    round_two(study)
    for rater in (study.rater, study.other):
        amend_to_two(study, rater, "2")
    with study.store() as s:
        close_round(s, actor=study.coordinator)
    at = open_app(study.coordinator, "app_pages/chair.py")
    assert not at.exception
    said = " ".join(i.value for i in at.info)
    assert said.startswith("No band awaits the chair yet: the chair decides only a band the")
    # Signatures not yet made are why a band Study admin lists as having no consensus is not
    # here yet: said, so the two pages do not seem to disagree.
    assert "not yet signed their reviews is not refused yet" in said
    assert 'the coordinator\'s Study admin page counts as "Still disputed after round 2"' in said
    named = " ".join(m.value for m in at.markdown).replace("\\", "")  # markdown escapes
    assert "names no chair yet (the coordinator names one on Study admin" in named


def test_a_round_two_screen_shows_the_panel_as_letters_and_asks_a_reason(study):
    round_two(study)
    at = open_review(study.rater, TRIAGE)
    screen = shown(at)
    assert "Round 1: the panel's bands" in [h.value for h in at.subheader]
    assert any(
        c.value.endswith("Keep or revise your band in the light of them, and say why.")
        for c in at.caption
    )
    texts = [t.value for t in at.text]
    assert sorted(REASONS.values()) == sorted(t for t in texts if t in REASONS.values())
    assert any(m.value.startswith("**Rater A: AMEND**") for m in at.markdown)
    assert any(m.value.startswith("**Rater B: AMEND**") for m in at.markdown)
    assert "Each admitted by 1 of 2: 1 - resuscitation and 3 - urgent" in texts
    # Question 5 is about the proposal's own disputed span, not the panel's: it says so.
    [q5] = [m.value for m in at.markdown if m.value.startswith("**5. ")]
    assert (
        "The proposal records no disputed span for this band: nothing to answer here. Where "
        "round 1's raters differed is in the panel's bands, under what the agent knows (below "
        "it, on a narrow screen)."
    ) in q5.replace("\\", "")
    # No pseudonym on a rater's screen in round 2 but in the sidebar's own account line.
    assert "rater-02" not in screen
    assert screen.count("rater-01") == shown(open_app(study.rater)).count("rater-01")
    # The round-1 band starts the screen; the reason is this round's to give.
    assert at.text_area(key=key(TRIAGE, "reason")).value == ""
    assert at.radio(key=key(TRIAGE, "verdict")).value == "AMEND"
    assert "**Your band** (it starts from the band you last gave)" in [m.value for m in at.markdown]
    # Round 1's answers and verdict start the screen, and it says so where they are.
    captions = [c.value for c in at.caption]
    assert (
        "Your answers from round 1 start these questions: read each again against the panel's "
        "bands before you submit."
    ) in captions
    assert "Your verdict from round 1 starts here: keep it or change it." in captions
    answer_questions(at, TRIAGE)
    run(at)
    click(at, "Submit and next")
    assert "why you keep or revise your band" in shown(at)
    at.text_area(key=key(TRIAGE, "reason")).input("the panel: ESI 2 is what both admit")
    run(at)
    click(at, "Submit and next")
    [review] = [r for r in study.reviews(study.rater, TRIAGE) if r.round == 2]
    assert (review.status, review.reason) == ("submitted", "the panel: ESI 2 is what both admit")
    # Its stored revision runs on from round 1's, which the rater did not revise: said by round.
    assert review.revision == 2
    assert any(s.value.startswith("Review submitted (round 2). That was Case") for s in at.success)


def test_a_round_two_review_counts_its_revisions_in_round_two_only(study):
    round_two(study)
    for times in ("", " (revised once)"):
        amend_to_two(study, study.rater, "the panel: ESI 2 is what both admit")
        markdown = [m.value for m in open_review(study.rater, TRIAGE).markdown]
        assert f"**Verdict:** AMEND{times}" in markdown


def test_a_round_two_answer_never_reaches_the_other_rater(study):
    round_two(study)
    before = [t.value for t in open_review(study.other, TRIAGE).text]
    amend_to_two(study, study.rater, "a round-two reason nobody else may see")
    at = open_review(study.other, TRIAGE)
    assert [t.value for t in at.text] == before
    assert "a round-two reason nobody else may see" not in shown(at)
    queue = open_app(study.other, "app_pages/queue.py")
    assert "a round-two reason nobody else may see" not in shown(queue)
    agreement = open_app(study.other, "app_pages/agreement.py")
    assert [i.value for i in agreement.info] == [
        "Round 2 is open: agreement between raters is shown once the coordinator closes it."
    ]


def test_the_round_two_queue_holds_its_band_only(study):
    round_two(study)
    at = open_app(study.rater, "app_pages/queue.py")
    [bar] = at.get("progress")
    assert bar.proto.text == "0 of 1 bands submitted"
    assert any(c.value.startswith("Round 2: the bands you re-review") for c in at.caption)
    assert "Round 2 is open; review mode: you see each proposed band." in shown(at)
    [link] = at.get("page_link")
    assert link.proto.label.endswith("ESI acuity level")


def test_a_closed_round_says_so_on_the_queue_in_words(study):
    round_two(study)
    with study.store() as s:
        close_round(s, actor=study.coordinator)
    at = open_app(study.rater, "app_pages/queue.py")
    assert "Round 2 is closed: your reviews can be read, no longer changed" in shown(at)
    assert "phase" not in shown(at)


def _pooled_band_row(at) -> dict:
    [table] = [d.value for d in at.dataframe if "alpha" in d.value.columns]
    rows = table.to_dict("records")
    return next(r for r in rows if "pooled" in str(r.get("sub-action", r)))


def test_the_agreement_page_keeps_round_one_and_labels_round_two(study):
    round_one(study)
    first = open_app(study.coordinator, "app_pages/agreement.py")
    assert not first.segmented_control or all(c.label != "Round" for c in first.segmented_control)
    alpha_one = _pooled_band_row(first)
    with study.store() as s:
        open_round(s, study.library, actor=study.coordinator, number=2, folder=_folder())
    for rater in (study.rater, study.other):
        amend_to_two(study, rater, "the panel agrees on 2")
    at = open_app(study.coordinator, "app_pages/agreement.py")
    assert _pooled_band_row(at) == alpha_one
    assert any(c.value.startswith("Round 1, the independent round") for c in at.caption)
    [rounds] = [c for c in at.segmented_control if c.label == "Round"]
    rounds.set_value(2).run()
    assert any(c.value.startswith("Round 2, consensus-building") for c in at.caption)
    assert "Krippendorff's alpha: band, round 2" in [h.value for h in at.subheader]
    # Round 2's one band, agreed on after the panel (the table of bands says it in words).
    [table] = [d.value for d in at.dataframe if "consensus" in d.value.columns]
    assert list(table["consensus"]) == ["2 - emergent"]
    # Whom the consensus is over, and that the registry may count otherwise, beside the table.
    [bands] = [h for h in at.subheader if h.value == "Bands, most disputed first"]
    assert bands.proto.help == escaped(CONSENSUS_SCOPE_NOTE)
