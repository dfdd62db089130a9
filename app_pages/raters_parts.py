"""What the Raters page does with its forms: enrol a rater or issue a new enrolment code, and
hand the code over, shown once on the next run."""

import streamlit as st

from app_pages.common import escaped, session
from fma_bands.core.errors import FmaBandsError
from fma_bands.core.people import UserPublic
from fma_bands.study.enrolment import enrol, reset
from fma_bands.study.users import get_user

ISSUED = "raters:code"


def issued_code() -> None:
    """The code just issued, shown this once (the state that held it is gone after this run)."""
    if issued := st.session_state.pop(ISSUED, None):
        st.success(
            f"{issued['what']} Give {issued['name']} this enrolment code privately; it is shown "
            f"this once, works once, and expires on {issued['expires']:%d %b %Y}. They activate "
            "their account with it on the sign-in page and choose their own passphrase."
        )
        st.code(issued["code"], language=None)


def _handed_over(what: str, name: str, code: str) -> None:
    """Show the code on the next run only, and empty the form for the next rater."""
    with session() as s:
        expires = get_user(s, name).code_expires_at  # type: ignore[union-attr]
    st.session_state[ISSUED] = {"what": what, "name": name, "code": code, "expires": expires}
    st.session_state["enrol:done"] = True
    st.rerun()


def enrol_rater(
    user: UserPublic, *, pseudonym: str, specialty: str, jurisdiction: str, years: float
) -> None:
    """Enrol the rater the form describes; what is wrong with it shows by field, in words."""
    try:
        with session() as s:
            made, code = enrol(
                s,
                actor=user,
                pseudonym=pseudonym.strip(),
                role="rater",
                specialty=specialty,
                jurisdiction=jurisdiction,
                years_post_registration=int(years),
            )
    except FmaBandsError as exc:
        for field, message in (exc.fields or {"": exc.message}).items():
            words = f"{field.replace('_', ' ').capitalize()}: {message}" if field else message
            st.error(escaped(words))
    else:
        _handed_over(f"Enrolled {made.pseudonym}.", made.pseudonym, code)


def new_code(user: UserPublic, who: str) -> None:
    """A new enrolment code for a rater who lost their passphrase."""
    with session() as s:
        code = reset(s, actor=user, pseudonym=who)
    _handed_over(f"{who} was reset.", who, code)
