"""Bands as text people write and read: the hand-back notation read into a band, and bands and
sets of values written in plain words for screens.
"""

import re
from collections.abc import Iterable, Mapping, Sequence

from fma_bands.core.actions import Value, sub_action
from fma_bands.core.bands import AnyBand, IntervalBand, MultilabelBand, parse_band
from fma_bands.core.errors import FmaBandsError
from fma_bands.core.files import MAX_DIGITS, load_json

# Hand-back notation (docs/design.md, The review task): {1, 3}, {true}, {"min": 1, "max": 30},
# {"required": [...], ...}.

# What a DECLINE vouches for, said alike on every page, table and CSV.
DECLINED_BAND = "none (declined)"

_BRACES = re.compile(r"^\{(.*)\}$|^\[(.*)\]$", re.S)


def parse_notation(name: str, text: str, *, orderables: Iterable[str] | None = None) -> AnyBand:
    """Read a band written in a hand-back line, e.g. `{1, 3}` or `{"min": 1, "max": 30}`."""
    text = text.strip()
    if ":" in text:
        try:
            raw = load_json(text, source="band")
        except FmaBandsError as exc:
            if not exc.message.startswith("not valid JSON"):
                raise FmaBandsError(f"the band {exc.message}") from None
            raise FmaBandsError(
                f'cannot read {text!r}: write an interval as {{"min": 1, "max": 30}} '
                "with double quotes around min and max"
            ) from None
        if not isinstance(raw, dict):
            raise FmaBandsError(f'cannot read {text!r}: write {{"min": a, "max": b}}')
        return parse_band(name, raw, orderables=orderables)
    match = _BRACES.match(text)
    if not match:
        raise FmaBandsError(
            f"cannot read band {text!r}: write a set such as {{1, 3}} or an interval such as "
            '{"min": 1, "max": 30}'
        )
    inner = match.group(1) if match.group(1) is not None else match.group(2)
    items = [item.strip() for item in inner.split(",") if item.strip()]
    return parse_band(name, [_notation_value(item) for item in items], orderables=orderables)


def _notation_value(item: str) -> Value:
    lowered = item.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if re.fullmatch(r"-?[0-9]+", item):  # ASCII digits: a full-width "３" is text
        if len(item) > MAX_DIGITS:
            raise FmaBandsError(
                f"the band holds a number of {len(item):,} digits: none is that long"
            )
        return int(item)
    return item.strip("'\"")


def describe(band: AnyBand) -> str:
    """A short plain-language reading of the band for screens."""
    action = band.action
    if isinstance(band, IntervalBand):
        if band.min == band.max:
            return action.label_for(band.min)
        return f"{action.label_for(band.min)} to {action.label_for(band.max)}"
    if isinstance(band, MultilabelBand):
        required = ", ".join(band.required) or "none"
        return f"required: {required}; defensible: {', '.join(band.defensible)}"
    if action.kind == "boolean":
        # A bare "no" reads as "no band" or "nothing accepted": say it is the answer.
        if len(band.members) == 2:
            return "either (yes or no)"
        return ", ".join(f"the answer {action.label_for(v)}" for v in band.members)
    return ", ".join(action.label_for(v) for v in band.members)


# Values in words, as ranges (for the agreement screens: a consensus or a disputed span) -------


def value_runs(values: Iterable[int]) -> list[tuple[int, int]]:
    """Integers as inclusive runs, in order: {1, 2, 3, 6} -> [(1, 3), (6, 6)]."""
    runs: list[tuple[int, int]] = []
    for value in sorted(set(values)):
        if runs and runs[-1][1] == value - 1:
            runs[-1] = (runs[-1][0], value)
        else:
            runs.append((value, value))
    return runs


def describe_values(
    name: str, values: Iterable[Value], names: Mapping[str, str] | None = None
) -> str:
    """A set of values of sub-action `name` in words, runs written as ranges: "1 to 6 and 15 to
    30 days", "2 - emergent to 3 - urgent", "yes", "cbc, ecg"; "none" for no value."""
    action = sub_action(name)
    chosen = sorted(set(values))
    if not chosen:
        return "none"
    if action.kind == "boolean":
        return "either (yes or no)" if len(chosen) == 2 else action.label_for(chosen[0])
    if action.kind == "multilabel":
        return ", ".join((names or {}).get(str(v)) or str(v) for v in chosen)
    runs = value_runs(int(v) for v in chosen)
    if action.unit:
        # The unit once, at the end: "1 to 6 and 15 to 30 days", but "1 day".
        numbers = _joined([str(lo) if lo == hi else f"{lo} to {hi}" for lo, hi in runs])
        unit = action.unit.removesuffix("s") if chosen == [1] else action.unit
        return f"{numbers} {unit}"
    label = action.label_for
    return _joined([label(lo) if lo == hi else f"{label(lo)} to {label(hi)}" for lo, hi in runs])


def _joined(parts: Sequence[str]) -> str:
    """ "a", "a and b", "a, b and c"."""
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
