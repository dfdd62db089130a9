"""Krippendorff's coincidence matrices (docs/statistics.md, Coincidence matrices): for one
metric on one sub-action in one mode, o_ck = the sum over units of the ordered pairs of values
(c, k) from two different raters, each weighted 1 / (m_u - 1). Its rows sum to the value counts
n_c and its total is the pairable values n. Written as CSV with the values in words.
"""

import csv
import io
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from fma_bands.agreement.engine import Stratum
from fma_bands.agreement.metrics import (
    METRICS,
    MODES,
    REVIEW_MODE,
    Rating,
    level,
    metric_strata,
)
from fma_bands.core.actions import sub_action
from fma_bands.core.band_text import describe_values
from fma_bands.core.protocol import VERDICTS

MEMBERSHIP_WORDS = {0: "out of the band", 1: "in the band"}


@dataclass(frozen=True)
class Coincidences:
    """One coincidence matrix: `matrix[c][k]` is o_ck between values `labels[c]` and
    `labels[k]` (in words, in the metric's order of values)."""

    mode: str
    metric: str
    sub_action: str
    labels: tuple[str, ...]
    matrix: tuple[tuple[float, ...], ...]

    @property
    def value_counts(self) -> tuple[float, ...]:
        """n_c: how often each value was given in a pairable unit (the row sums)."""
        return tuple(sum(row) for row in self.matrix)

    @property
    def n_pairable(self) -> float:
        return sum(self.value_counts)


def coincidence_matrix(s: Stratum) -> np.ndarray:
    """values x values: Krippendorff's o_ck of one stratum, the sum over units of
    (c c' - diag(c)) / (m_u - 1) for the unit's value counts c: the pairs of a value with itself
    (c on the diagonal) are taken out. (Stratum.coincidences holds the same sums per vignette,
    values x values each; here one product over the units, for bands with many distinct values.)
    A stratum counting DECLINE as a value has no matrix here."""
    if s.unit_declines is not None:
        raise ValueError("a stratum with DECLINE as a value has no coincidence matrix here")
    share = s.unit_counts / np.maximum(s.sizes - 1.0, 1.0)[:, None]
    return share.T @ s.unit_counts - np.diag(share.sum(axis=0))


def value_words(metric: str, name: str, value: object) -> str:
    """A value of `metric` on sub-action `name` in words: a band as ranges ("2 - emergent to 3 -
    urgent", or required and defensible orders), an end as its label ("10 days"), membership as
    in or out of the band, a verdict by name."""
    if metric == "verdict":
        return VERDICTS[int(value)]  # type: ignore[call-overload]
    if metric == "membership":
        return MEMBERSHIP_WORDS[int(value)]  # type: ignore[call-overload]
    if metric in ("lower", "upper"):
        return sub_action(name).label_for(value)  # type: ignore[arg-type]
    assert isinstance(value, tuple)
    if sub_action(name).kind == "multilabel":
        required, defensible = value
        return f"required: {', '.join(required) or 'none'}; defensible: {', '.join(defensible)}"
    return describe_values(name, value)


def coincidence_tables(ratings: Iterable[Rating]) -> list[Coincidences]:
    """Every (mode, metric, sub-action) matrix with at least one pairable value, by mode, metric
    (in the order of METRICS) and sub-action; verdicts in review mode only."""
    chosen = list(ratings)
    out = []
    for mode in MODES:
        in_mode = [r for r in chosen if r.mode == mode]
        names = sorted({r.sub_action for r in in_mode})
        for metric in METRICS:
            if metric == "verdict" and mode != REVIEW_MODE:
                continue
            applies = [name for name in names if level(metric, name) is not None]
            # metric_strata gives one stratum per sub-action it applies to, by name.
            strata = metric_strata(metric, in_mode)
            for name, s in zip(applies, strata, strict=True):
                if s.n_units == 0:
                    continue
                matrix = coincidence_matrix(s)
                out.append(
                    Coincidences(
                        mode=mode,
                        metric=metric,
                        sub_action=name,
                        labels=tuple(value_words(metric, name, v) for v in s.labels),
                        matrix=tuple(tuple(float(x) for x in row) for row in matrix),
                    )
                )
    return out


def file_name(c: Coincidences) -> str:
    """The matrix's CSV file name, e.g. review-band-esi_acuity.csv."""
    return f"{c.mode}-{c.metric}-{c.sub_action}.csv"


def _number(x: float) -> str:
    # Coincidences are sums of 1 / (m_u - 1): ten significant digits say them exactly enough.
    return f"{x:.10g}"


def coincidence_rows(c: Coincidences) -> list[list[str]]:
    """The matrix as rows of text: a header of the values in words and n_c, then one row per
    value with its coincidences and its count n_c."""
    header = [f"{c.metric} on {c.sub_action} ({c.mode} mode)", *c.labels, "n_c"]
    rows = [
        [label, *(_number(x) for x in row), _number(n)]
        for label, row, n in zip(c.labels, c.matrix, c.value_counts, strict=True)
    ]
    return [header, *rows]


def coincidence_csv(c: Coincidences) -> str:
    """The matrix as CSV text (coincidence_rows, quoted as CSV needs)."""
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(coincidence_rows(c))
    return out.getvalue()


def coincidences_zip(tables: Iterable[Coincidences]) -> bytes:
    """Every matrix's CSV in one ZIP archive (file_name each), for a single download; the same
    tables give the same bytes (entries dated 1980-01-01, in order)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for c in tables:
            entry = zipfile.ZipInfo(file_name(c), date_time=(1980, 1, 1, 0, 0, 0))
            entry.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(entry, coincidence_csv(c))
    return out.getvalue()
