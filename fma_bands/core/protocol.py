"""The protocol a rater follows (docs/design.md, The review task; Identity, keys and
attestation): verdicts, the six questions in order, the declarations and meanings of a
signature, and the fields of a private identity.

Plain constants, cheap to import: the command line builds its help from them.
"""

from collections.abc import Iterable

VERDICTS = ("ACCEPT", "AMEND", "DECLINE")
DECLINE = "DECLINE"
CHOICES = ("yes", "no", "unsure")
# Question 5's answer where a disputed span is recorded: which reading is right for the patient.
READINGS = ("band", "disputed", "neither")
# What an AMEND may correct besides the band: the proposal's texts, and its disputed span (set,
# changed, or cleared).
CORRECTED_TEXTS = ("clause", "source", "reasoning")
CORRECTABLE = (*CORRECTED_TEXTS, "disputed_span")
CORRECTION_LABELS = {"clause": "Clause", "source": "Source", "reasoning": "Reasoning"}
# `problem` is the answer that needs a note saying which (q5 has a note only).
QUESTIONS: tuple[dict[str, str], ...] = (
    {
        "key": "q1",
        "text": "Does the cited clause say what the clause field says it says?",
        "problem": "no",
    },
    {
        "key": "q2",
        "text": "Does the reasoning rely only on facts available at this step?",
        "problem": "no",
    },
    {
        "key": "q3",
        "text": "Too wide: is any acceptable action one the clause does not support?",
        "problem": "yes",
    },
    {
        "key": "q4",
        "text": "Too narrow: is any action the clause supports missing?",
        "problem": "yes",
    },
    {
        "key": "q5",
        "text": "If a disputed span is recorded, which reading is right for this patient, and why?",
        "problem": "",
    },
    {
        "key": "q6",
        "text": "Would you sign this band as a defensible reading of that clause? "
        "If not, what should it be?",
        "problem": "no",
    },
)
QUESTION_KEYS = tuple(q["key"] for q in QUESTIONS)

# What a rater declares and what their signature means.
DECLARATIONS = {
    "not-an-author": "I am not an author of the study whose bands or exemptions I adjudicated.",
    "no-financial-interest": "I have no financial interest in the study or in its outcome.",
    "consent-editor-disclosure": (
        "I consent to my identity being disclosed to the editor of the journal that "
        "considers the study, on request."
    ),
}
MEANINGS = ("adjudication", "review", "approval")
# What a rater signs must be true of every review it covers (docs/design.md, Blinding and
# rounds): what the rater had read when they judged depends on the review's round (round 2
# comes after the anonymised round-1 panel) and on its mode (blind mode hides the proposal).
_OWN = (
    "I adjudicated the acceptable-action bands listed in this statement, given only the facts "
    "available to the agent at each step. Each verdict, band and answer recorded here is my "
    "own clinical judgement"
)
_MODE = {
    "review": "made after reading the proposed band with its source, clause and reasoning",
    "blind": "written without seeing the proposed band",
}
_ROUND = {
    1: "without seeing any other rater's work",
    2: (
        "after being shown the anonymised round-1 reviews of the same band, if any were made "
        "(no rater named)"
    ),
}


# Exemption reviews have one round and no proposal text to read beyond the entry itself.
EXEMPTIONS_STATEMENT = (
    "I reviewed the confounded-pair exemptions listed in this statement. Each verdict and "
    "reason recorded for them is my own clinical judgement, made without seeing any other "
    "rater's work."
)


def statement_text(kinds: Iterable[tuple[int, str]], *, exemptions: bool = False) -> str:
    """What a rater signs for band reviews of these (round, mode) kinds and, with `exemptions`,
    for exemption reviews: true of each of them, a set of several kinds saying each one's part.
    A signature of exemption reviews alone says nothing of bands."""
    found = sorted(set(kinds))
    if not found and exemptions:
        return EXEMPTIONS_STATEMENT
    found = found or [(1, "review")]
    unknown = [k for k in found if k[0] not in _ROUND or k[1] not in _MODE]
    if unknown:
        raise ValueError(f"no statement for round {unknown[0][0]} in {unknown[0][1]} mode")
    if len(found) == 1:
        bands = f"{_OWN}, {_made(*found[0])}."
    else:
        parts = "; ".join(
            f"those of round {number} in {mode} mode {_made(number, mode)}"
            for number, mode in found
        )
        bands = f"{_OWN}: {parts}."
    return f"{bands} {EXEMPTIONS_STATEMENT}" if exemptions else bands


def _made(number: int, mode: str) -> str:
    return f"{_MODE[mode]}, and {_ROUND[number]}"


# A rater's private identity: never published; only its salted commitment is.
IDENTITY_FIELDS = (
    "full_name",
    "primary_qualification",
    "postgraduate_qualification",
    "registration_number",
    "registering_body",
    "institution",
    "email",
)
