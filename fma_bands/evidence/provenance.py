"""The registry's vocabulary (docs/design.md, The registry): the provenance it grants, the stable
codes of the reasons it refuses a band and the warnings that travel with a granted one, and what it
decided for each band (Decision), as the export states it (Grant, Verdict).
"""

from dataclasses import dataclass, field
from typing import Any

from fma_bands.core.bands import AnyBand, to_harness

ADJUDICATED = "clinician-adjudicated"
REASONS = {
    "no_attestation": "no attestation on file covers this band",
    "malformed": "an attestation file is not a well-formed signed statement",
    "bad_signature": "an attestation's signature does not match its content: it was altered",
    "unknown_key": "a record is signed by a key retired before its place in the log",
    "duplicate_key": "one key is in the public records of two pseudonyms, so it counts for none",
    "wrong_subject": "an attestation covers an identical band of another vignette, not this one",
    "digest_mismatch": "the band was changed after it was signed",
    "stale_context": "the vignette's clinical information changed after the band was signed",
    "proposal_changed": "the proposal (its source, clause, reasoning, notes, span, threshold or "
    "provenance) changed after it was signed",
    "revoked": "the attestation was revoked by its signer",
    "declined": "the adjudicator declined this band, which counts for nothing",
    "out_of_scope": "the adjudicator's specialty is outside the scope rule for this sub-action",
    "quorum_not_met": "fewer valid attestations than the policy's quorum",
    "no_consensus": "the adjudicators' bands share no value",
    "no_policy": "no signed policy record is in the log, so nothing is granted",
    "wrong_study": "a record names another study: it is not part of this study's log",
    "unrostered_key": "a record is signed by a key the root-signed roster does not give its "
    "signer at that place in the log",
    "folder_invalid": "the attestations folder does not verify, so nothing is granted",
    "stray_file": "a file in the attestations folder is not part of the study's log",
}
# Warnings travel with a granted band; they never refuse it.
WARNINGS = {
    "out_of_scope": REASONS["out_of_scope"],
    "demo_account": "the adjudicator's passphrase was set by fma-bands demo, not chosen by them",
    "key_changed": "the adjudicator's key was replaced (an account reset): check with them",
}


@dataclass(frozen=True)
class Reason:
    code: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


@dataclass(frozen=True)
class Verdict:
    """One counted adjudicator's signed verdict on a band, so the export can state it."""

    pseudonym: str
    specialty: str
    verdict: str
    reason: str | None
    band: AnyBand
    round: int
    # What their AMEND corrected of the proposal (clause, source, reasoning, disputed_span).
    corrections: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Grant:
    """What the registry decided for one band; without one a band keeps its file provenance."""

    provenance: str
    band: AnyBand
    adjudicated_by: tuple[str, ...] = ()
    disputed_span: AnyBand | None = None
    n_raters: int = 0
    intersection_rule: str = "absent"
    attestations: tuple[dict[str, Any], ...] = ()
    warnings: tuple[str, ...] = ()
    verdicts: tuple[Verdict, ...] = ()
    round: int | None = None
    # The proposal's texts every counted adjudicator corrected alike (registry.agreed_texts).
    corrected: dict[str, str] = field(default_factory=dict)
    # Whether every counted review signed the proposal's digest (review mode). A band granted on
    # blind reviews takes nothing from the proposal, which no signature covers.
    proposal_signed: bool = True
    # Why each other signed review of the band does not count (declined, stale, revoked...).
    set_aside: tuple[str, ...] = ()


@dataclass
class Decision:
    vignette_id: str
    sub_action: str
    provenance: str
    band: AnyBand
    disputed_span: AnyBand | None = None
    adjudicated_by: tuple[str, ...] = ()
    reasons: list[Reason] = field(default_factory=list)
    warnings: list[Reason] = field(default_factory=list)
    attestations: list[dict[str, Any]] = field(default_factory=list)
    n_raters: int = 0
    intersection_rule: str = "absent"
    verdicts: list[Verdict] = field(default_factory=list)
    round: int | None = None
    corrected: dict[str, str] = field(default_factory=dict)
    proposal_signed: bool = True

    @property
    def adjudicated(self) -> bool:
        return self.provenance == ADJUDICATED

    def grant(self) -> Grant:
        return Grant(
            provenance=self.provenance,
            band=self.band,
            adjudicated_by=self.adjudicated_by,
            disputed_span=self.disputed_span,
            n_raters=self.n_raters,
            intersection_rule=self.intersection_rule,
            attestations=tuple(self.attestations),
            warnings=tuple(f"{w.code}: {w.message}" for w in self.warnings),
            verdicts=tuple(self.verdicts),
            round=self.round,
            corrected=dict(self.corrected),
            proposal_signed=self.proposal_signed,
            set_aside=tuple(r.message for r in self.reasons),
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "vignette_id": self.vignette_id,
            "sub_action": self.sub_action,
            "provenance": self.provenance,
            "acceptable": to_harness(self.band),
            "adjudicated_by": list(self.adjudicated_by),
            "reasons": [r.code for r in self.reasons],
            "reason_messages": [r.message for r in self.reasons],
            "warnings": [w.code for w in self.warnings],
            "warning_messages": [w.message for w in self.warnings],
            "attestations": self.attestations,
        }
