"""The coordinator's desk: study phase and mode, raters and their progress, hand-back import."""

import streamlit as st

from app_pages.common import library, require_user, session, settings
from fma_bands.attestations import publish_adjudicators
from fma_bands.errors import FmaBandsError
from fma_bands.handback import import_handback
from fma_bands.policy import read_policy
from fma_bands.reviews import rater_progress
from fma_bands.study import set_mode, set_phase, set_policy, study
from fma_bands.users import create_user, list_users

user = require_user("coordinator")
lib = library()
with session() as s:
    current = study(s)
    progress = rater_progress(s, lib, viewer=user)
    raters = list_users(s, role="rater")

st.title("Study admin")
if flash := st.session_state.pop("admin_flash", None):
    st.success(flash)
st.caption(f"{len(lib)} vignettes from `{settings().vignettes}`; {len(raters)} raters enrolled.")
if lib.problems:
    with st.expander(f"{len(lib.problems)} problem(s) in the vignette files", icon="⚠️"):
        st.code("\n".join(str(p) for p in lib.problems), language=None)

st.subheader("Review phase")
phase_col, mode_col = st.columns(2)
with phase_col:
    st.markdown(f"The review phase is **{current.phase}**.")
    st.caption(
        "While it is open raters review blind to each other; closing it freezes reviews and "
        "shows agreement to raters."
    )
    other = "closed" if current.phase == "open" else "open"
    if st.button("Close the review phase" if other == "closed" else "Reopen the review phase"):
        with session() as s:
            set_phase(s, actor=user, phase=other)
        st.rerun()
with mode_col:
    mode = st.radio(
        "Review mode",
        ["review", "blind"],
        index=["review", "blind"].index(current.mode),
        format_func={
            "review": "review: raters see the proposal, source, clause and reasoning",
            "blind": "blind: raters write each band without seeing the proposal",
        }.get,
    )
    if mode != current.mode and st.button("Change the review mode"):
        with session() as s:
            set_mode(s, actor=user, mode=mode)
        st.rerun()

st.subheader("Registry policy")
try:
    policy = read_policy(settings().attestations)
except FmaBandsError as exc:
    st.error(str(exc))
    st.stop()
with st.form("policy"):
    left, right = st.columns(2)
    quorum = left.number_input(
        "Quorum: attesting adjudicators a band needs", min_value=1, value=policy.quorum, step=1
    )
    scope = right.radio(
        "Specialty scope rule",
        ["warn", "require"],
        index=["warn", "require"].index(policy.scope),
        horizontal=True,
    )
    if st.form_submit_button("Save policy"):
        with session() as s:
            set_policy(s, settings().attestations, actor=user, quorum=int(quorum), scope=scope)
        st.success(
            f"Policy saved to attestations/policy.yaml: quorum {int(quorum)}, scope {scope}."
        )

st.subheader("Progress by rater")
if progress:
    st.dataframe(progress, hide_index=True)
    st.caption(
        "Bands submitted and current, drafts open, submitted reviews made stale by a "
        "changed vignette, and bands assigned (every proposed band)."
    )
else:
    st.write("No rater is enrolled yet.")

st.subheader("Enrol a rater")
with st.form("enrol", clear_on_submit=True):
    left, right = st.columns(2)
    pseudonym = left.text_input(
        "Pseudonym", placeholder="adjudicator-02", help="Public; never a real name."
    )
    specialty = right.text_input("Specialty", placeholder="emergency medicine")
    jurisdiction = left.text_input("Jurisdiction", placeholder="Australia")
    years = right.number_input("Years since registration", min_value=0, max_value=70, step=1)
    passphrase = left.text_input(
        "Initial passphrase",
        type="password",
        help="At least 10 characters; give it to the rater privately.",
    )
    enrol = st.form_submit_button("Enrol rater")
if enrol:
    try:
        with session() as s:
            made = create_user(
                s,
                actor=user.pseudonym,
                pseudonym=pseudonym.strip(),
                passphrase=passphrase,
                role="rater",
                specialty=specialty,
                jurisdiction=jurisdiction,
                years_post_registration=int(years),
            )
            publish_adjudicators(s, settings().attestations)
        st.session_state.admin_flash = f"Enrolled {made.pseudonym}; signing key {made.keyid[:19]}…"
        st.rerun()
    except FmaBandsError as exc:
        for field, message in exc.fields.items():
            st.error(f"{field.replace('_', ' ').capitalize()}: {message}")
if raters:
    st.dataframe(
        [
            {
                "pseudonym": r.pseudonym,
                "specialty": r.specialty,
                "jurisdiction": r.jurisdiction,
                "years since registration": r.years_post_registration,
                "signing key": r.keyid,
            }
            for r in raters
        ],
        hide_index=True,
    )

st.subheader("Import a hand-back")
st.caption(
    "Lines of `vignette_id | sub_action | VERDICT [band] | reason` from a rater who "
    "reviewed on paper. A file with any bad line is refused whole."
)
with st.form("handback"):
    upload = st.file_uploader("Hand-back file", type=["txt"])
    who = st.selectbox("Rater", [r.pseudonym for r in raters], index=None)
    start = st.form_submit_button("Import")
if start:
    if upload is None or who is None:
        st.error("Choose a file and the rater it came from.")
    else:
        try:
            with session() as s:
                created = import_handback(
                    s,
                    lib,
                    actor=user,
                    rater_pseudonym=who,
                    text=upload.getvalue().decode("utf-8", "replace"),
                    source=upload.name,
                )
            st.success(f"Imported {len(created)} submitted reviews for {who}.")
        except FmaBandsError as exc:
            st.error(f"{upload.name} was not imported; nothing was stored. Fix these lines:")
            st.code("\n".join(str(p) for p in exc.problems), language=None)
