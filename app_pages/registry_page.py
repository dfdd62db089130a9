"""The band registry: each band's provenance decided from the files, and bands.yaml."""

import streamlit as st

from app_pages.common import escaped, library, require_user, settings
from app_pages.impact_parts import impact
from app_pages.registry_parts import decisions, export
from fma_bands.core.errors import FmaBandsError
from fma_bands.evidence.log import folder_digests
from fma_bands.evidence.registry import Registry, decide

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

decisions(registry)
impact(lib)
st.subheader("Export bands.yaml")
if not lib.ok:
    st.error("The vignette files have problems; fix them before exporting.")
    st.stop()
export(lib, folder, export_dir, registry)
