"""Typed acceptable-action bands: set, interval and multilabel, validated against their sub-action.

The harness reads a band as a Python literal with traps (a tuple is two values, a range drops
its end, a one-bound mapping means "no answer"); this module makes those impossible to write.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationInfo,
    model_validator,
)
from pydantic import ValidationError as PydanticValidationError

from fma_bands.core.actions import SubAction, Threshold, Value, sub_action
from fma_bands.core.canonical import sha256_digest
from fma_bands.core.errors import FmaBandsError

Scalar = StrictInt | StrictBool | StrictStr


class _Band(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    sub_action: str

    @property
    def action(self) -> SubAction:
        return sub_action(self.sub_action)

    def values(self) -> frozenset[Value]:
        raise NotImplementedError

    def contains(self, value: Value) -> bool:
        """Membership as the harness tests it; a value of the wrong type is never a member."""
        if type(value) is not self.action.value_type:
            return False
        return value in self.values()

    def straddles(self, threshold: Threshold | None) -> bool | None:
        """True when the band admits values on both sides of phi; None without a threshold."""
        if threshold is None or self.action.kind == "multilabel":
            return None
        sides = {threshold.holds(v) for v in self.values()}
        return len(sides) == 2

    def canonical(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    def digest(self) -> str:
        return sha256_digest(self.canonical())


class SetBand(_Band):
    form: Literal["set"] = "set"
    members: tuple[Scalar, ...]

    @model_validator(mode="after")
    def _check(self, info: ValidationInfo) -> "SetBand":
        action = sub_action(self.sub_action)
        if not self.members:
            raise ValueError("the band is empty: list at least one acceptable value, e.g. [2]")
        if len(set(self.members)) != len(self.members):
            raise ValueError(f"a value is listed twice in {list(self.members)}: list each once")
        for value in self.members:
            _check_value(action, value, _orderables(info))
        if "set" not in action.forms and not _is_span(info):
            raise ValueError(
                f"{action.name} takes an interval, not a list: write "
                f"{{min: {min(self.members)}, max: {max(self.members)}}}"
            )
        # Sorted so that equal sets are equal bands with equal digests.
        object.__setattr__(self, "members", tuple(sorted(self.members)))
        return self

    def values(self) -> frozenset[Value]:
        return _shared(self.sub_action, self.members)


class IntervalBand(_Band):
    form: Literal["interval"] = "interval"
    min: StrictInt
    max: StrictInt

    @model_validator(mode="after")
    def _check(self, info: ValidationInfo) -> "IntervalBand":
        action = sub_action(self.sub_action)
        if "interval" not in action.forms and not _is_span(info):
            raise ValueError(
                f"{action.name} takes a list of values, not an interval: write e.g. "
                f"{_example_set(action)}"
            )
        if self.min > self.max:
            raise ValueError(
                f"min {self.min} is greater than max {self.max}: write "
                f"{{min: {self.max}, max: {self.min}}}"
            )
        for value in (self.min, self.max):
            _check_value(action, value, None)
        return self

    def values(self) -> frozenset[Value]:
        return _shared(self.sub_action, range(self.min, self.max + 1))


class MultilabelBand(_Band):
    form: Literal["multilabel"] = "multilabel"
    required: tuple[StrictStr, ...] = ()
    defensible: tuple[StrictStr, ...]

    @model_validator(mode="after")
    def _check(self, info: ValidationInfo) -> "MultilabelBand":
        action = sub_action(self.sub_action)
        if action.kind != "multilabel":
            raise ValueError(f"{action.name} is not multi-label: {_example_set(action)}")
        if not self.defensible:
            raise ValueError("defensible is empty: list at least one orderable test")
        for name, items in (("required", self.required), ("defensible", self.defensible)):
            if len(set(items)) != len(items):
                raise ValueError(f"{name} lists an order twice: list each once")
            for value in items:
                _check_value(action, value, _orderables(info))
        outside = sorted(set(self.required) - set(self.defensible))
        if outside:
            raise ValueError(
                f"required orders {outside} are not in defensible: every required order "
                "must also be listed as defensible"
            )
        object.__setattr__(self, "required", tuple(sorted(self.required)))
        object.__setattr__(self, "defensible", tuple(sorted(self.defensible)))
        return self

    def values(self) -> frozenset[Value]:
        return _shared(self.sub_action, self.defensible)


AnyBand = SetBand | IntervalBand | MultilabelBand


@lru_cache(maxsize=1024)
def _shared(name: str, values: tuple[Value, ...] | range) -> frozenset[Value]:
    """One set of values for equal bands: a study's ratings name the same bands many times, and
    each rating keeps its band's values. The sub-action is part of the key because True == 1:
    a boolean band's {true} and a tier band's {1} are equal tuples of different values."""
    return frozenset(values)


def _orderables(info: ValidationInfo) -> tuple[str, ...] | None:
    context = info.context or {}
    found = context.get("orderables")
    return None if found is None else tuple(found)


def _is_span(info: ValidationInfo) -> bool:
    return bool((info.context or {}).get("span"))


def _example_set(action: SubAction) -> str:
    if action.kind == "boolean":
        return "[true], [false] or [false, true]"
    return "[" + ", ".join(str(v) for v in action.domain()[:2]) + "]"


def _check_value(action: SubAction, value: Value, orderables: tuple[str, ...] | None) -> None:
    expected = action.value_type
    if type(value) is not expected:
        if expected is int and isinstance(value, bool):
            raise ValueError(
                f"{str(value).lower()} is a boolean but {action.name} takes integers "
                f"({action.describe_domain()})"
            )
        if expected is bool and isinstance(value, int):
            raise ValueError(
                f"{value} is an integer but {action.name} takes true or false: write "
                f"{'true' if value else 'false'}"
            )
        if expected is bool and isinstance(value, str):
            raise ValueError(
                f"{value!r} is text but {action.name} takes true or false (yes, no, on and off "
                "are text): write true or false"
            )
        raise ValueError(
            f"{value!r} is not a valid {action.name} value ({action.describe_domain()})"
        )
    if action.kind == "multilabel":
        if orderables is not None and value not in orderables:
            raise ValueError(
                f"order {value!r} is not an orderable of this vignette: choose from "
                f"{', '.join(sorted(orderables)) or '(none)'}"
            )
        return
    if not action.admits(value):
        raise ValueError(
            f"{value} is outside the domain of {action.name} ({action.describe_domain()})"
        )


def parse_band(
    name: str,
    raw: Any,
    *,
    orderables: Iterable[str] | None = None,
    required: Iterable[str] | None = None,
    span: bool = False,
) -> AnyBand:
    """Read a band from its harness or file form (a list or a mapping) for sub-action `name`.

    Orders also accept `{required, defensible}`, or a list of defensible orders with `required`
    given separately (the bands.yaml form). `span=True` reads a disputed span, which may be a
    list for any sub-action.
    """
    action = sub_action(name)
    context = {"orderables": None if orderables is None else tuple(orderables), "span": span}
    data = _band_data(action, raw, required)
    try:
        return _BAND_TYPES[data["form"]].model_validate(data, context=context)
    except PydanticValidationError as exc:
        raise FmaBandsError(_explain(exc), field="span" if span else "band") from None


class BandReader:
    """parse_band for many bands in a row (a study's reviews, a folder's signed bands), each
    distinct one read once: raters mostly give the same few bands of a vignette (every ACCEPT
    is the proposal). Keyed by the band's repr, which tells `True` from `1` and `"1"`, and the
    vignette's orderables; a band refused once is refused again with the same message."""

    def __init__(self) -> None:
        self._read: dict[tuple[str, str, tuple[str, ...]], AnyBand | FmaBandsError] = {}

    def __call__(self, name: str, raw: Any, orderables: tuple[str, ...]) -> AnyBand:
        key = (name, repr(raw), orderables)
        if key not in self._read:
            try:
                self._read[key] = parse_band(name, raw, orderables=orderables)
            except FmaBandsError as exc:
                self._read[key] = FmaBandsError(exc.message, field=exc.field)
        found = self._read[key]
        if isinstance(found, FmaBandsError):
            raise FmaBandsError(found.message, field=found.field)
        return found


_BAND_TYPES: dict[str, type[AnyBand]] = {
    "set": SetBand,
    "interval": IntervalBand,
    "multilabel": MultilabelBand,
}


def _band_data(action: SubAction, raw: Any, required: Iterable[str] | None) -> dict[str, Any]:
    if isinstance(raw, tuple):
        raise FmaBandsError(
            f"a tuple such as {raw!r} is read by the harness as separate values, never a range: "
            f"write a list {list(raw)!r} for those values, or {{min: a, max: b}} for a range"
        )
    if isinstance(raw, range):
        raise FmaBandsError(
            f"a range object excludes its end ({raw!r} stops at {raw.stop - 1}): write "
            f"{{min: {raw.start}, max: {raw.stop - 1}}}"
        )
    if isinstance(raw, set | frozenset):
        raw = sorted(raw)
    if isinstance(raw, list):
        if action.kind == "multilabel":
            return {
                "sub_action": action.name,
                "form": "multilabel",
                "defensible": raw,
                "required": list(required or ()),
            }
        return {"sub_action": action.name, "form": "set", "members": raw}
    if isinstance(raw, dict):
        keys = set(raw)
        if action.kind == "multilabel":
            if keys != {"required", "defensible"}:
                raise FmaBandsError(
                    f"an orders band is a mapping with exactly the keys required and defensible "
                    f"(got {sorted(map(str, keys))}): write {{required: [...], defensible: [...]}}"
                )
            if not isinstance(raw["required"], list) or not isinstance(raw["defensible"], list):
                raise FmaBandsError("required and defensible must each be a list of order names")
            return {"sub_action": action.name, "form": "multilabel", **raw}
        if keys != {"min", "max"}:
            missing = sorted({"min", "max"} - keys)
            extra = sorted(map(str, keys - {"min", "max"}))
            problem = (
                f"it lacks {' and '.join(missing)}; the harness reads a mapping without both "
                "bounds as no answer at all"
                if missing
                else f"it has extra keys {extra}"
            )
            raise FmaBandsError(
                f"an interval is a mapping with exactly min and max, but {problem}: "
                "write {min: a, max: b}"
            )
        return {"sub_action": action.name, "form": "interval", **raw}
    raise FmaBandsError(
        f"a band is a list of values or a {{min, max}} mapping, not {type(raw).__name__} "
        f"{raw!r}: write e.g. {_example_set(action)}"
    )


def _explain(exc: PydanticValidationError) -> str:
    messages = []
    for error in exc.errors():
        message = error["msg"].removeprefix("Value error, ")
        field = ".".join(str(p) for p in error["loc"])
        if error["type"] in ("int_type", "bool_type", "string_type"):
            message = f"{error['input']!r} in {field} is not an accepted value ({message})"
        messages.append(message)
    return "; ".join(dict.fromkeys(messages))


def to_harness(band: AnyBand) -> list[Value] | dict[str, int]:
    """The harness-native `acceptable`: a list, or an inclusive {min, max} mapping."""
    if isinstance(band, IntervalBand):
        return {"min": band.min, "max": band.max}
    if isinstance(band, MultilabelBand):
        return list(band.defensible)
    return list(band.members)


def to_file(band: AnyBand) -> list[Value] | dict[str, Any]:
    """The vignette-file form: as the harness, but orders keep required beside defensible."""
    if isinstance(band, MultilabelBand):
        return {"required": list(band.required), "defensible": list(band.defensible)}
    return to_harness(band)


def band_from_values(
    name: str, values: Iterable[Value], *, prefer_interval: bool = True
) -> AnyBand | None:
    """The band admitting exactly `values`: an interval when contiguous, else a list."""
    chosen = frozenset(values)
    if not chosen:
        return None
    action = sub_action(name)
    if action.kind == "multilabel":
        return MultilabelBand(sub_action=name, defensible=tuple(sorted(chosen)))
    ordered = sorted(chosen)
    if action.kind != "boolean" and "interval" in action.forms:
        numbers = [int(v) for v in ordered]
        contiguous = numbers == list(range(numbers[0], numbers[-1] + 1))
        if contiguous and (prefer_interval or "set" not in action.forms):
            return IntervalBand(sub_action=name, min=numbers[0], max=numbers[-1])
    return parse_band(name, ordered, span=True)


@dataclass(frozen=True)
class Consensus:
    """The intersection rule (docs/design.md, Agreement) applied to the bands of one band's
    raters."""

    rule: Literal["applied", "empty", "absent"]
    band: AnyBand | None  # what every rater admits; None when empty, and when absent
    disputed: frozenset[Value]  # what some but not all admit
    n_raters: int


def consensus(bands: Sequence[AnyBand]) -> Consensus:
    """What every band admits. One rater's band is no consensus: the rule is absent, never met.

    Orders: required is the union of the raters' required orders and defensible the
    intersection of their defensible ones; a required order that is not defensible to every
    rater leaves no consensus. The one implementation of the rule: agreement, the command line
    and the registry all call it.
    """
    bands = list(bands)
    if len(bands) < 2:
        return Consensus("absent", None, frozenset(), len(bands))
    _same_sub_action(bands)
    name = bands[0].sub_action
    shared = frozenset.intersection(*(b.values() for b in bands))
    disputed = frozenset.union(*(b.values() for b in bands)) - shared
    band: AnyBand | None = None
    if isinstance(bands[0], MultilabelBand):
        requires = [frozenset(b.required) for b in bands if isinstance(b, MultilabelBand)]
        required = frozenset().union(*requires)
        # An order some but not all raters require is disputed, however defensible to them all.
        disputed |= required - frozenset.intersection(*requires)
        if shared and required <= shared:
            band = MultilabelBand(
                sub_action=name, required=tuple(sorted(required)), defensible=tuple(sorted(shared))
            )
    elif shared:
        all_intervals = all(isinstance(b, IntervalBand) for b in bands)
        band = band_from_values(name, shared, prefer_interval=all_intervals)
    return Consensus("applied" if band else "empty", band, disputed, len(bands))


def _same_sub_action(bands: list[AnyBand]) -> None:
    names = {b.sub_action for b in bands}
    if len(names) > 1:
        raise FmaBandsError(f"cannot combine bands of different sub-actions: {sorted(names)}")


# The disputed span of an adjudicated band (docs/design.md, The disputed span) ---------------


def rater_span(
    proposed: AnyBand | None,
    band: AnyBand,
    *,
    reading: str | None,
    amended: bool = False,
    corrected: AnyBand | None = None,
) -> frozenset[Value]:
    """What one counted rater leaves disputed: the span they set with an AMEND (`amended`, None
    for "no disputed span"), else none when their answer to question 5 took the band's reading
    (they settled it), else the proposal's span; always minus their own band."""
    if amended:
        kept = corrected.values() if corrected is not None else frozenset()
    elif reading == "band":
        kept = frozenset()
    else:
        kept = proposed.values() if proposed is not None else frozenset()
    return kept - band.values()


def exported_span(
    name: str, granted: AnyBand, spans: Sequence[frozenset[Value]], disputed: frozenset[Value]
) -> AnyBand | None:
    """The adjudicated band's disputed span, the same rule for one rater or many: every value
    some counted rater leaves disputed (rater_span) outside the granted band, with what some but
    not all of them admit (Consensus.disputed; none for one rater)."""
    spare = (frozenset().union(*spans) - granted.values()) | disputed
    return band_from_values(name, spare) if spare else None
