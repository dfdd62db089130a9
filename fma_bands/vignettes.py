"""Vignette files (DESIGN 4): load and validate a folder, and digest what a rater sees at each step.

Every problem names the file, the line and the field; one bad file never stops the others loading.
"""

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, fields
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

from fma_bands.actions import STEPS, SubAction, Threshold, parse_threshold, sub_action
from fma_bands.bands import AnyBand, parse_band, to_file
from fma_bands.canonical import sha256_digest
from fma_bands.errors import FmaBandsError, Problem
from fma_bands.files import compose_yaml, construct_yaml, read_bounded

DOMAINS = ("triage", "ordering", "medication", "documentation")
AMBIGUITIES = ("clear", "intermediate", "borderline")
FILE_PROVENANCES = ("author-derived", "guideline-derived")
_VIGNETTE_KEYS = {
    "id",
    "domain",
    "ambiguity",
    "clinical_core",
    "tool_results",
    "canary",
    "proposals",
    "tool_labels",
}


@dataclass(frozen=True)
class Proposal:
    sub_action: str
    acceptable: AnyBand
    provenance: str
    source: str | None = None
    clause: str | None = None
    reasoning: str | None = None
    disputed_span: AnyBand | None = None
    threshold: Threshold | None = None
    notes: str | None = None

    @cached_property
    def band_digest(self) -> str:
        """The proposed band's digest, computed once: every queue and progress count asks."""
        return self.acceptable.digest()

    @cached_property
    def proposal_digest(self) -> str:
        """The digest of the whole proposal a rater judged: values, disputed span, threshold,
        source, clause, reasoning, notes and provenance. A change to any of them shows."""
        return sha256_digest(self.as_data())

    @property
    def effective_threshold(self) -> Threshold | None:
        """The band's own phi when it carries one, else the sub-action's default."""
        return self.threshold or sub_action(self.sub_action).threshold

    def as_data(self) -> dict[str, Any]:
        """The proposal in the vignette-file form: every field, bands as lists or mappings."""
        return {
            "sub_action": self.sub_action,
            "acceptable": to_file(self.acceptable),
            "provenance": self.provenance,
            "source": self.source,
            "clause": self.clause,
            "reasoning": self.reasoning,
            "disputed_span": to_file(self.disputed_span) if self.disputed_span else None,
            "threshold": self.threshold.expression() if self.threshold else None,
            "notes": self.notes,
        }


# A proposal in a file has exactly the fields of Proposal.
_PROPOSAL_KEYS = {f.name for f in fields(Proposal)}
_PROPOSAL_TEXTS = ("source", "clause", "reasoning", "notes")
_TEXT_FIELDS = ("id", "domain", "ambiguity", "clinical_core", "canary")
# A vignette is a few kilobytes; this is far more than any real one and refuses a flood at once.
MAX_BYTES = 512 * 1024


@dataclass(frozen=True)
class Vignette:
    id: str
    domain: str
    clinical_core: str
    canary: str
    tool_results: dict[str, str] = field(default_factory=dict)
    ambiguity: str | None = None
    proposals: tuple[Proposal, ...] = ()
    path: str | None = None
    # Readable names for tool_results keys ("d_dimer": "D-dimer"), for screens only: not part of
    # what the agent holds, so not part of any digest.
    tool_labels: dict[str, str] = field(default_factory=dict)

    @property
    def orderables(self) -> tuple[str, ...]:
        return tuple(self.tool_results)

    def proposal(self, name: str) -> Proposal | None:
        return self._proposals.get(name)

    @cached_property
    def _proposals(self) -> dict[str, Proposal]:
        # Looked up for every review read; the first proposal of a sub-action, as before.
        found: dict[str, Proposal] = {}
        for p in self.proposals:
            found.setdefault(p.sub_action, p)
        return found

    def context(self, step: str) -> dict[str, Any]:
        """Exactly what the agent holds when it acts at `step` (DESIGN 2.1); never the canary."""
        seen: dict[str, Any] = {"id": self.id, "clinical_core": self.clinical_core}
        if STEPS[step].shows_results:
            seen["tool_results"] = dict(self.tool_results)
        return seen

    def context_digest(self, step: str) -> str:
        return self._context_digests[step]

    @cached_property
    def _context_digests(self) -> dict[str, str]:
        # Computed once per vignette: staleness checks ask for them for every review read.
        return {step: sha256_digest(self.context(step)) for step in STEPS}

    def context_digest_for(self, name: str) -> str:
        return self.context_digest(sub_action(name).step)


@dataclass
class Library:
    """The vignettes that loaded, in id order, and every problem found on the way."""

    vignettes: dict[str, Vignette] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    files: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems

    def __iter__(self) -> Iterator[Vignette]:
        return iter(self.vignettes.values())

    def __len__(self) -> int:
        return len(self.vignettes)

    @property
    def digests(self) -> tuple:
        """Each vignette's context digests and whole-proposal digests: everything the registry
        and the staleness test read from the files, as one key."""
        return tuple(
            (
                v.id,
                tuple(v.context_digest(step) for step in STEPS),
                tuple(p.proposal_digest for p in v.proposals),
            )
            for v in self
        )

    def band(self, vid: str, name: str) -> tuple[Vignette, Proposal] | None:
        """The vignette and its proposal for one band, or None if the study has no such band."""
        vignette = self.vignettes.get(vid)
        proposal = vignette.proposal(name) if vignette else None
        return None if proposal is None else (vignette, proposal)  # type: ignore[return-value]

    def is_current(
        self,
        vid: str,
        name: str,
        *,
        context_digest: str,
        band_digest: str | None,
        proposal_digest: str | None,
        mode: str,
    ) -> bool:
        """Was a review made of this band as the files hold it now: the same context, the same
        proposed band and, in review mode, the same whole proposal (text, span, threshold)?
        The one test of staleness: queues, counts, signing and the registry's store side."""
        found = self.band(vid, name)
        if found is None:
            return False
        vignette, proposal = found
        return (
            context_digest == vignette.context_digest_for(name)
            and band_digest == proposal.band_digest
            and (mode == "blind" or proposal_digest == proposal.proposal_digest)
        )


class _Lines:
    """Maps a field path to the line it starts on, from the YAML node tree."""

    def __init__(self, root: yaml.Node | None):
        self.root = root

    def of(self, *path: str | int) -> int | None:
        node = self.root
        line = node.start_mark.line + 1 if node is not None else None
        for key in path:
            if isinstance(node, yaml.MappingNode):
                pair = next(((k, v) for k, v in node.value if k.value == key), None)
                if pair is None:
                    return line
                # A field is found on its key's line, which is where a person looks for it.
                line, node = pair[0].start_mark.line + 1, pair[1]
            elif isinstance(node, yaml.SequenceNode) and isinstance(key, int):
                if key >= len(node.value):
                    return line
                node = node.value[key]
                line = node.start_mark.line + 1
            else:
                return line
        return line


def load_library(folders: Iterable[str | Path]) -> Library:
    """Load every *.yaml / *.yml in the folders; also refuse duplicate ids and canaries."""
    library = Library()
    seen_canaries: dict[str, str] = {}
    for folder in folders:
        folder = Path(folder)
        if not folder.is_dir():
            library.problems.append(Problem("no such folder", file=str(folder)))
            continue
        paths = sorted([*folder.glob("*.yaml"), *folder.glob("*.yml")])
        if not paths:
            library.problems.append(Problem("no vignette files (*.yaml)", file=str(folder)))
        for path in paths:
            library.files += 1
            vignette, problems = load_vignette(path)
            library.problems.extend(problems)
            if vignette is None:
                continue
            first = library.vignettes.get(vignette.id)
            if first is not None:
                library.problems.append(
                    Problem(
                        f"duplicate id {vignette.id!r}, also {first.path}",
                        file=str(path),
                        line=1,
                        field="id",
                    )
                )
                continue
            if vignette.canary in seen_canaries:
                library.problems.append(
                    Problem(
                        f"duplicate canary, also in {seen_canaries[vignette.canary]}",
                        file=str(path),
                        field="canary",
                    )
                )
                continue
            seen_canaries[vignette.canary] = str(path)
            library.vignettes[vignette.id] = vignette
    library.vignettes = dict(sorted(library.vignettes.items()))
    return library


def load_vignette(path: str | Path) -> tuple[Vignette | None, list[Problem]]:
    """One file: the vignette (None if anything is wrong) and every problem found in it."""
    path = Path(path)
    name = str(path)
    try:
        root = compose_yaml(read_bounded(path, limit=MAX_BYTES, what="vignette"), source=name)
        data = as_written(construct_yaml(root, source=name), root)
    except FmaBandsError as exc:
        return None, [Problem(exc.message, file=name, line=exc.line)]
    return parse_vignette(data, name, _Lines(root), stem=path.stem)


def as_written(data: Any, root: yaml.Node | None) -> Any:
    """The file's data with its text fields and results kept exactly as written (DESIGN 5):
    `inr: 1.0` is the text "1.0" and `pregnancy_test: no` the text "no", not a number or a
    boolean the author never meant."""
    if not isinstance(data, dict) or not isinstance(root, yaml.MappingNode):
        return data
    written = dict(data)
    for key_node, value_node in root.value:
        key = key_node.value
        if key in _TEXT_FIELDS and isinstance(value_node, yaml.ScalarNode) and key in written:
            written[key] = value_node.value
        elif key in ("tool_results", "tool_labels") and isinstance(value_node, yaml.MappingNode):
            written[key] = {
                k.value: v.value if isinstance(v, yaml.ScalarNode) else data[key].get(k.value)
                for k, v in value_node.value
            }
        elif key == "proposals" and isinstance(value_node, yaml.SequenceNode):
            written[key] = [
                _proposal_as_written(item, node)
                for item, node in zip(data[key], value_node.value, strict=True)
            ]
    return written


def _proposal_as_written(item: Any, node: yaml.Node) -> Any:
    if not isinstance(item, dict) or not isinstance(node, yaml.MappingNode):
        return item
    written = dict(item)
    for key_node, value_node in node.value:
        if key_node.value in _PROPOSAL_TEXTS and isinstance(value_node, yaml.ScalarNode):
            written[key_node.value] = value_node.value
    return written


def parse_vignette(
    data: Any, name: str, lines: "_Lines | None" = None, stem: str | None = None
) -> tuple[Vignette | None, list[Problem]]:
    lines = lines or _Lines(None)
    problems: list[Problem] = []

    def problem(message: str, *path: str | int) -> None:
        field = ".".join(map(str, path)) or None
        problems.append(Problem(message, file=name, line=lines.of(*path), field=field))

    if not isinstance(data, dict):
        problem("a vignette file is a mapping with id, domain, clinical_core, canary, ...")
        return None, problems
    for key in sorted(set(map(str, data)) - _VIGNETTE_KEYS):
        problem(f"unknown field (expected {', '.join(sorted(_VIGNETTE_KEYS))})", key)

    vid = _text(data, "id", problem)
    if vid is not None:
        if not vid.replace("_", "").replace("-", "").isalnum():
            problem("use letters, digits, '_' and '-' only", "id")
        elif stem is not None and vid != stem:
            problem(f"id {vid!r} does not match the file name {stem!r}", "id")
    domain = _text(data, "domain", problem)
    if domain is not None and domain not in DOMAINS:
        problem(f"{domain!r} is not a domain: use one of {', '.join(DOMAINS)}", "domain")
    ambiguity = data.get("ambiguity")
    if ambiguity is not None and ambiguity not in AMBIGUITIES:
        problem(f"{ambiguity!r} is not allowed: use one of {', '.join(AMBIGUITIES)}", "ambiguity")
    core = _text(data, "clinical_core", problem)
    canary = _text(data, "canary", problem)
    tool_results = _tool_results(data.get("tool_results"), problem)
    tool_labels = _tool_labels(data.get("tool_labels"), tool_results, problem)
    proposals = _proposals(data.get("proposals"), tool_results, problem)

    if problems or vid is None or domain is None or core is None or canary is None:
        return None, problems
    return (
        Vignette(
            id=vid,
            domain=domain,
            clinical_core=core,
            canary=canary,
            tool_results=tool_results,
            ambiguity=ambiguity,
            proposals=tuple(proposals),
            path=name,
            tool_labels=tool_labels,
        ),
        [],
    )


def _text(data: dict, key: str, problem, required: bool = True) -> str | None:
    value = data.get(key)
    if value is None:
        if required:
            problem("missing (required)", key)
        return None
    if not isinstance(value, str) or not value.strip():
        problem(f"must be non-empty text, not {type(value).__name__}", key)
        return None
    return value.strip()


def _tool_results(raw: Any, problem) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        problem("must map each orderable test to its result text", "tool_results")
        return {}
    results = {}
    for key, value in raw.items():
        if not isinstance(key, str) or not key.replace("_", "").isalnum():
            problem("an orderable's name uses letters, digits and '_' only", "tool_results", key)
        elif not isinstance(value, str) or not value.strip():
            problem("the result must be non-empty text", "tool_results", key)
        else:
            results[key] = value.strip()
    return results


def _tool_labels(raw: Any, tool_results: dict[str, str], problem) -> dict[str, str]:
    """Optional readable names for the orderables, e.g. `d_dimer: D-dimer`."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        problem("must map orderable tests to the names raters read", "tool_labels")
        return {}
    labels = {}
    for key, value in raw.items():
        if key not in tool_results:
            problem("names no orderable in tool_results", "tool_labels", str(key))
        elif not isinstance(value, str) or not value.strip():
            problem("the name must be non-empty text", "tool_labels", key)
        else:
            labels[key] = value.strip()
    return labels


def _proposals(raw: Any, tool_results: dict[str, str], problem) -> list[Proposal]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        problem("must be a list of proposals", "proposals")
        return []
    proposals: list[Proposal] = []
    for i, item in enumerate(raw):
        proposal = _proposal(item, i, tool_results, problem)
        if proposal is None:
            continue
        if any(p.sub_action == proposal.sub_action for p in proposals):
            problem(f"a second proposal for {proposal.sub_action}", "proposals", i, "sub_action")
            continue
        proposals.append(proposal)
    return proposals


class _Here:
    """Problems of one proposal, each reported under its field, remembering whether any was."""

    def __init__(self, problem: Callable[..., None], *path: str | int) -> None:
        self._problem, self.path, self.ok = problem, path, True

    def __call__(self, message: str, *field: str) -> None:
        self._problem(message, *self.path, *field)
        self.ok = False


def _proposal(item: Any, i: int, tool_results: dict[str, str], problem) -> Proposal | None:
    here = _Here(problem, "proposals", i)
    if not isinstance(item, dict):
        here("a proposal is a mapping with sub_action, acceptable, provenance, ...")
        return None
    for key in sorted(set(map(str, item)) - _PROPOSAL_KEYS):
        here(f"unknown field (expected {', '.join(sorted(_PROPOSAL_KEYS))})", key)
    if item.get("sub_action") is None:
        here("missing (required)", "sub_action")
        return None
    try:
        action = sub_action(str(item["sub_action"]))
    except FmaBandsError as exc:
        here(exc.message, "sub_action")
        return None
    texts = {key: _optional_text(item, key, here) for key in _PROPOSAL_TEXTS}
    provenance = _provenance(item, texts, here)
    acceptable, disputed = _proposal_bands(action.name, item, tuple(tool_results), here)
    threshold = _threshold(action, item.get("threshold"), here)
    if not here.ok or acceptable is None:
        return None
    return Proposal(
        sub_action=action.name,
        acceptable=acceptable,
        provenance=provenance,
        disputed_span=disputed,
        threshold=threshold,
        **texts,
    )


def _optional_text(item: dict, key: str, here: _Here) -> str | None:
    value = item.get(key)
    if value is not None and (not isinstance(value, str) or not value.strip()):
        here("must be non-empty text when given", key)
    return value.strip() if isinstance(value, str) else None


def _provenance(item: dict, texts: dict[str, str | None], here: _Here) -> str:
    provenance = item.get("provenance", "author-derived")
    if provenance == "clinician-adjudicated":
        here(
            "a vignette file cannot claim clinician-adjudicated: only the registry grants it, "
            "from signed attestations; write author-derived or guideline-derived",
            "provenance",
        )
    elif provenance not in FILE_PROVENANCES:
        here(f"use one of {', '.join(FILE_PROVENANCES)}", "provenance")
    elif provenance == "guideline-derived" and not (texts["source"] and texts["clause"]):
        here("a guideline-derived band needs both source and clause", "provenance")
    return str(provenance)


def _proposal_bands(
    name: str, item: dict, orderables: tuple[str, ...], here: _Here
) -> tuple[AnyBand | None, AnyBand | None]:
    acceptable = disputed = None
    if "acceptable" not in item:
        here("missing (required)", "acceptable")
    else:
        try:
            acceptable = parse_band(name, item["acceptable"], orderables=orderables)
        except FmaBandsError as exc:
            here(exc.message, "acceptable")
    if item.get("disputed_span") is not None:
        try:
            disputed = parse_band(name, item["disputed_span"], orderables=orderables, span=True)
        except FmaBandsError as exc:
            here(exc.message, "disputed_span")
    if acceptable is not None and disputed is not None:
        overlap = acceptable.values() & disputed.values()
        if overlap:
            here(
                f"the disputed span repeats values already in the band ({sorted(overlap)}): "
                "it holds only what the band leaves out",
                "disputed_span",
            )
    return acceptable, disputed


def _threshold(action: SubAction, raw: Any, here: _Here) -> Threshold | None:
    if raw is None:
        return None
    try:
        threshold = parse_threshold(raw)
    except FmaBandsError as exc:
        here(exc.message, "threshold")
        return None
    if type(threshold.value) is not action.value_type or action.kind == "multilabel":
        here(f"{action.name} takes a threshold on {action.describe_domain()}", "threshold")
        return None
    return threshold
