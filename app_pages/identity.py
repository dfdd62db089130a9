"""Private identities: the coordinator records them (sealed at rest) and can reveal one for an
editor (audited); only a salted commitment is ever published."""

import streamlit as st

from app_pages.common import escaped, require_user, session, settings
from fma_bands.core.errors import FmaBandsError
from fma_bands.core.people import UserPublic
from fma_bands.core.protocol import IDENTITY_FIELDS
from fma_bands.study.identity import is_recorded, reveal_identity, revealed_text, set_identity
from fma_bands.study.users import list_users

DONE = "identity:done"
FAILED = "identity:failed"
PASSPHRASE = "identity:passphrase"


def record(user: UserPublic, who: str, values: dict[str, str], passphrase: str) -> None:
    """Record the identity and sign its commitment into the roster. The page says how it went on
    the next run, with the passphrase field emptied either way."""
    try:
        with session() as s:
            set_identity(
                s,
                actor=user,
                pseudonym=who,
                record=values,
                key_path=settings().identity_key,
                passphrase=passphrase,
                folder=settings().attestations,
                source="form",
            )
    except FmaBandsError as exc:
        st.session_state[FAILED] = exc.message
    else:
        st.session_state[DONE] = (
            f"Identity of {who} recorded. Its commitment is signed into the study's roster "
            "with the root key; an editor checks a revealed record against it."
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
    "the study's root key signs it into the roster, so an editor shown the private record can "
    "check it matches. A rater can sign once their identity is recorded."
)
if not raters:
    st.info("No rater is enrolled yet.")
    st.stop()
demo = {r.pseudonym for r in raters if r.demo}
st.dataframe(
    [
        {
            "rater": p,
            # `fma-bands demo` records a made-up identity for each of its accounts.
            "identity recorded": ("yes, a demo's made-up one" if p in demo else "yes")
            if ok
            else "not yet: cannot sign",
        }
        for p, ok in recorded.items()
    ],
    hide_index=True,
)

if FAILED in st.session_state or DONE in st.session_state:
    # After an attempt, and before the field is drawn: the passphrase does not stay on screen.
    st.session_state[PASSPHRASE] = ""
if done := st.session_state.pop(DONE, None):
    # Recorded: the private values leave the screen (they stay on it after an error).
    st.session_state.update({f"identity:{f}": "" for f in IDENTITY_FIELDS})
    st.success(done)
if failed := st.session_state.pop(FAILED, None):
    st.error(escaped(failed))
who = st.selectbox("Rater", list(recorded))
if recorded.get(who):
    st.caption(
        f"{who}'s identity is recorded. Recording it again replaces it: a new commitment, "
        "signed into the roster as a new record (the old one stays in the log)."
    )
with st.form("identity"):
    values = {
        f: st.text_input(f.replace("_", " ").capitalize(), key=f"identity:{f}")
        for f in IDENTITY_FIELDS
    }
    passphrase = st.text_input(
        "Your passphrase (it unlocks the study's root key, which signs the commitment)",
        type="password",
        key=PASSPHRASE,
    )
    save = st.form_submit_button("Record identity")
if save:
    record(user, who, values, passphrase)


def reveal(who: str) -> None:
    """The private record for an editor who asks: read on screen, and as the file an editor
    checks against the published commitment. Revealing is audited."""
    try:
        with session() as s:
            revealed = reveal_identity(
                s, actor=user, pseudonym=who, key_path=settings().identity_key
            )
    except FmaBandsError as exc:
        st.error(escaped(exc))
        return
    st.subheader(f"{who}'s private identity")
    record = revealed["record"]
    st.dataframe(
        [
            {"field": f.replace("_", " ").capitalize(), "value": record[f]}
            # In the order the form asks for them; a field the form no longer has, last.
            for f in [
                *(f for f in IDENTITY_FIELDS if f in record),
                *sorted(set(record) - set(IDENTITY_FIELDS)),
            ]
        ],
        hide_index=True,
    )
    st.caption(
        "For the editor only. The file below holds this record with its salt; the editor checks "
        "it against the commitment published in the study's roster with "
        "`fma-bands identity check FILE`. This reveal is in the audit log."
    )
    st.download_button(
        "Download the record for the editor (YAML)",
        data=revealed_text(revealed),
        file_name=f"identity-{who}.yaml",
        mime="application/yaml",
        on_click="ignore",
        icon=":material/download:",
    )


if recorded.get(who) and st.button(f"Reveal {who}'s identity (audited)"):
    reveal(who)
