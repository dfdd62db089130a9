"""Demographic words in a clinical core (docs/design.md, Vignette files): the harness puts the
patient's age, sex, race, insurance and English proficiency in a descriptor line before the
clinical core and varies only that line between conditions, so the same fact written in the
core either repeats the descriptor or contradicts it (a "54-year-old" core under the descriptor
"78-year-old"). `vignettes check` warns about each; it refuses nothing, since the author may
have a clinical reason (a pregnancy, an age-specific rule) the check cannot judge.
"""

import itertools
import re
from dataclasses import dataclass

from fma_bands.core.errors import Problem

# What the harness's descriptor varies (fairmedagent.conditions.ATTRIBUTE_LEVELS), named as a
# person reads it.
AGE, SEX, RACE, INSURANCE, LANGUAGE = (
    "age",
    "sex",
    "race or ethnicity",
    "insurance",
    "language",
)

# "white" and "black" are also clinical words ("white cell count", "black tarry stools"):
# followed by one of these they describe a finding, not a patient.
_FINDINGS = (
    r"blood|cells?|counts?|matter|stools?|tarry|vomit|spots?|patch(?:es)?|plaques?|"
    r"out|eyes?|sputum|discharge|coating|lesions?|tongue|reflex|pupils?|fundus|mucosa"
)
# Each kind's words, longest first within a kind so a phrase wins over a word it contains.
_PATTERNS: dict[str, str] = {
    AGE: "|".join(
        (
            r"\d{1,3}[- ]?(?:years?|yrs?)[- ]?old",
            r"\d{1,3}[- ]?(?:years?|yrs?)[- ]of[- ]age",
            r"aged\s+\d{1,3}",
            r"age\s*(?::|of)?\s*\d{1,3}",
            r"\d{1,3}\s?(?:y/o|y\.o\.|yo)",
            r"in\s+(?:his|her|their)\s+(?:twenties|thirties|forties|fifties|sixties|"
            r"seventies|eighties|nineties|\d0s)",
            r"(?:septua|octo|nona)genarian",
            r"middle[- ]aged",
            r"elderly",
            r"older\s+adult",
            r"young\s+adult",
        )
    ),
    SEX: "|".join(
        (
            r"gentleman",
            r"(?:wo)?man",
            r"(?:wo)?men",
            r"(?:fe)?male",
            r"lady",
            r"boy",
            r"girl",
            r"(?:him|her)self",
            r"he|she|him|his|her|hers",
            # Titles in their own case only: "MR" is mitral regurgitation, "MS" a sclerosis.
            r"(?-i:Mrs?|Ms)",
            r"transgender",
        )
    ),
    RACE: "|".join(
        (
            r"native\s+american",
            r"american\s+indian",
            r"alaska(?:n)?\s+native",
            r"pacific\s+islander",
            r"african[- ]american",
            r"middle\s+eastern",
            r"(?:white|black)(?!\s+(?:" + _FINDINGS + r")\b)",
            r"hispanic",
            r"latin[oax]",
            r"asian",
            r"caucasian",
            r"indigenous",
            r"aboriginal",
            r"arab",
        )
    ),
    INSURANCE: "|".join(
        (
            r"private(?:ly)?\s+insur(?:ance|ed)",
            r"no\s+insurance",
            r"medicaid",
            r"medicare",
            r"(?:un|under)?insured",
            r"insurance",
            r"self[- ]pay",
        )
    ),
    LANGUAGE: "|".join(
        (
            r"limited\s+english(?:\s+proficiency)?",
            r"full\s+english(?:\s+proficiency)?",
            r"non[- ]english(?:[- ]speaking)?",
            r"english[- ]speaking",
            r"english\s+proficiency",
            r"[a-z]+-speaking",
            r"interpreters?",
            r"translators?",
            r"lep",
            r"english",
        )
    ),
    # "54M", "54 F": an age and a sex at once, only in capitals (a lone "m" is a metre).
    f"{AGE} and {SEX}": r"(?-i:\d{1,3}\s?[MF])",
}
# One pass over the text; each match names its kind by its group.
_KIND_GROUPS = {kind: f"k{i}" for i, kind in enumerate(_PATTERNS)}
_WORDS = re.compile(
    "|".join(rf"(?P<{_KIND_GROUPS[kind]}>(?<!\w)(?:{p})(?!\w))" for kind, p in _PATTERNS.items()),
    re.IGNORECASE,
)


# A clinical core is a few sentences; past this many words the rest are one warning, so a
# hostile file cannot flood the check.
MAX_LISTED = 20
# What a stated fact of each kind does to the harness's conditions.
_CLASH = {
    AGE: "; an age here clashes with the conditions' ages 34, 50 and 78",
    f"{AGE} and {SEX}": "; an age here clashes with the conditions' ages 34, 50 and 78",
    SEX: "; here it contradicts every condition of the other sex",
}


@dataclass(frozen=True)
class DemographicWord:
    """One demographic word or phrase found, as written, and what kind of fact it states."""

    kind: str
    word: str
    start: int  # where it begins in the text


def demographic_words(text: str, limit: int | None = None) -> list[DemographicWord]:
    """Every demographic word or phrase in `text` (the first `limit` of them), in order, as
    written (case-insensitive, whole words only: "management" holds no "man", "Hershey" no
    "her")."""
    return [
        DemographicWord(kind, m.group(), m.start())
        for m in itertools.islice(_WORDS.finditer(text), limit)
        for kind, group in _KIND_GROUPS.items()
        if m.group(group) is not None
    ]


def clinical_core_warnings(
    clinical_core: str, *, file: str | None, line: int | None, source: str | None = None
) -> list[Problem]:
    """A warning for each demographic word of a clinical core, naming the word, what it states
    and why it matters. `line` is where the field's value starts in the file and `source` its
    text as written there, when known: each word is then placed on its own line."""
    words = demographic_words(clinical_core, limit=MAX_LISTED + 1)
    warnings = []
    for w in words[:MAX_LISTED]:
        where = line
        if source is not None and line is not None:
            where = _line_of(w, clinical_core, source, line)
        warnings.append(
            Problem(
                f"holds {w.word!r}, the patient's {w.kind}: the harness states it in the "
                "descriptor it puts before the clinical core and varies it between conditions, "
                f"so the core should not state it{_CLASH.get(w.kind, '')} (a warning: the file "
                "still loads)",
                file=file,
                line=where,
                field="clinical_core",
            )
        )
    if len(words) > MAX_LISTED:
        warnings.append(
            Problem(
                f"holds more demographic words than the {MAX_LISTED} listed: check all of it",
                file=file,
                line=line,
                field="clinical_core",
            )
        )
    return warnings


def _line_of(word: DemographicWord, text: str, source: str, line: int) -> int:
    """The line of the file `word` is on: the same occurrence of it (the k-th in `text` is the
    k-th in `source`), counted from `line`, where `source` starts. As written, a phrase may be
    broken over two lines of a folded block; a word the source spells otherwise (an escape in
    a quoted string) stays on `line`."""
    pattern = re.compile(
        r"(?<!\w)" + r"\s+".join(map(re.escape, word.word.split())) + r"(?!\w)", re.IGNORECASE
    )
    k = len(pattern.findall(text, 0, word.start))
    found = next(itertools.islice(pattern.finditer(source), k, None), None)
    return line if found is None else line + source.count("\n", 0, found.start())
