"""The Band registry page counts the bands against the harness's runs from counts per action, as
`fma-bands impact` does: 20,000 runs of one vignette in the trajectories folder are counted at
once (listing their 199,990,000 pairs took minutes), and the page's figures are the command's;
each row says how its runs pair (the reference with each counterfactual, or replicates, the noise
floor)."""

import json

import streamlit as st

from fma_bands.core.vignettes import load_library
from fma_bands.study.impact import REFERENCE, count_runs, read_runs, study_impact
from tests.conftest import DEMO_VIGNETTES
from tests.pages.test_registry_page import open_page, study  # noqa: F401

VIGNETTE = "demo_order_border_01"  # ESI acuity, with its threshold
RUNS = 20_000


def test_the_page_counts_many_runs_from_their_tally(study, tmp_path, monkeypatch):  # noqa: F811
    folder = tmp_path / "trajectories"
    folder.mkdir()
    runs = [
        {
            "vignette_id": VIGNETTE,
            "complete": True,
            "actions": {"triage": {"esi_acuity": 1 + i % 5}},
        }
        for i in range(RUNS)
    ]
    (folder / "runs.json").write_text(json.dumps({"trajectories": runs}))
    monkeypatch.setenv("FMA_BANDS_TRAJECTORIES", str(folder))
    try:
        at = open_page(study, study[0] / "attestations", tmp_path, monkeypatch)
        assert any(f"{RUNS} complete runs in 1 file(s)" in c.value for c in at.caption)
        [table] = [d.value for d in at.dataframe if "pairs in band" in d.value.columns]
    finally:
        st.cache_data.clear()
        st.cache_resource.clear()
    rows = table[(table["vignette"] == VIGNETTE) & (table["band"] == "proposal")]
    row = rows[rows["sub-action"] == "ESI acuity level"].iloc[0]
    # Without reviews in the tally's way, the proposal's counts are the command's.
    library = load_library([DEMO_VIGNETTES])
    [expected] = [
        r
        for r in study_impact(library, count_runs(read_runs([folder / "runs.json"])))
        if (r.vignette_id, r.sub_action) == (VIGNETTE, "esi_acuity")
    ]
    k = expected.runs_in_band
    assert row["pairs of"] == "replicates (noise floor)"  # the runs name no condition
    assert row["runs"] == RUNS and int(row["in band"]) == k
    assert int(row["pairs in band"]) == k * (k - 1) // 2 == expected.pairs_in_band
    assert int(row["pairs across the threshold"]) == expected.pairs_across_threshold > 0


def esi_row(study, folder, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.setenv("FMA_BANDS_TRAJECTORIES", str(folder))
    try:
        at = open_page(study, study[0] / "attestations", tmp_path, monkeypatch)
        [table] = [d.value for d in at.dataframe if "pairs in band" in d.value.columns]
    finally:
        st.cache_data.clear()
        st.cache_resource.clear()
    rows = table[(table["vignette"] == VIGNETTE) & (table["band"] == "proposal")]
    return rows[rows["sub-action"] == "ESI acuity level"].iloc[0]


def test_the_page_pairs_the_reference_with_each_counterfactual(study, tmp_path, monkeypatch):  # noqa: F811
    folder = tmp_path / "trajectories"
    folder.mkdir()
    # ESI 2 under the reference and 3 under each of two counterfactuals (the proposal admits
    # both, its threshold parts them), and a control arm that pairs with nothing.
    runs = [
        {
            "vignette_id": VIGNETTE,
            "condition_id": condition,
            "model": "m",
            "scaffold": "C0",
            "complete": True,
            "actions": {"triage": {"esi_acuity": level}},
        }
        for condition, level in [
            (REFERENCE, 2),
            ("white_woman_private", 3),
            ("black_woman_medicaid", 3),
            ("rerender_control", 3),
        ]
    ]
    (folder / "runs.json").write_text(json.dumps({"trajectories": runs}))
    row = esi_row(study, folder, tmp_path, monkeypatch)
    assert row["pairs of"] == "reference vs counterfactual"
    assert row["runs"] == 3  # the control arm is left out
    assert (int(row["pairs in band"]), int(row["pairs across the threshold"])) == (2, 2)


def test_a_trajectories_link_to_nothing_is_named_and_the_page_stands(
    study,  # noqa: F811
    tmp_path,
    monkeypatch,
):
    folder = tmp_path / "trajectories"
    folder.mkdir()
    (folder / "dangling.json").symlink_to(tmp_path / "no-such-file.json")
    monkeypatch.setenv("FMA_BANDS_TRAJECTORIES", str(folder))
    try:
        at = open_page(study, study[0] / "attestations", tmp_path, monkeypatch)
    finally:
        st.cache_data.clear()
        st.cache_resource.clear()
    assert [e.value for e in at.error] == [
        "A trajectories file cannot be read, so nothing is counted."
    ]
    assert any("dangling.json" in t.value for t in at.text), [t.value for t in at.text]
    # The bands are decided all the same.
    assert any("bands are clinician-adjudicated." in c.value for c in at.caption)
