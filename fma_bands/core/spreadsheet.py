"""CSV for people who open it in a spreadsheet: a header row, one row per record, and any cell
a spreadsheet would run as a formula (=, +, -, @, tab, carriage return first) made plain text;
numbers, and ranges of two numbers ("-3.857 to 0.847"), are written as they are, as data."""

import csv
import io
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
# A number as the app writes one (-3.857, -12, -4.5%), alone or as a range of two joined by
# " to ", or the dash the app writes for "none": nothing a spreadsheet could run, since no
# operator, name, call or reference fits in it. Plain ASCII only (\d would take any digit).
_NUMBER = r"-?[0-9]+(?:\.[0-9]+)?%?"
_DATA = re.compile(rf"-|{_NUMBER}(?: to {_NUMBER})?")


def cell(value: Any) -> str:
    if value is None:
        return ""
    text = str(value).lower() if isinstance(value, bool) else str(value)
    if not text.startswith(_FORMULA_STARTS) or _DATA.fullmatch(text):
        return text
    # A leading apostrophe is what spreadsheets themselves use to say "text, not a formula".
    return "'" + text


def csv_text(columns: Sequence[str], rows: Iterable[Mapping[str, Any]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([cell(row.get(c)) for c in columns])
    return out.getvalue()
