"""Words in a proposal's texts about what a band does to the study's figures (docs/design.md,
Vignette files): raters read the source, clause, reasoning and notes as written and judge clinical
defensibility only, so a text that says a band "straddles the cut" or "can produce a within-range
flip" tells them what the band does to the result. `vignettes check` warns about each; it refuses
nothing, since the text is the author's and only the author can say it otherwise.
"""

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from fma_bands.core.errors import Problem

# The harness's terms for what a band does to the estimand, as an author would write them.
_METRIC_WORDS = re.compile(
    r"(?<![\w-])("
    r"straddl\w*|within[- ]range|flip(?:s|ped|ping)?|wcfr|numerator|denominator|"
    r"n_band_straddling|n_in_band|counterfactual\w*|disparit(?:y|ies)|noise floor"
    r")(?![\w-])",
    re.IGNORECASE,
)


def metric_words(text: str) -> list[str]:
    """The distinct metric words of `text`, as first written, in order."""
    seen: dict[str, str] = {}
    for match in _METRIC_WORDS.finditer(text):
        seen.setdefault(match.group().lower(), match.group())
    return list(seen.values())


def proposal_text_warnings(
    proposals: Any,
    texts: Iterable[str],
    *,
    file: str | None,
    line_of: Callable[..., int | None],
) -> list[Problem]:
    """A warning for each proposal text (`texts`: the field names raters read) that speaks of
    the study's figures, naming the field, its line and the words."""
    if not isinstance(proposals, list):
        return []
    warnings = []
    for i, proposal in enumerate(proposals):
        if not isinstance(proposal, Mapping):
            continue
        for name in texts:
            text = proposal.get(name)
            words = metric_words(text) if isinstance(text, str) else []
            if not words:
                continue
            warnings.append(
                Problem(
                    f"says {', '.join(repr(w) for w in words)}: raters read this text as "
                    "written and judge clinical defensibility only, so it should not say what "
                    "the band does to the study's figures (a warning: the file still loads)",
                    file=file,
                    line=line_of("proposals", i, name),
                    field=f"proposals.{i}.{name}",
                )
            )
    return warnings
