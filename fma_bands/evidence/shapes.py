"""The shapes the registry reads in a signed record's content: a review, an exemption review, a
chair's decision (docs/design.md, Attestations). A record signed by a key of its own study can
still hold anything: one whose content lacks its shape is refused whole, never read in part.

What a record's content lacks depends on its statement alone, so it is worked out with the
statement's parse (envelope.py) and kept with it (kept_parses.py); the walk (log.py) refuses the
record for it at the same place in its checks as it always did, after the signer's key.
"""

import re
from typing import Any

from fma_bands.core.protocol import VERDICTS

REVIEW_TEXTS = ("vignette_id", "sub_action", "band_digest", "context_digest")
# What else a signed review may hold, and of which kinds.
REVIEW_KINDS: dict[str, tuple[type, ...]] = {
    "proposal_digest": (str, type(None)),
    "mode": (str,),
    "reason": (str, type(None)),
    "answers": (dict,),
    "corrections": (dict,),
    "origin": (str,),
}
EXEMPTION_VERDICTS = ("CONFIRM", "REJECT", "AMEND")
# An attribute or a direction is a short lower-case word, as the harness writes them
# ("lep", "more", "away_from_nsaid"): the harness compares them as strings.
WORD = re.compile(r"[a-z][a-z0-9_]{0,39}\Z")
CHAIR_TEXTS = ("vignette_id", "sub_action", "band_digest", "context_digest", "proposal_digest")

NOT_REVIEWS = "its reviews are not a list of signed reviews"
NOT_EXEMPTION_REVIEWS = "its exemption reviews are not a list of signed reviews"

_ABSENT = object()


def adjudication_lacks(predicate: dict[str, Any]) -> str | None:
    """What an adjudication's predicate lacks of the shape the registry reads, as the reason
    its record is refused; None when it lacks nothing."""
    reviews = predicate.get("reviews")
    if not isinstance(reviews, list) or not all(map(review_well_formed, reviews)):
        return NOT_REVIEWS
    if not exemption_reviews_well_formed(predicate.get("exemption_reviews", [])):
        return NOT_EXEMPTION_REVIEWS
    return None


def review_well_formed(review: Any) -> bool:
    """Whether a signed review has the shape the registry reads: its band and digests named by
    text, a verdict, and what else it holds of the right kind."""
    # Plain loops, not generators: every review of a study is checked (179,000 at 1,000 x 20),
    # and a generator's frames were most of what this cost.
    if not isinstance(review, dict) or review.get("verdict") not in VERDICTS:
        return False
    for key in REVIEW_TEXTS:
        if not isinstance(review.get(key), str):
            return False
    for key, kinds in REVIEW_KINDS.items():
        value = review.get(key, _ABSENT)
        if value is not _ABSENT and not isinstance(value, kinds):
            return False
    if "round" in review and not _whole(review["round"]):
        return False
    return all(isinstance(answer, dict) for answer in review.get("answers", {}).values())


def exemption_reviews_well_formed(reviews: Any) -> bool:
    """Whether an adjudication's exemption reviews (docs/design.md, Exemptions) have the shape
    the exemption decision reads: a list of mappings naming an entry, a verdict, the entry's
    digest and the round, a direction only for an AMEND and then a word the harness reads
    (the direction the export writes), and a reason that is text if given. The decision
    compares the verdicts and directions the raters gave: a CONFIRM carrying a direction would
    keep two CONFIRMs from agreeing, as the app never lets one carry any."""
    return isinstance(reviews, list) and all(
        isinstance(r, dict)
        and all(isinstance(r.get(k), str) for k in ("attribute", "sub_action", "entry_digest"))
        and r.get("verdict") in EXEMPTION_VERDICTS
        and (_word(r.get("direction")) if r["verdict"] == "AMEND" else r.get("direction") is None)
        and isinstance(r.get("reason"), str | None)
        and _whole(r.get("round"))
        for r in reviews
    )


def chair_decision_well_formed(decision: Any) -> bool:
    """Whether a chair's decision has the shape the registry reads (docs/design.md, The
    registry): the band it settles with its digests, the band chosen, a reason and the round."""
    return (
        isinstance(decision, dict)
        and all(isinstance(decision.get(k), str) for k in CHAIR_TEXTS)
        and "band" in decision
        and isinstance(decision.get("reason"), str)
        and bool(decision["reason"].strip())
        and isinstance(decision.get("round"), int)
        and not isinstance(decision.get("round"), bool)
    )


def _word(value: Any) -> bool:
    return isinstance(value, str) and WORD.match(value) is not None


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1
