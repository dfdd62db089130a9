"""The band registry (docs/design.md, The registry): the only code that makes a band
clinician-adjudicated.

It decides from files alone (the vignette files, and the study's log in attestations/: the
root-signed roster, the adjudicators' signed attestations and revocations, the signed policy), so
an editor can redo every decision with no database. adjudicators.yaml and policy.yaml are copies
for people, never read for a decision.
"""

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fma_bands.core.actions import sub_action
from fma_bands.core.bands import (
    AnyBand,
    BandReader,
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

    @property
    def valid(self) -> bool:
        return not self.problems

    @property
    def file_problems(self) -> list[str]:
        return [str(p) for p in (*self.problems, *self.strays)]

    def grants(self) -> dict[tuple[str, str], Grant]:
        return {(d.vignette_id, d.sub_action): d.grant() for d in self.decisions}


@dataclass
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
    read_band = BandReader()
    for vignette in library:
        for proposal in vignette.proposals:
            key = (vignette.id, proposal.sub_action)
            decision = _decide_band(
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
            registry.decisions.append(decision)
    if not everywhere:
        registry.valid_signers = _valid_signers(evidence)
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
    standing = [e for e in entries if e.digest not in revoked]
    decision.reasons += _revocations(entries, standing)
    counted = _count(decision, _latest(standing), vignette, proposal, policy, read_band)
    if not entries and not failures:
        decision.reasons.append(Reason("no_attestation", REASONS["no_attestation"]))
    decision.n_raters = len(counted)
    # Several raters who share no value are "empty" whether or not the quorum is met.
    decision.intersection_rule = consensus([band for _, band in counted]).rule
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
    _grant(decision, counted, vignette, proposal)
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
    vignette: Vignette,
    proposal: Proposal,
) -> None:
    """Grant the band on the reviews that count, if they share a band (else say they do not),
    with its disputed span (core.bands.exported_span) and the texts they corrected alike."""
    bands = [band for _, band in counted]
    agreed = consensus(bands)
    decision.intersection_rule = agreed.rule
    # One counted rater's own band stands; several must meet the intersection rule.
    granted = bands[0] if len(bands) == 1 else agreed.band
    if granted is None:
        decision.reasons.append(Reason("no_consensus", REASONS["no_consensus"]))
        return
    name = proposal.sub_action
    spans = [_span(e, band, proposal, vignette.orderables) for e, band in counted]
    decision.provenance = ADJUDICATED
    decision.band = granted
    decision.disputed_span = exported_span(name, granted, spans, agreed.disputed)
    decision.adjudicated_by = tuple(sorted(e.pseudonym for e, _ in counted))
    ordered = sorted(counted, key=lambda c: c[0].pseudonym)
    # File names only: the export says which folder they are in.
    decision.attestations = [
        {"file": e.file, "keyid": e.keyid, "signed_at": e.signed_at, "sequence": e.sequence}
        for e, _ in ordered
    ]
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
    decision.round = max(v.round for v in decision.verdicts)
    decision.warnings += _account_warnings([e for e, _ in ordered])


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
        proposal.disputed_span,
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
