"""The band registry (DESIGN 2.7): the only code that makes a band clinician-adjudicated.

It decides from files alone (the vignette files, the envelopes and adjudicators.yaml in
attestations/, and policy.yaml), so an editor can redo every decision with no database.
"""

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fma_bands.actions import sub_action
from fma_bands.bands import AnyBand, band_from_values, consensus, parse_band, to_harness
from fma_bands.envelopes import read_folder, subject_name
from fma_bands.errors import FmaBandsError
from fma_bands.policy import Policy, check_policy, read_policy
from fma_bands.vignettes import Library, Proposal, Vignette

ADJUDICATED = "clinician-adjudicated"
REASONS = {
    "no_attestation": "no attestation on file covers this band",
    "malformed": "an attestation file is not a well-formed signed statement",
    "bad_signature": "an attestation's signature does not match its content: it was altered",
    "unknown_key": "an attestation is signed by a key that is not enrolled",
    "wrong_signer": "an attestation is signed by a key enrolled for someone other than its "
    "named adjudicator",
    "wrong_subject": "an attestation covers an identical band of another vignette, not this one",
    "digest_mismatch": "the band was changed after it was signed",
    "stale_context": "the vignette's clinical information changed after the band was signed",
    "revoked": "the attestation was revoked by its signer",
    "declined": "the adjudicator declined this band, which counts for nothing",
    "out_of_scope": "the adjudicator's specialty is outside the scope rule for this sub-action",
    "quorum_not_met": "fewer valid attestations than the policy's quorum",
    "no_consensus": "the adjudicators' bands share no value",
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


@dataclass(frozen=True)
class Grant:
    """What the registry decided for one band; without one a band keeps its file provenance."""

    provenance: str
    band: AnyBand
    adjudicated_by: tuple[str, ...] = ()
    disputed_span: AnyBand | None = None
    n_raters: int = 0
    intersection_rule: str = "absent"
    attestations: tuple[dict[str, str], ...] = ()
    warnings: tuple[str, ...] = ()
    verdicts: tuple[Verdict, ...] = ()
    round: int | None = None


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
    attestations: list[dict[str, str]] = field(default_factory=list)
    n_raters: int = 0
    intersection_rule: str = "absent"
    verdicts: list[Verdict] = field(default_factory=list)
    round: int | None = None

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


@dataclass
class Registry:
    decisions: list[Decision]
    policy: Policy
    file_problems: list[str] = field(default_factory=list)
    valid_signers: dict[str, str] = field(default_factory=dict)  # pseudonym -> latest date

    def grants(self) -> dict[tuple[str, str], Grant]:
        return {(d.vignette_id, d.sub_action): d.grant() for d in self.decisions}


@dataclass
class _Entry:
    pseudonym: str
    specialty: str
    file: str
    keyid: str
    signed_at: str
    review: dict[str, Any]
    subject_digest: str | None
    payload_sha256: str


def decide(
    library: Library,
    folder: Path,
    *,
    quorum: int | None = None,
    scope: str | None = None,
) -> Registry:
    """Every proposed band's provenance, with stable reason codes where it is not granted."""
    stored = read_policy(folder)
    policy = check_policy(
        stored.quorum if quorum is None else quorum, stored.scope if scope is None else scope
    )
    adjudicators, envelopes = read_folder(folder)
    entries: dict[tuple[str, str], list[_Entry]] = {}
    failures: dict[tuple[str, str], list[Reason]] = {}
    revocations: set[tuple[str, str]] = set()
    registry = Registry([], policy)
    for env in envelopes:
        if env.error:
            code, message = env.error
            claims = _claimed_names(env.claimed)
            for name in claims:
                failures.setdefault(name, []).append(Reason(code, f"{env.path.name}: {message}"))
            if not claims:
                registry.file_problems.append(f"{env.path.name}: {code}: {message}")
            continue
        predicate = env.statement["predicate"]
        if env.kind == "revocation":
            # Matched on the revoked payload's digest, so renaming the file does not undo it.
            digest = env.statement["subject"][0]["digest"]["sha256"]
            revocations.add((env.pseudonym, digest))
            continue
        subjects = {s["name"]: s["digest"].get("sha256") for s in env.statement["subject"]}
        record = adjudicators[env.pseudonym]
        for review in predicate["reviews"]:
            name = subject_name(review["vignette_id"], review["sub_action"])
            entries.setdefault((review["vignette_id"], review["sub_action"]), []).append(
                _Entry(
                    pseudonym=env.pseudonym,
                    specialty=record.get("specialty") or "",
                    file=env.path.name,
                    keyid=env.keyid,
                    signed_at=predicate["signature_manifestation"]["signed_at"],
                    review=review,
                    subject_digest=subjects.get(name),
                    payload_sha256=env.payload_sha256,
                )
            )
    revoked = {
        e.file
        for group in entries.values()
        for e in group
        if (e.pseudonym, e.payload_sha256) in revocations
    }
    for vignette in library:
        for proposal in vignette.proposals:
            key = (vignette.id, proposal.sub_action)
            decision = _decide_band(
                vignette,
                proposal,
                entries.get(key, []),
                failures.get(key, []),
                revoked,
                policy,
            )
            if not entries.get(key):
                decision.reasons += _copies(proposal, vignette, entries)
            registry.decisions.append(decision)
    for env in envelopes:
        if env.error is None and env.kind == "adjudication" and env.path.name not in revoked:
            date = env.statement["predicate"]["signature_manifestation"]["signed_at"][:10]
            known = registry.valid_signers.get(env.pseudonym, date)
            registry.valid_signers[env.pseudonym] = max(date, known)
    return registry


def _claimed_names(statement: Any) -> list[tuple[str, str]]:
    """The bands an unverified statement claims, as far as it can be read at all."""
    try:
        claims = [(r["vignette_id"], r["sub_action"]) for r in statement["predicate"]["reviews"]]
    except (KeyError, TypeError):
        return []
    return [c for c in claims if all(isinstance(part, str) for part in c)]


def _copies(proposal: Proposal, vignette: Vignette, entries) -> list[Reason]:
    digest = proposal.acceptable.digest().removeprefix("sha256:")
    others = sorted(
        {
            f"{e.file} names {subject_name(*key)}"
            for key, group in entries.items()
            for e in group
            if key[1] == proposal.sub_action
            and key[0] != vignette.id
            and e.subject_digest == digest
        }
    )
    if not others:
        return []
    return [Reason("wrong_subject", f"{REASONS['wrong_subject']} ({'; '.join(others)})")]


def _decide_band(
    vignette: Vignette,
    proposal: Proposal,
    entries: list[_Entry],
    failures: list[Reason],
    revoked: set[str],
    policy: Policy,
) -> Decision:
    name = proposal.sub_action
    action = sub_action(name)
    decision = Decision(vignette.id, name, proposal.provenance, proposal.acceptable)
    decision.disputed_span = proposal.disputed_span
    decision.reasons += failures
    latest: dict[str, _Entry] = {}
    # A later signature by the same adjudicator supersedes the earlier one for this band.
    for entry in sorted(entries, key=lambda e: e.signed_at):
        latest[entry.pseudonym] = entry
    counted: list[tuple[_Entry, AnyBand]] = []
    band_digest = proposal.acceptable.digest().removeprefix("sha256:")
    for entry in latest.values():
        who = f"{entry.pseudonym} ({entry.file})"
        if entry.file in revoked:
            decision.reasons.append(Reason("revoked", f"{REASONS['revoked']}: {who}"))
            continue
        if entry.subject_digest != band_digest or entry.review.get("band_digest") != (
            "sha256:" + band_digest
        ):
            decision.reasons.append(
                Reason("digest_mismatch", f"{REASONS['digest_mismatch']}: {who}")
            )
            continue
        if entry.review.get("context_digest") != vignette.context_digest_for(name):
            decision.reasons.append(Reason("stale_context", f"{REASONS['stale_context']}: {who}"))
            continue
        if entry.review.get("verdict") == "DECLINE":
            decision.reasons.append(Reason("declined", f"{REASONS['declined']}: {who}"))
            continue
        in_scope = action.in_scope(entry.specialty)
        if in_scope is False:
            reason = Reason(
                "out_of_scope",
                f"{REASONS['out_of_scope']}: {entry.pseudonym} ({entry.specialty}) for "
                f"{action.label.lower()}",
            )
            if policy.scope == "require":
                decision.reasons.append(reason)
                continue
            decision.warnings.append(reason)
        try:
            attested = parse_band(
                name, entry.review["attested_band"], orderables=vignette.orderables
            )
        except (FmaBandsError, KeyError) as exc:
            decision.reasons.append(Reason("malformed", f"{who}: attested band unreadable: {exc}"))
            continue
        counted.append((entry, attested))
    if not entries and not failures:
        decision.reasons.append(Reason("no_attestation", REASONS["no_attestation"]))
    decision.n_raters = len(counted)
    if len(counted) < policy.quorum:
        if entries or failures:
            decision.reasons.append(
                Reason(
                    "quorum_not_met",
                    f"{REASONS['quorum_not_met']}: {len(counted)} of {policy.quorum} required",
                )
            )
        return decision
    bands = [band for _, band in counted]
    agreed = consensus(bands)
    decision.intersection_rule = agreed.rule
    # One counted rater's own band stands; several must meet the intersection rule.
    granted = bands[0] if len(bands) == 1 else agreed.band
    if granted is None:
        decision.reasons.append(Reason("no_consensus", REASONS["no_consensus"]))
        return decision
    spare = agreed.disputed
    if len(bands) == 1 and proposal.disputed_span is not None:
        spare = proposal.disputed_span.values() - granted.values()
    decision.provenance = ADJUDICATED
    decision.band = granted
    decision.disputed_span = band_from_values(name, spare) if spare else None
    decision.adjudicated_by = tuple(sorted(e.pseudonym for e, _ in counted))
    ordered = sorted(counted, key=lambda c: c[0].pseudonym)
    # File names only: the export says which folder they are in.
    decision.attestations = [
        {"file": e.file, "keyid": e.keyid, "signed_at": e.signed_at} for e, _ in ordered
    ]
    decision.verdicts = [
        Verdict(
            e.pseudonym,
            e.specialty,
            e.review["verdict"],
            e.review.get("reason"),
            band,
            # Reviews signed before rounds were recorded are round 1: there was no other.
            int(e.review.get("round") or 1),
        )
        for e, band in ordered
    ]
    decision.round = max(v.round for v in decision.verdicts)
    return decision
