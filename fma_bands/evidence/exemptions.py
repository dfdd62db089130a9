"""The harness's confounded-pair exemptions (docs/design.md, Exemptions): an entry read from the
harness's own `conditions` module or from a YAML file of the same fields, what a rater's review of
it says, and what the attestations folder alone decides each entry is now (exemptions.yaml).

An exemption demotes a demographic difference in its registered direction from a bias claim to
descriptive reporting, so the decision is made like the band registry's: from signed files only,
failing closed (a folder that does not verify or has no policy adjudicates nothing).
"""

import contextlib
import hashlib
import importlib
import importlib.util
import secrets
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from fma_bands.core.actions import SUB_ACTIONS
from fma_bands.core.canonical import canonical_json
from fma_bands.core.errors import FmaBandsError, Problem
from fma_bands.core.files import compose_yaml, construct_yaml, read_bounded, write_atomically
from fma_bands.evidence.harness import _package
from fma_bands.evidence.log import Evidence, read_evidence
from fma_bands.evidence.provenance import Reason
from fma_bands.evidence.shapes import EXEMPTION_VERDICTS, WORD

EXEMPTIONS_FILE = "exemptions.yaml"
FILE_LIMIT = 256 * 1024
# The harness's NEVER_EXEMPT (fairmedagent.conditions): no entry may key on these, whatever its
# direction (tests/evidence/test_exemptions.py holds it to the harness's own set).
NEVER_EXEMPT = frozenset({"stigmatizing_language_flags", "controlled_substance_caution"})
FIELDS = ("attribute", "sub_action", "direction", "requires_adjudication", "age_gate", "rationale")
REQUIRED = ("attribute", "sub_action", "direction")
RATIONALE_LIMIT = 4000
AGE_LIMIT = 130

# CONFIRM: the registered direction is the defensible one; REJECT: no exemption at all; AMEND:
# another direction is the defensible one (given with the review).
VERDICTS = EXEMPTION_VERDICTS
STATUS_OF = {"CONFIRM": "confirmed", "REJECT": "rejected", "AMEND": "amended"}
UNADJUDICATED = "unadjudicated"
SUBJECT_PREFIX = "exemption:"
EXEMPTION_REASONS = {
    "no_review": "no signed review of this exemption is in the attestations folder",
    "quorum_not_met": "fewer signed reviews than the policy's quorum",
    "no_consensus": "the raters' verdicts (or amended directions) differ",
    "entry_changed": "a signed review judged another version of this entry",
    "revoked": "the attestation holding the review was revoked",
    "no_policy": "no signed policy record is in the log: nothing is adjudicated",
    "folder_invalid": "the attestations folder does not verify: nothing is adjudicated",
}


@dataclass(frozen=True)
class Exemption:
    """One confounded-pair entry: a difference of `sub_action` across `attribute` in the
    `direction` named is clinically defensible (within `age_gate`, when there is one)."""

    attribute: str
    sub_action: str
    direction: str
    requires_adjudication: bool = False
    age_gate: tuple[int, int] | None = None
    rationale: str | None = None

    @property
    def name(self) -> str:
        """How a person names the entry: `sex/orders`."""
        return f"{self.attribute}/{self.sub_action}"

    @property
    def key(self) -> tuple[str, str]:
        return (self.attribute, self.sub_action)

    def as_fields(self) -> dict[str, Any]:
        """The file form, every field present."""
        gate = None if self.age_gate is None else {"min": self.age_gate[0], "max": self.age_gate[1]}
        return {
            "attribute": self.attribute,
            "sub_action": self.sub_action,
            "direction": self.direction,
            "requires_adjudication": self.requires_adjudication,
            "age_gate": gate,
            "rationale": self.rationale,
        }

    @property
    def digest(self) -> str:
        """What a review binds: a changed direction, gate or rationale is another entry."""
        return "sha256:" + hashlib.sha256(canonical_json(self.as_fields())).hexdigest()


def subject_name(name: str) -> str:
    """The in-toto subject that names an exemption in a signed statement."""
    return f"{SUBJECT_PREFIX}{name}"


def check_direction(value: Any, *, field_name: str = "direction") -> str:
    if not isinstance(value, str) or not WORD.match(value):
        raise FmaBandsError(
            "a direction is a lower-case word, or words joined by _ (letters and digits), as "
            f"the harness writes them (more, shorter, away_from_nsaid), not {value!r}",
            field=field_name,
        )
    return value


def exemption_from_fields(fields: Any) -> Exemption:
    """An entry from its file form; FmaBandsError naming the field otherwise."""
    if not isinstance(fields, Mapping):
        raise FmaBandsError("an exemption is a mapping of " + ", ".join(FIELDS))
    unknown = sorted(str(k) for k in fields if k not in FIELDS)
    if unknown:
        raise FmaBandsError(
            f"unknown field(s) {', '.join(unknown)}: an exemption has " + ", ".join(FIELDS),
            field=unknown[0],
        )
    for name in REQUIRED:
        if fields.get(name) is None:
            raise FmaBandsError("this field is required", field=name)
    attribute = fields["attribute"]
    if not isinstance(attribute, str) or not WORD.match(attribute):
        raise FmaBandsError(
            f"an attribute is one lower-case word (race, sex, age, insurance, lep), not "
            f"{attribute!r}",
            field="attribute",
        )
    name = fields["sub_action"]
    if isinstance(name, str) and name in NEVER_EXEMPT:
        raise FmaBandsError(
            f"{name} may never be exempted (the harness's NEVER_EXEMPT)", field="sub_action"
        )
    if not isinstance(name, str) or name not in SUB_ACTIONS:
        raise FmaBandsError(
            f"unknown sub_action {name!r}: expected one of {', '.join(SUB_ACTIONS)}",
            field="sub_action",
        )
    flag = fields.get("requires_adjudication", False)
    if not isinstance(flag, bool):
        raise FmaBandsError("write true or false", field="requires_adjudication")
    rationale = fields.get("rationale")
    if rationale is not None and (
        not isinstance(rationale, str) or len(rationale) > RATIONALE_LIMIT
    ):
        raise FmaBandsError(
            f"a rationale is text of at most {RATIONALE_LIMIT} characters", field="rationale"
        )
    return Exemption(
        attribute=attribute,
        sub_action=name,
        direction=check_direction(fields["direction"]),
        requires_adjudication=flag,
        age_gate=_age_gate(fields.get("age_gate")),
        rationale=rationale.strip() or None if isinstance(rationale, str) else None,
    )


def _age_gate(value: Any) -> tuple[int, int] | None:
    if value is None:
        return None
    if isinstance(value, list | tuple) and len(value) == 2:  # the harness's (min, max)
        value = {"min": value[0], "max": value[1]}
    if not isinstance(value, Mapping) or set(value) != {"min", "max"}:
        raise FmaBandsError("write the age gate as {min: 12, max: 55}", field="age_gate")
    low, high = value["min"], value["max"]
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (low, high)):
        raise FmaBandsError("the age gate's min and max are whole years", field="age_gate")
    if not 0 <= low <= high <= AGE_LIMIT:
        raise FmaBandsError(
            f"the age gate needs 0 <= min <= max <= {AGE_LIMIT}, not {low} to {high}",
            field="age_gate",
        )
    return (low, high)


def _unique(entries: list[tuple[Exemption, str, int | None]], source: str) -> list[Exemption]:
    seen: dict[tuple[str, str], str] = {}
    problems = []
    for entry, where, line in entries:
        if entry.key in seen:
            problems.append(
                Problem(f"{entry.name} is listed twice (also {seen[entry.key]})", source, line)
            )
        seen.setdefault(entry.key, where)
    if problems:
        raise FmaBandsError("the exemptions repeat an entry", file=source, problems=problems)
    return [entry for entry, _, _ in entries]


def read_exemptions(path: str | Path) -> list[Exemption]:
    """The entries of a YAML file (`exemptions:` then a list of entries), every problem named
    by file, line and field; one bad entry refuses the file."""
    source = str(path)
    root = compose_yaml(read_bounded(path, limit=FILE_LIMIT, what="exemptions file"), source=source)
    data = construct_yaml(root, source=source)
    if not isinstance(data, dict) or not isinstance(data.get("exemptions"), list):
        raise FmaBandsError(
            "an exemptions file is a mapping whose `exemptions` is a list of entries",
            file=source,
            line=1,
        )
    assert isinstance(root, yaml.MappingNode)
    items = next(v for k, v in root.value if k.value == "exemptions")
    assert isinstance(items, yaml.SequenceNode)
    found: list[tuple[Exemption, str, int | None]] = []
    problems = []
    for i, (fields, node) in enumerate(zip(data["exemptions"], items.value, strict=True)):
        line = node.start_mark.line + 1
        try:
            found.append((exemption_from_fields(fields), f"line {line}", line))
        except FmaBandsError as exc:
            line = _line_of(node, exc.field) or line
            where = f"exemptions[{i}]" + (f".{exc.field}" if exc.field else "")
            problems.append(Problem(exc.message, source, line, where))
    if problems:
        raise FmaBandsError("the exemptions file has problems", file=source, problems=problems)
    return _unique(found, source)


def _line_of(node: yaml.Node, name: str | None) -> int | None:
    if name is None or not isinstance(node, yaml.MappingNode):
        return None
    for key, value in node.value:
        if key.value == name:
            return value.start_mark.line + 1
    return None


@contextlib.contextmanager
def _conditions(folder: str | Path | None) -> Iterator[Any]:
    """The harness's `conditions` module from its package in `folder` (or on sys.path), imported
    under a private name and removed afterwards, so nobody's harness is touched."""
    package = _harness_package(folder)
    name = f"_fma_bands_conditions_{secrets.token_hex(6)}"
    try:
        spec = importlib.util.spec_from_file_location(
            name, package / "__init__.py", submodule_search_locations=[str(package)]
        )
        assert spec is not None and spec.loader is not None, "a file location always has a spec"
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
        module = importlib.import_module(f"{name}.conditions")
    except Exception as exc:  # the harness's own import: whatever fails, say so in one line
        _forget(name)
        raise FmaBandsError(
            f"cannot import the harness: {type(exc).__name__}: {exc}", file=str(package)
        ) from None
    try:
        yield module
    finally:
        _forget(name)


def _forget(name: str) -> None:
    for module in [m for m in sys.modules if m == name or m.startswith(f"{name}.")]:
        del sys.modules[module]


def _harness_package(folder: str | Path | None) -> Path:
    return _package(folder, needs="conditions.py", how=" (--harness DIR)")


def harness_exemptions(folder: str | Path | None) -> list[Exemption]:
    """The entries of the harness's confounded-pair registry: CONFOUNDED with its directions,
    REQUIRES_ADJUDICATION and REGISTRY_AGE_GATES."""
    with _conditions(folder) as conditions:
        where = str(Path(str(conditions.__file__)))
        try:
            registry = dict(conditions.CONFOUNDED)
            pending = set(conditions.REQUIRES_ADJUDICATION)
            gates = dict(getattr(conditions, "REGISTRY_AGE_GATES", {}))
        except (AttributeError, TypeError) as exc:
            raise FmaBandsError(
                f"the harness's conditions module has no confounded registry: {exc}", file=where
            ) from None
    found: list[tuple[Exemption, str, int | None]] = []
    problems = []
    for attribute, directions in registry.items():
        for name, direction in dict(directions).items():
            fields = {
                "attribute": attribute,
                "sub_action": name,
                "direction": direction,
                "requires_adjudication": (attribute, name) in pending,
                "age_gate": gates.get((attribute, name)),
            }
            try:
                found.append((exemption_from_fields(fields), where, None))
            except FmaBandsError as exc:
                problems.append(Problem(exc.message, where, None, f"CONFOUNDED[{attribute}]"))
    if problems:
        raise FmaBandsError("the harness's registry has problems", file=where, problems=problems)
    return _unique(found, where)


# The decision, from files alone ----------------------------------------------------------------


@dataclass
class SignedExemptionReview:
    pseudonym: str
    file: str
    keyid: str
    signed_at: str
    sequence: int
    digest: str  # the attestation record's
    review: dict[str, Any]
    subject_digest: str | None

    @property
    def round(self) -> int:
        value = self.review.get("round", 1)
        return value if isinstance(value, int) and not isinstance(value, bool) else 1


@dataclass
class ExemptionDecision:
    entry: Exemption
    status: str = UNADJUDICATED
    direction: str | None = None  # as adjudicated (None when rejected)
    adjudicated_by: tuple[str, ...] = ()
    attestations: list[dict[str, Any]] = field(default_factory=list)
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    reasons: list[Reason] = field(default_factory=list)
    round: int | None = None

    def as_fields(self) -> dict[str, Any]:
        """The entry as exemptions.yaml writes it."""
        gate = self.entry.as_fields()["age_gate"]
        return {
            "attribute": self.entry.attribute,
            "sub_action": self.entry.sub_action,
            "direction": self.direction,
            "status": self.status,
            "registered_direction": self.entry.direction,
            "requires_adjudication": self.status == UNADJUDICATED
            and self.entry.requires_adjudication,
            "age_gate": gate,
            "rationale": self.entry.rationale,
            "adjudicated_by": list(self.adjudicated_by),
            "attestations": self.attestations,
            "verdicts": self.verdicts,
            "reasons": [r.as_dict() for r in self.reasons],
            "round": self.round,
        }


def signed_exemption_reviews(
    evidence: Evidence,
) -> dict[tuple[str, str], list[SignedExemptionReview]]:
    """Each entry's signed reviews, from the verified adjudications of the chain."""
    found: dict[tuple[str, str], list[SignedExemptionReview]] = {}
    for env in evidence.adjudications():
        assert env.statement is not None and env.pseudonym and env.keyid and env.position
        subjects = {s["name"]: s["digest"].get("sha256") for s in env.statement["subject"]}
        for review in env.predicate.get("exemption_reviews", []):
            name = f"{review['attribute']}/{review['sub_action']}"
            found.setdefault((review["attribute"], review["sub_action"]), []).append(
                SignedExemptionReview(
                    pseudonym=env.pseudonym,
                    file=env.path.name,
                    keyid=env.keyid,
                    signed_at=env.signed_at,
                    sequence=env.position[1],
                    digest=env.digest,
                    review=review,
                    subject_digest=subjects.get(subject_name(name)),
                )
            )
    return found


def latest_signed_exemption_reviews(evidence: Evidence, pseudonym: str) -> dict[str, dict]:
    """For each entry (by name), the review as the rater's latest unrevoked attestation signed
    it."""
    covered: dict[str, dict] = {}
    for env in evidence.adjudications():
        if env.pseudonym == pseudonym and env.digest not in evidence.revoked:
            for review in env.predicate.get("exemption_reviews", []):
                covered[f"{review['attribute']}/{review['sub_action']}"] = review
    return covered


def decide_exemptions(
    entries: Iterable[Exemption], evidence: Evidence, *, quorum: int | None = None
) -> list[ExemptionDecision]:
    """What each entry is now, from the signed reviews in the folder: confirmed, rejected or
    amended when at least the policy's quorum of raters signed reviews of this very entry in
    its latest round and all say the same; unadjudicated otherwise, with the reasons."""
    everywhere = []
    if not evidence.valid:
        everywhere.append(
            Reason("folder_invalid", f"{EXEMPTION_REASONS['folder_invalid']}: {evidence.summary()}")
        )
    if evidence.policy is None:
        everywhere.append(Reason("no_policy", EXEMPTION_REASONS["no_policy"]))
    needed = quorum if quorum is not None else (evidence.policy.quorum if evidence.policy else 1)
    signed = signed_exemption_reviews(evidence) if evidence.valid else {}
    decisions = []
    for entry in entries:
        decision = ExemptionDecision(entry, reasons=list(everywhere))
        if not everywhere:
            _decide(decision, signed.get(entry.key, []), evidence.revoked, needed)
        decisions.append(decision)
    return decisions


def _decide(
    decision: ExemptionDecision,
    reviews: list[SignedExemptionReview],
    revoked: set[str],
    quorum: int,
) -> None:
    entry = decision.entry
    if not reviews:
        decision.reasons.append(Reason("no_review", EXEMPTION_REASONS["no_review"]))
        return
    standing = [r for r in reviews if r.digest not in revoked]
    for name in sorted({r.pseudonym for r in reviews} - {r.pseudonym for r in standing}):
        decision.reasons.append(Reason("revoked", f"{EXEMPTION_REASONS['revoked']}: {name}"))
    last_round = max((r.round for r in standing), default=1)
    latest: dict[str, SignedExemptionReview] = {}
    for review in sorted(standing, key=lambda r: r.sequence):
        if review.round == last_round:
            latest[review.pseudonym] = review
    counted = []
    wanted = entry.digest
    for review in latest.values():
        if (
            review.review.get("entry_digest") != wanted
            or review.subject_digest != wanted.removeprefix("sha256:")
            or review.review.get("verdict") not in VERDICTS
        ):
            decision.reasons.append(
                Reason("entry_changed", f"{EXEMPTION_REASONS['entry_changed']}: {review.pseudonym}")
            )
            continue
        counted.append(review)
    counted.sort(key=lambda r: r.pseudonym)
    if len(counted) < quorum:
        decision.reasons.append(
            Reason(
                "quorum_not_met",
                f"{EXEMPTION_REASONS['quorum_not_met']}: {len(counted)} of {quorum} required",
            )
        )
        return
    said = {(r.review["verdict"], r.review.get("direction")) for r in counted}
    if len(said) != 1:
        decision.reasons.append(Reason("no_consensus", EXEMPTION_REASONS["no_consensus"]))
        return
    [(verdict, direction)] = said
    decision.status = STATUS_OF[verdict]
    decision.direction = {"CONFIRM": entry.direction, "REJECT": None}.get(verdict, direction)
    decision.adjudicated_by = tuple(r.pseudonym for r in counted)
    decision.round = last_round
    decision.attestations = [
        {"file": r.file, "keyid": r.keyid, "signed_at": r.signed_at, "sequence": r.sequence}
        for r in counted
    ]
    decision.verdicts = [
        {
            "adjudicator": r.pseudonym,
            "verdict": r.review["verdict"],
            "direction": r.review.get("direction"),
            "reason": r.review.get("reason"),
            "round": r.round,
        }
        for r in counted
    ]


def exemptions_document(
    entries: Iterable[Exemption],
    folder: Path,
    *,
    study: str | None = None,
    since: tuple[int, str] | None = None,
    generated_at: datetime | None = None,
) -> dict[str, Any]:
    """exemptions.yaml as data: every entry as the folder decides it. A folder that does not
    verify is refused (nothing would be adjudicated, and a file saying so helps nobody)."""
    evidence = read_evidence(folder, study=study, since=since)
    if not evidence.valid:
        raise FmaBandsError(
            f"the attestations folder {folder} does not verify, so no exemption can be "
            f"exported as adjudicated: {evidence.summary()}. Nothing was written; "
            "`fma-bands verify` lists every problem",
            code="folder_invalid",
        )
    # In one order whatever the entries came from (the store, the harness, a file), so the
    # coordinator's file and an editor's are the same file.
    ordered = sorted(entries, key=lambda e: (e.attribute, e.sub_action))
    decisions = decide_exemptions(ordered, evidence)
    sequence, digest = evidence.head
    return {
        "generated_at": (generated_at or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "study": evidence.study,
        "head": f"{sequence}:{digest}",
        "quorum": evidence.policy.quorum if evidence.policy else None,
        "exemptions": [d.as_fields() for d in decisions],
    }


def write_exemptions(path: str | Path, document: dict[str, Any]) -> Path:
    text = yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100)
    return write_atomically(Path(path), text, shared=True)
