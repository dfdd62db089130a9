"""The typed band editor: widgets for each kind of sub-action, kept in session state by key."""

import contextlib

import streamlit as st

from fma_bands.actions import SubAction
from fma_bands.bands import IntervalBand, parse_band
from fma_bands.protocol import QUESTIONS
from fma_bands.reviews import ReviewData
from fma_bands.vignettes import Proposal

BOOLEAN = {"yes only": [True], "no only": [False], "either is defensible": [False, True]}


def forget(key: str) -> None:
    """Drop the screen's entries for one band, so the stored review shows again."""
    for name in [
        k for k in st.session_state if str(k).startswith(f"{key}:") and k != f"{key}:flash"
    ]:
        del st.session_state[name]


def load(key: str, current: ReviewData | None, proposal: Proposal, mode: str) -> None:
    """Fill the widgets from the draft, the review being revised, or the proposal, whenever the
    screen holds none: Streamlit drops widget values once the page is left, and an empty form
    saved over a draft would lose the rater's work."""
    state = st.session_state
    if f"{key}:verdict" in state:
        return
    state[f"{key}:version"] = current.version if current else 0
    state[f"{key}:verdict"] = current.verdict if current else None
    state[f"{key}:reason"] = (current.reason or "") if current else ""
    band = None
    if current is not None:
        for question in QUESTIONS:
            answer = current.answers.get(question["key"], {})
            state[f"{key}:{question['key']}:choice"] = answer.get("choice")
            state[f"{key}:{question['key']}:note"] = answer.get("note", "")
        if current.band is not None:
            band = parse_band(proposal.sub_action, current.band)
    if band is None and mode == "review":
        band = proposal.acceptable
    state[f"{key}:band:kept"] = band
    _set_band(key, proposal.acceptable.action, band)


def _set_band(key: str, action: SubAction, band) -> None:
    state = st.session_state
    if action.kind == "multilabel":
        state[f"{key}:band:required"] = list(band.required) if band else []
        state[f"{key}:band:defensible"] = list(band.defensible) if band else []
    elif action.kind == "boolean":
        values = sorted(band.values()) if band else None
        state[f"{key}:band:bool"] = next((k for k, v in BOOLEAN.items() if v == values), None)
    elif isinstance(band, IntervalBand) or action.forms == ("interval",):
        state[f"{key}:band:form"] = "a range"
        state[f"{key}:band:lo"] = band.min if band else None
        state[f"{key}:band:hi"] = band.max if band else None
    else:
        state[f"{key}:band:form"] = "a list of values"
        state[f"{key}:band:values"] = sorted(band.values()) if band else []


def read(key: str, action: SubAction):
    """The band on screen in the vignette-file form, or None while it is incomplete."""
    state = st.session_state
    if action.kind == "multilabel":
        return {
            "required": list(state.get(f"{key}:band:required", [])),
            "defensible": list(state.get(f"{key}:band:defensible", [])),
        }
    if action.kind == "boolean":
        return BOOLEAN.get(state.get(f"{key}:band:bool"))
    if state.get(f"{key}:band:form") == "a range":
        lo, hi = state.get(f"{key}:band:lo"), state.get(f"{key}:band:hi")
        return None if lo is None or hi is None else {"min": int(lo), "max": int(hi)}
    return sorted(state.get(f"{key}:band:values", []))


def edit(key: str, action: SubAction, orderables: tuple[str, ...]):
    """Draw the editor for this sub-action's kind and return the band on screen."""
    state = st.session_state
    if not any(k.startswith(f"{key}:band:") and k != f"{key}:band:kept" for k in state):
        # The editor was hidden (another verdict chosen): bring back the band last on screen.
        _set_band(key, action, state.get(f"{key}:band:kept"))
    if action.kind == "multilabel":
        st.multiselect(
            "Defensible orders",
            list(orderables),
            key=f"{key}:band:defensible",
            help="Every test it is defensible to order at this step.",
        )
        st.multiselect(
            "Required orders",
            list(orderables),
            key=f"{key}:band:required",
            help="Tests that must be ordered; each must also be defensible.",
        )
    elif action.kind == "boolean":
        st.radio("Acceptable answers", list(BOOLEAN), key=f"{key}:band:bool", horizontal=True)
    else:
        if len(action.forms) > 1:
            st.radio(
                "Write the band as",
                ["a list of values", "a range"],
                key=f"{key}:band:form",
                horizontal=True,
            )
        if state.get(f"{key}:band:form") == "a range":
            _bounds(key, action)
        else:
            st.pills(
                "Acceptable levels",
                list(action.domain()),
                selection_mode="multi",
                format_func=action.label_for,
                key=f"{key}:band:values",
            )
    band = read(key, action)
    if band is None:
        st.caption("The band is incomplete: give every part of it.")
    else:
        # An invalid band is shown beside the editor by the page; keep the last valid one.
        with contextlib.suppress(ValueError):
            state[f"{key}:band:kept"] = parse_band(action.name, band, orderables=orderables)
    return band


def _bounds(key: str, action: SubAction) -> None:
    low, high = st.columns(2)
    if action.bounds is None:
        options = list(action.domain())
        low.selectbox(
            "Lowest acceptable", options, key=f"{key}:band:lo", format_func=action.label_for
        )
        high.selectbox(
            "Highest acceptable", options, key=f"{key}:band:hi", format_func=action.label_for
        )
        return
    first, last = action.bounds
    unit = f" ({action.unit})" if action.unit else ""
    low.number_input(
        f"Lower bound{unit}", min_value=first, max_value=last, step=1, key=f"{key}:band:lo"
    )
    high.number_input(
        f"Upper bound{unit}", min_value=first, max_value=last, step=1, key=f"{key}:band:hi"
    )
