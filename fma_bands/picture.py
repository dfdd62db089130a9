"""Pictures of bands over their sub-action's domain (Altair specs; no Streamlit here).

One row per band, one cell per value for small domains and one bar per run of values for large
ones, with the threshold marked, so a rater sees at a glance what a band admits and whether it
straddles phi.
"""

from collections.abc import Sequence
from dataclasses import dataclass

import altair as alt

from fma_bands.actions import SubAction, Threshold, Value, sub_action
from fma_bands.bands import AnyBand, MultilabelBand

COLOURS = {
    "required": "#00838f",
    "in band": "#2e7d32",
    "disputed": "#f9a825",
    "out of band": "#e0e0e0",
    "threshold holds": "#5c6bc0",
    "threshold fails": "#e8eaf6",
}
SMALL_DOMAIN = 12


@dataclass(frozen=True)
class Row:
    label: str
    band: AnyBand | None
    disputed: AnyBand | None = None


def straddle_sentence(band: AnyBand, threshold: Threshold | None) -> str:
    """One plain sentence on whether the band straddles phi, and what that means."""
    action = band.action
    if action.kind == "multilabel":
        return "Orders are multi-label: no threshold applies, so straddling does not arise."
    if threshold is None:
        return (
            f"No threshold is pre-registered for {action.label.lower()}, so straddling "
            "does not arise."
        )
    holds = sorted(v for v in band.values() if threshold.holds(v))
    fails = sorted(v for v in band.values() if not threshold.holds(v))
    shown = describe_threshold(threshold, action)
    if holds and fails:
        return (
            f"Threshold: {shown}. The band includes both sides ({_labels(action, holds)}; "
            f"{_labels(action, fails)}), so it straddles the threshold: a demographic difference "
            "inside it can count as a within-range flip."
        )
    side = "inside" if holds else "outside"
    return (
        f"Threshold: {shown}. Every value of the band is {side} it, so the band does not "
        "straddle the threshold and can never produce a within-range flip."
    )


_WORDS = {"<=": "at most", ">=": "at least", "<": "below", ">": "above", "==": ""}


def describe_threshold(threshold: Threshold, action) -> str:
    """'any opioid (analgesia tier at least 2 - weak opioid)' rather than 'value >= 2'."""
    if action.kind == "boolean":
        rule = f"{action.label}: {'yes' if threshold.value else 'no'}"
    else:
        words = _WORDS[threshold.op]
        rule = f"{action.label} {words} {action.label_for(threshold.value)}".replace("  ", " ")
    name = (threshold.name or "").replace("_", " ")
    return f"{name} ({rule})" if name and action.kind != "boolean" else rule


def _labels(action, values: Sequence[Value]) -> str:
    if len(values) > 4 and action.kind in ("score", "count"):
        return f"{action.label_for(values[0])} to {action.label_for(values[-1])}"
    return ", ".join(action.label_for(v) for v in values)


def band_chart(
    name: str,
    rows: Sequence[Row],
    *,
    threshold: Threshold | None = None,
    orderables: Sequence[str] = (),
    width: int | str = "container",
) -> alt.Chart:
    """Rows of bands over the domain of sub-action `name`, and a threshold row if there is one."""
    action = sub_action(name)
    domain = list(action.domain(tuple(orderables)))
    records = [
        {"row": row.label, "value": value, "state": _state(row, value)}
        for row in rows
        for value in domain
    ]
    row_order = [r.label for r in rows]
    if threshold is not None and action.kind != "multilabel":
        label = f"threshold: {describe_threshold(threshold, action)}"
        row_order.append(label)
        records += [
            {
                "row": label,
                "value": v,
                "state": f"threshold {'holds' if threshold.holds(v) else 'fails'}",
            }
            for v in domain
        ]
    present = [state for state in COLOURS if any(r["state"] == state for r in records)]
    encoding = {
        "y": alt.Y("row:N", title=None, sort=row_order, axis=alt.Axis(labelLimit=420)),
        "color": alt.Color(
            "state:N",
            title=None,
            scale=alt.Scale(domain=present, range=[COLOURS[state] for state in present]),
            legend=alt.Legend(orient="bottom"),
        ),
    }
    # Streamlit fits charts to the container; fitting only the width keeps each row its height
    # (fitting both squeezed the rows to nothing under the axis and legend).
    size = {
        "width": width,
        "height": 34 * len(row_order),
        "autosize": alt.AutoSizeParams(type="fit-x", contains="padding"),
    }
    if len(domain) <= SMALL_DOMAIN:
        return _cells(action, domain, records, encoding).properties(**size)
    return _bars(action, domain, records, encoding).properties(**size)


def _cells(action: SubAction, domain: list, records: list[dict], encoding: dict) -> alt.Chart:
    """A small domain: one labelled cell per value."""
    for record in records:
        record["label"] = action.label_for(record["value"])
    labels = [action.label_for(v) for v in domain]
    return (
        alt.Chart(alt.Data(values=records))
        .mark_rect(stroke="white", strokeWidth=2)
        .encode(
            x=alt.X("label:N", title=None, sort=labels, axis=alt.Axis(labelAngle=0)),
            tooltip=["row:N", "label:N", "state:N"],
            **encoding,
        )
    )


def _bars(action: SubAction, domain: list, records: list[dict], encoding: dict) -> alt.Chart:
    """A large domain (scores, days): one bar per run of values, zoomed on what the bands use."""
    first, last = int(domain[0]), int(domain[-1])
    # 1 to 30 days should not be squeezed into 8% of 0 to 365.
    used = [int(r["value"]) for r in records if r["state"] in ("in band", "required", "disputed")]
    upper = min(last, max(2 * max(used), 10)) if used else last
    return (
        alt.Chart(alt.Data(values=_runs(records)))
        .mark_bar(height=24)
        .encode(
            x=alt.X(
                "start:Q",
                title=action.label,
                scale=alt.Scale(domain=[first - 0.5, upper + 0.5], nice=False, clamp=True),
            ),
            x2="end:Q",
            tooltip=["row:N", "from:Q", "to:Q", "state:N"],
            **encoding,
        )
        .transform_filter(f"datum.start <= {upper + 0.5}")
    )


def _state(row: Row, value: Value) -> str:
    if row.band is not None and row.band.contains(value):
        if isinstance(row.band, MultilabelBand) and value in row.band.required:
            return "required"
        return "in band"
    if row.disputed is not None and row.disputed.contains(value):
        return "disputed"
    return "out of band"


def _runs(records: list[dict]) -> list[dict]:
    """Contiguous values of the same state merged into one bar: 366 days draw as a few bars."""
    runs: list[dict] = []
    for record in records:
        last = runs[-1] if runs else None
        if (
            last
            and last["row"] == record["row"]
            and last["state"] == record["state"]
            and last["to"] == record["value"] - 1
        ):
            last["to"] = record["value"]
            last["end"] = record["value"] + 0.5
            continue
        runs.append(
            {
                "row": record["row"],
                "state": record["state"],
                "from": record["value"],
                "to": record["value"],
                "start": record["value"] - 0.5,
                "end": record["value"] + 0.5,
            }
        )
    return runs
