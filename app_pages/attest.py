"""Sign an attestation: the statement, the declarations, every review it covers (hand-backs only
once confirmed), the passphrase again, and the signature manifestation once signed."""

import streamlit as st

from app_pages.attest_parts import attestations_on_file, reviews_covered, sign_attestation
from app_pages.common import library, require_user, session, settings
from fma_bands.core.labels import case_numbers
from fma_bands.core.protocol import DECLARATIONS, STATEMENT_TEXT
from fma_bands.study.identity import is_recorded
from fma_bands.study.signing_plan import plan

user = require_user("rater")
lib, folder = library(), settings().attestations
numbers = case_numbers(lib)
if "signed" in st.session_state:  # signed: the form starts afresh (after an error it keeps all)
    st.session_state.update({f"declare:{k}": False for k in DECLARATIONS})
    st.session_state["attest:passphrase"] = ""
confirm = st.session_state.get("attest:confirm", False)
with session() as s:
    signing = plan(s, lib, user, folder, confirm_imported=confirm)
    identity_recorded = is_recorded(s, [user.pseudonym])[user.pseudonym]

st.title("Sign your attestation")
st.caption(
    "Your signature makes your reviews count as clinician adjudication. It is checked by anyone "
    "with the attestations folder, with no database and no trust in the coordinator."
)
if just_signed := st.session_state.pop("signed", None):
    st.success("Signed. Signature manifestation:", icon=":material/verified:")
    st.table(just_signed)  # pseudonym, time, meaning, file name: none of it free text
if not identity_recorded:
    st.warning(
        "Your private identity (name, qualifications, registration) is not recorded yet. The "
        "coordinator records it; you can sign once it is."
    )

st.subheader("Statement")
st.write(STATEMENT_TEXT)
reviews_covered(signing, numbers)

with st.form("attest"):
    st.markdown("**Declarations** (all are required)")
    ticks = {key: st.checkbox(text, key=f"declare:{key}") for key, text in DECLARATIONS.items()}
    st.caption(
        "Meaning of this signature: adjudication, your clinical judgement of each band listed. "
        "The printed name is your pseudonym; your real name stays private, bound to it by the "
        "identity commitment in your signed public record."
    )
    passphrase = st.text_input("Your passphrase, again", type="password", key="attest:passphrase")
    sign = st.form_submit_button(
        "Sign attestation", type="primary", disabled=not (signing.reviews and identity_recorded)
    )
if sign:
    declared = [k for k, ticked in ticks.items() if ticked]
    sign_attestation(
        lib, user, passphrase=passphrase, declarations=declared, folder=folder, confirm=confirm
    )

attestations_on_file(folder, user.pseudonym)
