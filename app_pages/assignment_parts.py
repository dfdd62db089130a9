"""Who reviews what, for the coordinator, each part a fragment: the bands that cannot be
adjudicated as assigned and every band's raters, changing an assignment (Study admin), and
each band against the quorum (Raters' progress)."""

from typing import Any

import streamlit as st

from app_pages.common import current_user, session, settings
from fma_bands.core.actions import SUB_ACTIONS, sub_action
from fma_bands.core.errors import FmaBandsError
from fma_bands.core.people import UserPublic
from fma_bands.core.vignettes import Library
from fma_bands.study.assignment import change, study_bands
from fma_bands.study.coverage import band_progress, coverage, explain, problem_bands, study_quorum
from fma_bands.study.users import list_users


def _coordinator() -> UserPublic:
    user = current_user()
    assert user is not None and user.is_coordinator, "assignment is the coordinator's"
    return user


def _label(name: str) -> str:
    return sub_action(name).label


def _change(lib: Library, assigned: bool) -> None:
    state = st.session_state
    if not state.get("assign:rater"):
        state["assign:outcome"] = ("The assignment was not changed:", "choose a rater")
        return
    try:
        with session() as s:
            made = change(
                s,
                lib,
                actor=_coordinator(),
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
def assignment(lib: Library) -> None:
    quorum = study_quorum(settings().attestations)
    with session() as s:
        rows = coverage(s, lib, viewer=_coordinator(), quorum=quorum)
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
            "Every band of these sub-actions", list(SUB_ACTIONS), format_func=_label,
            key="assign:subs",
        )  # fmt: skip
        st.multiselect("Every band of these vignettes", list(lib.vignettes), key="assign:vignettes")
        add, remove = st.columns(2)
        add.form_submit_button("Add the rater", on_click=_change, args=(lib, True))
        remove.form_submit_button("Remove the rater", on_click=_change, args=(lib, False))


def _row(r: Any) -> dict[str, Any]:
    return {
        "vignette": r.vignette_id,
        "sub-action": _label(r.sub_action),
        "assigned raters": ", ".join(r.raters) or "nobody",
        "activated": r.able,
        "in scope": "no scope rule" if r.in_scope is None else str(r.in_scope),
    }


@st.fragment
def quorum_progress(lib: Library) -> None:
    quorum = study_quorum(settings().attestations)
    with session() as s:
        rows = band_progress(s, lib, viewer=_coordinator(), quorum=quorum)
    st.subheader("Bands against the quorum")
    short = [r for r in rows if r.needed != 0]
    st.caption(
        f"{len(rows) - len(short)} of {len(rows)} bands have current reviews from enough "
        f"raters for {f'the quorum of {quorum}' if quorum else 'a quorum (no policy yet)'}. "
        "Submitted: raters' latest submitted reviews, still current; a DECLINE counts for "
        "nothing; the registry later counts only signed ones."
    )
    only = st.toggle("Only bands short of the quorum", value=True, key="quorum:short")
    st.dataframe(
        [
            {
                "vignette": r.vignette_id,
                "sub-action": _label(r.sub_action),
                "assigned": r.assigned,
                "submitted": r.submitted,
                "declined": r.declined,
                "status": r.status,
            }
            for r in (short if only else rows)
        ],
        hide_index=True,
        width="stretch",
    )
