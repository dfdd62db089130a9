"""Whole-number options and arguments: written with the ASCII digits 0 to 9, within bounds.

click's own integer type reads with int(), which takes a full-width "２" or an Arabic-Indic "٢"
for 2: a quorum typed so would be signed as a number nobody wrote."""

import re
from typing import Any

import click

_ASCII_WHOLE = re.compile(r"\s*[+-]?[0-9]+\s*")


class Whole(click.IntRange):
    """click.IntRange that refuses any digit but 0 to 9."""

    name = "integer"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not _ASCII_WHOLE.fullmatch(value):
            self.fail(f"{value!r} is not a whole number written with the digits 0 to 9", param, ctx)
        return super().convert(value, param, ctx)

    def _describe_range(self) -> str:
        # Unbounded, click would print "x<=None" in the help; the domain checks the bounds.
        if self.min is None and self.max is None:
            return ""
        return super()._describe_range()
