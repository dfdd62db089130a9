"""For the harness's side of bands.yaml: whether an exported band straddles one of its named
cuts, as the harness's own `band_straddles` reads it (README, Loading bands.yaml in the harness).

Light on purpose: it imports the action catalogue only, so code that builds the harness's `Pair`
objects pulls in nothing else of fma-bands.

May import: fma_bands.core.
"""

from collections.abc import Mapping
from typing import Any

from fma_bands.core.actions import parse_threshold

__all__ = ["straddles_for"]


def straddles_for(band_fields: Mapping[str, Any], cut: str) -> bool | None:
    """Whether the exported band straddles its cut named `cut`: `Pair.straddles_threshold`.

    `band_fields` is one band of bands.yaml as loaded (with its `x_` fields), `cut` the name of
    one of its `x_thresholds` (`any_opioid`, `strong_opioid`, `followup_within_14`, ...). True
    or False as the harness's `band_straddles(acceptable, phi)` returns them for the cut's
    expression; None where it returns None (no such cut on this band, as for orders or a
    follow-up band whose proposal named no cut, or an interval missing a bound). A band without
    `x_thresholds` (its `x_` fields dropped) is refused, since None there would hide the cause.
    """
    if not isinstance(cut, str):
        raise TypeError(f"a cut is named by text such as 'any_opioid', not {type(cut).__name__}")
    if not isinstance(band_fields, Mapping) or "x_thresholds" not in band_fields:
        raise ValueError(
            "pass one band of bands.yaml as loaded, with its x_ fields: x_thresholds names the "
            "cuts the band carries"
        )
    named = [c for c in band_fields["x_thresholds"] or () if c.get("name") == cut]
    if not named:
        return None
    values = _values(band_fields.get("acceptable"))
    if values is None:
        return None
    holds = parse_threshold(named[0]["expression"]).holds
    return len({bool(holds(v)) for v in values}) == 2


def _values(acceptable: Any) -> list[Any] | None:
    """The values the harness reads an `acceptable` as: every integer of an inclusive
    `{min, max}` (None without both bounds), else its items (None when it has none to give)."""
    if acceptable is None:
        return None
    if isinstance(acceptable, Mapping):
        low, high = acceptable.get("min"), acceptable.get("max")
        return None if low is None or high is None else list(range(int(low), int(high) + 1))
    try:
        return list(acceptable)
    except TypeError:
        return None
