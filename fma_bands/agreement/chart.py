"""The alpha chart of the Agreement page (an Altair spec; no Streamlit here): each defined alpha
as a point on -1 to 1 with its 95% interval, and the 0.667 and 0.800 thresholds dashed.

Alpha has no lower bound: a few disagreeing bands can take a bootstrap resample, and so an
interval, far below -1 (-2,521 on the demo's three urgency bands). An axis widened to hold it
drew every other alpha as one dot at its right end, so the axis stays at -1 to 1: what reaches
below -1 is drawn to -1 and marked there with an arrow, its value in the tooltip and in the
table above the chart, which gives every figure as computed."""

from collections.abc import Sequence

import altair as alt

THRESHOLDS = (0.667, 0.800)
LOWEST = -1.0  # the axis's left end
TITLE = "alpha and its 95% interval (dashed: 0.667 and 0.800; ◀: below -1; undefined: not drawn)"
TICKS = [round(-1 + 0.2 * i, 1) for i in range(11)]  # -1 to 1: never a tick alpha cannot reach


def alpha_chart(points: Sequence[dict]) -> alt.LayerChart | None:
    """`points` as views.chart_points gives them; None when no alpha is defined."""
    if not points:
        return None
    shown = [on_axis(p) for p in points]
    y = alt.Y("scope:N", title=None, sort=None, axis=alt.Axis(labelLimit=300))
    # A few pixels beyond each end, so that a point at -1 or 1 is drawn whole.
    x_scale = alt.Scale(domain=[LOWEST, 1], padding=8)
    data = alt.Chart(alt.Data(values=shown))
    # The figures as computed (the marks draw them held at -1).
    tooltip = [
        "scope:N",
        "bands:Q",
        "reading:N",
        alt.Tooltip("computed:Q", title="alpha, as computed"),
        alt.Tooltip("lo:Q", title="interval from"),
        alt.Tooltip("hi:Q", title="interval to"),
    ]
    intervals = data.transform_filter("datum.lo != null").mark_rule(strokeWidth=3, color="#5c6bc0")
    return (
        intervals.encode(
            x=alt.X("lo_shown:Q", title=TITLE, scale=x_scale, axis=alt.Axis(values=TICKS)),
            x2="hi_shown:Q",
            y=y,
        )
        + data.mark_point(filled=True, size=80).encode(
            x=alt.X("alpha:Q", scale=x_scale), y=y, tooltip=tooltip
        )
        + data.transform_filter("datum.below")
        .mark_point(shape="triangle-left", filled=True, size=120, color="#c62828")
        .encode(x=alt.X("lowest:Q", scale=x_scale), y=y, tooltip=tooltip)
        + alt.Chart(alt.Data(values=[{"x": t} for t in THRESHOLDS]))
        .mark_rule(strokeDash=[4, 4], color="gray")
        .encode(x="x:Q")
    ).properties(
        height=36 * len(points) + 40,
        autosize=alt.AutoSizeParams(type="fit-x", contains="padding"),
    )


def on_axis(point: dict) -> dict:
    """The point as the chart draws it: its alpha and its interval's bounds held at -1
    (`alpha`, `lo_shown`, `hi_shown`; the alpha as computed is `computed`), and `below` when
    either the alpha or the interval reached lower."""
    alpha, lo, hi = point["alpha"], point.get("lo"), point.get("hi")
    below = alpha < LOWEST or (lo is not None and lo < LOWEST)
    return {
        **point,
        "alpha": max(alpha, LOWEST),
        "computed": alpha,
        "lo_shown": None if lo is None else max(lo, LOWEST),
        "hi_shown": None if hi is None else max(hi, LOWEST),
        "below": below,
        "lowest": LOWEST,
    }
