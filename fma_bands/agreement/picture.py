"""Pictures of bands over their sub-action's domain, as Vega-Lite specifications (no Streamlit).

One row per band (the proposal, the rater's own), one cell per value for small domains and one
bar per run of values for large ones, so a rater sees at a glance what a band admits; never the
study's thresholds, since raters judge clinical defensibility only. Orders are drawn the other
way round, one line per test, so long test names stay readable on a narrow screen. Specs are
plain dicts, far cheaper to build than an Altair chart is to validate.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fma_bands.core.actions import SubAction, Value, sub_action
from fma_bands.core.bands import AnyBand, MultilabelBand

IN_BAND, REQUIRED, DISPUTED, OUT = "in band", "required", "disputed", "not in band"
COLOURS = {
    REQUIRED: "#00838f",
    IN_BAND: "#2e7d32",
    DISPUTED: "#f9a825",
    OUT: "#e0e0e0",
}
SMALL_DOMAIN = 12
ROW_HEIGHT = 40
SCHEMA = "https://vega.github.io/schema/vega-lite/v6.json"


@dataclass(frozen=True)
class Row:
    label: str
    band: AnyBand | None
    disputed: AnyBand | None = None


def band_spec(
    name: str,
    rows: Sequence[Row],
    *,
    orderables: Sequence[str] = (),
    names: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The picture of `rows` over the domain of sub-action `name`; `names` gives orders their
    readable names."""
    action = sub_action(name)
    domain = list(action.domain(tuple(orderables)))
    records = [
        {"row": row.label, "value": value, "state": _state(row, value)}
        for row in rows
        for value in domain
    ]
    row_order = [r.label for r in rows]
    states = [s for s in COLOURS if any(r["state"] == s for r in records)]
    colours = [COLOURS[s] for s in states]
    colour = {
        "field": "state",
        "type": "nominal",
        "title": None,
        "scale": {"domain": states, "range": colours},
        # Two to a line, or one when the names are long: four in one line overflow a narrow
        # column.
        "legend": {
            "orient": "bottom",
            "direction": "horizontal",
            "columns": 2 if max(len(s) for s in states) <= 18 else 1,
            "labelLimit": 260,
        },
    }
    if action.kind == "multilabel":
        spec = _orders(records, row_order, colour, names or {}, orderables)
    elif len(domain) <= SMALL_DOMAIN:
        spec = _cells(action, domain, records, row_order, colour)
    else:
        spec = _bars(action, domain, records, row_order, colour)
    # Fitting only the width keeps each row its height (fitting both squeezed the rows to
    # nothing under the axis and legend).
    autosize = {"type": "fit-x", "contains": "padding"}
    return {"$schema": SCHEMA, "width": "container", "autosize": autosize, **spec}


def _row_axis(row_order: list[str]) -> dict[str, Any]:
    return {
        "field": "row",
        "type": "nominal",
        "title": None,
        "sort": row_order,
        "axis": {"labelLimit": 110, "labelFontSize": 12},
    }


def _cells(action: SubAction, domain: list, records: list[dict], rows: list[str], colour):
    """A small domain: one labelled cell per value, '3 strong opioid' slanted above it."""
    for record in records:
        record["label"] = action.label_for(record["value"])
    labels = [action.label_for(v) for v in domain]
    level = action.kind == "boolean"  # "no" and "yes", each over half the chart
    axis = {
        "labelExpr": "replace(datum.label, ' - ', ' ')",
        "labelOverlap": False,
        "labelLimit": 160,
        "orient": "top",
    }
    if level:
        axis |= {"labelAngle": 0, "labelAlign": "center", "labelFontSize": 12}
    else:
        # Slanted, every label drawn and none over another however narrow the column (level
        # ones hid every other label, ESI 2 and 4, and ran together).
        axis |= {"labelAngle": -35, "labelAlign": "left", "labelFontSize": 11}
    return {
        "height": ROW_HEIGHT * len(rows),
        # Room on the right for the last slanted label ("5 non-urgent"), which the chart's
        # own width leaves out.
        "padding": {"left": 5, "top": 5, "bottom": 5, "right": 5 if level else 90},
        "data": {"values": records},
        "mark": {"type": "rect", "stroke": "white", "strokeWidth": 2},
        "encoding": {
            "x": {"field": "label", "type": "nominal", "title": None, "sort": labels, "axis": axis},
            "y": _row_axis(rows),
            "color": colour,
            "tooltip": [
                {"field": "row", "type": "nominal"},
                {"field": "label", "type": "nominal"},
                {"field": "state", "type": "nominal"},
            ],
        },
    }


def _orders(
    records: list[dict],
    rows: list[str],
    colour,
    names: Mapping[str, str],
    orderables: Sequence[str],
):
    """Orders: one line per test (by its readable name), in the vignette's order of its tests
    (the review form's buttons follow it), one column per band."""
    for record in records:
        record["test"] = names.get(record["value"], record["value"])
    tests = list(dict.fromkeys(names.get(t, t) for t in orderables))
    tests += sorted({r["test"] for r in records} - set(tests))
    return {
        "height": 28 * max(1, len(tests)),
        "data": {"values": records},
        "mark": {"type": "rect", "stroke": "white", "strokeWidth": 2},
        "encoding": {
            "x": {**_row_axis(rows), "axis": {"labelAngle": 0, "orient": "top"}},
            "y": {
                "field": "test",
                "type": "nominal",
                "title": None,
                "sort": tests,
                "axis": {"labelLimit": 200, "labelFontSize": 12},
            },
            "color": colour,
            "tooltip": [
                {"field": "row", "type": "nominal"},
                {"field": "test", "type": "nominal"},
                {"field": "state", "type": "nominal"},
            ],
        },
    }


def _bars(action: SubAction, domain: list, records: list[dict], rows: list[str], colour):
    """A large domain (scores, days): one bar per run of values, zoomed on what the bands use."""
    first, last = int(domain[0]), int(domain[-1])
    # 1 to 30 days should not be squeezed into 8% of 0 to 365.
    used = [int(r["value"]) for r in records if r["state"] in (IN_BAND, REQUIRED, DISPUTED)]
    upper = min(last, max(2 * max(used), 10)) if used else last
    return {
        "height": ROW_HEIGHT * len(rows),
        "data": {"values": _runs(records)},
        "transform": [{"filter": f"datum.start <= {upper + 0.5}"}],
        "mark": {"type": "bar", "height": 26},
        "encoding": {
            "x": {
                "field": "start",
                "type": "quantitative",
                "title": action.label,
                "scale": {"domain": [first - 0.5, upper + 0.5], "nice": False, "clamp": True},
            },
            "x2": {"field": "end"},
            "y": _row_axis(rows),
            "color": colour,
            "tooltip": [
                {"field": "row", "type": "nominal"},
                {"field": "from", "type": "quantitative"},
                {"field": "to", "type": "quantitative"},
                {"field": "state", "type": "nominal"},
            ],
        },
    }


def _state(row: Row, value: Value) -> str:
    if row.band is not None and row.band.contains(value):
        if isinstance(row.band, MultilabelBand) and value in row.band.required:
            return REQUIRED
        return IN_BAND
    if row.disputed is not None and row.disputed.contains(value):
        return DISPUTED
    return OUT


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
