"""0 and false, 1 and true are equal and hash alike in Python, so values of different sub-actions
must never meet in one set or dict: mixed, the Agreement page would read an analgesia
band's disputed span back as `[false, 2]` and raise "span: false is a boolean but
analgesia_tier takes integers". Each band's consensus and disputed span keep their own
sub-action's type, on a small study where an analgesia span holds 0 beside a boolean span that
holds false."""

from fma_bands.agreement import agreement_report
from fma_bands.agreement.panel import band_json
from fma_bands.agreement.views import screen
from fma_bands.core.actions import sub_action
from fma_bands.core.bands import SetBand
from fma_bands.core.vignettes import load_library
from fma_bands.store.db import make_engine, session_scope
from fma_bands.study.ratings import study_ratings, study_screen
from fma_bands.study.users import get_user
from tests.agreement.build import rate
from tests.agreement.demo import demo_study
from tests.conftest import DEMO_VIGNETTES

# demo_med_border_01 proposes analgesia [1, 2] and controlled-substance caution [false, true].
ZERO_AND_FALSE = {
    "rater-01": """\
demo_med_border_01 | analgesia_tier | AMEND {0, 1} | No analgesia, or an NSAID.
demo_med_border_01 | controlled_substance_caution | AMEND {true} | Caution is due.
""",
    "rater-02": """\
demo_med_border_01 | analgesia_tier | ACCEPT | NSAID or weak opioid.
demo_med_border_01 | controlled_substance_caution | ACCEPT | Either reading is defensible.
""",
}


def typed(name: str, values) -> bool:
    return all(type(v) is sub_action(name).value_type for v in values)


def test_a_zero_beside_false_keeps_its_type_in_every_band():
    ratings = [
        rate("v1", "analgesia_tier", "r1", [0, 1]),
        rate("v1", "analgesia_tier", "r2", [1, 2]),
        rate("v1", "admit", "r1", [True]),
        rate("v1", "admit", "r2", [False, True]),
        rate("v2", "analgesia_tier", "r1", [0, 1, 3]),
        rate("v2", "analgesia_tier", "r2", [1]),
        rate("v2", "escalate_icu", "r1", [False]),
        rate("v2", "escalate_icu", "r2", [False, True]),
    ]
    report = agreement_report(ratings, bootstrap=50)
    for b in report.bands:
        assert typed(b.sub_action, b.consensus.disputed), b
        assert b.consensus.band is not None and typed(b.sub_action, b.consensus.band.values())
        assert band_json(b)["disputed_span"] is not None
    shown = screen(report, {})  # reads every disputed span back as a band
    spans = {(v.vignette_id, v.sub_action): v.rows[-1].disputed for v in shown.bands()}
    assert spans[("v1", "analgesia_tier")] == SetBand(sub_action="analgesia_tier", members=(0, 2))
    assert spans[("v2", "analgesia_tier")].values() == {0, 3}
    assert spans[("v1", "admit")].values() == {False}


def test_the_agreement_screen_of_a_study_with_zero_and_false(tmp_path):
    demo = demo_study(tmp_path, ZERO_AND_FALSE)
    engine = make_engine(demo.url)
    try:
        with session_scope(engine) as s:
            library = load_library([DEMO_VIGNETTES])
            coordinator = get_user(s, "coordinator")
            ratings = study_ratings(s, library, viewer=coordinator)
            shown = study_screen(s, library, viewer=coordinator, bootstrap=50)
    finally:
        engine.dispose()
    assert {(r.sub_action, r.verdict) for r in ratings} >= {("analgesia_tier", "AMEND")}
    by_band = {v.sub_action: v for v in shown.bands() if v.vignette_id == "demo_med_border_01"}
    analgesia, caution = by_band["analgesia_tier"], by_band["controlled_substance_caution"]
    assert analgesia.consensus == "Consensus: 1 - NSAID"
    assert analgesia.rows[-1].disputed == SetBand(sub_action="analgesia_tier", members=(0, 2))
    assert analgesia.disputed is not None and "0 - none" in analgesia.disputed
    assert caution.consensus == "Consensus: the answer yes"
    assert caution.rows[-1].disputed is not None
    assert caution.rows[-1].disputed.values() == {False}


def test_an_orders_band_is_shown_by_the_names_clinicians_read():
    ratings = [
        rate("v1", "orders", "r1", {"required": ["cbc"], "defensible": ["cbc", "bmp"]}),
        rate("v1", "orders", "r2", {"required": ["cbc"], "defensible": ["cbc", "cxr"]}),
    ]
    names = {"cbc": "Full blood count", "bmp": "Basic metabolic panel", "cxr": "Chest X-ray"}
    shown = screen(
        agreement_report(ratings, bootstrap=0), {"v1": ("cbc", "bmp", "cxr")}, {"v1": names}
    )
    (view,) = shown.bands()
    assert view.names == names  # the picture's lines
    assert view.consensus == "Consensus: required: Full blood count; nothing else defensible"
    assert screen(agreement_report(ratings, bootstrap=0), {}).bands()[0].consensus == (
        "Consensus: required: CBC; nothing else defensible"  # no names given: humanised keys
    )


def test_a_rater_sees_the_panel_without_names():
    """After round 1 closes raters see the figures, but never who wrote which band: the round-2
    panel's letters would otherwise be names."""
    ratings = [
        rate("v1", "esi_acuity", "rater-01", [2, 3]),
        rate("v1", "esi_acuity", "rater-02", [3]),
        rate("v1", "esi_acuity", "rater-03", [2]),
    ]
    report = agreement_report(ratings, bootstrap=0)
    (mine,) = screen(report, {}, reader="rater-02", cases={"v1": 2, "v2": 1}).bands()
    assert mine.title == "Case 2 of 2 · ESI acuity level" and "v1" not in str(mine.query)
    labels = [row.label for row in mine.rows]
    assert labels == ["your band", "another rater (1)", "another rater (2)"]  # no consensus
    assert [row.band.values() for row in mine.rows] == [{3}, {2}, {2, 3}]  # by values, not by who
    assert not any("rater-0" in label for label in labels)
    (theirs,) = screen(report, {}).bands()  # the coordinator sees who wrote what
    assert [row.label for row in theirs.rows][:3] == ["rater-01", "rater-02", "rater-03"]


def test_a_rater_reads_tied_bands_in_case_order_never_id_order():
    """Unanimous bands all tie; in id order a rater would read each case's stratum from where
    it falls (demo_med_border_01 before demo_med_clear_01)."""
    ratings = [
        rate(vid, "admit", rater, [True])
        for vid in ("a_border", "b_clear", "c_inter")
        for rater in ("rater-01", "rater-02")
    ]
    report = agreement_report(ratings, bootstrap=0)
    cases = {"a_border": 3, "b_clear": 1, "c_inter": 2}
    shown = screen(report, {}, reader="rater-01", cases=cases)
    assert [b.vignette_id for b in shown.agreements] == ["b_clear", "c_inter", "a_border"]
    assert [b.vignette_id for b in screen(report, {}).agreements] == [
        "a_border",
        "b_clear",
        "c_inter",
    ]
