"""The Band registry page counts the bands against the harness's runs from counts per action, as
`fma-bands impact` does: 20,000 runs of one vignette in the trajectories folder are counted at
once (listing their 199,990,000 pairs took minutes), and the page's figures are the command's."""

import json

import streamlit as st

from fma_bands.core.vignettes import load_library
from fma_bands.study.impact import count_runs, read_runs, study_impact
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
    assert row["runs"] == RUNS and int(row["in band"]) == k
    assert int(row["pairs in band"]) == k * (k - 1) // 2 == expected.pairs_in_band
    assert int(row["pairs across the threshold"]) == expected.pairs_across_threshold > 0
