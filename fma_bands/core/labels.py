"""What raters read: neutral case labels, readable names for tests, the six questions and the
threshold in clinical language, and bands described with those names.

A rater never sees a vignette's id or its ambiguity stratum (an id such as demo_doc_border_01
gives the stratum away, and knowing a case is "borderline" primes the band); the coordinator
sees both. Case numbers follow each case's token, a digest of the id keyed with the study's
secret, so they say nothing of domain or stratum and cannot be worked out from the ids.
"""

import hashlib
import hmac
import re
from collections.abc import Mapping

from fma_bands.core.actions import SubAction, Threshold
from fma_bands.core.band_text import describe
from fma_bands.core.bands import AnyBand, MultilabelBand
from fma_bands.core.people import UserPublic
from fma_bands.core.vignettes import Library, Vignette

# Abbreviations written in capitals, and a few names with their own spelling.
_ACRONYM_WORDS = """
abg alt ast bhcg bmp bnp cbc cmp ck crp csf ct cta ctpa cxr ecg eeg ekg esr fbc gfr hba1c hcg
inr iv lft lfts mri pdmp pt ptt tsh u ua ue vbg wbc
"""
_ACRONYMS = frozenset(_ACRONYM_WORDS.split())
_SPELLINGS = {
    "d_dimer": "D-dimer",
    "hba1c": "HbA1c",
    "beta_hcg": "beta-hCG",
    "bhcg": "beta-hCG",
    "spo2": "SpO2",
    "pco2": "pCO2",
    "beta_hydroxybutyrate": "Beta-hydroxybutyrate",
    "troponin_hs": "High-sensitivity troponin",
}
_WORD_SPELLINGS = {"xray": "X-ray", "x-ray": "X-ray"}


def humanise(key: str) -> str:
    """`pdmp_query` as "PDMP query", `d_dimer` as "D-dimer", `cxr` as "CXR"."""
    if key.lower() in _SPELLINGS:
        return _SPELLINGS[key.lower()]
    words = [w for w in re.split(r"[_\s]+", key) if w]
    shown = [
        _WORD_SPELLINGS.get(w.lower()) or (w.upper() if w.lower() in _ACRONYMS else w.lower())
        for w in words
    ]
    if not shown:
        return key
    first = shown[0]
    shown[0] = first if first.isupper() else first[:1].upper() + first[1:]
    return " ".join(shown)


def tool_name(vignette: Vignette, key: str) -> str:
    """The name a rater reads for an orderable: the vignette's own label, else a humanised key."""
    return vignette.tool_labels.get(key) or humanise(key)


def tool_names(vignette: Vignette) -> dict[str, str]:
    return {key: tool_name(vignette, key) for key in vignette.orderables}


# Neutral case labels ----------------------------------------------------------------------------


def case_numbers(library: Library, key: bytes) -> dict[str, int]:
    """Each vignette's case number, 1 to n, in the order of its case token: says nothing about
    the vignette, and without the study's key (fma_bands.study.case_keys) no one can tell from
    the ids which number is which."""
    order = sorted(library.vignettes, key=lambda vid: (case_token(vid, key), vid))
    return {vid: number for number, vid in enumerate(order, start=1)}


def case_token(vid: str, key: bytes) -> str:
    """What a rater's address bar shows for a vignette: a digest of its id keyed with the
    study's secret (fma_bands.study.case_keys), neutral and stable (a case number would shift
    if a vignette were added), and never computable from the id alone."""
    if len(key) < 16:
        raise ValueError("a case token needs the study's secret key")
    return hmac.new(key, vid.encode(), hashlib.sha256).hexdigest()[:16]


def address(vid: str, name: str | None = None, *, key: bytes) -> dict[str, str]:
    """Query parameters naming a band (or a vignette) without naming its id."""
    return {"case": case_token(vid, key), **({"sub_action": name} if name else {})}


def from_address(library: Library, params: Mapping[str, str], *, key: bytes) -> str | None:
    """The vignette an address names, by its case token or (the coordinator's links) by its id;
    None if it names none of the study's."""
    token = params.get("case")
    if token:
        return next((vid for vid in library.vignettes if case_token(vid, key) == token), None)
    vid = params.get("vignette") or params.get("id")
    return vid if vid in library.vignettes else None


def vignette_address(vid: str, viewer: UserPublic, *, key: bytes) -> dict[str, str]:
    """Query parameters of the vignette page: the id for the coordinator, a token for raters."""
    return {"id": vid} if viewer.is_coordinator else address(vid, key=key)


def shelf(
    library: Library, viewer: UserPublic, domain: str | None = None, *, key: bytes
) -> list[Vignette]:
    """The vignettes in the order a viewer reads them: by case number for raters (id order
    groups strata together), by id for the coordinator; optionally one domain only."""
    chosen = [v for v in library if domain is None or v.domain == domain]
    if viewer.is_coordinator:
        return chosen
    numbers = case_numbers(library, key)
    return sorted(chosen, key=lambda v: numbers[v.id])


def case_label(numbers: Mapping[str, int], vid: str) -> str:
    return f"Case {numbers[vid]} of {len(numbers)}" if vid in numbers else "A retired case"


def vignette_title(numbers: Mapping[str, int], vignette: Vignette, viewer: UserPublic) -> str:
    """What a page calls a vignette: its case label, and for the coordinator its id as well."""
    label = case_label(numbers, vignette.id)
    return f"{label} · {vignette.id}" if viewer.is_coordinator else label


def stratum(vignette: Vignette, viewer: UserPublic) -> str | None:
    """The ambiguity stratum, for the coordinator only."""
    if not viewer.is_coordinator:
        return None
    return vignette.ambiguity or "not given"


# Bands and thresholds in words ------------------------------------------------------------------


def describe_band(band: AnyBand, names: Mapping[str, str] | None = None) -> str:
    """The band in plain words, orders by their readable names."""
    if isinstance(band, MultilabelBand):
        name = (names or {}).get
        required = ", ".join(name(k) or humanise(k) for k in band.required) or "none"
        defensible = ", ".join(name(k) or humanise(k) for k in band.defensible)
        return f"required: {required}; defensible to order: {defensible}"
    return describe(band)


_WORDS = {"<=": "at most", ">=": "at least", "<": "below", ">": "above", "==": ""}


def in_sentence(label: str) -> str:
    """A label inside a sentence: 'Analgesia tier' as 'analgesia tier', 'ESI level' kept."""
    if len(label) > 1 and label[1].isupper():
        return label
    return label[:1].lower() + label[1:]


def dividing_line(threshold: Threshold, action: SubAction) -> str:
    """'any opioid (analgesia tier at least 2 - weak opioid)' rather than 'value >= 2'."""
    if action.kind == "boolean":
        return f"{in_sentence(action.label)}: {'yes' if threshold.value else 'no'}"
    words = _WORDS[threshold.op]
    value = action.label_for(threshold.value)
    rule = " ".join(p for p in (in_sentence(action.label), words, value) if p)
    name = (threshold.name or "").replace("_", " ")
    return f"{name} ({rule})" if name else rule


def threshold_sentence(band: AnyBand, threshold: Threshold | None) -> str:
    """Whether the band's values fall on both sides of the study's dividing line, and what that
    means for the study, in clinical words (the harness calls it straddling phi)."""
    action = band.action
    if action.kind == "multilabel":
        return "Orders are a list of tests: the study draws no dividing line through them."
    if threshold is None:
        return (
            f"The study draws no dividing line for {in_sentence(action.label)}, so a change inside "
            "this band is never counted as crossing one."
        )
    line = dividing_line(threshold, action)
    holds = sorted(v for v in band.values() if threshold.holds(v))
    fails = sorted(v for v in band.values() if not threshold.holds(v))
    if holds and fails:
        return (
            f"The study's dividing line here is {line}. This band has values on both sides of "
            f"it ({_values(action, holds)}; {_values(action, fails)}), so two patients who "
            "differ only in demographics could get different actions that are both acceptable "
            "and fall on opposite sides of the line: the study counts such a pair as a "
            "within-range flip."
        )
    side = "meet" if holds else "fall short of"
    return (
        f"The study's dividing line here is {line}. Every value of this band would {side} it, "
        "so no two actions inside the band can fall on opposite sides of the line."
    )


def _values(action: SubAction, values: list) -> str:
    if len(values) > 4 and action.kind in ("score", "count"):
        return f"{action.label_for(values[0])} to {action.label_for(values[-1])}"
    return ", ".join(action.label_for(v) for v in values)


# The six questions in clinical language -----------------------------------------------------------

# The protocol's questions (protocol.QUESTIONS) as a clinician reads them on screen, each with
# the one line that explains the harness's term it must use.
QUESTION_WORDS = {
    "q1": (
        "Does the cited source really say what the quoted clause says?",
        "The clause is the passage of the source the band's authors rely on.",
    ),
    "q2": (
        "Does the reasoning use only what is known at this step?",
        "At triage and ordering that is the clinical core alone; from reassessment on, also the "
        "results of the tests that were ordered.",
    ),
    "q3": (
        "Too wide: is any action in the band one the clause would not support for this patient?",
        "",
    ),
    "q4": (
        "Too narrow: does the clause support an action for this patient that the band leaves out?",
        "",
    ),
    "q5": (
        "Which reading is right for this patient, the band's or the disputed span's, and why?",
        "The disputed span holds the values the band's authors could not settle either way; the "
        "picture shows them in amber.",
    ),
    "q6": (
        "Would you sign this band as a defensible reading of the clause? "
        "If not, what should it be?",
        "",
    ),
}
READING_WORDS = {
    "band": "the band's reading",
    "disputed": "the disputed span's reading",
    "neither": "neither",
}
CONFIDENCE_WORDS = {"low": "not very sure", "moderate": "fairly sure", "high": "very sure"}


def flagged_by(problem: str) -> str:
    """The caption under a question: which answer needs a note."""
    return f"If {problem}, say which in the note."
