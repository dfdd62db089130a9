"""The methods report of a study's agreement (GRRAS: Kottner et al. 2011, Guidelines for Reporting
Reliability and Agreement Studies): a methods paragraph and the results table, as markdown, CSV
or LaTeX. Pure: it renders a Report and the study's facts given as plain data, and every figure
in it is one the Agreement page shows, written by the same functions (views.alpha_row).
"""

import csv
import io
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from fma_bands.agreement.metrics import METRICS, POOLED, Alpha, Report
from fma_bands.agreement.views import (
    GUARDS_RULE,
    METRIC_LABELS,
    POOLING_RULE,
    READING_RULE,
    RULES,
    SIZES_RULE,
    alpha_row,
    scope_label,
)
from fma_bands.core.errors import FmaBandsError
from fma_bands.core.markup import md_escape, tex_escape
from fma_bands.core.spreadsheet import cell

FORMATS = ("md", "csv", "tex")
REFERENCES = (
    "Kottner J, Audige L, Brorson S, et al. Guidelines for Reporting Reliability and Agreement "
    "Studies (GRRAS) were proposed. J Clin Epidemiol 2011;64:96-106.",
    "Krippendorff K. Computing Krippendorff's alpha-reliability. Annenberg School for "
    "Communication, University of Pennsylvania, 2011.",
)
SCOPE_RULE = {"warn": "only warned about", "require": "required"}
# The table's columns: headings of views.COLUMNS, so each cell is written as the page writes it.
COLUMNS = (
    "sub-action",
    "alpha",
    "95% interval",
    "reading",
    "bands",
    "vignettes",
    "vignettes read",
    "raters",
    "declined",
    "bands reviewed",
    "left as proposed",
)
# The CSV's columns: the Alpha's own fields, numbers as the JSON holds them.
CSV_COLUMNS = (
    "round", "mode", "metric", "scope", "sub_action_label", "level", "alpha", "ci_low",
    "ci_high", "reading", "n_bands", "n_vignettes", "n_vignettes_reading", "n_raters",
    "n_declined", "n_bands_reviewed", "share_unchanged", "share_accept", "n_reviewed",
)  # fmt: skip
_TEXT = ("mode", "metric", "scope", "sub_action_label", "level", "reading")
MODE_TEXT = {
    "review": "review mode: each rater saw the proposed band and accepted it, amended it to "
    "their own band, or declined to give one",
    "blind": "blind mode: each rater wrote their own band without seeing a proposal",
}
ROUND_TEXT = {
    1: "the independent round: raters reviewed every band assigned to them, blind to each "
    "other's reviews",
    2: "consensus-building: only the bands chosen for it, re-reviewed by their raters after "
    "seeing round 1's anonymised panel",
}


@dataclass(frozen=True)
class RaterFacts:
    """A rater as the roster publishes them."""

    pseudonym: str
    specialty: str | None
    years_post_registration: int | None


@dataclass(frozen=True)
class StudyFacts:
    """What the methods paragraph says about the study beyond its alphas, gathered from the store
    (fma_bands.study.methods_facts)."""

    round: int  # the round reported
    rounds_held: int
    phase: str  # of the current round (rounds_held): open or closed
    raters: tuple[RaterFacts, ...]  # every enrolled rater
    n_submitting: int  # raters with a submitted review in the round reported
    n_vignettes: int
    strata: Mapping[str, int]  # ambiguity stratum (or "not stated") -> vignettes
    domains: Mapping[str, int]  # domain -> vignettes
    n_bands: int  # proposed bands (vignette, sub-action)
    n_sub_actions: int
    quorum: int
    scope_rule: str  # warn | require
    policy_signed: bool  # False: no policy record yet, the default quorum holds
    assignment_changes: int  # the coordinator's changes to the default assignment
    raters_per_band: tuple[int, int] | None  # fewest and most raters assigned to a band
    round_two_bands: int | None  # bands re-reviewed in round 2, once it is held
    versions: Mapping[str, str] = field(default_factory=dict)  # package -> version
    study_id: str | None = None

    def is_closed(self, number: int) -> bool:
        return number < self.rounds_held or self.phase == "closed"


# --- the text, plain ---------------------------------------------------------------------------


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


def _listed(counts: Iterable[tuple[str, int]]) -> str:
    return ", ".join(f"{n} {name}" for name, n in counts if n)


def _raters(facts: StudyFacts) -> str:
    raters = facts.raters
    if not raters:
        return "No rater is enrolled."
    known = Counter(r.specialty for r in raters if r.specialty)
    specialties = sorted(known.items(), key=lambda item: (-item[1], item[0]))
    unknown = sum(not r.specialty for r in raters)
    parts = [f"{n} in {name}" for name, n in specialties]
    parts += [f"{unknown} with no specialty recorded"] if unknown else []
    years = [r.years_post_registration for r in raters if r.years_post_registration is not None]
    span = ""
    if years:
        low, high = min(years), max(years)
        span = f"; {low if low == high else f'{low} to {high}'} years since registration"
        if len(years) < len(raters):
            span += f" ({len(raters) - len(years)} not recorded)"
    names = ", ".join(
        f"{r.pseudonym} ({r.specialty})" if r.specialty else r.pseudonym for r in raters
    )
    return (
        f"{_count(len(raters), 'rater')} enrolled ({', '.join(parts)}{span}), each known by a "
        f"pseudonym on the study's signed roster: {names}. "
        f"{_count(facts.n_submitting, 'rater')} submitted reviews in round {facts.round}."
    )


def _vignettes(facts: StudyFacts) -> str:
    strata = _listed(facts.strata.items())
    domains = _listed(facts.domains.items())
    return (
        f"{_count(facts.n_vignettes, 'vignette')} from the study's vignette files, by stratum of "
        f"ambiguity {strata or 'none'}, and by domain {domains or 'none'}. They hold "
        f"{_count(facts.n_bands, 'proposed band')} (a vignette's acceptable values for one "
        f"sub-action) over {_count(facts.n_sub_actions, 'sub-action')}. Every vignette and "
        "band of the files is in the study; the vignettes are the unit the intervals resample."
    )


def _assignment(facts: StudyFacts) -> str:
    per_band = ""
    if facts.raters_per_band is not None:
        low, high = facts.raters_per_band
        per_band = f"; {low if low == high else f'{low} to {high}'} raters assigned to a band"
    changes = _count(facts.assignment_changes, "change")
    policy = (
        f"The registry's signed policy: a quorum of {_count(facts.quorum, 'rater')} with a band, "
        f"the specialty scope rule {SCOPE_RULE.get(facts.scope_rule, facts.scope_rule)}"
        if facts.policy_signed
        else f"No registry policy is signed yet: the default quorum of {facts.quorum} holds"
    )
    return (
        "Each band was assigned to every rater whose signed specialty covers its sub-action's "
        "scope (every rater where the harness has no scope rule), with "
        f"{changes} by the coordinator{per_band}. {policy}."
    )


def _rounds(facts: StudyFacts) -> str:
    held = []
    for number in range(1, facts.rounds_held + 1):
        state = "closed" if facts.is_closed(number) else "open"
        bands = ""
        if number == 2 and facts.round_two_bands is not None:
            bands = f", {_count(facts.round_two_bands, 'band')}"
        held.append(f"round {number} ({state}{bands}) is {ROUND_TEXT.get(number, '')}")
    figure = (
        "its alpha is the inter-rater reliability the study reports"
        if facts.round == 1
        else "its agreement is not a reliability figure: round 1's is"
    )
    text = f"{_count(facts.rounds_held, 'round')} held: {'; '.join(held)}. "
    text += f"This report is of round {facts.round}: {figure}."
    if not facts.is_closed(facts.round):
        text += (
            f" Round {facts.round} is still open: every figure here is provisional and will "
            "change as reviews arrive."
        )
    return text


def _modes(report: Report) -> str:
    modes = [MODE_TEXT.get(m, m) for m in report.modes]
    if len(modes) == 1:
        return f"Ratings were made in {modes[0]}."
    return (
        f"Ratings were made in two modes, reported apart and never pooled: {'; and '.join(modes)}."
    )


def _alphas(report: Report, metric: str | None = None) -> list[Alpha]:
    return [
        a
        for m in METRICS
        if metric in (None, m)
        for by_metric in report.metrics.values()
        if (a := by_metric.get(m)) is not None
    ]


def _metrics(report: Report) -> list[str]:
    out = []
    for metric in METRICS:
        found = _alphas(report, metric)
        if not found:
            continue
        levels = sorted({a.level for a in found if a.level and a.level != "per sub-action"})
        at = f"; level{'s' if len(levels) > 1 else ''} {', '.join(levels)}" if levels else ""
        pooled = " Per sub-action and pooled." if any(a.scope == POOLED for a in found) else ""
        out.append(f"{METRIC_LABELS[metric]}{at}: {RULES[metric]}{pooled}")
    return out


def _grouped(alphas: Sequence[Alpha], text: Callable[[Alpha], str | None], modes: int) -> list[str]:
    """Each distinct text of the alphas, with the rows it belongs to."""
    rows: dict[str, list[str]] = {}
    for a in alphas:
        said = text(a)
        if said:
            rows.setdefault(said, []).append(_row_name(a, modes))
    return [
        f"{said[:1].upper()}{said[1:].rstrip('.')}. Rows: "
        + ("every defined alpha." if len(names) == len(alphas) else f"{'; '.join(names)}.")
        for said, names in rows.items()
    ]


def _row_name(a: Alpha, modes: int) -> str:
    return f"{a.metric}, {alpha_row(a, modes)['sub-action']}"


def _intervals(report: Report) -> list[str]:
    """The interval of each alpha, in the words of the Alpha itself: its method (what it
    resamples and what it holds fixed) and the coverage measured for its size."""
    alphas = [a for a in _alphas(report) if a.alpha is not None]
    modes = len(report.modes)
    methods = _grouped(alphas, lambda a: a.method, modes)
    notes = _grouped(alphas, lambda a: a.coverage_note, modes)
    if not methods:
        return ["No alpha is defined, so no interval was made."]
    two_way = ""
    if any(a.ci_low_two_way is not None for a in alphas):
        two_way = (
            " For raters in general rather than these raters, the command fma-bands agreement "
            "--json gives each band alpha's two-way interval (vignettes and raters both left "
            "out); the other metrics have none."
        )
    return [
        "Each alpha's interval as its row states it (what is resampled, what is held fixed, "
        "B and seed), with the rows it belongs to; then the coverage measured for the "
        f"study's size.{two_way}",
        *methods,
        *notes,
    ]


def _software(facts: StudyFacts) -> str:
    versions = ", ".join(f"{name} {v}" for name, v in facts.versions.items())
    return f"Computed by {versions}." if versions else "Software versions not recorded."


def sections(report: Report, facts: StudyFacts) -> list[tuple[str, list[str]]]:
    """The methods paragraph as plain text: (heading, paragraphs) in order."""
    return [
        (
            "Design",
            [
                "Inter-rater reliability and agreement of clinicians' acceptable-action bands "
                "for the FairMedAgent harness, reported after GRRAS (Kottner et al. 2011). "
                f"{_modes(report)}"
            ],
        ),
        ("Raters", [_raters(facts)]),
        ("Vignettes", [_vignettes(facts)]),
        ("Assignment", [_assignment(facts)]),
        ("Rounds", [_rounds(facts)]),
        (
            "Metrics",
            [
                "Krippendorff's alpha, 1 - Do/De from each metric's coincidence matrix "
                "(Krippendorff 2011); undefined alpha is reported as undefined with its reason.",
                *_metrics(report),
                POOLING_RULE,
                SIZES_RULE,
                GUARDS_RULE,
            ],
        ),
        ("Intervals", _intervals(report)),
        ("Readings", [READING_RULE]),
        ("Software", [_software(facts)]),
        ("References", [" ".join(REFERENCES)]),
    ]


def results(report: Report, metric: str) -> list[dict[str, str]]:
    """The results table of one metric: a row per sub-action and pooled, in the page's words."""
    rows = [alpha_row(a, len(report.modes)) for a in _alphas(report, metric)]
    return [{c: row[c] for c in COLUMNS} for row in rows]


def cautions(report: Report, metric: str) -> list[str]:
    modes = len(report.modes)
    out = []
    for a in _alphas(report, metric):
        row = alpha_row(a, modes)
        if row["cautions"] != "-":
            out.append(f"{row['sub-action']}: {row['cautions']}")
    return out


def _title(facts: StudyFacts) -> str:
    study = f" {facts.study_id}" if facts.study_id else ""
    return f"Methods and results: agreement of study{study}, round {facts.round}"


def _primary(report: Report, facts: StudyFacts) -> str:
    if not _alphas(report):
        return f"No review of round {facts.round} is submitted yet: there is no alpha to report."
    if facts.round != 1:
        return "Round 2 is consensus-building: no alpha below is a reliability figure."
    return (
        "The study's reliability figure is the pooled band alpha (band, Jaccard, primary) of "
        "round 1, with its interval and reading; the other rows and metrics qualify it."
    )


# --- markdown ------------------------------------------------------------------------------------


def markdown(report: Report, facts: StudyFacts) -> str:
    lines = [f"# {md_escape(_title(facts))}", "", "## Methods", ""]
    for heading, paragraphs in sections(report, facts):
        first, *rest = paragraphs
        lines += [f"**{heading}.** {md_escape(first)}", ""]
        lines += [f"- {md_escape(p)}" for p in rest]
        lines += [""] if rest else []
    lines += ["## Results", "", md_escape(_primary(report, facts)), ""]
    for metric in METRICS:
        rows = results(report, metric)
        if not rows:
            continue
        lines += [f"### {md_escape(METRIC_LABELS[metric])}", ""]
        lines.append("| " + " | ".join(COLUMNS) + " |")
        lines.append("|" + "|".join("---" for _ in COLUMNS) + "|")
        lines += ["| " + " | ".join(md_escape(r[c]) for c in COLUMNS) + " |" for r in rows]
        notes = cautions(report, metric)
        lines += ["", *(f"- {md_escape(c)}" for c in notes), *([""] if notes else [])]
    return "\n".join(lines).rstrip() + "\n"


# --- CSV -----------------------------------------------------------------------------------------


def csv_results(report: Report, facts: StudyFacts) -> str:
    """The results of every metric, one row per alpha: numbers as the JSON holds them, an
    undefined one empty, text cells safe to open in a spreadsheet."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for a in _alphas(report):
        values = {
            "round": facts.round,
            "sub_action_label": scope_label(a.scope),
            "reading": a.reading,
            **{name: getattr(a, name) for name in CSV_COLUMNS if hasattr(a, name)},
        }
        writer.writerow(cell(values[c]) if c in _TEXT else _number(values[c]) for c in CSV_COLUMNS)
    return out.getvalue()


def _number(value: float | int | None) -> str:
    return "" if value is None else repr(value)


# --- LaTeX ---------------------------------------------------------------------------------------


def latex(report: Report, facts: StudyFacts) -> str:
    """A fragment to \\input: the methods paragraph, then a tabular per metric."""
    lines = [f"% {tex_escape(_title(facts))}", r"\paragraph{Methods.}", ""]
    for heading, paragraphs in sections(report, facts):
        lines += [rf"\textit{{{heading}.}} {tex_escape(paragraphs[0])}", ""]
        if paragraphs[1:]:
            lines += [r"\begin{itemize}"]
            lines += [rf"  \item {tex_escape(p)}" for p in paragraphs[1:]]
            lines += [r"\end{itemize}", ""]
    lines += [r"\paragraph{Results.}", tex_escape(_primary(report, facts)), ""]
    for metric in METRICS:
        rows = results(report, metric)
        if not rows:
            continue
        lines += [
            r"\begin{table}[htbp]",
            r"\centering\small",
            rf"\caption{{Krippendorff's alpha: {tex_escape(METRIC_LABELS[metric])}}}",
            r"\begin{tabular}{p{3.2cm}rlp{3.4cm}rrrrl}",
            r"\hline",
            " & ".join(tex_escape(c) for c in COLUMNS) + r" \\",
            r"\hline",
            *(" & ".join(tex_escape(r[c]) for c in COLUMNS) + r" \\" for r in rows),
            r"\hline",
            r"\end{tabular}",
            r"\end{table}",
            "",
        ]
        notes = cautions(report, metric)
        if notes:
            lines += [r"\begin{itemize}"]
            lines += [rf"  \item {tex_escape(c)}" for c in notes]
            lines += [r"\end{itemize}", ""]
    return "\n".join(lines).rstrip() + "\n"


RENDERERS: dict[str, Callable[[Report, StudyFacts], str]] = {
    "md": markdown,
    "csv": csv_results,
    "tex": latex,
}


def render(report: Report, facts: StudyFacts, fmt: str = "md") -> str:
    """The report in `fmt` (md, csv or tex)."""
    if fmt not in RENDERERS:
        raise FmaBandsError(
            f"unknown report format {fmt!r}: use one of {', '.join(FORMATS)}", field="format"
        )
    return RENDERERS[fmt](report, facts)
