"""Import a paper hand-back: a rater's verdicts entered by the coordinator, all or nothing. The
rater's signature covers them only once the rater confirms them on the Sign attestation page."""

import streamlit as st

from app_pages.common import escaped, library, require_user, session
from fma_bands.core.errors import FmaBandsError
from fma_bands.study.handback import FORMAT, handback_text, import_handback
from fma_bands.study.users import list_users

user = require_user("coordinator")
lib = library()
with session() as s:
    raters = list_users(s, role="rater")

st.title("Import a hand-back")
st.caption(
    f"Lines of `{FORMAT}` from a rater who reviewed on paper. A file with any bad line is "
    "refused whole, and so is a line for a band not assigned to the rater (in round 1): assign "
    "it first, on Study admin, as a review in the browser needs. The reviews are recorded as "
    "entered by you, and count for the registry only once the rater confirms them as theirs "
    "when signing."
)
with st.form("handback"):
    upload = st.file_uploader("Hand-back file", type=["txt"])
    who = st.selectbox("Rater", [r.pseudonym for r in raters], index=None)
    start = st.form_submit_button("Import")
if start:
    if upload is None or who is None:
        st.error("Choose a file and the rater it came from.")
        st.stop()
    try:
        with session() as s:
            created = import_handback(
                s,
                lib,
                actor=user,
                rater_pseudonym=who,
                source=upload.name,
                text=handback_text(upload.getvalue(), source=upload.name),
            )
        st.success(
            f"Imported {len(created)} submitted reviews for {who}; they wait for "
            f"{who} to confirm them when signing."
        )
    except FmaBandsError as exc:
        why = exc.message[:1].upper() + exc.message[1:]  # a sentence of its own here
        st.error(escaped(f"{upload.name} was not imported; nothing was stored. {why}"))
        if exc.problems:
            st.code("\n".join(str(p) for p in exc.problems), language=None)
