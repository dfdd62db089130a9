"""What the Rater identities page does: record a rater's private identity, sealed at rest, and
reveal one for an editor (audited)."""

import streamlit as st

from app_pages.common import escaped, session, settings
from fma_bands.core.errors import FmaBandsError
from fma_bands.core.people import UserPublic
from fma_bands.study.identity import reveal_identity, set_identity

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


def reveal(user: UserPublic, who: str) -> None:
    with session() as s:
        revealed = reveal_identity(s, actor=user, pseudonym=who, key_path=settings().identity_key)
    st.json(revealed)
