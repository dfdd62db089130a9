"""The band registry: each band's provenance decided from the files, and bands.yaml."""

import streamlit as st

from app_pages.common import escaped, library, require_user, settings
from app_pages.impact_parts import impact
from fma_bands.actions import sub_action
from fma_bands.band_text import describe
from fma_bands.envelopes import folder_digests
from fma_bands.errors import FmaBandsError
from fma_bands.export import RULE_LABELS, dump_bands, export_document, write_export
from fma_bands.harness import harness_note
from fma_bands.registry import Registry, decide

PAGE = 20
require_user("coordinator")
lib, folder, export_dir = library(), settings().attestations, settings().export_dir
st.title("Band registry")


# Decided again whenever what the registry reads changes: every vignette's digests (its
# clinical context and each whole proposal) and the SHA-256 of every file in attestations/
# (DESIGN 5), never a name or a time. A resource: read-only, shared rather than copied.
@st.cache_resource(show_spinner=False, max_entries=4)
def _decided(vignettes: tuple, attestations: tuple) -> Registry:
    return decide(lib, folder)


try:
    registry = _decided(lib.digests, folder_digests(folder))
except FmaBandsError as exc:
    st.error(f"The attestations folder cannot be read: {escaped(exc)}")
    st.stop()
st.caption(
    f"Decided from the vignette files and the attestations folder alone, under the policy: "
    f"quorum {registry.policy.quorum}, scope {registry.policy.scope}. "
    f"{sum(d.adjudicated for d in registry.decisions)} of {len(registry.decisions)} bands are "
    "clinician-adjudicated."
)
for problem in registry.file_problems:
    st.error(escaped(problem))


@st.fragment
def decisions() -> None:
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


decisions()
impact(lib)
st.subheader("Export bands.yaml")
if not lib.ok:
    st.error("The vignette files have problems; fix them before exporting.")
    st.stop()
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
