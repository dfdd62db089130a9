"""Review exemptions: the rater's page for the harness's confounded-pair exemptions. Each entry
with the rater's own review, if any (never another rater's), and the form that confirms,
rejects or amends one, with a reason. Sign attestation signs them with the bands."""

import streamlit as st

from app_pages.common import escaped, plain, require_user, session
from fma_bands.core.errors import FmaBandsError
from fma_bands.core.labels import direction_words, exemption_words
from fma_bands.study.exemptions import exemption_rows, review_exemption
from fma_bands.study.state import study

VERDICTS = {
    "CONFIRM": "Confirm: the registered direction is clinically defensible",
    "REJECT": "Reject: no difference in this sub-action is defensible on this attribute",
    "AMEND": "Amend: another direction is the defensible one",
}

user = require_user("rater")
st.title("Review exemptions")
st.caption(
    "Each exemption says that, for the decision named, a difference across one demographic "
    "attribute in the registered direction is legitimate medicine. Judge only whether that "
    "direction is clinically defensible. Your review is yours alone until the round closes."
)
if done := st.session_state.pop("exemptions:done", None):
    st.success(escaped(done))
with session() as s:
    rows = exemption_rows(s, viewer=user)
    current = study(s)
if not rows:
    st.info("The coordinator has not loaded any exemption to review.")
    st.stop()
st.dataframe(
    [
        {
            "exemption": exemption_words(*row.entry.key),
            "defensible direction as registered": direction_words(row.entry.direction),
            "ages": f"{row.entry.age_gate[0]} to {row.entry.age_gate[1]}"
            if row.entry.age_gate
            else "all",
            "needs confirmation": "yes" if row.entry.requires_adjudication else "no",
            "your review": "not yet"
            if row.my_verdict is None
            else row.my_verdict
            + (f" ({direction_words(row.my_direction)})" if row.my_direction else ""),
        }
        for row in rows
    ],
    hide_index=True,
)
if current.phase != "open":
    st.info(
        "No round is open: exemptions are reviewed while a round is open, and a closed round's "
        "reviews are frozen."
    )
    # What the rater said stays readable once the round is closed, reasons included.
    for row in rows:
        if row.my_verdict is not None:
            said = row.my_verdict + (
                f" ({direction_words(row.my_direction)})" if row.my_direction else ""
            )
            with st.container(border=True):
                plain(
                    f"{said} · round {row.my_round}",
                    label=f"Your review: {escaped(exemption_words(*row.entry.key))}",
                )
                plain(row.my_reason or "(no reason given)")
    st.stop()
by_name = {row.entry.name: row for row in rows}
chosen = st.selectbox(
    "Exemption",
    list(by_name),
    format_func=lambda name: exemption_words(*by_name[name].entry.key),
    key="exemptions:entry",
)
row = by_name[chosen]
towards = escaped(direction_words(row.entry.direction))
ages = (
    f", for ages {row.entry.age_gate[0]} to {row.entry.age_gate[1]} only"
    if row.entry.age_gate
    else ""
)
st.markdown(
    f"{escaped(exemption_words(*row.entry.key))}: the direction registered as defensible is "
    f"**{towards}**{ages}."
)
if row.entry.rationale:
    plain(row.entry.rationale, label="Why it is registered")
# The form starts from the rater's own latest review of this entry, never from a default that
# would change their verdict if they only meant to add to the reason.
with st.form(f"exemptions:review:{chosen}"):
    verdict = st.radio(
        "Verdict",
        list(VERDICTS),
        index=list(VERDICTS).index(row.my_verdict) if row.my_verdict in VERDICTS else None,
        format_func=VERDICTS.__getitem__,
        key=f"exemptions:verdict:{chosen}",
    )
    direction = st.text_input(
        "Defensible direction (with Amend only)",
        value=row.my_direction or "",
        help="A word or a few words, kept as the harness writes them (spaces become _): more, "
        "fewer, shorter, longer, away_from_nsaid.",
        key=f"exemptions:direction:{chosen}",
    )
    reason = st.text_area("Reason", value=row.my_reason or "", key=f"exemptions:reason:{chosen}")
    submitted = st.form_submit_button("Submit review", type="primary")
if submitted:
    try:
        if verdict is None:
            raise FmaBandsError("choose a verdict")
        with session() as s:
            made = review_exemption(
                s,
                rater=user,
                name=chosen,
                verdict=verdict,
                # Typed as words ("away from nsaid"), it is the harness's key all the same.
                direction="_".join(direction.lower().split()) or None,
                reason=reason,
            )
            revision = made.revision
    except FmaBandsError as exc:
        st.error(escaped(exc.message))
    else:
        st.session_state["exemptions:done"] = (
            f"Recorded your review of {exemption_words(*row.entry.key)} (revision {revision}). "
            "Sign it on the Sign attestation page."
        )
        st.rerun()
