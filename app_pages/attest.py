"""Sign an attestation: the statement, the declarations, every review it covers, the passphrase
again, and the signature manifestation once signed."""

from datetime import datetime
from pathlib import Path

import streamlit as st

from app_pages.common import library, require_user, session, settings
from fma_bands.actions import sub_action
from fma_bands.attestations import attest, plan
from fma_bands.bands import describe, parse_band
from fma_bands.envelopes import read_folder, signed_revisions
from fma_bands.errors import FmaBandsError
from fma_bands.identity import is_recorded
from fma_bands.protocol import DECLARATIONS, STATEMENT_TEXT


def _when(stamp: str) -> str:
    """'2026-11-29T19:30:07.378140Z' as '29 Nov 2026, 19:30:07 UTC'."""
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").strftime("%d %b %Y, %H:%M:%S UTC")


user = require_user("rater")
lib = library()
folder = settings().attestations
with session() as s:
    signing = plan(s, lib, user)
    identity_recorded = is_recorded(s, [user.pseudonym])[user.pseudonym]

st.title("Sign your attestation")
st.caption(
    "Your signature makes your reviews count as clinician adjudication. It is checked by anyone "
    "with the attestations folder, with no database and no trust in the coordinator."
)
just_signed = st.session_state.pop("signed", None)
if just_signed:
    st.success("Signed. Signature manifestation:", icon=":material/verified:")
    st.table(
        {
            "Printed name": [just_signed["name"]],
            "Signed at": [_when(just_signed["at"])],
            "Meaning": [just_signed["meaning"]],
            "File": [Path(just_signed["file"]).name],
        }
    )

if not identity_recorded:
    st.warning(
        "Your private identity (name, qualifications, registration) is not recorded yet. The "
        "coordinator records it; you can sign once it is."
    )

st.subheader("Statement")
st.write(STATEMENT_TEXT)
st.subheader(f"The {len(signing.reviews)} reviews this signature covers")
if signing.reviews:
    st.dataframe(
        [
            {
                "vignette": r["vignette_id"],
                "sub-action": sub_action(r["sub_action"]).label,
                "verdict": r["verdict"],
                "band attested": "none (declined)"
                if r["attested_band"] is None
                else describe(parse_band(r["sub_action"], r["attested_band"])),
                "revision": r["revision"],
            }
            for r in signing.reviews
        ],
        hide_index=True,
    )
else:
    st.info("You have no current submitted review to sign.")
for skipped in signing.skipped:
    st.caption(f"Not covered: {skipped}")
signed = signed_revisions(folder, user.pseudonym)
changed = [
    f"{r['vignette_id']} · {sub_action(r['sub_action']).label}"
    for r in signing.reviews
    if (r["vignette_id"], r["sub_action"]) in signed
    and signed[(r["vignette_id"], r["sub_action"])] != r["revision"]
]
if changed:
    st.warning(
        "You changed these reviews after signing: " + "; ".join(changed) + ". Your attestation "
        "on file still covers the earlier versions, and the registry counts those until you sign "
        "again; signing now supersedes them."
    )

with st.form("attest", clear_on_submit=True):
    st.markdown("**Declarations** (all are required)")
    ticks = {key: st.checkbox(text, key=f"declare:{key}") for key, text in DECLARATIONS.items()}
    meaning = "adjudication"
    st.caption(
        "Meaning of this signature: adjudication, your clinical judgement of each band listed. "
        "The printed name is your pseudonym; your real name stays private, bound to it by the "
        "published identity commitment."
    )
    passphrase = st.text_input("Your passphrase, again", type="password")
    sign = st.form_submit_button(
        "Sign attestation", type="primary", disabled=not (signing.reviews and identity_recorded)
    )
if sign:
    try:
        with session() as s:
            path = attest(
                s,
                lib,
                rater=user,
                passphrase=passphrase,
                meaning=meaning,
                declarations=[k for k, ticked in ticks.items() if ticked],
                folder=folder,
            )
        _, checked = read_folder(folder, [path])
        manifest = checked[0].statement["predicate"]["signature_manifestation"]
        st.session_state.signed = {
            "name": manifest["printed_name"],
            "at": manifest["signed_at"],
            "meaning": manifest["meaning"],
            "file": str(path),
        }
        st.rerun()
    except FmaBandsError as exc:
        st.error(str(exc))

mine = [
    c for c in read_folder(folder)[1] if c.pseudonym == user.pseudonym and c.kind == "adjudication"
]
if mine:
    st.subheader("Your attestations on file")
    for c in mine:
        m = c.statement["predicate"]["signature_manifestation"]
        st.caption(
            f"{c.path.name}: signed {_when(m['signed_at'])} ({m['meaning']}), "
            f"{len(c.statement['subject'])} bands"
        )
