"""Private identities: the coordinator records them (sealed at rest) and can reveal one for an
editor (audited); only a salted commitment is ever published."""

import streamlit as st

from app_pages.common import escaped, require_user, session, settings
from fma_bands.core.errors import FmaBandsError
from fma_bands.core.people import UserPublic
from fma_bands.core.protocol import IDENTITY_FIELDS
from fma_bands.study.identity import is_recorded, reveal_identity, set_identity
from fma_bands.study.users import list_users

DONE = "identity:done"


def record(user: UserPublic, who: str, values: dict[str, str]) -> None:
    """Record the identity; once recorded, the page says so on the next run and empties the form."""
    try:
        with session() as s:
            set_identity(
                s,
                actor=user,
                pseudonym=who,
                record=values,
                key_path=settings().identity_key,
                source="form",
            )
    except FmaBandsError as exc:
        st.error(escaped(exc.message))
    else:
        st.session_state[DONE] = (
            f"Identity of {who} recorded. Its commitment is published in {who}'s public record "
            "when they next sign."
        )
        st.rerun()


user = require_user("coordinator")
with session() as s:
    raters = list_users(s, role="rater")
    recorded = is_recorded(s, [r.pseudonym for r in raters])

st.title("Rater identities")
st.caption(
    "Full name, qualifications, registration and institution stay private: never in "
    "attestations, exports or logs. A salted SHA-256 commitment to it is what is published: "
    "each attestation the rater signs carries it, so an editor shown the private record can "
    "check it matches."
)
if not raters:
    st.info("No rater is enrolled yet.")
    st.stop()
st.dataframe([{"rater": p, "identity recorded": ok} for p, ok in recorded.items()], hide_index=True)

if done := st.session_state.pop(DONE, None):
    # Recorded: the private values leave the screen (they stay on it after an error).
    st.session_state.update({f"identity:{f}": "" for f in IDENTITY_FIELDS})
    st.success(done)
who = st.selectbox("Rater", list(recorded))
with st.form("identity"):
    values = {
        f: st.text_input(f.replace("_", " ").capitalize(), key=f"identity:{f}")
        for f in IDENTITY_FIELDS
    }
    save = st.form_submit_button("Record identity")
if save:
    record(user, who, values)

if recorded.get(who) and st.button(f"Reveal {who}'s identity (audited)"):
    with session() as s:
        revealed = reveal_identity(s, actor=user, pseudonym=who, key_path=settings().identity_key)
    st.json(revealed)
