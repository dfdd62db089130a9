"""The Sign attestation page's parts: the reviews a signature covers (hand-backs once
confirmed), signing, and the rater's attestations already on file."""

from pathlib import Path

import streamlit as st

from app_pages.common import escaped, session
from fma_bands.core.actions import sub_action
from fma_bands.core.errors import FmaBandsError
from fma_bands.core.labels import case_label
from fma_bands.core.people import UserPublic
from fma_bands.core.vignettes import Library
from fma_bands.study.signing import attest, manifestation, on_file
from fma_bands.study.signing_plan import SigningPlan, covered_rows, imported_rows


def reviews_covered(signing: SigningPlan, numbers: dict[str, int]) -> None:
    """What the signature would cover, and each review it leaves out with the reason."""
    if signing.imported:
        st.subheader("Imported from your paper hand-back")
        st.caption(
            "Entered by the coordinator from your paper hand-back. Your signature covers them "
            "only if you confirm that they are your own verdicts."
        )
        st.dataframe(imported_rows(signing, numbers), hide_index=True)
        st.checkbox("These are my verdicts: cover them with my signature", key="attest:confirm")
    st.subheader(f"The {len(signing.reviews)} reviews this signature covers")
    if signing.reviews:
        st.dataframe(covered_rows(signing, numbers), hide_index=True)
    elif signing.imported:
        st.info(
            "Nothing to sign yet: confirm the imported reviews above, or review bands yourself."
        )
    else:
        st.info("You have no current submitted review to sign.")
    for vid, name, why in signing.skipped:
        band = f"{case_label(numbers, vid)} · {sub_action(name).label}"
        st.caption(escaped(f"Not covered: {band}: {why}"))


def sign_attestation(
    lib: Library,
    user: UserPublic,
    *,
    passphrase: str,
    declarations: list[str],
    folder: Path,
    confirm: bool,
) -> None:
    """Sign, and show the manifestation on the next run; a failure shows here, form kept."""
    try:
        with session() as s:
            path = attest(
                s,
                lib,
                rater=user,
                passphrase=passphrase,
                meaning="adjudication",
                declarations=declarations,
                folder=folder,
                confirm_imported=confirm,
            )
        st.session_state.signed = manifestation(folder, path)
        st.rerun()
    except FmaBandsError as exc:
        st.error(escaped(exc.message))


def attestations_on_file(folder: Path, pseudonym: str) -> None:
    if mine := on_file(folder, pseudonym):
        st.subheader("Your attestations on file")
        for line in mine:
            st.caption(escaped(line))
