"""The band registry (docs/design.md, The registry): the only code that makes a band
clinician-adjudicated.

It decides from files alone (the vignette files, and in attestations/ the adjudicators'
self-signed records, the signed envelopes and policy.yaml), so an editor can redo every decision
with no database. adjudicators.yaml is never read for a decision.
"""

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fma_bands.core.actions import sub_action
from fma_bands.core.bands import AnyBand, BandReader, band_from_values, consensus
from fma_bands.core.errors import FmaBandsError
from fma_bands.core.vignettes import Library, Proposal, Vignette
from fma_bands.evidence.envelope import CheckedEnvelope
from fma_bands.evidence.log import (
    Evidence,
    proposal_digest,
    read_evidence,
    revoked_digests,
    subject_name,
)
from fma_bands.evidence.policy import Policy, check_policy, read_policy
from fma_bands.evidence.provenance import (
    ADJUDICATED,
    REASONS,
    WARNINGS,
    Decision,
    Grant,
    Reason,
    Verdict,
)

Band = tuple[str, str]  # (vignette id, sub-action)
# Reasons that hold for every band: while one stands, no band is granted.
EVERYWHERE = ("no_policy", "missing_record")


@dataclass
class Registry:
    decisions: list[Decision]
    # The policy applied: policy.yaml with any override; without a valid policy.yaml nothing is
    # granted, `policy_problem` says why, and `policy` only shows the values that were asked.
    policy: Policy
    file_problems: list[str] = field(default_factory=list)
    valid_signers: dict[str, str] = field(default_factory=dict)  # pseudonym -> latest date
    policy_problem: str | None = None
    head: tuple[int, str] = (0, "")  # the records it was decided from (log.records_head)
    # pseudonym -> the latest self-signed public record: the only source of who is who.
    adjudicators: dict[str, dict[str, Any]] = field(default_factory=dict)

    def grants(self) -> dict[tuple[str, str], Grant]:
        return {(d.vignette_id, d.sub_action): d.grant() for d in self.decisions}


@dataclass
class _Entry:
    pseudonym: str
    record: dict[str, Any]
    file: str
    keyid: str
    signed_at: str
    review: dict[str, Any]
    subject_digest: str | None
    payload_sha256: str

    @property
    def round(self) -> int:
        value = self.review.get("round", 1)
        return value if isinstance(value, int) and not isinstance(value, bool) else 1


def decide(
    library: Library,
    folder: Path,
    *,
    quorum: int | None = None,
    scope: str | None = None,
) -> Registry:
    """Every proposed band's provenance, with stable reason codes where it is not granted."""
    policy, no_policy = _policy(folder, quorum, scope)
    everywhere = [no_policy] if no_policy else []
    evidence = read_evidence(folder)
    registry = Registry([], policy, head=evidence.head)
    registry.adjudicators = {name: dict(a.record) for name, a in evidence.adjudicators.items()}
    if no_policy:
        registry.policy_problem = no_policy.message
    for code, message in evidence.problems:
        registry.file_problems.append(f"{code}: {message}")
        if code == "missing_record":
            everywhere.append(Reason(code, message))
    revocations = revoked_digests(evidence)
    entries, failures = _signed_reviews(evidence, registry.file_problems)
    revoked = {
        e.file
        for group in entries.values()
        for e in group
        if (e.pseudonym, e.payload_sha256) in revocations
    }
    read_band = BandReader()
    for vignette in library:
        for proposal in vignette.proposals:
            key = (vignette.id, proposal.sub_action)
            decision = _decide_band(
                vignette,
                proposal,
                entries.get(key, []),
                everywhere + failures.get(key, []),
                revoked,
                policy,
                read_band,
            )
            if not entries.get(key):
                decision.reasons += _copies(proposal, vignette, entries)
            registry.decisions.append(decision)
    if not everywhere:
        registry.valid_signers = _valid_signers(evidence, revoked)
    return registry


def _policy(folder: Path, quorum: int | None, scope: str | None) -> tuple[Policy, Reason | None]:
    """The policy applied (policy.yaml's, with the values asked for over it), and why there is
    no valid policy.yaml, if there is none."""
    problem: Reason | None = None
    try:
        stored: Policy | None = read_policy(folder)
    except FmaBandsError as exc:
        stored, problem = None, Reason("no_policy", str(exc))
    policy = check_policy(
        quorum if quorum is not None else (stored.quorum if stored else 1),
        scope if scope is not None else (stored.scope if stored else "warn"),
    )
    return policy, problem


def _signed_reviews(
    evidence: Evidence, file_problems: list[str]
) -> tuple[dict[Band, list[_Entry]], dict[Band, list[Reason]]]:
    """Each band's signed reviews, from the adjudications that verify, and why each envelope
    that does not verify fails, for the bands it claims; one that claims no band (or a public
    record) is a file problem instead."""
    entries: dict[Band, list[_Entry]] = {}
    failures: dict[Band, list[Reason]] = {}
    for env in evidence.envelopes:
        if env.error:
            code, message = env.error
            claims = _claimed_names(env.claimed)
            for name in claims:
                failures.setdefault(name, []).append(Reason(code, f"{env.path.name}: {message}"))
            if (not claims and env.kind != "record") or env.kind == "record":
                file_problems.append(f"{env.path.name}: {code}: {message}")
            continue
        if env.kind != "adjudication":
            continue
        for entry in _entries(env, evidence):
            key = (entry.review["vignette_id"], entry.review["sub_action"])
            entries.setdefault(key, []).append(entry)
    return entries, failures


def _entries(env: CheckedEnvelope, evidence: Evidence) -> list[_Entry]:
    """One verified adjudication's signed reviews, in the order it holds them."""
    assert env.statement is not None and env.pseudonym and env.keyid
    subjects = {s["name"]: s["digest"].get("sha256") for s in env.statement["subject"]}
    adjudicator = evidence.adjudicators[env.pseudonym]
    record = dict(adjudicator.record, n_keys=len(adjudicator.keys))
    signed_at, payload_sha256 = env.signed_at, env.payload_sha256 or ""
    return [
        _Entry(
            pseudonym=env.pseudonym,
            record=record,
            file=env.path.name,
            keyid=env.keyid,
            signed_at=signed_at,
            review=review,
            subject_digest=subjects.get(subject_name(review["vignette_id"], review["sub_action"])),
            payload_sha256=payload_sha256,
        )
        for review in env.predicate["reviews"]
    ]


def _valid_signers(evidence: Evidence, revoked: set[str]) -> dict[str, str]:
    """Each pseudonym with a valid, unrevoked adjudication, and the date of their latest."""
    signers: dict[str, str] = {}
    for env in evidence.envelopes:
        if env.error is None and env.kind == "adjudication" and env.path.name not in revoked:
            date = env.signed_at[:10]
            known = signers.get(env.pseudonym or "", date)
            signers[env.pseudonym or ""] = max(date, known)
    return signers


def _claimed_names(statement: Any) -> list[tuple[str, str]]:
    """The bands an unverified statement claims, as far as it can be read at all."""
    try:
        claims = [(r["vignette_id"], r["sub_action"]) for r in statement["predicate"]["reviews"]]
    except (KeyError, TypeError):
        return []
    return [c for c in claims if all(isinstance(part, str) for part in c)]


def _copies(proposal: Proposal, vignette: Vignette, entries) -> list[Reason]:
    digest = proposal.band_digest.removeprefix("sha256:")
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
    read_band: BandReader,
) -> Decision:
    decision = Decision(vignette.id, proposal.sub_action, proposal.provenance, proposal.acceptable)
    decision.disputed_span = proposal.disputed_span
    decision.reasons += failures
    standing = [e for e in entries if e.file not in revoked]
    decision.reasons += _revocations(entries, standing)
    counted = _count(decision, _latest(standing), vignette, proposal, policy, read_band)
    if not entries and not [f for f in failures if f.code not in EVERYWHERE]:
        decision.reasons.append(Reason("no_attestation", REASONS["no_attestation"]))
    decision.n_raters = len(counted)
    if any(r.code in EVERYWHERE for r in failures):
        return decision
    if len(counted) < policy.quorum:
        if entries or failures:
            decision.reasons.append(
                Reason(
                    "quorum_not_met",
                    f"{REASONS['quorum_not_met']}: {len(counted)} of {policy.quorum} required",
                )
            )
        return decision
    _grant(decision, counted, proposal)
    return decision


def _revocations(entries: list[_Entry], standing: list[_Entry]) -> list[Reason]:
    """A reason for each adjudicator whose every signed review of the band is revoked."""
    reasons = []
    for name_revoked in sorted({e.pseudonym for e in entries} - {e.pseudonym for e in standing}):
        files = ", ".join(sorted({e.file for e in entries if e.pseudonym == name_revoked}))
        reasons.append(Reason("revoked", f"{REASONS['revoked']}: {name_revoked} ({files})"))
    return reasons


def _latest(standing: list[_Entry]) -> dict[str, _Entry]:
    """Each adjudicator's latest unrevoked signed review of the band's latest round: an earlier
    one of theirs is superseded, and a round-1 review never stands beside a round 2."""
    last_round = max((e.round for e in standing), default=1)
    latest: dict[str, _Entry] = {}
    for entry in sorted(standing, key=lambda e: e.signed_at):
        if entry.round == last_round:
            latest[entry.pseudonym] = entry
    return latest


def _count(
    decision: Decision,
    latest: dict[str, _Entry],
    vignette: Vignette,
    proposal: Proposal,
    policy: Policy,
    read_band: BandReader,
) -> list[tuple[_Entry, AnyBand]]:
    """The signed reviews that count for the band, each with the band it attests. Why each other
    one does not count goes into the decision's reasons; a signer outside the scope rule into
    its warnings instead, when the policy only warns."""
    name = proposal.sub_action
    action = sub_action(name)
    band_digest = proposal.band_digest.removeprefix("sha256:")
    counted: list[tuple[_Entry, AnyBand]] = []
    for entry in latest.values():
        who = f"{entry.pseudonym} ({entry.file})"
        reason = _refusal(entry, vignette, proposal, band_digest)
        if reason is not None:
            decision.reasons.append(Reason(reason, f"{REASONS[reason]}: {who}"))
            continue
        in_scope = action.in_scope(entry.record.get("specialty") or "")
        if in_scope is False:
            scope_reason = Reason(
                "out_of_scope",
                f"{REASONS['out_of_scope']}: {entry.pseudonym} "
                f"({entry.record.get('specialty')}) for {action.label.lower()}",
            )
            if policy.scope == "require":
                decision.reasons.append(scope_reason)
                continue
            decision.warnings.append(scope_reason)
        try:
            attested = read_band(name, entry.review["attested_band"], vignette.orderables)
        except (FmaBandsError, KeyError) as exc:
            decision.reasons.append(Reason("malformed", f"{who}: attested band unreadable: {exc}"))
            continue
        counted.append((entry, attested))
    return counted


def _grant(decision: Decision, counted: list[tuple[_Entry, AnyBand]], proposal: Proposal) -> None:
    """Grant the band on the reviews that count, if they share a band (else say they do not)."""
    bands = [band for _, band in counted]
    agreed = consensus(bands)
    decision.intersection_rule = agreed.rule
    # One counted rater's own band stands; several must meet the intersection rule.
    granted = bands[0] if len(bands) == 1 else agreed.band
    if granted is None:
        decision.reasons.append(Reason("no_consensus", REASONS["no_consensus"]))
        return
    spare = agreed.disputed
    if len(bands) == 1 and proposal.disputed_span is not None:
        spare = proposal.disputed_span.values() - granted.values()
    decision.provenance = ADJUDICATED
    decision.band = granted
    decision.disputed_span = band_from_values(proposal.sub_action, spare) if spare else None
    decision.adjudicated_by = tuple(sorted(e.pseudonym for e, _ in counted))
    ordered = sorted(counted, key=lambda c: c[0].pseudonym)
    # File names only: the export says which folder they are in.
    decision.attestations = [
        {"file": e.file, "keyid": e.keyid, "signed_at": e.signed_at} for e, _ in ordered
    ]
    decision.verdicts = [
        Verdict(
            e.pseudonym,
            str(e.record.get("specialty") or ""),
            e.review["verdict"],
            e.review.get("reason"),
            band,
            e.round,
        )
        for e, band in ordered
    ]
    decision.round = max(v.round for v in decision.verdicts)
    decision.warnings += _account_warnings([e for e, _ in ordered])


def _account_warnings(signers: list[_Entry]) -> list[Reason]:
    """What a granted band's reader should know about its signers' accounts."""
    warnings = []
    for entry in signers:
        if entry.record.get("demo"):
            warnings.append(
                Reason("demo_account", f"{WARNINGS['demo_account']}: {entry.pseudonym}")
            )
        if entry.record.get("n_keys", 1) > 1:
            warnings.append(Reason("key_changed", f"{WARNINGS['key_changed']}: {entry.pseudonym}"))
    return warnings


def _refusal(entry: _Entry, vignette: Vignette, proposal: Proposal, band_digest: str) -> str | None:
    """Why this signed review cannot count for the band as the files hold it now, or None."""
    review = entry.review
    if entry.subject_digest != band_digest or review.get("band_digest") != f"sha256:{band_digest}":
        return "digest_mismatch"
    if review.get("context_digest") != vignette.context_digest_for(proposal.sub_action):
        return "stale_context"
    if review.get("mode", "review") != "blind" and review.get("proposal_digest") != (
        proposal_digest(proposal)
    ):
        return "proposal_changed"
    if review.get("verdict") == "DECLINE":
        return "declined"
    return None
