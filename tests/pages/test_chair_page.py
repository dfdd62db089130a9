"""The Chair's decision page under streamlit's AppTest, on the study of tests/study/chair_study.py
(round 2 closed, the ESI band still in dispute, rater-03 the chair): the chair reads the
anonymised panel and records a decision with their passphrase; a refusal is said beside the form;
the coordinator reads the list without a form; any other rater is told the page is not theirs."""

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from fma_bands.evidence.provenance import ADJUDICATED
from fma_bands.evidence.registry import decide
from fma_bands.store.db import session_scope
from fma_bands.study import governance
from tests.conftest import ROOT
from tests.page_helpers import as_read, open_app, pages_of
from tests.study import chair_study as cs

PAGE = ROOT / "app_pages" / "chair.py"
BUTTON = "Record the chair's decision"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return cs.build(tmp_path_factory.mktemp("chair-page") / "study")


def served(built, tmp_path, monkeypatch):
    """A copy of a built study, the one the app's settings name, with the app's caches fresh."""
    copied = cs.copy(built, tmp_path / "study")
    for name, value in {
        "FMA_BANDS_DATABASE_URL": copied.url,
        "FMA_BANDS_VIGNETTES": str(copied.root / "vignettes"),
        "FMA_BANDS_ATTESTATIONS": str(copied.folder),
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    st.cache_data.clear()
    st.cache_resource.clear()
    yield copied
    st.cache_data.clear()
    st.cache_resource.clear()


@pytest.fixture
def study(built, tmp_path, monkeypatch):
    yield from served(built, tmp_path, monkeypatch)


def open_page(study, who: str) -> AppTest:
    at = AppTest.from_file(str(PAGE), default_timeout=30)
    at.session_state["user"] = study.users[who].model_dump()
    return run(at)


def run(at: AppTest) -> AppTest:
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def everything(at: AppTest) -> str:
    parts = [
        as_read(e.value)
        for kind in ("markdown", "caption", "info", "success", "error")
        for e in getattr(at, kind)
    ]
    parts += [e.value for e in at.text]
    parts += [as_read(e.value) for e in at.subheader]
    return "\n".join(parts)


def form_key(at: AppTest) -> str:
    """The ESI band's form's key: the case named by its token, never by the id (the browser
    sees keys as class names, and the chair is a rater)."""
    keys = [t.key or "" for t in at.text_area]
    [key] = [
        k.removesuffix(":reason")
        for k in keys
        if k.startswith("chair:") and k.endswith(":esi_acuity:reason")
    ]
    assert cs.VID not in key
    return key


def submit(at: AppTest, values: list[int], reason: str, passphrase: str) -> AppTest:
    """The chair's form sent: the ESI levels chosen (the review screen's choice of values),
    the reason and the passphrase."""
    key = form_key(at)
    at.button_group(key=f"{key}:band:values").set_value(values)
    at.text_area(key=f"{key}:reason").input(reason)
    at.text_input(key=f"{key}:passphrase").input(passphrase)
    [button] = [b for b in at.button if b.label == BUTTON]
    button.click()
    return run(at)


def esi(study):
    registry = decide(study.library, study.folder)
    return registry, next(d for d in registry.decisions if d.sub_action == "esi_acuity")


def test_the_chair_reads_the_anonymous_panel_and_records_a_decision(study):
    at = open_page(study, cs.CHAIR)
    assert at.title[0].value == "Chair's decision"
    shown = everything(at)
    assert "The chair is rater-03. Waiting for a decision: 1 band; decided: 0 bands." in shown
    assert "The raters' bands in round 2, without their names" in shown
    assert "Rater A: AMEND" in shown and "Rater B: AMEND" in shown
    # The panel names nobody, not even where a reason did.
    assert "rater-01" not in shown and "rater-02" not in shown
    assert "as [a rater] said in round 1" in shown
    # The case itself, as its raters read it at this step, folded away beside the panel.
    [case] = [e for e in at.expander if e.label == "The case, as its raters read it at this step"]
    assert not case.proto.expanded
    vignette = study.library.vignettes[cs.VID]
    assert vignette.clinical_core in [e.value for e in at.text]
    # A reason people typed is shown as written, never as markup.
    reason = "**Both** fit: see [the guide](http://example.org) $x$"
    at = submit(at, [2, 3], reason, cs.passphrase(cs.CHAIR))
    shown = everything(at)
    assert "The chair's decision is signed and recorded." in shown
    assert "Decided by the study chair, rater-03, after round 2" in shown
    assert reason in [e.value for e in at.text]
    registry, decision = esi(study)
    assert decision.provenance == ADJUDICATED and cs.ESI in registry.chaired
    assert registry.chaired[cs.ESI].reason == reason
    # Decided, its form is folded away under what it does now: change the decision.
    [fold] = [e for e in at.expander if e.label.startswith("Change this decision")]
    assert fold.label == "Change this decision: a new one replaces it"
    assert not fold.proto.expanded


def still_in_dispute(at: AppTest) -> list[dict]:
    [table] = [d.value for d in at.dataframe if "why" in d.value.columns]
    return table.to_dict("records")


def test_study_admin_says_which_band_still_in_dispute_the_chair_has_decided(study):
    """The raters still disagree on the ESI band once the chair has decided it: Study admin
    keeps it listed, and says the chair's decision is signed (the registry grants from the
    folder)."""
    admin = open_app(study.users["coordinator"], "app_pages/admin.py")
    [row] = [r for r in still_in_dispute(admin) if r["why"] == "no consensus"]
    assert row["chair's decision"] == f"none yet (the chair is {cs.CHAIR})"
    submit(open_page(study, cs.CHAIR), [2, 3], "the chair's reading", cs.passphrase(cs.CHAIR))
    admin = open_app(study.users["coordinator"], "app_pages/admin.py")
    [row] = [r for r in still_in_dispute(admin) if r["why"] == "no consensus"]
    assert row["chair's decision"] == f"signed by {cs.CHAIR}"
    assert any(
        c.value.startswith("The study's chair has signed a decision for 1 band of them")
        for c in admin.caption
    )


def test_a_wrong_passphrase_or_a_bad_band_is_said_beside_the_form_and_nothing_is_signed(study):
    at = open_page(study, cs.CHAIR)
    at = submit(at, [2, 3], "both fit", "not the chair's passphrase")
    assert [as_read(e.value) for e in at.error] == [
        "that passphrase is not right; nothing was signed"
    ]
    # The form keeps what was typed, all but the passphrase.
    key = form_key(at)
    assert at.text_area(key=f"{key}:reason").value == "both fit"
    assert at.text_input(key=f"{key}:passphrase").value == ""
    # The ESI levels are offered as the review screen offers them: none chosen is said so.
    assert at.button_group(key=f"{key}:band:values").options == [
        "1 - resuscitation",
        "2 - emergent",
        "3 - urgent",
        "4 - less urgent",
        "5 - non-urgent",
    ]
    at = submit(at, [], "both fit", cs.passphrase(cs.CHAIR))
    assert [as_read(e.value) for e in at.error] == ["Choose at least one acceptable value."]
    at = submit(at, [2], "", cs.passphrase(cs.CHAIR))
    assert [as_read(e.value) for e in at.error] == ["say why the chair chose this band"]
    assert not list(study.folder.glob("*-chair_decision-*"))
    assert not esi(study)[1].adjudicated


def test_a_refusal_of_a_band_no_longer_listed_is_said_at_the_top(study):
    """The coordinator raises the quorum while the chair types: the band is no longer in
    dispute for its raters' bands alone, and the refusal is said, not lost with the form."""
    at = open_page(study, cs.CHAIR)
    engine = cs.engine_of(study)
    with session_scope(engine) as s:
        governance.set_policy(
            s,
            study.folder,
            actor=study.users["coordinator"],
            passphrase=cs.ROOT_PASS,
            quorum=3,
            scope="warn",
            chair=cs.CHAIR,
        )
    engine.dispose()
    at = submit(at, [2, 3], "both fit", cs.passphrase(cs.CHAIR))
    [error] = [as_read(e.value) for e in at.error]
    assert (
        error.startswith("Case ")
        and "ESI acuity level: the chair's decision was not recorded: " in error
    )
    assert not list(study.folder.glob("*-chair_decision-*"))
    # Said once.
    assert not run(at).error


RATED = (
    "You rated this band: one of these readings is yours. You may still decide it as the "
    "chair; the registry says on the band that the chair also rated it."
)


def test_a_chair_who_rated_the_band_is_told_so_and_may_decide_it(study):
    at = open_page(study, cs.CHAIR)
    assert RATED not in [as_read(e.value) for e in at.info]  # rater-03 rated nothing of it
    cs.name_chair(study, "rater-01")
    at = open_page(study, "rater-01")
    assert [as_read(e.value) for e in at.info] == [RATED]
    # The panel still names nobody: which reading is theirs is not said.
    shown = everything(at)
    assert "Rater A: AMEND" in shown and "rater-02" not in shown
    at = submit(at, [2], "ESI 2: the vital signs are borderline", cs.passphrase("rater-01"))
    assert "The chair's decision is signed and recorded." in everything(at)
    _, decision = esi(study)
    assert "chair_rated" in decision.as_dict()["warnings"]


def test_the_coordinator_reads_the_list_without_a_form(study):
    at = open_page(study, "coordinator")
    assert f"({cs.VID})" in everything(at)
    assert not [b for b in at.button if b.label == BUTTON]


def test_another_rater_is_told_the_page_is_the_chairs(study):
    at = open_page(study, "rater-01")
    # A sentence on its own: it starts with a capital.
    assert [as_read(e.value) for e in at.info] == [
        "Only the study coordinator or the study's chair can see the bands in dispute"
    ]
    assert not [b for b in at.button if b.label == BUTTON]
    assert not at.subheader


def test_only_the_chair_named_now_has_the_page_in_their_menu(study):
    def menu(who: str) -> list[str]:
        return pages_of(open_app(study.users[who]))

    assert "app_pages/chair.py" in menu(cs.CHAIR)
    assert "app_pages/chair.py" not in menu("rater-01")
    assert "app_pages/chair.py" in menu("coordinator")
    cs.name_chair(study, "rater-01")  # the coordinator names another chair
    assert "app_pages/chair.py" in menu("rater-01")
    assert "app_pages/chair.py" not in menu(cs.CHAIR)


ORDERS = ("demo_order_border_01", "orders")
ADMIT = ("demo_doc_inter_01", "admit")
MIXED = {
    cs.URGENCY: {"rater-01": {"min": 55, "max": 60}, "rater-02": {"min": 80, "max": 85}},
    ORDERS: {
        "rater-01": {"required": ["ecg"], "defensible": ["ecg", "troponin"]},
        "rater-02": {"required": ["ecg", "ctpa"], "defensible": ["ctpa", "d_dimer", "ecg"]},
    },
    ADMIT: {"rater-01": [True], "rater-02": [False]},
}


@pytest.fixture(scope="module")
def built_mixed(tmp_path_factory):
    """Bands of every other kind still in dispute: an interval, tests' states and yes/no."""
    return cs.build(tmp_path_factory.mktemp("chair-kinds") / "study", MIXED, accepted=())


@pytest.fixture
def mixed(built_mixed, tmp_path, monkeypatch):
    yield from served(built_mixed, tmp_path, monkeypatch)


def key_of(at: AppTest, name: str) -> str:
    [key] = [
        (t.key or "").removesuffix(":reason")
        for t in at.text_area
        if (t.key or "").startswith("chair:") and (t.key or "").endswith(f":{name}:reason")
    ]
    return key


def send(at: AppTest, name: str, fill, reason: str = "the chair's reading") -> AppTest:
    """Fill the band of `name` with `fill(at, key)`, give a reason and the passphrase, send."""
    key = key_of(at, name)
    fill(at, key)
    at.text_area(key=f"{key}:reason").input(reason)
    at.text_input(key=f"{key}:passphrase").input(cs.passphrase(cs.CHAIR))
    [button] = [b for b in at.button if b.label == BUTTON and key in (b.key or b.form_id or "")]
    button.click()
    return run(at)


def chaired(study, band):
    """The band as the registry grants it on the chair's decision (None: not so granted)."""
    registry = decide(study.library, study.folder)
    if band not in registry.chaired:
        return None
    [decision] = [d for d in registry.decisions if (d.vignette_id, d.sub_action) == band]
    assert decision.provenance == ADJUDICATED
    return decision.band


def test_the_chair_gives_bounds_for_an_interval_and_a_reversed_pair_is_said_in_words(mixed):
    at = open_page(mixed, cs.CHAIR)

    def bounds(lo, hi):
        def fill(at, key):
            at.number_input(key=f"{key}:band:lo").set_value(lo)
            at.number_input(key=f"{key}:band:hi").set_value(hi)

        return fill

    assert [n.label for n in at.number_input] == ["Lower bound", "Upper bound"]
    at = send(at, "urgency_score", bounds(70, 60))
    assert [as_read(e.value) for e in at.error] == [
        "The lower bound, 70, is above the upper bound, 60."
    ]
    assert chaired(mixed, cs.URGENCY) is None
    at = send(at, "urgency_score", bounds(58, 82))
    assert not at.error, [as_read(e.value) for e in at.error]
    band = chaired(mixed, cs.URGENCY)
    assert band is not None and (band.min, band.max) == (58, 82)


def test_the_chair_sets_each_tests_state_for_an_orders_band(mixed):
    at = open_page(mixed, cs.CHAIR)

    def states(at, key):
        for test in ("ecg", "ctpa"):
            at.button_group(key=f"{key}:band:order:{test}").set_value("required")
        at.button_group(key=f"{key}:band:order:d_dimer").set_value("defensible")

    # Each test is named in words beside its states.
    key = key_of(at, "orders")
    assert at.button_group(key=f"{key}:band:order:ecg").options == [
        "not defensible",
        "defensible",
        "required",
    ]
    at = send(at, "orders", states)
    assert not at.error, [as_read(e.value) for e in at.error]
    band = chaired(mixed, ORDERS)
    assert band is not None
    assert (band.required, band.defensible) == (("ctpa", "ecg"), ("ctpa", "d_dimer", "ecg"))


def test_the_chair_answers_yes_or_no_for_a_yes_no_band(mixed):
    at = open_page(mixed, cs.CHAIR)
    # Nothing chosen is refused in words, and nothing is signed.
    at = send(at, "admit", lambda at, key: None)
    assert [as_read(e.value) for e in at.error] == ["Choose which answers are acceptable."]
    assert chaired(mixed, ADMIT) is None
    at = send(at, "admit", lambda at, key: at.radio(key=f"{key}:band:bool").set_value("no only"))
    assert not at.error, [as_read(e.value) for e in at.error]
    band = chaired(mixed, ADMIT)
    assert band is not None and band.members == (False,)


def test_the_registry_credits_a_chaired_band_to_the_chair_and_names_its_raters(study):
    at = open_page(study, cs.CHAIR)
    submit(at, [2, 3], "ESI 2 or 3: stable, but chest pain", cs.passphrase(cs.CHAIR))
    registry = AppTest.from_file(str(ROOT / "app_pages" / "registry_page.py"), default_timeout=30)
    registry.session_state["user"] = study.users["coordinator"].model_dump()
    registry = run(registry)
    box = registry.selectbox(key="registry:band")
    [title] = [o for o in box.options if f"{cs.VID} · " in o and "ESI" in o]
    registry = box.set_value(title).run()
    assert not registry.exception, [e.value for e in registry.exception]
    shown = everything(registry)
    # Neither rater's band is the chair's: they rated the band, the chair adjudicated it.
    assert (
        "Decided by the study chair, rater-03, where the raters' bands shared no value "
        "(rated by rater-01, rater-02)" in shown
    )
    assert "Adjudicated by" not in shown
    # The table's raters cell says the same, not the chair alone as if the chair had rated it.
    [table] = [d.value for d in registry.dataframe if "raters" in d.value.columns]
    [row] = [r for r in table.to_dict("records") if r["sub-action"] == "ESI acuity level"]
    assert row["raters"] == "chair rater-03 (rated by rater-01, rater-02)"
