"""The alpha chart of the Agreement page (an Altair spec; no Streamlit here): each defined alpha
as a point on -1 to 1 with its 95% interval, and the 0.667 and 0.800 thresholds dashed. An
interval reaching below -1 (alpha has no lower bound: a few disagreeing bands can take a
bootstrap resample far below it) widens the axis to hold it whole."""

import math
from collections.abc import Sequence

import altair as alt

THRESHOLDS = (0.667, 0.800)
TITLE = "alpha and its 95% interval (dashed: 0.667 and 0.800; undefined alphas are not drawn)"


def alpha_chart(points: Sequence[dict]) -> alt.LayerChart | None:
    """`points` as views.chart_points gives them; None when no alpha is defined."""
    if not points:
        return None
    y = alt.Y("scope:N", title=None, sort=None, axis=alt.Axis(labelLimit=300))
    x_scale = alt.Scale(domain=[axis_start(points), 1])
    data = alt.Chart(alt.Data(values=list(points)))
    intervals = data.transform_filter("datum.lo != null").mark_rule(strokeWidth=3, color="#5c6bc0")
    return (
        intervals.encode(
            x=alt.X(
                "lo:Q",
                title=TITLE,
                scale=x_scale,
            ),
            x2="hi:Q",
            y=y,
        )
        + data.mark_point(filled=True, size=80).encode(
            x=alt.X("alpha:Q", scale=x_scale),
            y=y,
            tooltip=["scope:N", "alpha:Q", "bands:Q", "reading:N"],
        )
        + alt.Chart(alt.Data(values=[{"x": t} for t in THRESHOLDS]))
        .mark_rule(strokeDash=[4, 4], color="gray")
        .encode(x="x:Q")
    ).properties(
        height=36 * len(points) + 40,
        autosize=alt.AutoSizeParams(type="fit-x", contains="padding"),
    )


def axis_start(points: Sequence[dict]) -> float:
    """-1, or the lowest bound or alpha below it, rounded down to a whole number."""
    values = [v for p in points for v in (p.get("lo"), p.get("alpha")) if v is not None]
    return float(min(-1, math.floor(min(values, default=-1))))
