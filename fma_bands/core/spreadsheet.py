"""CSV for people who open it in a spreadsheet: a header row, one row per record, and any cell
a spreadsheet would run as a formula (=, +, -, @, tab, carriage return first) made plain text."""

import csv
import io
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def cell(value: Any) -> str:
    if value is None:
        return ""
    text = str(value).lower() if isinstance(value, bool) else str(value)
    # A leading apostrophe is what spreadsheets themselves use to say "text, not a formula".
    return "'" + text if text.startswith(_FORMULA_STARTS) else text


def csv_text(columns: Sequence[str], rows: Iterable[Mapping[str, Any]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([cell(row.get(c)) for c in columns])
    return out.getvalue()
