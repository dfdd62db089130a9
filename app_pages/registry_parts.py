"""The Band registry page's parts: each band's decision, filtered and a page at a time, and
bands.yaml as a download or written to the export folder."""

from pathlib import Path

import streamlit as st

from app_pages.common import escaped
from fma_bands.core.actions import sub_action
from fma_bands.core.band_text import describe
from fma_bands.core.errors import FmaBandsError
from fma_bands.core.vignettes import Library
from fma_bands.evidence.export import RULE_LABELS, dump_bands, export_document, write_export
from fma_bands.evidence.harness import harness_note
from fma_bands.evidence.provenance import Decision
from fma_bands.evidence.registry import Registry

PAGE = 20


@st.fragment
def decisions(registry: Registry) -> None:
    # Filters and pages rerun only this list, a page of bands at a time.
    statuses = {"all": None, "clinician-adjudicated": True, "not adjudicated": False}
    wanted = statuses.get(st.segmented_control("Status", list(statuses), default="all") or "all")
    names = sorted({d.sub_action for d in registry.decisions})
    chosen = st.multiselect("Sub-actions", names, names, format_func=lambda n: sub_action(n).label)
    shown = [
        d for d in registry.decisions if d.sub_action in chosen and wanted in (None, d.adjudicated)
    ]
    number = st.pagination(max(1, -(-len(shown) // PAGE)), key="registry_page")
    st.caption(f"{len(shown)} of {len(registry.decisions)} bands, {PAGE} to a page.")
    for d in shown[(number - 1) * PAGE : number * PAGE]:
        with st.container(border=True):
            _decision(d)


def _decision(d: Decision) -> None:
    """One band: its provenance, the band, who adjudicated it, and why it was not granted."""
    label, icon = sub_action(d.sub_action).label, "verified" if d.adjudicated else "pending"
    vid, provenance = escaped(d.vignette_id), escaped(d.provenance)
    st.markdown(f":material/{icon}: **{vid}** · {label}: {provenance}")
    st.markdown(f"Band: {escaped(describe(d.band))}")
    if d.adjudicated_by:
        rule = RULE_LABELS[d.intersection_rule]
        st.caption(f"Adjudicated by {escaped(', '.join(d.adjudicated_by))} ({rule})")
    for r in d.reasons:
        st.markdown(f"- not granted, `{r.code}`: {escaped(r.message)}")
    for w in d.warnings:
        st.warning(f"`{w.code}`: {escaped(w.message)}", icon=":material/warning:")
    if note := harness_note(d.sub_action, d.adjudicated):
        st.info(note, icon=":material/info:")


def export(lib: Library, folder: Path, export_dir: Path, registry: Registry) -> None:
    """bands.yaml of these decisions: downloaded, or written to the one export folder."""
    st.download_button(
        "Download bands.yaml",
        # Written when the button is pressed, not on every rerun.
        data=lambda: dump_bands(export_document(lib, folder, registry=registry)),
        file_name="bands.yaml",
        mime="application/yaml",
        on_click="ignore",
    )
    if st.button(f"Write bands.yaml to the export folder, {escaped(export_dir)}"):
        try:
            st.success(f"Wrote {escaped(write_export(lib, folder, export_dir, registry=registry))}")
        except FmaBandsError as exc:
            st.error(escaped(exc))
