"""The band editor's fields as plain data: a band as the fields a rater edits, those fields read
back as a band with every problem said in plain words, and switching between a list of values
and a range without losing what the band admits.

Fields are a flat mapping with the names the review screen gives its widgets under `band:`:
`form`, `values`, `lo`, `hi` (ordinal and numeric bands), `bool` (yes/no bands) and
`order:<test>` (orders: not defensible, defensible or required).
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fma_bands.core.actions import SubAction, Value
from fma_bands.core.bands import AnyBand, MultilabelBand, SetBand, parse_band
from fma_bands.core.errors import FmaBandsError

LIST, RANGE = "a list of values", "a range"
FORMS = (LIST, RANGE)
BOOLEAN = {"yes only": [True], "no only": [False], "either is defensible": [False, True]}
NOT_DEFENSIBLE, DEFENSIBLE, REQUIRED = "not defensible", "defensible", "required"
ORDER_STATES = (NOT_DEFENSIBLE, DEFENSIBLE, REQUIRED)
# What one value of each numeric sub-action is called in a sentence.
_NOUNS = {
    "esi_acuity": "ESI level",
    "urgency_score": "urgency score",
    "reassess_urgency_score": "urgency score",
    "analgesia_tier": "analgesia tier",
    "followup_days": "follow-up interval",
}


# A bound's number field: it keeps a fraction as typed (a whole-number field would cut 12.5 to 12
# unseen), shows whole numbers without decimals, and the reading refuses a fraction in words.
BOUND_INPUT: dict[str, Any] = {"step": 1.0, "format": "%g", "value": None}


def order_field(test: str) -> str:
    return f"order:{test}"


def field_names(action: SubAction, orderables: Sequence[str]) -> tuple[str, ...]:
    """Every field the editor of this sub-action has."""
    if action.kind == "multilabel":
        return tuple(order_field(t) for t in orderables)
    if action.kind == "boolean":
        return ("bool",)
    if action.forms == ("interval",):
        return ("lo", "hi")
    return ("form", "values", "lo", "hi")


def fields_for(action: SubAction, band: AnyBand | None, orderables: Sequence[str]) -> dict:
    """The editor's fields showing `band` (empty fields for None)."""
    if action.kind == "multilabel":
        required = set(band.required) if isinstance(band, MultilabelBand) else set()
        defensible = band.values() if band is not None else frozenset()
        return {
            order_field(t): REQUIRED
            if t in required
            else DEFENSIBLE
            if t in defensible
            else NOT_DEFENSIBLE
            for t in orderables
        }
    if action.kind == "boolean":
        values = sorted(band.values()) if band is not None else None
        return {"bool": next((k for k, v in BOOLEAN.items() if v == values), None)}
    values = sorted(band.values()) if band is not None else []
    lo, hi = (values[0], values[-1]) if values else (None, None)
    if action.forms == ("interval",):
        return {"lo": lo, "hi": hi}
    form = LIST if isinstance(band, SetBand) else RANGE
    return {"form": form, "values": values, "lo": lo, "hi": hi}


@dataclass(frozen=True)
class Reading:
    """The band on screen in the vignette-file form (None while incomplete or wrong), and what
    is wrong with it, in words a rater reads."""

    band: Any
    problem: str | None = None


def read(action: SubAction, fields: Mapping[str, Any], orderables: Sequence[str]) -> Reading:
    if action.kind == "multilabel":
        return _read_orders(fields, orderables)
    if action.kind == "boolean":
        chosen = BOOLEAN.get(fields.get("bool") or "")
        if chosen is None:
            return Reading(None, "Choose which answers are acceptable.")
        return Reading(list(chosen))
    if action.forms != ("interval",) and fields.get("form") != RANGE:
        values = sorted(v for v in fields.get("values") or [] if v in action.domain())
        if not values:
            return Reading(None, "Choose at least one acceptable value.")
        return Reading(values)
    return _read_bounds(action, fields.get("lo"), fields.get("hi"))


def _read_orders(fields: Mapping[str, Any], orderables: Sequence[str]) -> Reading:
    states = {t: fields.get(order_field(t)) or NOT_DEFENSIBLE for t in orderables}
    defensible = [t for t in orderables if states[t] in (DEFENSIBLE, REQUIRED)]
    required = [t for t in orderables if states[t] == REQUIRED]
    if not defensible:
        return Reading(None, "Mark at least one test as defensible to order.")
    return Reading({"required": sorted(required), "defensible": sorted(defensible)})


def _read_bounds(action: SubAction, lo: Any, hi: Any) -> Reading:
    if lo is None or hi is None:
        missing = "both bounds" if lo is None and hi is None else "lower" if lo is None else "upper"
        which = missing if missing == "both bounds" else f"the {missing} bound"
        return Reading(None, f"Give {which} of the range.")
    for which, value in (("lower", lo), ("upper", hi)):
        # The fields take what is typed as it is typed (BOUND_INPUT): 12.5 is said, never
        # cut to 12.
        if not float(value).is_integer():
            return Reading(None, f"The {which} bound, {value:g}, is not a whole number.")
    lo, hi = int(lo), int(hi)
    domain = action.domain()
    first, last = domain[0], domain[-1]
    noun = _NOUNS.get(action.name, action.label.lower())
    shown = action.label_for
    for which, value in (("lower", lo), ("upper", hi)):
        if value < first:  # type: ignore[operator]
            return Reading(
                None,
                f"The {which} bound, {shown(value)}, is below the smallest {noun}, {shown(first)}.",
            )
        if value > last:  # type: ignore[operator]
            return Reading(
                None,
                f"The {which} bound, {shown(value)}, is above the largest {noun}, {shown(last)}.",
            )
    if lo > hi:
        return Reading(
            None, f"The lower bound, {shown(lo)}, is above the upper bound, {shown(hi)}."
        )
    return Reading({"min": lo, "max": hi})


def band_of(
    action: SubAction, fields: Mapping[str, Any], orderables: Sequence[str]
) -> tuple[AnyBand | None, str | None]:
    """The typed band on screen and any problem; the last check is the band model's own."""
    reading = read(action, fields, orderables)
    if reading.band is None:
        return None, reading.problem
    try:
        return parse_band(action.name, reading.band, orderables=orderables), None
    except FmaBandsError as exc:  # not reachable from the editor's widgets; kept as a guard
        return None, exc.message


# Switching between a list and a range -----------------------------------------------------------


@dataclass(frozen=True)
class Switch:
    """The fields after a switch of form, or, for a list with gaps, the question to ask first."""

    fields: dict
    question: str | None = None


def switch_form(
    action: SubAction, fields: Mapping[str, Any], to: str, *, confirmed: bool = False
) -> Switch:
    """The same band written the other way: a range from a list's lowest to highest value, a
    list of every value of a range. A list with gaps would gain values as a range: unless
    `confirmed`, the fields stay a list and the question says which values it would gain."""
    now = dict(fields)
    if to == RANGE:
        values = sorted(now.get("values") or [])
        if not values:
            return Switch(now | {"form": RANGE, "lo": None, "hi": None})
        domain = list(action.domain())
        span = domain[domain.index(values[0]) : domain.index(values[-1]) + 1]
        gained = [v for v in span if v not in values]
        if gained and not confirmed:
            return Switch(now | {"form": LIST}, _gap_question(action, values, gained))
        return Switch(now | {"form": RANGE, "lo": values[0], "hi": values[-1]})
    lo, hi = now.get("lo"), now.get("hi")
    listed: list[Value] = []
    if lo is not None and hi is not None:
        listed = [v for v in action.domain() if lo <= v <= hi]  # type: ignore[operator]
    elif (one := lo if lo is not None else hi) is not None:
        listed = [one]
    return Switch(now | {"form": LIST, "values": listed})


def _gap_question(action: SubAction, values: list, gained: list) -> str:
    shown = ", ".join(action.label_for(v) for v in values)
    added = ", ".join(action.label_for(v) for v in gained)
    return (
        f"Your list ({shown}) has a gap. As a range, from {action.label_for(values[0])} to "
        f"{action.label_for(values[-1])}, the band would also admit {added}."
    )


# The disputed span an AMEND may set or clear ----------------------------------------------------

KEEP_SPAN, NO_SPAN, OWN_SPAN = "keep", "none", "set"


def span_choices(proposed: AnyBand | None) -> tuple[str, ...]:
    """What the rater may do with the disputed span: keep the proposal's (when it has one),
    record none, or write their own."""
    return (KEEP_SPAN, NO_SPAN, OWN_SPAN) if proposed is not None else (NO_SPAN, OWN_SPAN)


def span_field_names(action: SubAction) -> tuple[str, ...]:
    """A span is a list of values (orders, yes/no and ordinal levels alike), or a range where
    the band itself is always a range (a score, a count of days)."""
    if action.forms == ("interval",):
        return ("choice", "lo", "hi")
    return ("choice", "values")


def span_fields_for(
    action: SubAction, proposed: AnyBand | None, corrections: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The span editor's fields showing the rater's stored correction, else the proposal's."""
    corrected = corrections or {}
    if "disputed_span" in corrected:
        raw = corrected["disputed_span"]
        choice = NO_SPAN if raw is None else OWN_SPAN
        span = None if raw is None else parse_band(action.name, raw, span=True)
    else:
        choice = KEEP_SPAN if proposed is not None else NO_SPAN
        span = proposed
    values = sorted(span.values()) if span is not None else []
    if action.forms == ("interval",):
        lo, hi = (values[0], values[-1]) if values else (None, None)
        return {"choice": choice, "lo": lo, "hi": hi}
    return {"choice": choice, "values": values}


@dataclass(frozen=True)
class SpanReading:
    """The span on screen: `changed` when the rater records none or writes their own, `span`
    (harness form, None for none) and what is wrong with it."""

    changed: bool
    span: Any = None
    problem: str | None = None


def read_span(
    action: SubAction, fields: Mapping[str, Any], orderables: Sequence[str]
) -> SpanReading:
    choice = fields.get("choice")
    if choice == NO_SPAN:
        return SpanReading(True)
    if choice != OWN_SPAN:
        return SpanReading(False)
    if action.forms == ("interval",):
        reading = _read_bounds(action, fields.get("lo"), fields.get("hi"))
        if reading.problem is not None:
            return SpanReading(True, None, reading.problem.replace("range", "disputed span"))
        return SpanReading(True, reading.band)
    allowed = orderables if action.kind == "multilabel" else action.domain()
    values = [v for v in allowed if v in (fields.get("values") or [])]
    if not values:
        return SpanReading(True, None, "Choose the values left disputed, or record none.")
    return SpanReading(True, values)
