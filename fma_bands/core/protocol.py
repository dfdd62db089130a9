"""The protocol a rater follows (docs/design.md, The review task; Identity, keys and
attestation): verdicts, the six questions in order, the declarations and meanings of a
signature, and the fields of a private identity.

Plain constants, cheap to import: the command line builds its help from them.
"""

from collections.abc import Collection

VERDICTS = ("ACCEPT", "AMEND", "DECLINE")
DECLINE = "DECLINE"
CHOICES = ("yes", "no", "unsure")
# Question 5's answer where a disputed span is recorded: which reading is right for the patient.
READINGS = ("band", "disputed", "neither")
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
    "not-an-author": "I am not an author of the study whose bands I adjudicated.",
    "no-financial-interest": "I have no financial interest in the study or in its outcome.",
    "consent-editor-disclosure": (
        "I consent to my identity being disclosed to the editor of the journal that "
        "considers the study, on request."
    ),
}
MEANINGS = ("adjudication", "review", "approval")
STATEMENT_TEXT = (
    "I adjudicated the acceptable-action bands listed in this statement, given only the facts "
    "available to the agent at each step. Each verdict, band and answer recorded here is my "
    "own clinical judgement, made without seeing any other rater's work."
)
# A round-2 review is made after the rater saw the anonymised round-1 reviews of that band:
# what the rater signs must say so (docs/design.md, Blinding and rounds).
_OWN = (
    "I adjudicated the acceptable-action bands listed in this statement, given only the facts "
    "available to the agent at each step. Each verdict, band and answer recorded here is my "
    "own clinical judgement"
)
_ROUND = {
    1: "made without seeing any other rater's work",
    2: "made after I saw the anonymised round-1 reviews of the same band (no rater named)",
}


def statement_text(rounds: Collection[int]) -> str:
    """What a rater signs for reviews of these rounds: true of each of them."""
    found = sorted(set(rounds))
    if found == [1] or not found:
        return STATEMENT_TEXT
    if found == [2]:
        return f"{_OWN}, {_ROUND[2]}."
    return f"{_OWN}: those of round 1 {_ROUND[1]}; those of round 2 {_ROUND[2]}."


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
