"""The band editor: one widget per field of app_pages.band_form, each backed by the screen's
entries (app_pages.review_form), so a widget hidden and shown again, or a page left and
reopened, comes back with what the rater entered."""

import streamlit as st

from app_pages import band_form
from app_pages.common import chart, escaped, show_errors
from app_pages.review_screen import Screen
from fma_bands.agreement.picture import Row, band_spec
from fma_bands.core.actions import SubAction
from fma_bands.core.bands import AnyBand
from fma_bands.core.labels import threshold_sentence, tool_names


def edit(screen: Screen, entries: dict, changed, confirm, errors: dict[str, str]) -> None:
    """Draw the editor for the band's kind: `changed(name)` is each widget's on_change, and
    `confirm(to_range)` answers the question a list with gaps asks before it becomes a range."""
    action, key = screen.action, screen.key

    def widget(draw, name: str, label: str, **options):
        field = f"band:{name}"
        if f"{key}:{field}" not in st.session_state:
            st.session_state[f"{key}:{field}"] = entries.get(field)
        return draw(label, key=f"{key}:{field}", on_change=changed, args=(field,), **options)

    if action.kind == "multilabel":
        names = tool_names(screen.vignette)
        st.caption("For each test: not defensible, defensible to order, or required.")
        for test in screen.vignette.orderables:
            widget(
                st.segmented_control,
                band_form.order_field(test),
                escaped(names[test]),
                options=band_form.ORDER_STATES,
                required=True,
            )
    elif action.kind == "boolean":
        widget(
            st.radio,
            "bool",
            "Acceptable answers",
            options=list(band_form.BOOLEAN),
            horizontal=True,
            index=None,
        )
    else:
        if len(action.forms) > 1:
            widget(st.radio, "form", "Write the band as", options=band_form.FORMS, horizontal=True)
            _question(screen, confirm)
        if action.forms == ("interval",) or entries.get("band:form") == band_form.RANGE:
            _bounds(action, widget)
        else:
            widget(
                st.pills,
                "values",
                "Acceptable values",
                options=list(action.domain()),
                selection_mode="multi",
                format_func=action.label_for,
            )
    show_errors(errors, "band")


def _question(screen: Screen, confirm) -> None:
    """A list with gaps asks before it becomes a range."""
    key = screen.key
    question = st.session_state.get(f"{key}:band:question")
    if not question:
        return
    st.warning(escaped(question), icon=":material/help:")
    yes, no = st.columns(2)
    yes.button("Make it a range", key=f"{key}:band:to_range", on_click=confirm, args=(True,))
    no.button("Keep the list", key=f"{key}:band:keep_list", on_click=confirm, args=(False,))


def _bounds(action: SubAction, widget) -> None:
    low, high = st.columns(2)
    if action.bounds is None:  # an ordinal range: choose from its levels
        options = list(action.domain())
        with low:
            widget(
                st.selectbox,
                "lo",
                "Lowest acceptable",
                options=options,
                index=None,
                format_func=action.label_for,
            )
        with high:
            widget(
                st.selectbox,
                "hi",
                "Highest acceptable",
                options=options,
                index=None,
                format_func=action.label_for,
            )
        return
    unit = f" ({action.unit})" if action.unit else ""
    # No min_value or max_value: a bound outside the domain is said in words, not clamped.
    with low:
        widget(st.number_input, "lo", f"Lower bound{unit}", step=1, value=None)
    with high:
        widget(st.number_input, "hi", f"Upper bound{unit}", step=1, value=None)


def picture(screen: Screen, band: AnyBand | None, last: AnyBand | None) -> None:
    """The rater's band beside the proposal (review mode), and what it means for the study;
    while the band on screen is incomplete or wrong, the last complete one stays drawn."""
    shown = band or last
    if shown is None:
        return
    rows = [Row("your band", shown)]
    if screen.mode == "review":
        proposal = screen.proposal
        rows.insert(0, Row("proposal", proposal.acceptable, proposal.disputed_span))
    threshold = screen.proposal.effective_threshold
    names = tool_names(screen.vignette)
    spec = band_spec(
        screen.name, rows, threshold=threshold, orderables=screen.vignette.orderables, names=names
    )
    chart(spec)
    if band is None:
        st.caption("The picture shows your last complete band until the problem above is fixed.")
    st.caption(escaped(threshold_sentence(shown, threshold)))
