"""The coordinator's desk: the study's rounds (round 2 opened here, once confirmed; a round is
closed on Raters' progress), the review mode, the registry policy (quorum and specialty scope,
saved to attestations/policy.yaml), who reviews what, and raters' progress.

The rounds and the assignment are fragments: choosing bands or raters reruns that part only."""

from typing import Any

import streamlit as st

from app_pages.common import escaped, library, require_user, session, settings
from fma_bands.core.actions import SUB_ACTIONS, sub_action
from fma_bands.core.errors import FmaBandsError
from fma_bands.core.people import UserPublic
from fma_bands.core.vignettes import Library
from fma_bands.evidence.policy import Policy
from fma_bands.study.assignment import change, study_bands
from fma_bands.study.coverage import coverage, explain, problem_bands, study_quorum
from fma_bands.study.governance import policy_in_force, set_policy
from fma_bands.study.rounds import DISCORD, discordant_bands, open_round
from fma_bands.study.rounds import state as round_state
from fma_bands.study.state import set_mode, study
from fma_bands.study.submissions import rater_progress
from fma_bands.study.users import list_users

MODE_LABELS = {
    "review": "review: raters see the proposal, source, clause and reasoning",
    "blind": "blind: raters write each band without seeing the proposal (no ACCEPT)",
}


def _band_label(band: tuple[str, str]) -> str:
    return f"{band[0]} · {sub_action(band[1]).label}"


# Review rounds --------------------------------------------------------------------------------


@st.fragment
def rounds(user: UserPublic) -> None:
    """Where the study stands, and opening round 2 once round 1 is closed."""
    lib = library()
    with session() as s:
        now = round_state(s, viewer=user)
        closed_first = now.number == 1 and now.phase == "closed"
        discord = (
            discordant_bands(s, lib, viewer=user, folder=settings().attestations)
            if closed_first
            else []
        )
    st.subheader("Review rounds")
    if flash := st.session_state.pop("round_flash", None):
        st.success(flash)
    st.markdown(f"Round {now.number} is **{now.phase}**.")
    if now.phase == "open":
        who = (
            "Raters review blind to each other."
            if now.number == 1
            else "Each band's raters see round 1 anonymised (Rater A, B, ...) and keep or revise "
            "their band; they see no one's round-2 review."
        )
        st.caption(
            f"{who} The round is closed on Raters' progress, once confirmed; a closed round is "
            "frozen (no edit, no import) and never reopened."
        )
    elif not closed_first:
        st.info(f"Round {now.number} is closed: its reviews are frozen and no round follows it.")
    if now.bands:
        rows = [
            {"band": _band_label((b.vignette_id, b.sub_action)), "raters": ", ".join(b.raters)}
            for b in now.bands
        ]
        st.dataframe(rows, hide_index=True)
        st.caption(f"The bands re-reviewed in round {now.number}, and who reviews each.")
    if closed_first:
        _open_round_two(user, discord)


def _open_round_two(user: UserPublic, discord) -> None:
    """Round 2 for the bands the coordinator chooses (by default the discordant ones)."""
    lib = library()
    st.markdown("**Open round 2** for the bands still in dispute")
    if discord:
        st.dataframe(
            [
                {
                    "band": _band_label(d.band),
                    "raters with a band": d.n_raters,
                    "why": "; ".join(DISCORD[c] for c in d.reasons),
                }
                for d in discord
            ],
            hide_index=True,
        )
        st.caption("Discordant after round 1: the bands the registry would refuse on round 1.")
    else:
        st.caption("No band is discordant after round 1; choose bands to re-review, if any.")
    every = [(v.id, p.sub_action) for v in lib for p in v.proposals]
    chosen = st.multiselect(
        "Bands for round 2", every, default=[d.band for d in discord], format_func=_band_label
    )
    st.caption(
        "Their raters see round 1's bands as Rater A, B, C (never a pseudonym), how many admit "
        "each value and the round-1 reasons without names, then keep or revise their band, "
        "with a reason. Round 1 stays the reliability figure."
    )
    sure = st.checkbox("I understand: open round 2 for these bands now", key="round_two_sure")
    if st.button("Open round 2", type="primary", disabled=not (sure and chosen)):
        try:
            with session() as s:
                opened = open_round(
                    s, lib, actor=user, number=2, folder=settings().attestations, bands=chosen
                )
        except FmaBandsError as exc:
            st.error(escaped(exc.message))
            return
        st.session_state.round_flash = f"Round 2 is open for {len(opened.bands)} band(s)."
        st.rerun(scope="app")


# The registry policy --------------------------------------------------------------------------


def _saved_policy() -> Policy:
    """The policy in force; without one, the default, and a warning that nothing counts yet."""
    with session() as s:
        found = policy_in_force(s)
    if found is None:
        st.warning("No policy is signed yet. Until one is, nothing is clinician-adjudicated.")
        return Policy()
    return found


# Who reviews what -----------------------------------------------------------------------------


def _change(lib: Library, user: UserPublic, assigned: bool) -> None:
    """Add the chosen rater to the chosen bands (`assigned`), or remove them."""
    state = st.session_state
    if not state.get("assign:rater"):
        state["assign:outcome"] = ("The assignment was not changed:", "choose a rater")
        return
    try:
        with session() as s:
            made = change(
                s,
                lib,
                actor=user,
                rater=state["assign:rater"],
                bands=[tuple(b.split(":", 1)) for b in state.get("assign:bands") or []],
                vignettes=state.get("assign:vignettes") or [],
                sub_actions=state.get("assign:subs") or [],
                assigned=assigned,
            )
    except FmaBandsError as exc:
        state["assign:outcome"] = ("The assignment was not changed:", exc.message)
        return
    verb = "added to" if assigned else "removed from"
    state["assign:outcome"] = (
        "Assignment changed:",
        "\n".join(f"{m.rater} {verb} {m.target}" for m in made),
    )


@st.fragment
def assignment(lib: Library, user: UserPublic) -> None:
    """The bands that cannot be adjudicated as assigned, every band's raters, and the form that
    changes an assignment."""
    with session() as s:
        quorum = study_quorum(s)
        rows = coverage(s, lib, viewer=user, quorum=quorum)
        raters = [r.pseudonym for r in list_users(s, role="rater")]
    st.subheader("Who reviews what")
    st.caption(
        "By default each band goes to every rater whose signed specialty covers its "
        "sub-action's scope (every rater where the harness has no scope rule). Add or remove "
        "raters below; the latest change covering a band decides it."
    )
    if outcome := st.session_state.pop("assign:outcome", None):
        # The app's own heading; the details, which name raters and bands, as plain text.
        (st.success if outcome[0].startswith("Assignment changed") else st.error)(outcome[0])
        st.text(outcome[1])
    flagged = problem_bands(rows)
    rule = f"the quorum of {quorum}" if quorum else "a quorum (no policy saved yet)"
    if flagged:
        st.warning(
            f"{len(flagged)} of {len(rows)} bands cannot be adjudicated as assigned: too few "
            f"activated raters for {rule}, or none whose specialty covers the scope.",
            icon=":material/warning:",
        )
        st.dataframe(
            [_row(r) | {"why": explain(r)} for r in flagged], hide_index=True, width="stretch"
        )
    else:
        st.success(f"Every band has enough activated raters for {rule}, in scope.")
    with st.expander(f"Every band's raters ({len(rows)} bands)"):
        st.dataframe([_row(r) for r in rows], hide_index=True, width="stretch")
    with st.form("assign"):
        st.selectbox("Rater", raters, index=None, key="assign:rater")
        every = [f"{vid}:{name}" for vid, name in study_bands(lib)]
        st.multiselect("Bands", every, key="assign:bands")
        st.multiselect(
            "Every band of these sub-actions",
            list(SUB_ACTIONS),
            format_func=lambda name: sub_action(name).label,
            key="assign:subs",
        )
        st.multiselect("Every band of these vignettes", list(lib.vignettes), key="assign:vignettes")
        add, remove = st.columns(2)
        add.form_submit_button("Add the rater", on_click=_change, args=(lib, user, True))
        remove.form_submit_button("Remove the rater", on_click=_change, args=(lib, user, False))


def _row(r: Any) -> dict[str, Any]:
    return {
        "vignette": r.vignette_id,
        "sub-action": sub_action(r.sub_action).label,
        "assigned raters": ", ".join(r.raters) or "nobody",
        "activated": r.able,
        "in scope": "no scope rule" if r.in_scope is None else str(r.in_scope),
    }


# The page -------------------------------------------------------------------------------------

user = require_user("coordinator")
lib = library()
with session() as s:
    current = study(s)
    progress = rater_progress(s, lib, viewer=user)

st.title("Study admin")
where = escaped(settings().vignettes)
st.caption(f"{len(lib)} vignettes from {where}; {len(progress)} raters enrolled.")
if lib.problems:
    with st.expander(f"{len(lib.problems)} problem(s) in the vignette files", icon="⚠️"):
        st.code("\n".join(str(p) for p in lib.problems), language=None)

rounds(user)

st.subheader("Review mode")
mode = st.radio(
    "Review mode",
    list(MODE_LABELS),
    index=list(MODE_LABELS).index(current.mode),
    format_func=MODE_LABELS.get,
)
# Changed only by the button under a new choice, never by the choice alone.
if mode != current.mode and st.button("Change the review mode"):
    with session() as s:
        set_mode(s, actor=user, mode=mode)
    st.rerun()

st.subheader("Registry policy")
policy = _saved_policy()
if signed := st.session_state.pop("policy:signed", None):
    st.session_state["policy:passphrase"] = ""  # before the field is drawn again
    st.success(signed)  # our own words and numbers: no markup from anyone
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
    root_passphrase = st.text_input(
        "Your passphrase (it unlocks the study's root key, which signs the policy)",
        type="password",
        key="policy:passphrase",
    )
    sign_policy = st.form_submit_button("Sign the policy")
if sign_policy:
    try:
        with session() as s:
            set_policy(
                s,
                settings().attestations,
                actor=user,
                passphrase=root_passphrase,
                quorum=int(quorum),
                scope=scope,
            )
            in_force = policy_in_force(s)
    except FmaBandsError as exc:
        st.error(escaped(exc.message))
    else:
        wanted = {"quorum": int(quorum), "scope": scope}
        st.session_state["policy:signed"] = (
            f"Policy signed into the study's log: quorum {int(quorum)}, scope {scope}."
            if in_force is not None and in_force.as_dict() == wanted
            else "Policy signed; it takes effect once the steward approves it."
        )
        st.rerun()

assignment(lib, user)

st.subheader("Progress by rater")
if progress:
    st.dataframe(progress, hide_index=True)
    st.caption(
        "Of each rater's assigned bands: those submitted and current, drafts open, submitted "
        "reviews made stale by a changed vignette, and how many are assigned."
    )
else:
    st.write("No rater is enrolled yet: enrol them on the Raters page.")
