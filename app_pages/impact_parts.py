"""The registry page's coordinator-only section: which bands decide the harness's run pairs,
counted on the trajectories.json files in the settings' trajectories folder (raters never see
these counts: they would bias the band)."""

from pathlib import Path

import streamlit as st

from app_pages.common import current_user, escaped, session, settings
from fma_bands.core.actions import sub_action
from fma_bands.core.errors import FmaBandsError
from fma_bands.core.vignettes import Library
from fma_bands.study.impact import Run, read_runs, reviewed_impact


@st.cache_data(show_spinner=False, max_entries=4)
def _runs(files: tuple[str, ...], state: tuple) -> list[Run]:
    return read_runs(files)


def _count(value: int | None) -> str:
    return "not counted" if value is None else str(value)


@st.fragment
def impact(lib: Library) -> None:
    user = current_user()
    if user is None or not user.is_coordinator:
        return
    folder = settings().trajectories
    st.subheader("Which bands decide the harness's pairs")
    files = sorted(folder.glob("*.json")) if folder.is_dir() else []
    if not files:
        st.caption(
            f"No trajectories.json files in {escaped(folder)} (FMA_BANDS_TRAJECTORIES): put the "
            "harness's run files there to see which bands decide most run pairs."
        )
        return
    state = tuple((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in files)
    try:
        runs = _runs(tuple(str(p) for p in files), state)
        with session() as s:
            rows = reviewed_impact(s, lib, runs, viewer=user)
    except FmaBandsError as exc:
        st.error("A trajectories file cannot be read, so nothing is counted.")
        st.text(str(exc))
        return
    st.caption(
        f"{len(runs)} complete runs in {len(files)} file(s) of {escaped(folder)}: "
        f"{escaped(', '.join(Path(p).name for p in files))}. In band: runs whose action the band "
        "admits; pairs: pairs of those runs of one vignette; across the threshold: of those "
        "pairs, the ones on opposite sides of it (what a within-range flip needs). For the "
        "proposal, the raters' consensus and the consensus widened by its disputed span; the "
        "bands deciding most pairs first. Not counted: no threshold, or a band the harness "
        "cannot score."
    )
    st.dataframe(
        [
            {
                "vignette": r.vignette_id,
                "sub-action": sub_action(r.sub_action).label,
                "band": r.band,
                "runs": r.runs,
                "in band": _count(r.runs_in_band),
                "pairs in band": _count(r.pairs_in_band),
                "pairs across the threshold": _count(r.pairs_across_threshold),
            }
            for r in rows
        ],
        hide_index=True,
        width="stretch",
    )
