"""The Study admin page's rounds: where the study stands, and opening round 2 for the bands the
coordinator chooses (by default the discordant ones), once confirmed. A fragment, so choosing
bands reruns this part only."""

import streamlit as st

from app_pages.common import current_user, escaped, library, session, settings
from fma_bands.core.actions import sub_action
from fma_bands.core.errors import FmaBandsError
from fma_bands.core.people import UserPublic
from fma_bands.study.rounds import DISCORD, discordant_bands, open_round, state


def _coordinator() -> UserPublic:
    user = current_user()
    assert user is not None and user.is_coordinator, "the Study admin page is the coordinator's"
    return user


def _label(band: tuple[str, str]) -> str:
    return f"{band[0]} · {sub_action(band[1]).label}"


@st.fragment
def rounds() -> None:
    user, lib = _coordinator(), library()
    with session() as s:
        now = state(s, viewer=user)
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
        st.caption(
            "Raters review blind to each other. The round is closed on Raters' progress, once "
            "confirmed; a closed round is frozen (no edit, no import) and never reopened."
        )
    elif not closed_first:
        st.info(f"Round {now.number} is closed: its reviews are frozen and no round follows it.")
    if now.bands:
        rows = [
            {"band": _label((b.vignette_id, b.sub_action)), "raters": ", ".join(b.raters)}
            for b in now.bands
        ]
        st.dataframe(rows, hide_index=True)
        st.caption(f"The bands re-reviewed in round {now.number}, and who reviews each.")
    if closed_first:
        _open_round_two(user, discord)


def _open_round_two(user: UserPublic, discord) -> None:
    lib = library()
    st.markdown("**Open round 2** for the bands still in dispute")
    if discord:
        st.dataframe(
            [
                {
                    "band": _label(d.band),
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
        "Bands for round 2", every, default=[d.band for d in discord], format_func=_label
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
