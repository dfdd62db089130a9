"""Sign an attestation: the statement, the declarations, every review it covers (hand-backs only
once confirmed), the passphrase again, and the signature manifestation once signed."""

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import streamlit as st

from app_pages.band_table import ROW, row_height
from app_pages.case_links import case_key
from app_pages.common import escaped, library, require_user, session, settings
from fma_bands.core.actions import SUB_ACTIONS, sub_action
from fma_bands.core.band_text import DECLINED_BAND
from fma_bands.core.bands import parse_band
from fma_bands.core.errors import FmaBandsError
from fma_bands.core.labels import (
    case_label,
    case_numbers,
    describe_band,
    direction_words,
    exemption_words,
    tool_names,
)
from fma_bands.core.people import UserPublic
from fma_bands.core.protocol import DECLARATIONS
from fma_bands.core.vignettes import Library
from fma_bands.study import ledger
from fma_bands.study.exemptions import ExemptionSigning, exemption_signing
from fma_bands.study.identity import is_recorded
from fma_bands.study.signing import attest, manifestation, on_file, receipt_on_file
from fma_bands.study.signing_plan import SigningPlan, covered_rows, imported_rows, plan
from fma_bands.study.state import study
from fma_bands.study.store_state import per_state


def band_words(lib: Library, review: dict[str, Any]) -> str:
    """The band a review vouches for, as the review screen shows it: tests by their names in
    the case's vignette; the proposal's band for an ACCEPT."""
    vid, name = review["vignette_id"], review["sub_action"]
    band = review["attested_band"] if "attested_band" in review else review.get("band")
    if review.get("verdict") == "DECLINE":
        return DECLINED_BAND
    vignette = lib.vignettes.get(vid)
    if vignette is None:
        return "" if band is None else str(band)
    proposal = vignette.proposal(name)
    if band is None and review.get("verdict") == "ACCEPT" and proposal is not None:
        return describe_band(proposal.acceptable, tool_names(vignette))
    if band is None:
        return ""
    try:
        parsed = parse_band(name, band, orderables=vignette.orderables)
    except FmaBandsError:  # a vignette changed past reading an old band: shown as signed
        return str(band)
    return describe_band(parsed, tool_names(vignette))


def in_case_order(
    lib: Library, numbers: dict[str, int], reviews: list[dict[str, Any]], rows: list[dict]
) -> list[dict[str, Any]]:
    """The table's rows (one for each review, in the same order) by case number, then by
    sub-action in the protocol's order, each band in words with the vignette's test names."""
    order = {name: i for i, name in enumerate(SUB_ACTIONS)}
    paired = []
    for review, row in zip(reviews, rows, strict=True):
        vid, name = review["vignette_id"], review["sub_action"]
        column = "band attested" if "band attested" in row else "band"
        paired.append(
            (
                (numbers.get(vid, len(numbers) + 1), vid, order.get(name, len(order))),
                {**row, column: band_words(lib, review)},
            )
        )
    return [row for _, row in sorted(paired, key=lambda pair: pair[0])]


# Column widths in pixels that fit together the main column of a 1280-pixel window beside the
# open sidebar, so no column hides off the right; a band's text wraps within its column, in rows
# as tall as the longest band needs.
WIDTHS = {
    "case": 75,
    "sub-action": 130,
    "verdict": 70,
    "band attested": 150,
    "band": 150,
    "corrected": 75,
    "round": 50,
    "revision": 60,
    "origin": 85,
    "already signed": 85,
    "entered": 110,
    "reason": 150,
}
# Rows shown at a time: a rater signs over every row, so a round's reviews of a study of a few
# dozen bands are all in sight; a larger one scrolls inside the table, as said above it.
IN_SIGHT = 30
MOST_LINES = 8  # of a row: an orders band of a dozen tests, whole


def band_table(rows: list[dict[str, Any]], said: str = "") -> None:
    """Rows of reviews with every band's text wrapped whole, never cut; up to IN_SIGHT rows
    shown at a time, the rest a scroll inside the table away (said above it, after `said`)."""
    if len(rows) > IN_SIGHT:
        said += (
            f" {len(rows)} rows: the table shows {IN_SIGHT} at a time; scroll inside it for the "
            "rest."
        )
    if said.strip():
        st.caption(said.strip())
    # Three lines at least (a sub-action's name and an origin wrap), and as many as the longest
    # cell needs up to MOST_LINES (every row is as tall as the tallest: one long reason would
    # make each a screen high); a longer cell is read whole by clicking it, as said above.
    height = row_height(rows, WIDTHS, fewest=3, most=MOST_LINES)
    st.dataframe(
        rows,
        hide_index=True,
        width="stretch",
        row_height=height,
        height=height * min(len(rows), IN_SIGHT) + ROW + 3,
        column_config={
            name: st.column_config.Column(width=width)
            for name, width in WIDTHS.items()
            if rows and name in rows[0]
        },
    )


@dataclass(frozen=True)
class Tables:
    """The tables of a signing plan, in case order with every band in words."""

    imported: list[dict[str, Any]]
    covered: list[dict[str, Any]]


def tables(lib: Library, signing: SigningPlan, numbers: dict[str, int]) -> Tables:
    return Tables(
        in_case_order(lib, numbers, signing.imported, imported_rows(signing, numbers)),
        in_case_order(lib, numbers, signing.reviews, covered_rows(signing, numbers)),
    )


def reviews_covered(
    signing: SigningPlan, shown: Tables, numbers: dict[str, int], round_open: bool
) -> None:
    """What the signature would cover, and each review it leaves out with the reason."""
    if signing.imported:
        st.subheader("Imported from your paper hand-back")
        st.caption(
            "Entered by the coordinator from your paper hand-back. Your signature covers them "
            "only if you confirm that they are your own verdicts."
        )
        band_table(shown.imported)
        st.checkbox("These are my verdicts: cover them with my signature", key="attest:confirm")
    n = len(signing.reviews)
    st.subheader(
        "The review this signature covers" if n == 1 else f"The {n} reviews this signature covers"
    )
    if signing.reviews and not signing.fresh:
        st.success(
            "Your latest review of every band you submitted is signed, exactly as it is now. "
            + (
                "While the round is open, change a review or submit a new one, and you can sign "
                "again."
                if round_open
                else "No round is open: there is nothing more to sign unless a new round opens."
            ),
            icon=":material/verified:",
        )
    if signing.reviews:
        band_table(shown.covered, "In case order. Click a cell to read it on its own.")
    elif signing.imported:
        st.info(
            "Nothing to sign yet: confirm the imported reviews above, or review bands yourself."
        )
    else:
        st.info("You have no current submitted review to sign.")
    for vid, name, why in signing.skipped:
        band = f"{case_label(numbers, vid)} · {sub_action(name).label}"
        st.caption(escaped(f"Not covered: {band}: {why}"))


def exemptions_covered(exempting: ExemptionSigning) -> None:
    """The exemption reviews the signature holds beside the bands (docs/design.md,
    Exemptions)."""
    if not exempting.reviews:
        return
    st.subheader(f"Exemption reviews it also covers: {len(exempting.reviews)}")
    st.dataframe(
        [
            {
                "exemption": exemption_words(r["attribute"], r["sub_action"]),
                "verdict": r["verdict"],
                "direction": direction_words(r["direction"]) if r["direction"] else "",
                "reason": r["reason"],
                "already signed": "no, new or changed since signed"
                if f"{r['attribute']}/{r['sub_action']}" in exempting.fresh
                else "yes, unchanged",
            }
            for r in exempting.reviews
        ],
        hide_index=True,
    )


def receipt_fields(signed: dict[str, str]) -> None:
    """The signature manifestation and receipt, a field to a line. A long unbroken value (the
    key's fingerprint, the head) is a code block that wraps, whole and copyable, never cut."""
    with st.container(border=True):
        for label, value in signed.items():
            if " " not in value and len(value) > 24:
                st.markdown(f"**{escaped(label)}**")
                st.code(value, language=None, wrap_lines=True)
            else:
                st.markdown(f"**{escaped(label)}:** {escaped(value)}")


def sign_attestation(
    lib: Library,
    user: UserPublic,
    *,
    passphrase: str,
    declarations: list[str],
    folder: Path,
    confirm: bool,
) -> None:
    """Sign, and show the manifestation on the next run; a failure shows on the next run too,
    above the form, which keeps all but the passphrase."""
    try:
        with session() as s:
            receipt = attest(
                s,
                lib,
                rater=user,
                passphrase=passphrase,
                meaning="adjudication",
                declarations=declarations,
                folder=folder,
                confirm_imported=confirm,
            )
            st.session_state.signed = manifestation(s, receipt)
            st.session_state.receipt = receipt.as_dict()
    except FmaBandsError as exc:
        st.session_state["attest:failed"] = exc.message
    st.rerun()


user = require_user("rater")
lib, folder = library(), settings().attestations
key = case_key()
numbers = case_numbers(lib, key)
if "signed" in st.session_state:  # signed: the form starts afresh (after an error it keeps all)
    st.session_state.update({f"declare:{k}": False for k in DECLARATIONS})
    st.session_state["attest:passphrase"] = ""
confirm = st.session_state.get("attest:confirm", False)
with session() as s:
    # Made once per state of the store (store_state): signing itself always plans afresh.
    asked = ("signing plan", user.id, confirm, lib.digests, key, ledger.head(s))
    signing = per_state(s, asked, lambda: plan(s, lib, user, confirm_imported=confirm))
    shown = per_state(s, (*asked, "tables"), lambda: tables(lib, signing, numbers))
    exempting = exemption_signing(s, user)
    identity_recorded = is_recorded(s, [user.pseudonym])[user.pseudonym]
    round_open = study(s).phase == "open"

st.title("Sign your attestation")
st.caption(
    "Your signature makes your reviews count as clinician adjudication. It is checked by anyone "
    "with the attestations folder, with no database and no trust in the coordinator."
)
if just_signed := st.session_state.pop("signed", None):
    st.success("Signed. Your signature and your receipt:", icon=":material/verified:")
    receipt_fields(just_signed)
    receipt = st.session_state.pop("receipt", {})
    when = receipt.get("in_folder", "")
    st.caption(
        "Your receipt: keep it. With it anyone can check, later, that the attestations folder "
        f"still holds what you signed (fma-bands verify --since {receipt.get('since', '')}"
        + ("). " if when == "now" else ", once your records are in the folder). ")
        + (
            "They are in the attestations folder now: no round is open."
            if when == "now"
            else f"They reach the attestations folder {when}, so no other rater sees your work "
            "while the round is open."
        )
    )
    st.download_button(
        "Download your receipt",
        data=json.dumps(receipt, indent=2),
        file_name=f"receipt-{user.pseudonym}.json",
        mime="application/json",
        on_click="ignore",  # a rerun would take the receipt off the screen as it is saved
    )
if not identity_recorded:
    st.warning(
        "You cannot sign yet: your private identity (full name, qualifications, registration, "
        "institution and email) is not recorded. Ask the study's coordinator to record it on "
        'the page "Rater identities"; you can sign as soon as it is, with nothing else to do.',
        icon=":material/badge:",
    )

st.subheader("Statement")
st.write(signing.statement(exemptions=bool(exempting.reviews)))
reviews_covered(signing, shown, numbers, round_open)
exemptions_covered(exempting)

if failed := st.session_state.pop("attest:failed", None):
    st.session_state["attest:passphrase"] = ""  # before the field is drawn: not left on screen
    st.error(escaped(failed))
# Everything signed as it is, and no hand-back waiting for a confirmation: a form to sign
# nothing would only ask for a passphrase to no end.
settled = (
    (signing.reviews or exempting.reviews)
    and not (signing.fresh or exempting.fresh)
    and not signing.imported
)
if settled:
    st.caption(
        "There is nothing new to sign, so no form to sign it: the form comes back here when "
        "there is (a review submitted or changed while a round is open)."
    )
else:
    with st.form("attest"):
        st.markdown("**Declarations** (all are required)")
        ticks = {key: st.checkbox(text, key=f"declare:{key}") for key, text in DECLARATIONS.items()}
        st.caption(
            "Meaning of this signature: adjudication, your clinical judgement of each band and "
            "exemption listed. "
            "The printed name is your pseudonym; your real name stays private, bound to it by the "
            "identity commitment your signature carries."
        )
        passphrase = st.text_input(
            "Your passphrase, again", type="password", key="attest:passphrase"
        )
        sign = st.form_submit_button(
            "Sign attestation",
            type="primary",
            disabled=not ((signing.fresh or exempting.fresh) and identity_recorded),
        )
    if sign:
        declared = [k for k, ticked in ticks.items() if ticked]
        if left := [text for key, text in DECLARATIONS.items() if key not in declared]:
            # Said in the boxes' own words (the domain, which refuses it too, names each by
            # the code the command line gives it).
            quoted = "; ".join(f"“{text}”" for text in left)
            st.session_state["attest:failed"] = (
                f"Nothing was signed: tick every declaration first. Not yet ticked: {quoted}"
            )
            st.rerun()
        sign_attestation(
            lib, user, passphrase=passphrase, declarations=declared, folder=folder, confirm=confirm
        )

with session() as s:
    mine = on_file(s, user.pseudonym)
    kept = receipt_on_file(s, user.pseudonym)
if mine:
    st.subheader("Your attestations on file")
    for line in mine:
        st.caption(escaped(line))
if kept is not None and not just_signed:
    # The receipt again, for a rater who left the page without saving it: the same fields.
    st.download_button(
        "Download your receipt (every record above)",
        data=json.dumps(kept.as_dict(), indent=2),
        file_name=f"receipt-{user.pseudonym}.json",
        mime="application/json",
        on_click="ignore",
        key="receipt_on_file",
    )
