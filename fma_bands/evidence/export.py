"""bands.yaml (docs/design.md, bands.yaml): the bands in the harness's own form, what was decided
about each, and loaders for it: fma-bands' checked reader, and the harness's own Band and
Adjudicator built from it (for users who have both packages; the README shows the loader that needs
only pyyaml).
"""

import contextlib
import functools
import json
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, cast

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from fma_bands.core.actions import SUB_ACTIONS, SubAction, sub_action
from fma_bands.core.band_text import describe, describe_values
from fma_bands.core.bands import AnyBand, MultilabelBand, SetBand, parse_band, to_harness
from fma_bands.core.errors import FmaBandsError
from fma_bands.core.files import MIB, read_yaml, read_yaml_values, write_atomically
from fma_bands.core.protocol import CORRECTED_TEXTS
from fma_bands.core.vignettes import Library, Proposal
from fma_bands.evidence import yaml_writer
from fma_bands.evidence.harness import (
    HarnessCheck,
    build,
    harness_note,
    importable_harness,
    private_harness,
)
from fma_bands.evidence.head import sign_head
from fma_bands.evidence.policy import Policy
from fma_bands.evidence.provenance import ADJUDICATED, Grant
from fma_bands.evidence.registry import ChairGrant, Registry, decide

FORMAT = "fma-bands/v1"
EXPORT_FILE = "bands.yaml"
BAND_FIELDS = (
    "sub_action",
    "acceptable",
    "provenance",
    "source",
    "clause",
    "reasoning",
    "adjudicated_by",
    "disputed_span",
    "notes",
)
ADJUDICATOR_FIELDS = (
    "pseudonym",
    "specialty",
    "jurisdiction",
    "years_post_registration",
    "attestation_on_file",
    "attestation_date",
    "anonymous_to_readers",
    "notes",
)
# How a granted band follows from its counted adjudicators' bands (x_agreement.intersection_rule).
RULE_LABELS = {
    "absent": "one adjudicator: the intersection rule does not bind",
    "applied": "the intersection of their bands",
    "empty": "no consensus",
}


# The header: which attestations folder, and what was in it -------------------------------------


def attestations_header(
    registry: Registry, folder: Path, relative_to: Path | None = None
) -> dict[str, Any]:
    """The folder as seen from where bands.yaml is written (`relative_to`), so the
    x_attestations file names resolve from the export's own folder (without one, a download,
    the folder's name, for bands.yaml kept beside it); the study it is the log of, and the head
    the bands were decided from (`fma-bands verify --since SEQUENCE:DIGEST` checks a folder
    still holds it)."""
    folder = Path(folder)
    shown = folder.name or "."
    if relative_to is not None:
        with contextlib.suppress(ValueError):  # another drive: no relative path exists
            shown = os.path.relpath(folder.resolve(), Path(relative_to).resolve())
    sequence, digest = registry.head
    return {
        "folder": Path(shown).as_posix(),
        "study": registry.study,
        "head": {"sequence": sequence, "digest": digest} if digest else None,
        "valid": registry.valid,
    }


# The document -------------------------------------------------------------------------------


def export_document(
    library: Library,
    folder: Path,
    *,
    quorum: int | None = None,
    scope: str | None = None,
    generated_at: datetime | None = None,
    relative_to: Path | None = None,
    registry: Registry | None = None,
    study: str | None = None,
    since: tuple[int, str] | None = None,
    provisional: bool = False,
    head_signer: tuple[str, Ed25519PrivateKey] | None = None,
    audit_head: tuple[int, str] | None = None,
) -> dict[str, Any]:
    """bands.yaml as data: every band as the registry decided it (pass `registry` when it is
    already decided), and the adjudicators with `attestation_on_file` only where a valid
    attestation is on file. `relative_to` is the folder bands.yaml will be written to.
    `audit_head` is the audit log's (seq, hash) now: the export carries it (signed with the
    head, when signed), so `fma-bands audit verify --export` can later tell a rewrite of the
    log that this export has seen.

    A folder that does not verify is refused (FmaBandsError, code folder_invalid) unless the
    export is `provisional`: then every band is written as its file has it, never adjudicated,
    and the header says why."""
    if registry is None:
        registry = decide(library, folder, quorum=quorum, scope=scope, study=study, since=since)
    if not registry.valid and not provisional:
        raise FmaBandsError(
            f"the attestations folder {folder} does not verify, so no band can be exported as "
            f"adjudicated: {registry.problems[0]}. Nothing was written; `fma-bands verify` "
            "lists every problem (export --provisional writes every band unadjudicated)",
            code="folder_invalid",
        )
    # From the root-signed roster in the log, never from adjudicators.yaml, a copy for people.
    adjudicators = [
        {
            "pseudonym": name,
            "specialty": record.get("specialty"),
            "jurisdiction": record.get("jurisdiction"),
            "years_post_registration": record.get("years_post_registration"),
            "attestation_on_file": registry.valid_signers.get(name) is not None,
            "attestation_date": registry.valid_signers.get(name),
            "anonymous_to_readers": record.get("anonymous_to_readers", True),
            "notes": None,
        }
        for name, record in sorted(registry.adjudicators.items())
    ]
    header = attestations_header(registry, folder, relative_to)
    if audit_head is not None:
        header["audit_head"] = {"seq": audit_head[0], "hash": audit_head[1]}
    if head_signer is not None and registry.valid and registry.study and registry.head[1]:
        # The root vouches for the head the bands were decided from (evidence/head.py).
        header["head_signature"] = sign_head(
            registry.study, registry.head, *head_signer, audit_head=audit_head
        )
    return bands_document(
        library,
        grants=registry.grants(),
        chaired=registry.chaired,
        adjudicators=adjudicators,
        policy=None if registry.policy_problem else registry.policy,
        policy_problem=registry.policy_problem,
        generated_at=generated_at,
        attestations=header,
        provisional=(
            f"the attestations folder does not verify: {registry.problems[0]}"
            if not registry.valid
            else None
        ),
    )


def bands_document(
    library: Library,
    *,
    grants: Mapping[tuple[str, str], Grant] | None = None,
    chaired: Mapping[tuple[str, str], ChairGrant] | None = None,
    adjudicators: Iterable[Mapping[str, Any]] = (),
    policy: Policy | None = None,
    policy_problem: str | None = None,
    generated_at: datetime | None = None,
    attestations: Mapping[str, Any] | None = None,
    provisional: str | None = None,
) -> dict[str, Any]:
    """The whole export as plain data, ready for YAML. Without a valid policy nothing is granted,
    and the header says so (`policy: null` and the problem) rather than show a default.
    `chaired` holds the bands granted on the chair's decision (registry.ChairGrant)."""
    grants, chaired = grants or {}, chaired or {}
    stated = policy
    sections: dict[str, dict[str, list[dict[str, Any]]]] = {name: {} for name in SECTIONS}
    for vignette in library:
        for proposal in vignette.proposals:
            key = (vignette.id, proposal.sub_action)
            entry = _band_entry(proposal, grants.get(key), policy or Policy(), chaired.get(key))
            action = sub_action(proposal.sub_action)
            entry["sub_action"], entry["x_step"] = action.harness_name, action.step
            sections[section(action)].setdefault(vignette.id, []).append(entry)
    bands, later = sections.pop("bands"), sections
    return {
        "format": FORMAT,
        "generated_at": generated_stamp(generated_at),
        "policy": stated.as_dict() if stated is not None else None,
        **({"policy_problem": policy_problem} if policy_problem else {}),
        **({"provisional": provisional} if provisional else {}),
        "attestations": dict(attestations) if attestations is not None else None,
        "adjudicators": [_adjudicator_entry(a) for a in adjudicators],
        "bands": bands,
        **later,
    }


def generated_stamp(at: datetime | None = None) -> str:
    """An export's `generated_at`: the time it is written (`at`, else now), in UTC to the
    second."""
    return (
        (at or datetime.now(UTC))
        .astimezone(UTC)
        .replace(microsecond=0)
        .strftime("%Y-%m-%dT%H:%M:%SZ")
    )


def section(action: SubAction) -> str:
    """Where bands.yaml lists a band of this sub-action: under `bands`, unless the harness
    calls it by another sub-action's name (urgency_score at reassess). The harness's Band has
    no step, and its as_acceptable_map keys a vignette's bands by sub_action, so such a band
    in `bands` would replace the other: it goes under x_<step>_bands instead, `x_reassess_bands`
    (docs/design.md, bands.yaml)."""
    return "bands" if action.harness_name == action.name else f"x_{action.step}_bands"


# Every section bands.yaml has, each written even when empty, so a reader never meets a key
# that comes and goes.
SECTIONS = ("bands", *sorted({section(a) for a in SUB_ACTIONS.values()} - {"bands"}))
REASSESS_BANDS = "x_reassess_bands"


def every_band(document: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every band of an export, in every section (for counting what was written)."""
    return [e for name in SECTIONS for group in document.get(name, {}).values() for e in group]


def _band_entry(
    proposal: Proposal, grant: Grant | None, policy: Policy, chaired: ChairGrant | None = None
) -> dict[str, Any]:
    granted = grant if grant is not None and grant.provenance == ADJUDICATED else None
    chaired = chaired if granted else None
    band = granted.band if granted else proposal.acceptable
    disputed = granted.disputed_span if granted else proposal.disputed_span
    # A band granted on blind reviews says nothing no signature covers: the proposal's source,
    # clause and threshold were never shown to its raters, and travel in x_proposal only.
    signed = granted is None or granted.proposal_signed
    own = sub_action(proposal.sub_action).threshold
    threshold = proposal.effective_threshold if signed else own
    source, clause = (proposal.source, proposal.clause) if signed else (None, None)
    reasoning, notes = proposal.reasoning, proposal.notes
    if granted:
        # The proposal's own text argues for the proposal's values; it travels in x_proposal.
        reasoning, notes = (
            chair_text(granted, proposal, policy, chaired)
            if chaired
            else adjudication_text(granted, proposal, policy)
        )
        # The harness keeps notes and drops x_warnings: a scope warning must be said here, and
        # a signed review that does not count (a DECLINE above all) must not vanish.
        notes = " ".join([notes, *scope_notes(granted, proposal.sub_action, policy)])
        if granted.set_aside:
            notes += " Signed but not counted: " + "; ".join(granted.set_aside) + "."
    entry: dict[str, Any] = {
        "sub_action": proposal.sub_action,
        "acceptable": to_harness(band),
        "provenance": grant.provenance if grant else proposal.provenance,
        # Corrected by every counted adjudicator alike (registry.agreed_texts), else the
        # proposal's; the proposal's own travel in x_proposal either way.
        "source": granted.corrected.get("source", source) if granted else source,
        "clause": granted.corrected.get("clause", clause) if granted else clause,
        "reasoning": reasoning,
        # The harness treats any non-empty adjudicated_by as ground truth: only a grant writes it.
        "adjudicated_by": list(granted.adjudicated_by) if granted else [],
        "disputed_span": to_harness(disputed) if disputed is not None else None,
        "notes": notes,
        "x_threshold": threshold.expression() if threshold else None,
        "x_straddles": band.straddles(threshold),
        "x_thresholds": band_cuts(proposal, band, signed=signed),
        "x_agreement": {
            "n_raters": grant.n_raters if grant else 0,
            "intersection_rule": grant.intersection_rule if grant else "absent",
        },
        "x_attestations": [dict(a) for a in grant.attestations] if grant else [],
        "x_warnings": list(grant.warnings) if grant else [],
        "x_round": granted.round if granted else None,
        # Set only on a band the chair decided: never the raters' agreement (x_agreement).
        "x_chair_decision": (
            {
                "chair": chaired.chair,
                "reason": chaired.reason,
                "round": chaired.round,
                "file": chaired.file,
            }
            if chaired
            else None
        ),
        "x_harness_note": harness_note(proposal.sub_action, granted is not None),
        "x_proposal": {k: v for k, v in proposal.as_data().items() if k != "sub_action"},
    }
    if isinstance(band, MultilabelBand):
        entry["x_required"] = list(band.required)
    return entry


def band_cuts(proposal: Proposal, band: AnyBand, *, signed: bool = True) -> list[dict[str, Any]]:
    """x_thresholds: every named cut the band carries (its primary first, the one x_threshold
    states), each with whether the band straddles it (docs/design.md, Cuts). Unless the
    proposal is `signed` (a grant on blind reviews), only the sub-action's own cuts."""
    return [
        {"name": cut.name, "expression": cut.expression(), "straddles": band.straddles(cut)}
        for cut in sub_action(proposal.sub_action).cuts(proposal.threshold if signed else None)
    ]


def cut_line(cut: Mapping[str, Any]) -> str:
    """One cut of x_thresholds for the coordinator: `any_opioid (value >= 2): straddles it`."""
    said = {True: "straddles it", False: "does not straddle it"}.get(cut["straddles"], "unknown")
    return f"{cut['name']} ({cut['expression']}): {said}"


def scope_notes(grant: Grant, name: str, policy: Policy) -> list[str]:
    """A sentence for each counted adjudicator outside the sub-action's scope rule (the policy
    only warns then), in plain words: the harness keeps `notes`, not x_warnings."""
    action = sub_action(name)
    return [
        f"Scope warning: {v.pseudonym}, whose specialty is {v.specialty or 'not recorded'}, "
        f"adjudicated this {action.label.lower()} band ({name}), outside the specialties its "
        f"scope rule names; the policy's scope is {policy.scope}, and a second rater from "
        "that setting is advisable."
        for v in grant.verdicts
        if action.in_scope(v.specialty) is False
    ]


# An export says a few hundred distinct bands tens of thousands of times (each verdict's, each
# grant's, each proposal's). Bands are frozen and equal only with the same sub-action and the
# same values, each of the sub-action's one type, so equal bands are said alike.
@functools.lru_cache(maxsize=4096)
def shown(band: AnyBand) -> str:
    """A band as the export writes it, then in words: `[1, 3] (1 - NSAID, 3 - strong opioid)`."""
    return f"{json.dumps(to_harness(band))} ({describe(band)})"


def adjudication_text(grant: Grant, proposal: Proposal, policy: Policy) -> tuple[str, str]:
    """`reasoning` and `notes` of a clinician-adjudicated band: each counted adjudicator's
    verdict and reason, the rule that gave the band from theirs, and the round."""
    assert grant.verdicts, "the registry grants a band only on counted verdicts"
    one = len(grant.verdicts) == 1
    lines = []
    for v in grant.verdicts:
        said = "ACCEPT, the proposal as written" if v.verdict == "ACCEPT" else v.verdict
        reason = f'reason: "{v.reason}"' if v.reason else "no reason given."
        lines.append(
            f"{v.pseudonym} ({v.specialty}): {said}, {shown(v.band)}; {reason}"
            + _corrections_said(v.corrections)
        )
    if one:
        rule = (
            f"The band, {json.dumps(to_harness(grant.band))}, is {grant.verdicts[0].pseudonym}'s "
            "own: with one counted adjudicator the intersection rule does not bind."
        )
    else:
        rule = (
            f"The band, {json.dumps(to_harness(grant.band))}, is what every one of them admits "
            "(the intersection rule)."
        )
        if isinstance(grant.band, MultilabelBand):
            rule += " Its required orders are every order any of them requires."
    if grant.disputed_span is not None:
        left = span_words(grant.disputed_span)
        rule += (
            f" Left disputed by the adjudicator, outside this band: {left}."
            if one
            else " Admitted by some of them but not all, or left disputed by one of them, and "
            f"so disputed: {left}."
        )
    elif proposal.disputed_span is not None and grant.proposal_signed:
        rule += (
            " The proposal's disputed span is settled: no counted adjudicator leaves any disputed."
        )
    rule += _texts_rule(grant, proposal)
    who = "one counted adjudicator" if one else f"{len(grant.verdicts)} counted adjudicators"
    reasoning = f"Adjudicated in round {grant.round} by {who}. " + " ".join([*lines, rule])
    notes = (
        f"Clinician-adjudicated in round {grant.round} under the policy quorum {policy.quorum}, "
        f"scope {policy.scope}; by {', '.join(grant.adjudicated_by)} "
        f"({RULE_LABELS[grant.intersection_rule]}); band {shown(grant.band)}. The "
        f"{proposal.provenance} proposal, {shown(proposal.acceptable)}, travels unchanged in "
        "x_proposal with its own source, clause, reasoning and notes; the signed attestations "
        "are listed in x_attestations."
    )
    if not grant.proposal_signed:
        notes += (
            " Its raters reviewed blind, never shown the proposal: the band takes nothing from "
            "it (no source, clause, threshold or disputed span of the proposal's)."
        )
    return reasoning, notes


def span_words(span: AnyBand) -> str:
    """A disputed span in words, its runs of numbers as ranges ("40 to 59 and 81 to 90"): a
    span of a score is rarely one run, and listing each value would bury it."""
    if isinstance(span, SetBand) and span.action.kind not in ("boolean", "multilabel"):
        return describe_values(span.sub_action, span.members)
    return describe(span)


def chair_text(
    grant: Grant, proposal: Proposal, policy: Policy, chaired: ChairGrant
) -> tuple[str, str]:
    """`reasoning` and `notes` of a band the study chair decided: the raters' verdicts and
    bands, which shared no value, then the chair's decision and reason, said as the chair's
    and never as agreement between the raters."""
    lines = [
        f"{v.pseudonym} ({v.specialty}): {v.verdict}, {shown(v.band)}; "
        + (f'reason: "{v.reason}"' if v.reason else "no reason given.")
        + _corrections_said(v.corrections)
        for v in grant.verdicts
    ]
    raters = ", ".join(v.pseudonym for v in grant.verdicts)
    decided = (
        f"The raters' bands shared no value after round {chaired.round}, so the study chair, "
        f"{chaired.chair}, decided the band, {shown(grant.band)}, with the reason: "
        f'"{chaired.reason}". This is the chair\'s decision, not agreement between raters.'
    )
    if grant.disputed_span is not None:
        decided += " Admitted by some rater but outside the band, and so disputed: " + (
            f"{span_words(grant.disputed_span)}."
        )
    decided += _texts_rule(grant, proposal)
    reasoning = f"Decided by the study chair after round {chaired.round}. " + " ".join(
        [*lines, decided]
    )
    notes = (
        f"Decided by the study chair, {chaired.chair}, after round {chaired.round}: the raters' "
        f"bands shared no value ({raters}; no consensus). Band {shown(grant.band)}, under the "
        f"policy quorum {policy.quorum}, scope {policy.scope}. The "
        f"{proposal.provenance} proposal, {shown(proposal.acceptable)}, travels unchanged in "
        "x_proposal; the raters' signed attestations and the chair's signed decision are "
        "listed in x_attestations."
    )
    if chaired.chair in {v.pseudonym for v in grant.verdicts}:
        # The harness keeps notes, not x_warnings: chair_rated is said here too.
        notes += (
            f" The chair, {chaired.chair}, is also one of these raters: the band was decided "
            "by someone whose own reading was in dispute."
        )
    return reasoning, notes


def _corrections_said(corrections: Mapping[str, Any]) -> str:
    """An adjudicator's corrections of the proposal, quoted, for their line of the reasoning."""
    said = [
        f'corrected {key}: "{corrections[key]}"' for key in CORRECTED_TEXTS if key in corrections
    ]
    if "disputed_span" in corrections:
        span = corrections["disputed_span"]
        said.append(
            "disputed span cleared" if span is None else f"disputed span set to {json.dumps(span)}"
        )
    return "".join(f"; {s}" for s in said)


def _texts_rule(grant: Grant, proposal: Proposal) -> str:
    """Which of the proposal's texts the band carries corrected, and which stay the proposal's
    though some adjudicator corrected them (registry.agreed_texts)."""
    corrected = [k for k in CORRECTED_TEXTS if k in grant.corrected]
    kept = [
        k
        for k in CORRECTED_TEXTS
        if k not in grant.corrected and any(k in v.corrections for v in grant.verdicts)
    ]
    said = ""
    if corrected:
        many = len(corrected) > 1
        said += (
            f" The {' and '.join(corrected)} {'are' if many else 'is'} as every counted "
            f"adjudicator corrected {'them' if many else 'it'} (the proposal's in x_proposal)."
        )
        if "reasoning" in grant.corrected:
            said += f' Corrected reasoning: "{grant.corrected["reasoning"]}"'
    if kept and not grant.proposal_signed:
        said += (
            f" The {' and '.join(kept)} {'are' if len(kept) > 1 else 'is'} left empty: the "
            "counted adjudicators did not all write it alike (each is quoted above), and the "
            "proposal's was never shown to them."
        )
    elif kept:
        said += (
            f" The proposal's {' and '.join(kept)} {'stay' if len(kept) > 1 else 'stays'}: the "
            "counted adjudicators did not all correct it alike (each correction is quoted above)."
        )
    return said


def _adjudicator_entry(record: Mapping[str, Any]) -> dict[str, Any]:
    missing = [k for k in ("pseudonym", "specialty", "jurisdiction") if not record.get(k)]
    if missing:
        raise FmaBandsError(f"adjudicator record lacks {', '.join(missing)}")
    entry = {key: record.get(key) for key in ADJUDICATOR_FIELDS}
    entry["attestation_on_file"] = bool(record.get("attestation_on_file"))
    entry["anonymous_to_readers"] = record.get("anonymous_to_readers", True)
    return entry


# Writing ------------------------------------------------------------------------------------


def dump_bands(document: Mapping[str, Any], *, dumper: type | None = None) -> str:
    """bands.yaml's text: yaml.dump's (sort_keys=False, allow_unicode=True, width=100), written
    by yaml_writer, which is several times faster and writes the same bytes."""
    return yaml_writer.dump(dict(document), width=100, dumper=dumper)


def write_bands(
    path: str | Path, document: Mapping[str, Any], *, also: Callable[[str], object] | None = None
) -> Path:
    """Write bands.yaml atomically: readers see the old file or the new one, never half. `also`
    is given each piece of the text as it is written (for a copy that never reads the file
    back, which someone else may have replaced by then)."""

    def dump(stream: IO[str]) -> None:
        target = stream if also is None else cast(IO[str], _Copying(stream, also))
        yaml_writer.dump_to(target, dict(document), width=100)

    return write_atomically(path, dump, shared=True)


class _Copying:
    """A text stream that hands each piece written to it on to `also` as well."""

    # Its presence tells libyaml's emitter to write text, not bytes.
    encoding = "utf-8"

    def __init__(self, stream: IO[str], also: Callable[[str], object]) -> None:
        self._stream, self._also = stream, also

    def write(self, text: str) -> int:
        self._also(text)
        return self._stream.write(text)

    def flush(self) -> None:
        self._stream.flush()


def write_export(
    library: Library,
    folder: Path,
    export_dir: Path,
    *,
    registry: Registry | None = None,
    study: str | None = None,
    head_signer: tuple[str, Ed25519PrivateKey] | None = None,
    audit_head: tuple[int, str] | None = None,
) -> Path:
    """bands.yaml in the one export folder of the settings (the app never writes elsewhere)."""
    document = export_document(
        library,
        folder,
        relative_to=export_dir,
        registry=registry,
        study=study,
        head_signer=head_signer,
        audit_head=audit_head,
    )
    return write_bands(Path(export_dir) / EXPORT_FILE, document)


# Reading with fma-bands ------------------------------------------------------------------------


def _read(path: str | Path) -> dict[str, Any]:
    # An export of 300 vignettes is a few MB; read it with the same limits as every other file.
    data = read_yaml(path, limit=256 * MIB, what="bands.yaml")
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise FmaBandsError(f"{path}: format: not a {FORMAT} file")
    return data


def read_export_header(path: str | Path) -> dict[str, Any]:
    """The `attestations` header of a bands.yaml: the folder, study and head it was decided
    from, and the audit head it carries. Only it and `format` are built: the bands, or
    anything planted in their place, are passed by unbuilt, however large."""
    found = read_yaml_values(path, ("format", "attestations"), limit=256 * MIB, what="bands.yaml")
    if found.get("format") != FORMAT:
        raise FmaBandsError(f"{path}: format: not a {FORMAT} file")
    header = found.get("attestations")
    if not isinstance(header, dict):
        raise FmaBandsError("states no attestations header", file=str(path))
    return header


def load_bands(
    path: str | Path, *, extensions: bool = False, section: str = "bands"
) -> dict[str, list[dict[str, Any]]]:
    """vignette_id -> band dicts of one section (`bands`, or `x_reassess_bands`, the urgency
    bands at reassess); each builds the harness's Band(**fields).

    The `x_` extensions are dropped unless `extensions=True`. Every band is re-validated, so a
    hand-edited file with a tuple-like or one-bound band is refused here, not in the harness.
    """
    if section not in SECTIONS:
        raise FmaBandsError(f"bands.yaml has no section {section!r}: one of {', '.join(SECTIONS)}")
    data = _read(path)
    bands = data.get(section) or {}
    if not isinstance(bands, dict):
        raise FmaBandsError(f"{path}: {section}: must map vignette ids to lists of bands")
    loaded: dict[str, list[dict[str, Any]]] = {}
    for vid, entries in bands.items():
        if not isinstance(entries, list):
            raise FmaBandsError(f"{path}: {section}.{vid}: must be a list of bands")
        loaded[vid] = [
            _checked_band(path, f"{section}.{vid}[{i}]", e, extensions)
            for i, e in enumerate(entries)
        ]
    return loaded


def _checked_band(path, at: str, entry: Any, extensions: bool) -> dict[str, Any]:
    where = f"{path}: {at}"
    if not isinstance(entry, dict) or entry.get("sub_action") not in SUB_ACTIONS:
        raise FmaBandsError(f"{where}.sub_action: missing or unknown")
    missing = [k for k in BAND_FIELDS if k not in entry]
    if missing:
        raise FmaBandsError(f"{where}: lacks {', '.join(missing)}")
    name = entry["sub_action"]
    try:
        parse_band(name, entry["acceptable"], required=entry.get("x_required"))
        if entry["disputed_span"] is not None:
            parse_band(name, entry["disputed_span"], span=True)
    except FmaBandsError as exc:
        raise FmaBandsError(f"{where}.acceptable: {exc.message}") from None
    if entry["adjudicated_by"] and entry["provenance"] != ADJUDICATED:
        raise FmaBandsError(
            f"{where}.adjudicated_by: set on a {entry['provenance']} band; the harness would "
            "take it as ground truth"
        )
    keys = [k for k in entry if extensions or not k.startswith("x_")]
    return {k: entry[k] for k in keys}


def load_adjudicators(path: str | Path) -> list[dict[str, Any]]:
    """Adjudicator dicts; each builds the harness's Adjudicator(**fields)."""
    data = _read(path)
    records = data.get("adjudicators") or []
    if not isinstance(records, list):
        raise FmaBandsError(f"{path}: adjudicators: must be a list")
    out = []
    for i, record in enumerate(records):
        if not isinstance(record, dict) or set(record) != set(ADJUDICATOR_FIELDS):
            raise FmaBandsError(
                f"{path}: adjudicators[{i}]: needs exactly {', '.join(ADJUDICATOR_FIELDS)}"
            )
        out.append(dict(record))
    return out


# Into the harness --------------------------------------------------------------------------


def load_into_harness(path: str | Path) -> dict[str, list[Any]]:
    """The export as the importable harness's own `Band` objects, by vignette id.

    As the README's snippet does, each exported adjudicator is first registered in
    `fairmedagent.adjudicators.ADJUDICATORS` (replacing the harness's own entry of the same
    pseudonym), since `Band` refuses a clinician-adjudicated band whose adjudicator is not
    registered with an attestation on file. Every record the harness refuses is listed.
    """
    built, check = build(importable_harness(), load_adjudicators(path), load_bands(path), path)
    if check.problems:
        raise FmaBandsError(
            f"the harness refused {len(check.problems)} record(s) of the export",
            file=str(path),
            problems=check.problems,
        )
    return built


def check_harness(path: str | Path, harness: str | Path | None = None) -> HarnessCheck:
    """Load the export into the harness at `harness` (the folder holding its fairmedagent
    package), or the one on sys.path, and report every band or adjudicator it refuses, with
    the harness's own message, the urgency bands at reassess (`x_reassess_bands`) as well. A
    private copy of the harness is used, so nobody's registry of adjudicators changes."""
    adjudicators, bands = load_adjudicators(path), load_bands(path)
    later = {name: load_bands(path, section=name) for name in SECTIONS[1:]}
    with private_harness(harness) as found:
        check = build(found, adjudicators, bands, path)[1]
        for name, more in later.items():
            also = build(found, (), more, path)[1]
            check.bands += also.bands
            # build names a band's place as in `bands`; this one is in another section.
            check.problems += [
                replace(p, field=name + (p.field or "").removeprefix("bands"))
                for p in also.problems
            ]
        return check
