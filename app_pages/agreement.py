"""Agreement between raters: Krippendorff's alpha per sub-action and pooled, with intervals and
readings, and every band's raters beside the consensus, one round at a time (round 1 is the
reliability figure, round 2 consensus-building). Raters see it once the round closes."""

import streamlit as st

from app_pages.agreement_parts import alphas, bands, chosen_round
from app_pages.common import engine, escaped, library, require_user, session
from fma_bands.agreement import METRICS
from fma_bands.agreement.views import METRIC_LABELS
from fma_bands.core.errors import FmaBandsError
from fma_bands.study.ratings import reviews_fingerprint, study_screen
from fma_bands.study.state import study

user = require_user()
lib = library()
st.title("Agreement")
with session() as s:
    current, fingerprint = study(s), reviews_fingerprint(s)
if not user.is_coordinator and current.phase == "open":
    st.info("Agreement between raters is shown once the coordinator closes the review phase.")
    st.stop()
number = chosen_round(current.round)
metric = st.segmented_control(
    "Metric", METRICS, default="band", format_func=METRIC_LABELS.__getitem__
)
metric = metric or "band"


# A resource, not data: the screen is read-only, and unpickling a copy of its 2,700 bands on
# every rerun would cost more than the rerun. Cached until a review changes (fingerprint) or a
# vignette file changes (files), per round.
@st.cache_resource(show_spinner=False, max_entries=8)
def _screen(url: str, fingerprint: tuple, files: tuple, viewer: str, number: int):
    with session() as s:
        return study_screen(s, lib, viewer=user, round=number)


try:
    with st.spinner("Computing alpha with a 1000-resample bootstrap…"):
        screen = _screen(str(engine().url), fingerprint, lib.digests, user.pseudonym, number)
except FmaBandsError as exc:
    st.error(escaped(exc))
    st.stop()
if not screen.agreements:
    st.info("No submitted review yet: there is nothing to compare.")
    st.stop()

in_round = f", round {number}" if current.round > 1 else ""
alphas(screen, metric, in_round)
bands(screen)
