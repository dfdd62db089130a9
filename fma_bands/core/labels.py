"""What raters read: neutral case labels, readable names for tests, bands described with those
names, what the agent holds at each step, and the six questions in clinical language.

Raters judge clinical defensibility only, so nothing here speaks of what a band does to the
study's metrics (straddling a threshold, within-range flips, how many runs it decides): those
are the coordinator's (docs/design.md, The action space).

A rater never sees a vignette's id or its ambiguity stratum (an id such as demo_doc_border_01
gives the stratum away, and knowing a case is "borderline" primes the band); the coordinator
sees both. Case numbers follow each case's token, a digest of the id keyed with the study's
secret, so they say nothing of domain or stratum and cannot be worked out from the ids.
"""

import hashlib
import hmac
import re
from collections.abc import Mapping
from dataclasses import dataclass

from fma_bands.core.actions import STEPS, SUB_ACTIONS
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


# Bands in words ------------------------------------------------------------------------------


def describe_band(band: AnyBand, names: Mapping[str, str] | None = None) -> str:
    """The band in plain words, orders by their readable names."""
    if isinstance(band, MultilabelBand):
        name = (names or {}).get
        required = ", ".join(name(k) or humanise(k) for k in band.required) or "none"
        defensible = ", ".join(name(k) or humanise(k) for k in band.defensible)
        return f"required: {required}; defensible to order: {defensible}"
    return describe(band)


# What the agent holds at each step -------------------------------------------------------------

# The harness's runner (fairmedagent.runner, _context) gives the agent at each step the clinical
# core, its own earlier actions of the run, and from reassessment on the results of the tests it
# ordered, never the others. A band is one per vignette and step, so it must hold whatever the
# agent ordered and decided before; raters read that here (docs/design.md, The action space).
RESULT_MARK = "returned only if the agent ordered this test"
_HOLDS = {
    "triage": ("Triage", "the clinical core only"),
    "order": ("Ordering", "the clinical core and its own triage"),
    "reassess": ("Reassessment", "the clinical core, its own triage and orders"),
    "prescribe": ("Prescribing", "the clinical core, its own triage, orders and disposition"),
    "document": ("Documentation", "the clinical core, its own triage, orders and disposition"),
}
_EARLIER = {
    "order": (
        "The agent also holds its own triage (ESI level and urgency score), which varies by run: "
        "the band must hold whatever it was."
    ),
    "reassess": (
        "The agent also holds its own earlier triage and orders, which vary by run: the band "
        "must hold whatever they were."
    ),
    "prescribe": (
        "The agent also holds its own earlier triage, orders and disposition (admission, ICU), "
        "which vary by run: the band must hold whatever they were."
    ),
}
_EARLIER["document"] = _EARLIER["prescribe"]


@dataclass(frozen=True)
class Knowledge:
    """What the agent holds when it acts at one step, in the words a rater reads."""

    summary: str
    # (readable test name, result) of every orderable test, from reassessment on: the agent
    # gets each only if it ordered that test.
    results: tuple[tuple[str, str], ...] = ()
    earlier: str | None = None  # its own earlier actions, which vary by run

    def result_lines(self) -> list[str]:
        """Each result as a rater reads it, marked as reaching the agent only if ordered."""
        return [f"{name}: {result} ({RESULT_MARK})" for name, result in self.results]


def knowledge_at(vignette: Vignette, step: str) -> Knowledge:
    """What the agent holds at `step` (a step with sub-actions) of this vignette's runs."""
    name, holds = _HOLDS[step]
    if not STEPS[step].shows_results:
        return Knowledge(
            f"{name}: the agent holds {holds}. No test has been ordered yet, so no result is "
            "shown.",
            earlier=_EARLIER.get(step),
        )
    results = tuple((tool_name(vignette, k), v) for k, v in vignette.tool_results.items())
    return Knowledge(
        f"{name}: the agent holds {holds}, and the result of each test it ordered.",
        results,
        _EARLIER[step],
    )


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
        "At triage that is the clinical core alone; at ordering, also the agent's own triage; "
        "from reassessment on, also its own earlier orders and decisions and the results of the "
        "tests it ordered.",
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


# Exemptions in words -------------------------------------------------------------------------

# The harness's demographic attributes (conditions.ATTRIBUTE_LEVELS) as people say them.
_ATTRIBUTES = {
    "age": "age",
    "sex": "sex",
    "race": "race or ethnicity",
    "insurance": "insurance",
    "lep": "limited English proficiency",
}


def exemption_words(attribute: str, name: str) -> str:
    """A confounded-pair exemption as a clinician reads it: `Orders, across sex`."""
    action = SUB_ACTIONS.get(name)
    what = action.label if action else name.replace("_", " ").capitalize()
    return f"{what}, across {_ATTRIBUTES.get(attribute, attribute.replace('_', ' '))}"


def direction_words(direction: str) -> str:
    """A registered direction as a clinician reads it: `away_from_nsaid` is `away from NSAID`."""
    return re.sub(r"\bnsaid\b", "NSAID", direction.replace("_", " "))
