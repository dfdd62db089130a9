"""Vignette files (docs/design.md, Vignette files): load and validate a folder, and digest what
a rater sees at each step.

Every problem names the file, the line and the field; one bad file never stops the others loading.
Each field is read and checked in `vignette_fields`; here the fields become a Vignette.
"""

import hashlib
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, fields
from functools import cached_property
from pathlib import Path
from typing import Any

from fma_bands.core.actions import STEPS, SUB_ACTIONS, Threshold, sub_action
from fma_bands.core.bands import AnyBand, to_file
from fma_bands.core.canonical import sha256_digest
from fma_bands.core.demographics import clinical_core_warnings
from fma_bands.core.errors import FmaBandsError, Problem
from fma_bands.core.files import compose_yaml, construct_yaml, decode_text, read_bounded_bytes
from fma_bands.core.priming import proposal_text_warnings
from fma_bands.core.vignette_fields import (
    PROPOSAL_TEXTS,
    Lines,
    ProblemsAt,
    as_written,
    read_optional_text,
    read_proposal_bands,
    read_provenance,
    read_sub_action,
    read_text,
    read_threshold,
    read_tool_labels,
    read_tool_results,
)

DOMAINS = ("triage", "ordering", "medication", "documentation")
AMBIGUITIES = ("clear", "intermediate", "borderline")
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


# A proposal in a file has exactly the fields of Proposal, and may say at which step its
# sub-action is decided (`step: reassess` for the urgency_score the harness asks for again there).
_PROPOSAL_KEYS = {f.name for f in fields(Proposal)} | {"step"}
# A vignette id names a file, a case token and a band in the registry: plain ASCII, so no two
# ids look alike (a Cyrillic "с" or a full-width "ｃ" is not a "c").
IDENTIFIER = re.compile(r"[a-z0-9_-]+")
# The steps whose form lists every orderable test (the orders band marks each one not
# defensible, defensible or required): a test added or removed after signing changes what the
# signed band says of it, so their context digests cover the tests' names.
MENU_STEPS = frozenset(a.step for a in SUB_ACTIONS.values() if a.kind == "multilabel")
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
    # Readable names for tool_results keys ("d_dimer": "D-dimer"): not part of what the agent
    # holds, but what raters read for the orders, so part of the context digest a review signs.
    tool_labels: dict[str, str] = field(default_factory=dict)
    # What the file holds that is allowed but doubtful (a demographic word in the clinical
    # core): said by `vignettes check`, never part of the vignette's identity.
    warnings: tuple[Problem, ...] = field(default=(), compare=False, repr=False)

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
        """What of this vignette the agent may hold when it acts at `step`, as the rater is
        shown it: the clinical core, and from reassessment on every result, of which the agent
        gets those of the tests it ordered; never the canary. The agent's own earlier actions
        vary by run and are no part of the vignette (fma_bands.core.labels.knowledge_at)."""
        seen: dict[str, Any] = {"id": self.id, "clinical_core": self.clinical_core}
        if STEPS[step].shows_results:
            seen["tool_results"] = dict(self.tool_results)
        return seen

    def context_digest(self, step: str) -> str:
        return self._context_digests[step]

    @cached_property
    def _context_digests(self) -> dict[str, str]:
        # Computed once per vignette: staleness checks ask for them for every review read. The
        # test names raters read (tool_labels) are covered when the vignette gives any, so a
        # label changed after signing makes the review stale; without labels nothing changes.
        labels = {"tool_labels": dict(self.tool_labels)} if self.tool_labels else {}
        menu = {"orderable_tests": sorted(self.tool_results)}
        return {
            step: sha256_digest(
                {**self.context(step), **labels, **(menu if step in MENU_STEPS else {})}
            )
            for step in STEPS
        }

    def context_digest_for(self, name: str) -> str:
        return self.context_digest(sub_action(name).step)

    def compute_digests(self) -> None:
        """Make every digest the staleness test and the registry ask for now, so that a parse
        kept between processes (evidence/kept_reads.py) carries them: each is made from the
        vignette alone, and a process taking the parse back need not hash it again."""
        # Cached properties, made by reading them.
        self._context_digests  # noqa: B018
        for proposal in self.proposals:
            proposal.band_digest  # noqa: B018
            proposal.proposal_digest  # noqa: B018


@dataclass
class Library:
    """The vignettes that loaded, in id order, and every problem found on the way."""

    vignettes: dict[str, Vignette] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    files: int = 0
    folders: tuple[str, ...] = ()  # where it was loaded from, for messages
    # Each file read, in the order read, with the SHA-256 of its bytes (files_digest).
    sources: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def warnings(self) -> list[Problem]:
        """What the loaded files hold that is allowed but doubtful; never a reason to refuse."""
        return [w for v in self for w in v.warnings]

    def __iter__(self) -> Iterator[Vignette]:
        return iter(self.vignettes.values())

    def __len__(self) -> int:
        return len(self.vignettes)

    @cached_property
    def digests(self) -> tuple:
        """Each vignette's context digests and whole-proposal digests: everything the registry
        and the staleness test read from the files, as one key (made once: a library is not
        changed once loaded, and the pages key what they keep with it on every run)."""
        return tuple(
            (
                v.id,
                tuple(v.context_digest(step) for step in STEPS),
                tuple(p.proposal_digest for p in v.proposals),
            )
            for v in self
        )

    @property
    def files_digest(self) -> str | None:
        """files_digest of the folders as this library read them; None if a file could not
        be read."""
        if len(self.sources) != self.files:
            return None
        return _sources_digest(self.sources.items())

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


Read = tuple["Vignette | None", list[Problem]]


@dataclass
class Reads:
    """What read_vignette made of files, by the name each was read by and the SHA-256 of its
    bytes (nothing else goes into it but the code), so that load_library parses only files it
    has not seen: `known` from before (evidence/kept_reads.py keeps them between processes),
    `used` what this load took or made, `made` how many of them it parsed."""

    known: dict[tuple[str, str], Read] = field(default_factory=dict)
    used: dict[tuple[str, str], Read] = field(default_factory=dict)
    made: int = 0

    def read(self, data: bytes, path: Path, digest: str) -> Read:
        key = (str(path), digest)
        found = self.known.get(key)
        if found is None:
            self.made += 1
            try:
                found = read_vignette(data, path)
            except Exception as exc:
                # Never among the reads kept: it may not fail again (memory, file handles).
                return _quarantined(exc, path)
        self.used[key] = found
        return found


def load_library(folders: Iterable[str | Path], reads: Reads | None = None) -> Library:
    """Load every *.yaml / *.yml in the folders; also refuse duplicate ids and canaries. With
    `reads`, a file read before with the same name and bytes is not parsed again."""
    reads = reads if reads is not None else Reads()
    paths_given = [Path(folder) for folder in folders]
    library = Library(folders=tuple(str(folder) for folder in paths_given))
    seen_canaries: dict[str, str] = {}
    for folder in paths_given:
        if not folder.is_dir():
            library.problems.append(Problem("no such folder", file=str(folder)))
            continue
        paths = _vignette_files(folder)
        if not paths:
            library.problems.append(Problem("no vignette files (*.yaml)", file=str(folder)))
        for path in paths:
            library.files += 1
            try:
                data = _read(path)
            except FmaBandsError as exc:
                library.problems.append(_problem(exc, str(path)))
                continue
            digest = hashlib.sha256(data).hexdigest()
            library.sources[str(path)] = digest
            vignette, problems = reads.read(data, path, digest)
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


def files_digest(folders: Iterable[str | Path]) -> str | None:
    """The SHA-256 of the vignette files load_library would read from the folders now (their
    names and bytes, in its order), without reading them as YAML: what a kept answer made from a
    library (Library.files_digest) is found by. None if a folder or a file cannot be read."""
    sources = []
    for folder in map(Path, folders):
        if not folder.is_dir():
            return None
        for path in _vignette_files(folder):
            try:
                data = _read(path)
            except FmaBandsError:
                return None
            sources.append((str(path), hashlib.sha256(data).hexdigest()))
    return _sources_digest(sources)


def _read(path: Path) -> bytes:
    try:
        return read_bounded_bytes(path, limit=MAX_BYTES, what="vignette")
    except OSError as exc:  # failing while reading, after the file opened
        raise FmaBandsError(f"cannot read the vignette: {exc.strerror}", file=str(path)) from None


def _vignette_files(folder: Path) -> list[Path]:
    return sorted([*folder.glob("*.yaml"), *folder.glob("*.yml")])


def _sources_digest(sources: Iterable[tuple[str, str]]) -> str:
    digest = hashlib.sha256(b"fma-bands vignette files 1\n")
    for name, file_digest in sources:
        digest.update(f"{name!r} {file_digest}\n".encode())
    return digest.hexdigest()


def _problem(exc: FmaBandsError, name: str) -> Problem:
    return Problem(exc.message, file=name, line=exc.line, field=exc.field)


def _quarantined(exc: Exception, path: Path) -> Read:
    """A file that fma-bands itself failed on (`exc`), left out and named as a problem: one
    file never stops the study loading."""
    message = (
        f"fma-bands could not read this file ({type(exc).__name__}), so it is left out: "
        "this is a bug in fma-bands; please report it with the file"
    )
    return None, [Problem(message, file=str(path))]


def load_vignette(path: str | Path) -> Read:
    """One file: the vignette (None if anything is wrong) and every problem found in it."""
    path = Path(path)
    try:
        data = _read(path)
    except FmaBandsError as exc:
        return None, [_problem(exc, str(path))]
    return read_vignette(data, path)


def read_vignette(data: bytes, path: Path) -> Read:
    """load_vignette of the bytes read from `path`."""
    name = str(path)
    try:
        text = decode_text(data, what="vignette", file=name)
        root = compose_yaml(text, source=name)
        written = as_written(construct_yaml(root, source=name), root)
    except FmaBandsError as exc:
        return None, [_problem(exc, name)]
    return parse_vignette(written, name, Lines(root, text), stem=path.stem)


def parse_vignette(
    data: Any, name: str, lines: Lines | None = None, stem: str | None = None
) -> Read:
    lines = lines or Lines(None)
    problems: list[Problem] = []

    def problem(message: str, *path: str | int) -> None:
        field = ".".join(map(str, path)) or None
        problems.append(Problem(message, file=name, line=lines.of(*path), field=field))

    if not isinstance(data, dict):
        problem("a vignette file is a mapping with id, domain, clinical_core, canary, ...")
        return None, problems
    for key in sorted(set(map(str, data)) - _VIGNETTE_KEYS):
        problem(f"unknown field (expected {', '.join(sorted(_VIGNETTE_KEYS))})", key)

    vid = read_text(data, "id", problem)
    if vid is not None:
        if not IDENTIFIER.fullmatch(vid):
            problem(
                f"{vid!a} is not an id: use lowercase ASCII letters a-z, digits 0-9, '_' "
                "and '-' only",
                "id",
            )
        elif stem is not None and vid != stem:
            problem(f"id {vid!r} does not match the file name {stem!r}", "id")
    domain = read_text(data, "domain", problem)
    if domain is not None and domain not in DOMAINS:
        problem(f"{domain!r} is not a domain: use one of {', '.join(DOMAINS)}", "domain")
    ambiguity = data.get("ambiguity")
    if ambiguity is not None and ambiguity not in AMBIGUITIES:
        problem(f"{ambiguity!r} is not allowed: use one of {', '.join(AMBIGUITIES)}", "ambiguity")
    core = read_text(data, "clinical_core", problem)
    canary = read_text(data, "canary", problem)
    tool_results = read_tool_results(data.get("tool_results"), problem)
    tool_labels = read_tool_labels(data.get("tool_labels"), tool_results, problem)
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
            warnings=_core_warnings(core, name, lines)
            + tuple(
                proposal_text_warnings(
                    data.get("proposals"), PROPOSAL_TEXTS, file=name, line_of=lines.of
                )
            ),
        ),
        [],
    )


def _core_warnings(core: str, name: str, lines: Lines) -> tuple[Problem, ...]:
    written = lines.written("clinical_core")
    line, source = written if written else (lines.of("clinical_core"), None)
    return tuple(clinical_core_warnings(core, file=name, line=line, source=source))


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


def _proposal(item: Any, i: int, tool_results: dict[str, str], problem) -> Proposal | None:
    here = ProblemsAt(problem, "proposals", i)
    if not isinstance(item, dict):
        here("a proposal is a mapping with sub_action, acceptable, provenance, ...")
        return None
    for key in sorted(set(map(str, item)) - _PROPOSAL_KEYS):
        here(f"unknown field (expected {', '.join(sorted(_PROPOSAL_KEYS))})", key)
    action = read_sub_action(item, here)
    if action is None:
        return None
    texts = {key: read_optional_text(item, key, here) for key in PROPOSAL_TEXTS}
    provenance = read_provenance(item, texts, here)
    acceptable, disputed = read_proposal_bands(action.name, item, tuple(tool_results), here)
    threshold = read_threshold(action, item.get("threshold"), here)
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
