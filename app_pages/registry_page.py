"""The band registry: each band's provenance as decided from the files, why a band is not
clinician-adjudicated, and the export of bands.yaml for the harness."""

from pathlib import Path

import streamlit as st

from app_pages.common import library, require_user, settings
from fma_bands.actions import sub_action
from fma_bands.bands import describe
from fma_bands.errors import FmaBandsError
from fma_bands.export import dump_bands, export_document, write_bands
from fma_bands.registry import decide

require_user("coordinator")
lib = library()
folder = settings().attestations
st.title("Band registry")
try:
    registry = decide(lib, folder)
except FmaBandsError as exc:
    st.error(f"The attestations folder cannot be read: {exc}")
    st.stop()
policy = registry.policy
granted = sum(d.adjudicated for d in registry.decisions)
scope_rule = {"warn": "warn only", "require": "required"}[policy.scope]
st.caption(
    f"Decided from the vignette files and the attestations folder alone, under the policy: "
    f"quorum {policy.quorum}, specialty scope rule {scope_rule}. {granted} of "
    f"{len(registry.decisions)} bands are clinician-adjudicated."
)
for problem in registry.file_problems:
    st.error(problem)

status = st.segmented_control(
    "Status", ["all", "clinician-adjudicated", "not adjudicated"], default="all"
)
names = sorted({d.sub_action for d in registry.decisions})
chosen = st.multiselect(
    "Sub-actions", names, default=names, format_func=lambda n: sub_action(n).label
)
for d in registry.decisions:
    if (
        d.sub_action not in chosen
        or (status == "clinician-adjudicated" and not d.adjudicated)
        or (status == "not adjudicated" and d.adjudicated)
    ):
        continue
    with st.container(border=True):
        icon = ":material/verified:" if d.adjudicated else ":material/pending:"
        st.markdown(
            f"{icon} **{d.vignette_id}** · {sub_action(d.sub_action).label}: {d.provenance}"
        )
        st.write(f"Band: {describe(d.band)}")
        if d.adjudicated_by:
            rule = {
                "absent": "one adjudicator: the intersection rule does not bind",
                "applied": "the intersection of their bands",
                "empty": "no consensus",
            }[d.intersection_rule]
            st.caption(f"Adjudicated by {', '.join(d.adjudicated_by)} ({rule})")
        for r in d.reasons:
            st.markdown(f"- not granted, `{r.code}`: {r.message}")
        for w in d.warnings:
            st.warning(f"`{w.code}`: {w.message}", icon=":material/warning:")

st.subheader("Export bands.yaml")
if not lib.ok:
    st.error("The vignette files have problems; fix them before exporting.")
    st.stop()
document = export_document(lib, folder)
text = dump_bands(document)
st.download_button("Download bands.yaml", text, file_name="bands.yaml", mime="application/yaml")
with st.form("write_export"):
    target = st.text_input(
        "Or write it on the server, to",
        value=str(Path("bands.yaml").resolve()),
        help="A path on the machine running the app.",
    )
    write = st.form_submit_button("Write bands.yaml")
if write:
    try:
        path = write_bands(Path(target), document)
        st.success(f"Wrote {path.resolve()}")
    except OSError as exc:
        st.error(f"Could not write {target}: {exc.strerror or exc}")
