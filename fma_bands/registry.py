"""The band registry (DESIGN 2.7): the only code that makes a band clinician-adjudicated.

It decides from files alone (the vignette files, and in attestations/ the adjudicators'
self-signed records, the signed envelopes and policy.yaml), so an editor can redo every decision
with no database. adjudicators.yaml is never read for a decision.
"""

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fma_bands.actions import sub_action
from fma_bands.bands import AnyBand, BandReader, band_from_values, consensus, to_harness
from fma_bands.envelopes import proposal_digest, read_evidence, revoked_digests, subject_name
from fma_bands.errors import FmaBandsError
from fma_bands.policy import Policy, check_policy, read_policy
from fma_bands.vignettes import Library, Proposal, Vignette

ADJUDICATED = "clinician-adjudicated"
REASONS = {
    "no_attestation": "no attestation on file covers this band",
    "malformed": "an attestation file is not a well-formed signed statement",
    "bad_signature": "an attestation's signature does not match its content: it was altered",
    "unknown_key": "an attestation is signed by a key that no self-signed public record holds "
    "(or one retired before it was used)",
    "duplicate_key": "one key is in the public records of two pseudonyms, so it counts for none",
    "unsigned_record": "the adjudicator has no public record signed by their own key, or it was "
    "altered",
    "wrong_signer": "an attestation is signed by a key enrolled for someone other than its "
    "named adjudicator",
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
    "missing_record": "a record that a signed record names is no longer in the folder",
    "no_policy": "attestations/policy.yaml is missing or invalid, so nothing is granted",
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
    # The policy applied: policy.yaml with any override; without a valid policy.yaml nothing is
    # granted, `policy_problem` says why, and `policy` only shows the values that were asked.
    policy: Policy
    file_problems: list[str] = field(default_factory=list)
    valid_signers: dict[str, str] = field(default_factory=dict)  # pseudonym -> latest date
    policy_problem: str | None = None
    head: tuple[int, str] = (0, "")  # the records it was decided from (envelopes.records_head)
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
    everywhere: list[Reason] = []
    try:
        stored: Policy | None = read_policy(folder)
    except FmaBandsError as exc:
        stored = None
        everywhere.append(Reason("no_policy", str(exc)))
    policy = check_policy(
        quorum if quorum is not None else (stored.quorum if stored else 1),
        scope if scope is not None else (stored.scope if stored else "warn"),
    )
    evidence = read_evidence(folder)
    registry = Registry([], policy, head=evidence.head)
    registry.adjudicators = {name: dict(a.record) for name, a in evidence.adjudicators.items()}
    if stored is None:
        registry.policy_problem = everywhere[0].message
    for code, message in evidence.problems:
        registry.file_problems.append(f"{code}: {message}")
        if code == "missing_record":
            everywhere.append(Reason(code, message))
    entries: dict[tuple[str, str], list[_Entry]] = {}
    failures: dict[tuple[str, str], list[Reason]] = {}
    revocations = revoked_digests(evidence)
    for env in evidence.envelopes:
        if env.error:
            code, message = env.error
            claims = _claimed_names(env.claimed)
            for name in claims:
                failures.setdefault(name, []).append(Reason(code, f"{env.path.name}: {message}"))
            if (not claims and env.kind != "record") or env.kind == "record":
                registry.file_problems.append(f"{env.path.name}: {code}: {message}")
            continue
        if env.kind != "adjudication":
            continue
        assert env.statement is not None and env.pseudonym and env.keyid
        subjects = {s["name"]: s["digest"].get("sha256") for s in env.statement["subject"]}
        adjudicator = evidence.adjudicators[env.pseudonym]
        record = dict(adjudicator.record, n_keys=len(adjudicator.keys))
        signed_at, payload_sha256 = env.signed_at, env.payload_sha256 or ""
        for review in env.predicate["reviews"]:
            subject = subject_name(review["vignette_id"], review["sub_action"])
            entries.setdefault((review["vignette_id"], review["sub_action"]), []).append(
                _Entry(
                    pseudonym=env.pseudonym,
                    record=record,
                    file=env.path.name,
                    keyid=env.keyid,
                    signed_at=signed_at,
                    review=review,
                    subject_digest=subjects.get(subject),
                    payload_sha256=payload_sha256,
                )
            )
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
    for env in evidence.envelopes:
        if env.error is None and env.kind == "adjudication" and env.path.name not in revoked:
            date = env.signed_at[:10]
            known = registry.valid_signers.get(env.pseudonym or "", date)
            registry.valid_signers[env.pseudonym or ""] = max(date, known)
    if everywhere:
        registry.valid_signers.clear()
    return registry


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
    name = proposal.sub_action
    action = sub_action(name)
    decision = Decision(vignette.id, name, proposal.provenance, proposal.acceptable)
    decision.disputed_span = proposal.disputed_span
    decision.reasons += failures
    blocked = any(r.code in ("no_policy", "missing_record") for r in failures)
    # Each adjudicator's latest unrevoked signed review of the band's latest round counts: an
    # earlier one of theirs is superseded, and a round-1 review never stands beside a round 2.
    standing = [e for e in entries if e.file not in revoked]
    for name_revoked in sorted({e.pseudonym for e in entries} - {e.pseudonym for e in standing}):
        files = ", ".join(sorted({e.file for e in entries if e.pseudonym == name_revoked}))
        decision.reasons.append(
            Reason("revoked", f"{REASONS['revoked']}: {name_revoked} ({files})")
        )
    last_round = max((e.round for e in standing), default=1)
    latest: dict[str, _Entry] = {}
    for entry in sorted(standing, key=lambda e: e.signed_at):
        if entry.round == last_round:
            latest[entry.pseudonym] = entry
    counted: list[tuple[_Entry, AnyBand]] = []
    band_digest = proposal.band_digest.removeprefix("sha256:")
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
    if not entries and not [f for f in failures if f.code not in ("no_policy", "missing_record")]:
        decision.reasons.append(Reason("no_attestation", REASONS["no_attestation"]))
    decision.n_raters = len(counted)
    if blocked:
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
            str(e.record.get("specialty") or ""),
            e.review["verdict"],
            e.review.get("reason"),
            band,
            e.round,
        )
        for e, band in ordered
    ]
    decision.round = max(v.round for v in decision.verdicts)
    for entry, _ in ordered:
        if entry.record.get("demo"):
            decision.warnings.append(
                Reason("demo_account", f"{WARNINGS['demo_account']}: {entry.pseudonym}")
            )
        if entry.record.get("n_keys", 1) > 1:
            decision.warnings.append(
                Reason("key_changed", f"{WARNINGS['key_changed']}: {entry.pseudonym}")
            )
    return decision


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
