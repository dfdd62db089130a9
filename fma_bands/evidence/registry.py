"""The band registry (docs/design.md, The registry): the only code that makes a band
clinician-adjudicated.

It decides from files alone (the vignette files, and the study's log in attestations/: the
root-signed roster, the adjudicators' signed attestations and revocations, the signed policy), so
an editor can redo every decision with no database. adjudicators.yaml and policy.yaml are copies
for people, never read for a decision.
"""

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fma_bands.core.actions import sub_action
from fma_bands.core.bands import (
    AnyBand,
    BandReader,
    Consensus,
    consensus,
    exported_span,
    parse_band,
    rater_span,
)
from fma_bands.core.errors import FmaBandsError
from fma_bands.core.protocol import CORRECTABLE, CORRECTED_TEXTS
from fma_bands.core.vignettes import Library, Proposal, Vignette
from fma_bands.evidence.envelope import CheckedEnvelope
from fma_bands.evidence.log import Evidence, Problem, proposal_digest, read_evidence, subject_name
from fma_bands.evidence.policy import Policy, check_policy
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
EVERYWHERE = ("no_policy", "folder_invalid")
# The chair's decision (docs/design.md, The registry): the warning a band it settles
# carries, and why a decision on file settles nothing.
CHAIR_REASONS = {
    "chair_decision": "decided by the study chair after round 2, where the raters' bands "
    "shared no value: the chair's decision, not agreement between raters",
    "chair_none": "a chair's decision is on file, but the policy names no chair",
    "chair_not_chair": "a decision signed by a rater the policy did not name chair at its "
    "place in the log, or names no longer, counts for nothing",
    "chair_stale": "the band changed after the chair's decision was signed",
    "chair_band_invalid": "the band the chair's decision chose cannot be read for this sub-action",
    "chair_not_in_dispute": "a chair's decision settles only a band refused for no other reason "
    "than that its raters' bands share no value after round 2",
    "chair_rated": "the study chair is also one of the band's counted raters: the band was "
    "decided by someone whose own reading was in dispute",
}
SECOND_ROUND = 2


@dataclass(frozen=True)
class ChairGrant:
    """The chair's decision a band was granted on, for the export to state as such."""

    chair: str
    file: str
    reason: str
    signed_at: str
    sequence: int
    round: int


@dataclass
class Registry:
    decisions: list[Decision]
    # The policy applied: the signed policy record's, with any override; without one nothing is
    # granted, `policy_problem` says why, and `policy` only shows the values that were asked.
    policy: Policy
    problems: list[Problem] = field(default_factory=list)  # the folder does not verify
    strays: list[Problem] = field(default_factory=list)  # files outside the chain
    valid_signers: dict[str, str] = field(default_factory=dict)  # pseudonym -> latest date
    policy_problem: str | None = None
    study: str | None = None
    head: tuple[int, str] = (-1, "")  # the chain's newest record it was decided from
    # pseudonym -> the public record the root-signed roster gives: the only source of who is who.
    adjudicators: dict[str, dict[str, Any]] = field(default_factory=dict)
    # The bands granted on a chair's decision, never on the raters' agreement.
    chaired: dict[Band, ChairGrant] = field(default_factory=dict)

    @property
    def valid(self) -> bool:
        return not self.problems

    @property
    def file_problems(self) -> list[str]:
        return [str(p) for p in (*self.problems, *self.strays)]

    def grants(self) -> dict[tuple[str, str], Grant]:
        return {(d.vignette_id, d.sub_action): d.grant() for d in self.decisions}


@dataclass(slots=True)  # one per signed review: a large study holds hundreds of thousands
class _Entry:
    pseudonym: str
    record: dict[str, Any]
    file: str
    keyid: str
    signed_at: str
    sequence: int
    review: dict[str, Any]
    subject_digest: str | None
    digest: str
    attestation: dict[str, Any]  # as a grant lists it: one, shared by the record's reviews

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
    study: str | None = None,
    since: tuple[int, str] | None = None,
    evidence: Evidence | None = None,
) -> Registry:
    """Every proposed band's provenance, with stable reason codes where it is not granted.
    `study` and `since` pin the folder to a study and to a head seen before (log.read_evidence)."""
    if evidence is None:
        evidence = read_evidence(folder, study=study, since=since)
    policy, no_policy = _policy(evidence, quorum, scope)
    everywhere = [no_policy] if no_policy else []
    if not evidence.valid:
        problem = evidence.summary()
        everywhere.append(Reason("folder_invalid", f"{REASONS['folder_invalid']}: {problem}"))
    registry = Registry([], policy, evidence.problems, evidence.strays, head=evidence.head)
    registry.study = evidence.study
    registry.adjudicators = evidence.records()
    if no_policy:
        registry.policy_problem = no_policy.message
    entries = _signed_reviews(evidence) if evidence.valid else {}
    chair_records = _chair_records(evidence) if evidence.valid else {}
    read_band = BandReader()
    for vignette in library:
        for proposal in vignette.proposals:
            key = (vignette.id, proposal.sub_action)
            decision, counted = _decide_band(
                vignette,
                proposal,
                entries.get(key, []),
                list(everywhere),
                evidence.revoked,
                policy,
                read_band,
            )
            if not entries.get(key):
                decision.reasons += _copies(proposal, vignette, entries)
            if key in chair_records and not everywhere:
                settled = _by_chair(
                    decision, counted, chair_records[key], evidence, policy, vignette, proposal
                )
                if settled is not None:
                    registry.chaired[key] = settled
            registry.decisions.append(decision)
    if not everywhere:
        registry.valid_signers = _valid_signers(evidence)
        for settled in registry.chaired.values():
            date = settled.signed_at[:10]
            registry.valid_signers[settled.chair] = max(
                date, registry.valid_signers.get(settled.chair, "")
            )
    return registry


def _policy(
    evidence: Evidence, quorum: int | None, scope: str | None
) -> tuple[Policy, Reason | None]:
    """The policy applied (the signed record's, with the values asked for over it), and why
    there is none, if there is none."""
    stored = evidence.policy
    problem = None
    if stored is None:
        problem = Reason(
            "no_policy",
            "no signed policy record is in the log: nothing is granted until the coordinator "
            "sets one (Study admin page, or fma-bands policy set)",
        )
    policy = check_policy(
        quorum if quorum is not None else (stored.quorum if stored else 1),
        scope if scope is not None else (stored.scope if stored else "warn"),
        chair=stored.chair if stored else None,
    )
    return policy, problem


def _signed_reviews(evidence: Evidence) -> dict[Band, list[_Entry]]:
    """Each band's signed reviews, from the adjudications of the chain."""
    entries: dict[Band, list[_Entry]] = {}
    for env in evidence.adjudications():
        for entry in _entries(env, evidence):
            key = (entry.review["vignette_id"], entry.review["sub_action"])
            entries.setdefault(key, []).append(entry)
    return entries


def _entries(env: CheckedEnvelope, evidence: Evidence) -> list[_Entry]:
    """One adjudication's signed reviews, in the order it holds them."""
    assert env.statement is not None and env.pseudonym and env.keyid and env.position
    subjects = {s["name"]: s["digest"].get("sha256") for s in env.statement["subject"]}
    adjudicator = evidence.adjudicators[env.pseudonym]
    record = dict(adjudicator.record, n_keys=len(adjudicator.keys))
    signed_at, sequence, digest = env.signed_at, env.position[1], env.digest
    listed = {
        "file": env.path.name,
        "keyid": env.keyid,
        "signed_at": signed_at,
        "sequence": sequence,
    }
    return [
        _Entry(
            pseudonym=env.pseudonym,
            record=record,
            file=env.path.name,
            keyid=env.keyid,
            signed_at=signed_at,
            sequence=sequence,
            review=review,
            subject_digest=subjects.get(subject_name(review["vignette_id"], review["sub_action"])),
            digest=digest,
            attestation=listed,
        )
        for review in env.predicate["reviews"]
    ]


def _valid_signers(evidence: Evidence) -> dict[str, str]:
    """Each pseudonym with an unrevoked adjudication, and the date of their latest."""
    signers: dict[str, str] = {}
    for env in evidence.adjudications():
        if env.digest not in evidence.revoked and env.pseudonym:
            signers[env.pseudonym] = max(env.signed_at[:10], signers.get(env.pseudonym, ""))
    return signers


def _chair_records(evidence: Evidence) -> dict[Band, list[CheckedEnvelope]]:
    """Each band's chair's decisions, in the order of the chain."""
    found: dict[Band, list[CheckedEnvelope]] = {}
    for env in evidence.chair_decisions():
        decided = env.predicate["decision"]
        found.setdefault((decided["vignette_id"], decided["sub_action"]), []).append(env)
    return found


def _chair_band(
    env: CheckedEnvelope, evidence: Evidence, policy: Policy, vignette: Vignette, proposal: Proposal
) -> AnyBand | str:
    """The band this chair's decision chose, if it can settle the band as the files hold it
    now; else the code of why not."""
    decided = env.predicate["decision"]
    if policy.chair is None:
        return "chair_none"
    # The chair when it was signed and the chair now: a chair replaced takes their word back.
    if env.pseudonym != policy.chair or evidence.chairs.get(env.digest) != env.pseudonym:
        return "chair_not_chair"
    if (
        decided["band_digest"] != "sha256:" + proposal.band_digest.removeprefix("sha256:")
        or decided["context_digest"] != vignette.context_digest_for(proposal.sub_action)
        or decided["proposal_digest"] != proposal_digest(proposal)
    ):
        return "chair_stale"
    if decided["round"] != SECOND_ROUND:
        return "chair_not_in_dispute"
    try:
        return parse_band(proposal.sub_action, decided["band"], orderables=vignette.orderables)
    except FmaBandsError:
        return "chair_band_invalid"


def in_dispute(decision: Decision) -> bool:
    """Whether a chair's decision may settle this band: refused for no consensus and nothing
    else, whatever chair's decisions on file settle nothing (a replaced chair's, a stale one)."""
    others = [r.code for r in decision.reasons if r.code not in CHAIR_REASONS]
    return not decision.adjudicated and others == ["no_consensus"]


def _by_chair(
    decision: Decision,
    counted: list[tuple["_Entry", AnyBand]],
    records: list[CheckedEnvelope],
    evidence: Evidence,
    policy: Policy,
    vignette: Vignette,
    proposal: Proposal,
) -> ChairGrant | None:
    """Grant the band on the latest chair's decision that counts, when the raters' counted
    bands share no value and nothing else refuses it; otherwise say why each decision on file
    settles nothing. The raters' disagreement stays what it is (intersection rule `empty`)."""
    disputed = in_dispute(decision)
    chosen: tuple[CheckedEnvelope, AnyBand] | None = None
    refusals: list[Reason] = []
    for env in records:
        found = _chair_band(env, evidence, policy, vignette, proposal)
        if isinstance(found, str):
            who = f"{env.pseudonym} ({env.path.name})"
            refusals.append(Reason(found, f"{CHAIR_REASONS[found]}: {who}"))
        else:
            chosen = (env, found)  # the latest that counts decides
    if chosen is None or not disputed:
        if chosen is not None:
            who = f"{chosen[0].pseudonym} ({chosen[0].path.name})"
            refusals.append(
                Reason("chair_not_in_dispute", f"{CHAIR_REASONS['chair_not_in_dispute']}: {who}")
            )
        decision.reasons += refusals
        return None
    env, band = chosen
    chair = env.pseudonym
    assert chair is not None and env.keyid is not None and env.position is not None
    agreed = consensus([b for _, b in counted])
    spans = [_span(e, b, proposal, vignette.orderables) for e, b in counted]
    _record_grant(decision, counted, band)
    # What some rater admits outside the chair's band stays disputed; nothing inside it.
    outside = agreed.disputed - band.values()
    decision.disputed_span = exported_span(proposal.sub_action, band, spans, outside)
    # The chair alone adjudicated the band granted: a rater whose band shares nothing with
    # another's vouched for none of it (their reviews stay in x_attestations and the notes).
    decision.adjudicated_by = (chair,)
    decision.attestations.append(
        {
            "file": env.path.name,
            "keyid": env.keyid,
            "signed_at": env.signed_at,
            "sequence": env.position[1],
            "role": "chair",
        }
    )
    decision.reasons = refusals  # no_consensus is said by the chair_decision warning instead
    decided = env.predicate["decision"]
    settled = ChairGrant(
        chair,
        env.path.name,
        decided["reason"].strip(),
        env.signed_at,
        env.position[1],
        decided["round"],
    )
    decision.warnings.append(
        Reason(
            "chair_decision",
            f"decided by the study chair, {chair}, after round {settled.round}: the raters' "
            "bands shared no value; the chair's decision, not agreement between raters",
        )
    )
    if chair in {entry.pseudonym for entry, _ in counted}:
        # Allowed (the chair is one of the raters), and said: an editor weighs a decision
        # made by one whose own reading was in dispute.
        decision.warnings.append(
            Reason(
                "chair_rated",
                f"the study chair, {chair}, is also one of this band's counted raters: the "
                "band was decided by someone whose own reading was in dispute",
            )
        )
    record = evidence.adjudicators[chair].record
    chair_record = dict(record, n_keys=len(evidence.adjudicators[chair].keys))
    # A chair who also rated the band already has their account's warnings said once.
    decision.warnings += [
        w for w in _account_warnings_of([(chair, chair_record)]) if w not in decision.warnings
    ]
    return settled


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
) -> tuple[Decision, list[tuple[_Entry, AnyBand]]]:
    """The band's decision on its signed reviews, with the reviews that count."""
    decision = Decision(vignette.id, proposal.sub_action, proposal.provenance, proposal.acceptable)
    decision.disputed_span = proposal.disputed_span
    decision.reasons += failures
    standing = [e for e in entries if e.digest not in revoked]
    decision.reasons += _revocations(entries, standing)
    counted = _count(decision, _latest(standing), vignette, proposal, policy, read_band)
    if not entries and not failures:
        decision.reasons.append(Reason("no_attestation", REASONS["no_attestation"]))
    decision.n_raters = len(counted)
    # Several raters who share no value are "empty" whether or not the quorum is met.
    agreed = consensus([band for _, band in counted])
    decision.intersection_rule = agreed.rule
    if any(r.code in EVERYWHERE for r in failures):
        return decision, counted
    if len(counted) < policy.quorum:
        if entries or failures:
            decision.reasons.append(
                Reason(
                    "quorum_not_met",
                    f"{REASONS['quorum_not_met']}: {len(counted)} of {policy.quorum} required",
                )
            )
        return decision, counted
    _grant(decision, counted, agreed, vignette, proposal)
    return decision, counted


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
    for entry in sorted(standing, key=lambda e: e.sequence):
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
            said = f"{REASONS[reason]}: {who}"
            if reason == "declined" and isinstance(entry.review.get("reason"), str):
                # Why they declined belongs beside the band that stands without them.
                said += f'; their reason: "{entry.review["reason"]}"'
            decision.reasons.append(Reason(reason, said))
            continue
        in_scope = action.in_scope(entry.record.get("specialty") or "")
        if in_scope is False:
            scope_reason = Reason(
                "out_of_scope",
                f"{REASONS['out_of_scope']}: {entry.pseudonym} "
                f"({entry.record.get('specialty')}) for {action.label}",
            )
            if not policy.counts(name, entry.record.get("specialty")):
                decision.reasons.append(scope_reason)
                continue
            decision.warnings.append(scope_reason)
        try:
            attested = read_band(name, entry.review["attested_band"], vignette.orderables)
        except (FmaBandsError, KeyError) as exc:
            decision.reasons.append(Reason("malformed", f"{who}: attested band unreadable: {exc}"))
            continue
        try:
            _corrected_span(entry, name, vignette.orderables)
        except FmaBandsError as exc:
            decision.reasons.append(Reason("malformed", f"{who}: corrections unreadable: {exc}"))
            continue
        counted.append((entry, attested))
    return counted


def _grant(
    decision: Decision,
    counted: list[tuple[_Entry, AnyBand]],
    agreed: Consensus,
    vignette: Vignette,
    proposal: Proposal,
) -> None:
    """Grant the band on the reviews that count, if they share a band (else say they do not),
    with its disputed span (core.bands.exported_span) and the texts they corrected alike.
    `agreed` is the consensus of the counted reviews' bands."""
    bands = [band for _, band in counted]
    # One counted rater's own band stands; several must meet the intersection rule.
    granted = bands[0] if len(bands) == 1 else agreed.band
    if granted is None:
        decision.reasons.append(Reason("no_consensus", REASONS["no_consensus"]))
        return
    name = proposal.sub_action
    spans = [_span(e, band, proposal, vignette.orderables) for e, band in counted]
    _record_grant(decision, counted, granted)
    decision.disputed_span = exported_span(name, granted, spans, agreed.disputed)


def _record_grant(
    decision: Decision, counted: list[tuple[_Entry, AnyBand]], granted: AnyBand
) -> None:
    """The band granted, with the counted raters' attestations, verdicts and account warnings."""
    decision.provenance = ADJUDICATED
    decision.band = granted
    decision.adjudicated_by = tuple(sorted(e.pseudonym for e, _ in counted))
    ordered = sorted(counted, key=lambda c: c[0].pseudonym)
    # File names only: the export says which folder they are in.
    decision.attestations = [e.attestation for e, _ in ordered]
    decision.verdicts = [
        Verdict(
            e.pseudonym,
            str(e.record.get("specialty") or ""),
            e.review["verdict"],
            e.review.get("reason"),
            band,
            e.round,
            _corrections(e),
        )
        for e, band in ordered
    ]
    decision.corrected = agreed_texts(decision.verdicts)
    decision.proposal_signed = all(_signed_proposal(e) for e, _ in ordered)
    decision.round = max(v.round for v in decision.verdicts)
    decision.warnings += _account_warnings([e for e, _ in ordered])


def _signed_proposal(entry: _Entry) -> bool:
    """Whether the signed review covers the proposal: a blind review was never shown one."""
    return entry.review.get("mode", "review") != "blind"


def _corrections(entry: _Entry) -> dict[str, Any]:
    """The corrections a signed review holds (only those an AMEND may make)."""
    found = entry.review.get("corrections")
    if not isinstance(found, dict):
        return {}
    return {k: v for k, v in found.items() if k in CORRECTABLE}


def _corrected_span(entry: _Entry, name: str, orderables: tuple[str, ...]) -> AnyBand | None:
    """The disputed span the signed review's AMEND set (None: it set none, or cleared it);
    FmaBandsError when a correction cannot be read."""
    found = _corrections(entry)
    for key in CORRECTED_TEXTS:
        if key in found and not isinstance(found[key], str):
            raise FmaBandsError(f"the corrected {key} is not text")
    if found.get("disputed_span") is None:
        return None
    return parse_band(name, found["disputed_span"], orderables=orderables, span=True)


def _span(
    entry: _Entry, band: AnyBand, proposal: Proposal, orderables: tuple[str, ...]
) -> frozenset:
    """What one counted review leaves disputed (core.bands.rater_span): its AMEND's span,
    else by its answer to question 5."""
    answers = entry.review.get("answers")
    q5 = answers.get("q5") if isinstance(answers, dict) else None
    return rater_span(
        proposal.disputed_span if _signed_proposal(entry) else None,
        band,
        reading=q5.get("choice") if isinstance(q5, dict) else None,
        amended="disputed_span" in _corrections(entry),
        corrected=_corrected_span(entry, proposal.sub_action, orderables),
    )


def agreed_texts(verdicts: list[Verdict]) -> dict[str, str]:
    """The proposal's texts (clause, source, reasoning) that every counted adjudicator corrected
    to the same words: those the export carries in place of the proposal's. A text only some of
    them corrected, or corrected differently, keeps the proposal's; the export lists each."""
    agreed = {}
    for key in CORRECTED_TEXTS:
        said = {v.corrections.get(key) for v in verdicts}
        if len(said) == 1 and (text := said.pop()) is not None:
            agreed[key] = text
    return agreed


def _account_warnings(signers: list[_Entry]) -> list[Reason]:
    """What a granted band's reader should know about its signers' accounts."""
    return _account_warnings_of([(e.pseudonym, e.record) for e in signers])


def _account_warnings_of(signers: list[tuple[str, dict[str, Any]]]) -> list[Reason]:
    warnings = []
    for pseudonym, record in signers:
        if record.get("demo"):
            warnings.append(_account_warning("demo_account", pseudonym))
        if record.get("n_keys", 1) > 1:
            warnings.append(_account_warning("key_changed", pseudonym))
    return warnings


@functools.lru_cache(maxsize=1024)
def _account_warning(code: str, pseudonym: str) -> Reason:
    """The same warning for every band the account signed: one object, not one per band."""
    return Reason(code, f"{WARNINGS[code]}: {pseudonym}")


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
