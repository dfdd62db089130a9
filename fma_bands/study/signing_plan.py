"""What a signature would cover (docs/design.md, Identity, keys and attestation), decided here: the
reviews the rater submitted in the app, hand-back reviews only once the rater confirms them, and on
signing again exactly what was signed before plus the change, never an unconfirmed import. Also how
the Sign attestation page lists those reviews and the hand-backs waiting for the rater's
confirmation.
"""

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlmodel import Session

from fma_bands.core.actions import sub_action
from fma_bands.core.band_text import DECLINED_BAND, describe
from fma_bands.core.bands import parse_band, to_file
from fma_bands.core.labels import case_label
from fma_bands.core.people import UserPublic
from fma_bands.core.protocol import statement_text
from fma_bands.core.vignettes import Library
from fma_bands.evidence.envelope import stamp
from fma_bands.evidence.log import latest_signed_reviews, subject_name
from fma_bands.study import ledger
from fma_bands.study.reviews import ReviewData
from fma_bands.study.submissions import attested_band, my_latest_submitted

Band = tuple[str, str]


@dataclass
class SigningPlan:
    """What a signature would cover, shown to the rater before they sign."""

    reviews: list[dict[str, Any]] = field(default_factory=list)  # what the statement will hold
    carried: list[str] = field(default_factory=list)  # bands signed before, signed again as then
    # Hand-backs the rater has not confirmed yet (covered only when confirmed with this signature).
    imported: list[dict[str, Any]] = field(default_factory=list)
    # (vignette id, sub-action, why) of each band the signature does not cover
    skipped: list[tuple[str, str, str]] = field(default_factory=list)

    def statement(self, *, exemptions: bool = False) -> str:
        """The statement the rater signs, the same in every record of the signature and shown
        on the Sign attestation page before signing: true of the round and mode of each review,
        and of the exemption reviews it also covers (`exemptions`)."""
        return statement_text(
            ((r.get("round", 1), r.get("mode", "review")) for r in self.reviews),
            exemptions=exemptions,
        )

    @property
    def fresh(self) -> list[dict[str, Any]]:
        carried = set(self.carried)  # a list's membership test would be one pass per review
        return [
            r
            for r in self.reviews
            if subject_name(r["vignette_id"], r["sub_action"]) not in carried
        ]


def covered_rows(signing: SigningPlan, numbers: Mapping[str, int]) -> list[dict[str, Any]]:
    """The reviews a signature covers, as the Sign attestation page lists them: by case label,
    never by id (an id can say which stratum a case is from)."""
    rows = []
    carried = set(signing.carried)
    # Raters sign the same few bands again and again: each distinct one is read and put in
    # words once (keyed by its JSON text, which tells `true` from `1`).
    words: dict[tuple[str, str], str] = {}
    for r in signing.reviews:
        label = subject_name(r["vignette_id"], r["sub_action"])
        origin = (
            "reviewed in the app"
            if r.get("origin", "app") == "app"
            else "paper hand-back, confirmed by you"
        )
        attested = r.get("attested_band")
        if attested is not None:
            key = (r["sub_action"], json.dumps(attested, sort_keys=True))
            if key not in words:
                words[key] = describe(parse_band(r["sub_action"], attested))
        rows.append(
            {
                "case": case_label(numbers, r["vignette_id"]),
                "sub-action": sub_action(r["sub_action"]).label,
                "verdict": r["verdict"],
                "band attested": DECLINED_BAND if attested is None else words[key],
                # What an AMEND corrected besides the band: signed, and exported (bands.yaml).
                "corrected": _corrected(r),
                # Round 2 re-reviews a band: its review is then of round 2, whatever its revision.
                "round": r.get("round"),
                "revision": r.get("revision"),
                "origin": origin,
                "already signed": "yes, unchanged"
                if label in carried
                else "no, new or changed since signed",
            }
        )
    return rows


def _corrected(review: Mapping[str, Any]) -> str:
    """What the review changed of the proposal, in words: an AMEND's band where it differs from
    the one proposed (in blind mode no band was shown: the rater's own), then its corrections
    besides the band; an ACCEPT or a DECLINE changed nothing, nor did an AMEND that kept all."""
    if review["verdict"] != "AMEND":
        return "nothing"
    proposed = review.get("proposed_band")
    changed = ["the band"] if proposed is None or proposed != review.get("attested_band") else []
    changed += [k.replace("_", " ") for k in review.get("corrections") or {}]
    return ", ".join(changed) or "nothing: the reason says what is wrong"


def imported_rows(signing: SigningPlan, numbers: Mapping[str, int]) -> list[dict[str, Any]]:
    """Hand-back reviews awaiting the rater's confirmation, each saying who entered it, when."""
    return [
        {
            "case": case_label(numbers, r["vignette_id"]),
            "sub-action": sub_action(r["sub_action"]).label,
            "verdict": r["verdict"],
            "band": "" if r["band"] is None else describe(parse_band(r["sub_action"], r["band"])),
            "entered": f"entered from your paper hand-back by {r['entered_by']} on "
            f"{r['entered_at']:%d %b %Y}",
            "reason": r["reason"],
        }
        for r in signing.imported
    ]


def _review_entry(review: ReviewData, library: Library) -> dict[str, Any]:
    vignette = library.vignettes[review.vignette_id]
    proposal = vignette.proposal(review.sub_action)
    assert proposal is not None
    band = attested_band(review, library)
    entry: dict[str, Any] = {
        "vignette_id": review.vignette_id,
        "sub_action": review.sub_action,
        "round": review.round,
        "revision": review.revision,
        "origin": "app" if review.origin == "browser" else "handback",
        "mode": review.mode,
        "verdict": review.verdict,
        "proposed_band": to_file(proposal.acceptable) if review.mode == "review" else None,
        "band_digest": review.band_digest,
        "proposal_digest": review.proposal_digest,
        "context_digest": review.context_digest,
        "attested_band": to_file(band) if band is not None else None,
        "answers": review.answers,
        "reason": review.reason,
    }
    if review.corrections:
        # An AMEND's corrected clause, source, reasoning or disputed span: signed as exported.
        entry["corrections"] = review.corrections
    if review.origin == "handback":
        entry["entered_by"] = review.entered_by or "(not recorded)"
        entry["entered_at"] = stamp(review.submitted_at or review.updated_at)
        entry["confirmed_by_rater"] = True
    return entry


def imported_entry(review: ReviewData) -> dict[str, Any]:
    """A hand-back review as the Sign attestation page lists it for confirmation."""
    return {
        "vignette_id": review.vignette_id,
        "sub_action": review.sub_action,
        "verdict": review.verdict,
        "band": review.band,
        "reason": review.reason,
        "entered_by": review.entered_by or "the coordinator (name not recorded)",
        "entered_at": review.submitted_at or review.updated_at,
        "revision": review.revision,
    }


def plan(
    session: Session,
    library: Library,
    rater: UserPublic,
    *,
    confirm_imported: bool = False,
    only: Collection[Band] | None = None,
) -> SigningPlan:
    """What a signature by `rater` would cover now.

    For each band: the latest submitted review if the rater may sign it (made in the app, or a
    hand-back they confirmed before or confirm now); otherwise the review exactly as they last
    signed it, if they have. With `only`, just those bands are taken afresh and every other band
    is what was signed before: signing again after a change covers that and the change."""
    result = SigningPlan()
    latest = my_latest_submitted(session, library, rater)
    before = latest_signed_reviews(ledger.store_evidence(session), rater.pseudonym)
    for vignette in library:
        for proposal in vignette.proposals:
            band = (vignette.id, proposal.sub_action)
            label = subject_name(*band)
            review = latest.get(band)
            entry = None
            if review is not None and (only is None or band in only):
                if review.stale:
                    result.skipped.append((*band, "the vignette changed after you submitted"))
                elif review.origin == "handback" and not review.confirmed_at:
                    result.imported.append(imported_entry(review))
                    if confirm_imported:
                        entry = _review_entry(review, library)
                else:
                    entry = _review_entry(review, library)
                if entry is not None and before.get(band) == entry:
                    entry = None  # exactly what was signed: carried as it was, nothing new
            if entry is None and band in before:
                entry = before[band]
                result.carried.append(label)
            if entry is not None:
                result.reviews.append(entry)
    return result
