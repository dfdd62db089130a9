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
from functools import lru_cache

from fma_bands.core.actions import STEPS, SUB_ACTIONS
from fma_bands.core.band_text import describe
from fma_bands.core.bands import AnyBand, MultilabelBand
from fma_bands.core.people import UserPublic
from fma_bands.core.vignettes import Library, Vignette

# Abbreviations written in capitals, and a few names with their own spelling.
_ACRONYM_WORDS = """
abg alt ast bhcg bmp bnp cbc cmp ck crp csf ct cta ctpa cxr ecg eeg ekg esr fbc gfr hba1c hcg
inr iv lft lfts mri pdmp pocus pt ptt tsh u ua ue vbg wbc
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
# FAST: focused assessment with sonography in trauma; eFAST, its extended form.
_WORD_SPELLINGS = {"xray": "X-ray", "x-ray": "X-ray", "efast": "eFAST", "fast": "FAST"}


@lru_cache(maxsize=4096)  # asked for every test of every band a page lists
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
    # A word with a spelling of its own keeps it at the start too ("eFAST", never "EFAST").
    own = words[0].lower() in _WORD_SPELLINGS
    shown[0] = first if own or first.isupper() else first[:1].upper() + first[1:]
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


def from_address(
    library: Library, params: Mapping[str, str], viewer: UserPublic, *, key: bytes
) -> str | None:
    """The vignette an address names, by its case token or (the coordinator's links only) by
    its id; None if it names none of the study's. A rater's address never finds a case by id:
    typing ids would tell them which case number is which id and stratum."""
    token = params.get("case")
    if token:
        return next((vid for vid in library.vignettes if case_token(vid, key) == token), None)
    if not viewer.is_coordinator:
        return None
    vid = params.get("vignette") or params.get("id")
    return vid if vid in library.vignettes else None


def vignette_address(vid: str, viewer: UserPublic, *, key: bytes) -> dict[str, str]:
    """Query parameters of the vignette page: the id for the coordinator, a token for raters."""
    return {"id": vid} if viewer.is_coordinator else address(vid, key=key)


def shelf(library: Library, domain: str | None = None, *, key: bytes) -> list[Vignette]:
    """The vignettes in the order of their case numbers, as every page lists cases (for raters
    id order would group strata together; the coordinator reads the same numbers, the Band
    registry's and progress's order); optionally one domain only."""
    chosen = [v for v in library if domain is None or v.domain == domain]
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
        required = ", ".join(name(k) or humanise(k) for k in band.required)
        others = [k for k in band.defensible if k not in band.required]
        defensible = ", ".join(name(k) or humanise(k) for k in others)
        # Every required order is defensible too: each test is named once, where it stands.
        if not required:
            return f"defensible to order: {defensible}; none required"
        return f"required: {required}; " + (
            f"also defensible: {defensible}" if defensible else "nothing else defensible"
        )
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


# The registry's codes in words ---------------------------------------------------------------

# The registry's JSON and bands.yaml keep their stable codes (fma_bands.evidence.provenance);
# a screen says each in these words, the code beside them, never alone.


@dataclass(frozen=True)
class CodeWords:
    """A registry code as the coordinator reads it: a few words for a table's cell or tag, and
    the sentence that says what it means and what to do."""

    short: str
    sentence: str


REASON_WORDS = {
    "no_attestation": CodeWords(
        "no signed review",
        "No rater has signed a review of this band yet, so it keeps the authors' provenance.",
    ),
    "malformed": CodeWords(
        "unreadable signed file",
        "A signed file for this band cannot be read as a signed statement, so it counts for "
        "nothing: check the attestations folder (fma-bands verify).",
    ),
    "bad_signature": CodeWords(
        "altered signed file",
        "A signed review was changed after it was signed, so it counts for nothing.",
    ),
    "unknown_key": CodeWords(
        "retired key",
        "A record is signed with a key that was retired before it was written, so it counts "
        "for nothing.",
    ),
    "duplicate_key": CodeWords(
        "key shared by two raters",
        "One signing key belongs to two raters, so nothing it signs counts: reset one of them.",
    ),
    "wrong_subject": CodeWords(
        "same band signed elsewhere",
        "Another case with the same band has a signed review, but a signature counts only for "
        "the case it names: this case's band still needs its own.",
    ),
    "digest_mismatch": CodeWords(
        "band changed after signing",
        "The band was edited after the raters signed it: their signatures no longer cover it, "
        "so it needs reviewing again.",
    ),
    "stale_context": CodeWords(
        "case changed after signing",
        "The case's clinical information changed after the band was signed, so the signatures "
        "no longer cover it.",
    ),
    "proposal_changed": CodeWords(
        "proposal changed after signing",
        "The proposal (its source, clause, reasoning, notes, disputed span, threshold or "
        "provenance) changed after it was signed, so the signatures no longer cover it.",
    ),
    "revoked": CodeWords(
        "signature withdrawn", "A rater withdrew their signature, so it counts for nothing."
    ),
    "declined": CodeWords(
        "declined", "A rater declined to judge this band; a decline counts for nothing."
    ),
    "out_of_scope": CodeWords(
        "outside scope",
        "A signing rater's specialty is outside what the study's scope rule asks for this "
        "kind of decision.",
    ),
    "quorum_not_met": CodeWords(
        "too few signatures",
        "Fewer raters signed this band than the study's policy requires.",
    ),
    "no_consensus": CodeWords(
        "no consensus",
        "The raters' bands share no value, so there is no band they all stand behind.",
    ),
    "no_policy": CodeWords(
        "no signed policy",
        "The study has no signed policy yet (how many raters a band needs), so no band can be "
        "adjudicated.",
    ),
    "wrong_study": CodeWords(
        "record of another study",
        "A record names another study: it is not part of this study's log.",
    ),
    "unrostered_key": CodeWords(
        "key not on the roster",
        "A record is signed with a key the study's roster did not give its signer at that "
        "time, so it counts for nothing.",
    ),
    "folder_invalid": CodeWords(
        "folder does not verify",
        "The attestations folder does not verify, so no band is adjudicated: fma-bands verify "
        "lists the problems.",
    ),
    "stray_file": CodeWords(
        "file outside the log",
        "A file in the attestations folder is not part of the study's log; it changes nothing.",
    ),
    "chair_none": CodeWords(
        "no chair named",
        "A chair's decision is on file, but the study's policy names no chair, so it settles "
        "nothing: name the chair in the policy (Study admin) if the decision stands.",
    ),
    "chair_not_chair": CodeWords(
        "signed by a non-chair",
        "A decision on this band was signed by a rater the policy did not name chair (or no "
        "longer names), so it counts for nothing.",
    ),
    "chair_stale": CodeWords(
        "band changed since chair decided",
        "The band changed after the chair signed their decision on it: the chair decides again.",
    ),
    "chair_band_invalid": CodeWords(
        "chair's band unreadable",
        "The band the chair's decision chose cannot be read for this sub-action, so the "
        "decision settles nothing.",
    ),
    "chair_not_in_dispute": CodeWords(
        "not the chair's to decide",
        "A chair's decision settles only a band whose raters' bands still share no value after "
        "round 2, and nothing else keeps this band from being granted.",
    ),
}
WARNING_WORDS = {
    "out_of_scope": CodeWords(
        "outside scope",
        "A signing rater's specialty is outside what the study's scope rule asks for this kind "
        "of decision; the policy only warns, so the band still counts.",
    ),
    "demo_account": CodeWords(
        "demo account",
        "Signed with a demo account, whose passphrase fma-bands demo set rather than the rater: "
        "fine for trying the app, not for a real study.",
    ),
    "key_changed": CodeWords(
        "key replaced",
        "A signing rater's key was replaced (an account reset): check with them that the "
        "signature is theirs.",
    ),
    "chair_decision": CodeWords(
        "chair's decision",
        "Decided by the study's chair after round 2, where the raters' bands shared no value: "
        "the chair's decision, never counted as agreement between raters.",
    ),
    "chair_rated": CodeWords(
        "chair also rated it",
        "The study's chair is also one of this band's raters: the band was decided by someone "
        "whose own reading was in dispute.",
    ),
}
# What a band the harness cannot check yet means for the coordinator, by the kind of band:
# said once for the whole study (fma_bands.evidence.harness.harness_note is the export's note).
HARNESS_WORDS = {
    "boolean": CodeWords(
        "harness cannot check yet",
        "The harness cannot yet check a run against a yes/no band: its check is written for "
        "other kinds of band. These bands are exported and kept as decided, but no run is "
        "scored against them yet.",
    ),
    "multilabel": CodeWords(
        "harness cannot check yet",
        "The harness cannot yet check a run's orders against an orders band: it compares the "
        "whole list of orders with each defensible order, so no run ever falls inside, and it "
        "has no place for the required orders (the export carries them beside the band). "
        "These bands are exported and kept as decided, but no run is scored against them yet.",
    ),
}


def code_words(code: str, words: Mapping[str, CodeWords]) -> CodeWords:
    """The words of a code; a code with none (a newer registry's) still reads as a sentence."""
    return words.get(code) or CodeWords(humanise(code).lower(), f"{humanise(code)}.")


def code_sentence(code: str, words: Mapping[str, CodeWords]) -> str:
    """The code's sentence with the code beside it, as the JSON names it."""
    return f"{code_words(code, words).sentence} (code: {code})"
