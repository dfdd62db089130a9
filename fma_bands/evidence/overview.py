"""The band registry as an overview that fits a screen: one short row per band (case,
sub-action, status and band in words, its raters, its warnings as short tags), the notes that
hold for many bands said once for the whole study, and one band's full explanation in words,
each registry code beside its sentence, never alone (the JSON keeps the codes)."""

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fma_bands.core.actions import sub_action
from fma_bands.core.labels import (
    HARNESS_WORDS,
    REASON_WORDS,
    WARNING_WORDS,
    CodeWords,
    code_sentence,
    code_words,
    describe_band,
    tool_names,
)
from fma_bands.core.vignettes import Library
from fma_bands.evidence.export import span_words
from fma_bands.evidence.harness import harness_note
from fma_bands.evidence.provenance import REASONS, WARNINGS, Decision, Reason
from fma_bands.evidence.registry import Registry

ADJUDICATED_STATUS = "clinician-adjudicated"
NOT_ADJUDICATED_STATUS = "not adjudicated"
COLUMNS = ("case", "sub-action", "status", "band", "raters", "warnings")
# The kinds of band whose harness check cannot score them yet, as a note names them.
KIND_WORDS = {"boolean": "yes/no bands", "multilabel": "orders bands"}


@dataclass(frozen=True)
class RegistryRow:
    """One band's row in the overview: every cell in words."""

    vignette_id: str
    sub_action: str  # the key, to find its decision again
    action: str  # its readable label
    adjudicated: bool
    status: str
    band: str
    raters: str
    tags: tuple[str, ...]  # short words, each explained once in the study's notes
    # The case's number as raters read it ("Case 3 of 12"), when the study's numbering is
    # known (the registry itself decides from the files alone, which do not hold it).
    number: int | None = None

    @property
    def case(self) -> str:
        return self.vignette_id if self.number is None else f"{self.number} · {self.vignette_id}"

    @property
    def title(self) -> str:
        return f"{self.case} · {self.action}"

    def cells(self) -> dict[str, str]:
        """The row as the table shows it, by column heading."""
        return {
            "case": self.case,
            "sub-action": self.action,
            "status": self.status,
            "band": self.band,
            "raters": self.raters,
            "warnings": ", ".join(self.tags) or "none",
        }


@dataclass(frozen=True)
class Note:
    """What a tag or a status means, said once for the whole study: its words, how many bands
    it applies to, whom it names, and the code the JSON keeps (None for the harness's notes,
    which have no code)."""

    words: CodeWords
    bands: int
    code: str | None = None
    who: tuple[str, ...] = ()

    def text(self, total: int) -> str:
        who = f" ({', '.join(self.who)})" if self.who else ""
        where = "every band" if self.bands == total else f"{self.bands} of {total} bands"
        code = f" (code: {self.code})" if self.code else ""
        return f"{self.words.short.capitalize()}{who}, {where}: {self.words.sentence}{code}"


def harness_words(name: str) -> CodeWords | None:
    """What it means that the harness cannot check this sub-action's bands yet, or None when it
    can (the same bands harness_note names in the export)."""
    if harness_note(name, False) is None:
        return None
    return HARNESS_WORDS[sub_action(name).kind]


def _tags(d: Decision) -> tuple[str, ...]:
    tags = [code_words(w.code, WARNING_WORDS).short for w in d.warnings]
    if words := harness_words(d.sub_action):
        tags.append(words.short)
    return tuple(dict.fromkeys(tags))  # each once, in order


def _band_words(d: Decision, names: Mapping[str, str]) -> str:
    """The band in words, and its disputed span when it has one: a band granted where its
    raters met on one value of a wide dispute must not read as settled in the table. A band
    not adjudicated is its file's, the proposal: said so, never read as the raters'."""
    band = describe_band(d.band, names)
    if not d.adjudicated:
        return f"as proposed: {band}"
    if d.disputed_span is None:
        return band
    return f"{band}; disputed span: {span_words(d.disputed_span)}"


def status(d: Decision) -> str:
    """A band's status in words: adjudicated, or not and why, each reason in a few words."""
    if d.adjudicated:
        return ADJUDICATED_STATUS
    why = dict.fromkeys(code_words(r.code, REASON_WORDS).short for r in d.reasons)
    return f"{NOT_ADJUDICATED_STATUS}: {', '.join(why)}" if why else NOT_ADJUDICATED_STATUS


def registry_rows(
    registry: Registry, library: Library, numbers: Mapping[str, int] | None = None
) -> list[RegistryRow]:
    """Every band of the registry as a short row, in the registry's order; with the study's
    case `numbers`, each case also by the number raters read it by, in the order of those
    numbers (each case's bands in the registry's order)."""
    rows = []
    for d in registry.decisions:
        vignette = library.vignettes.get(d.vignette_id)
        names = tool_names(vignette) if vignette is not None else {}
        rows.append(
            RegistryRow(
                vignette_id=d.vignette_id,
                sub_action=d.sub_action,
                action=sub_action(d.sub_action).label,
                adjudicated=d.adjudicated,
                status=status(d),
                band=_band_words(d, names),
                raters=_raters(d),
                tags=_tags(d),
                number=(numbers or {}).get(d.vignette_id),
            )
        )
    if numbers:
        # A case no longer numbered (retired) after every numbered one; sorted() keeps ties.
        rows.sort(key=lambda r: (r.number is None, r.number or 0))
    return rows


def _raters(d: Decision) -> str:
    """Who adjudicated the band; for the chair's, the chair and the raters they decided
    between, as the band's details say it."""
    if any(w.code == "chair_decision" for w in d.warnings):
        rated = ", ".join(v.pseudonym for v in d.verdicts)
        return f"chair {', '.join(d.adjudicated_by)} (rated by {rated})"
    return ", ".join(d.adjudicated_by) or "none"


def _signer(r: Reason, base: str) -> str | None:
    """The pseudonym an account warning names ("<base>: rater-01")."""
    rest = detail(r, base)
    return rest if rest and " " not in rest else None


def study_notes(decisions: Sequence[Decision]) -> list[Note]:
    """What each status reason, warning tag and harness note means, once for the whole study,
    with how many bands carry it: the table's rows then need only their short words."""
    reasons: Counter[str] = Counter()
    warnings: Counter[str] = Counter()
    harness: Counter[str] = Counter()
    who: dict[str, dict[str, None]] = {}
    for d in decisions:
        if not d.adjudicated:
            reasons.update({r.code for r in d.reasons})
        warnings.update({w.code for w in d.warnings})
        for w in d.warnings:
            if w.code in ("demo_account", "key_changed") and (
                name := _signer(w, WARNINGS.get(w.code, ""))
            ):
                who.setdefault(w.code, {})[name] = None
        if harness_words(d.sub_action):
            harness[sub_action(d.sub_action).kind] += 1
    return [
        *(Note(code_words(c, REASON_WORDS), n, c) for c, n in reasons.items()),
        *(
            Note(code_words(c, WARNING_WORDS), n, c, tuple(who.get(c, {})))
            for c, n in warnings.items()
        ),
        *(Note(_kind_words(kind), n) for kind, n in harness.items()),
    ]


def _kind_words(kind: str) -> CodeWords:
    words = HARNESS_WORDS[kind]
    return CodeWords(f"{words.short}: {KIND_WORDS[kind]}", words.sentence)


def detail(r: Reason, base: str) -> str | None:
    """What a reason's message adds to its code's standard text (whose band, which file)."""
    message = r.message.strip()
    if base and message.startswith(base):
        message = message[len(base) :].lstrip(":").strip()
    return message or None


def reason_lines(d: Decision) -> list[str]:
    """Why a band is not adjudicated, each reason as a sentence with its code and detail."""
    return [
        _line(code_sentence(r.code, REASON_WORDS), detail(r, REASONS.get(r.code, "")))
        for r in d.reasons
    ]


def warning_lines(d: Decision) -> list[str]:
    """A band's warnings, one sentence per code with its code and whom or what each instance
    names (two demo accounts are one line naming both)."""
    named: dict[str, list[str]] = {}
    for w in d.warnings:
        more = detail(w, WARNINGS.get(w.code, ""))
        named.setdefault(w.code, []).extend([more] if more else [])
    return [
        _line(code_sentence(code, WARNING_WORDS), "; ".join(found) or None)
        for code, found in named.items()
    ]


def _line(sentence: str, more: str | None) -> str:
    return f"{sentence} Details: {more}." if more else sentence


def filtered(
    rows: Sequence[RegistryRow],
    *,
    adjudicated: bool | None = None,
    actions: Sequence[str] | None = None,
    tag: str | None = None,
) -> list[RegistryRow]:
    """The rows a filter keeps: by status (None: all), sub-action keys (None: all) and one
    warning tag (None: any, "" for none)."""
    return [
        r
        for r in rows
        if adjudicated in (None, r.adjudicated)
        and (actions is None or r.sub_action in actions)
        and (tag is None or (tag in r.tags if tag else not r.tags))
    ]


def tags_of(rows: Sequence[RegistryRow]) -> list[str]:
    """Every tag the rows carry, each once, alphabetically: a filter's choices stay in one order
    whatever order the study's cases are in."""
    return sorted({t for r in rows for t in r.tags})


def by_band(decisions: Sequence[Decision]) -> Mapping[tuple[str, str], Decision]:
    return {(d.vignette_id, d.sub_action): d for d in decisions}
