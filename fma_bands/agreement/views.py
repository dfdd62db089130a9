"""What the Agreement page and `fma-bands agreement` show, as plain data: every alpha as one row
of labelled text carrying the same fields as the JSON; for the page, the same alpha as a short
row with its sizes in words, its other fields and cautions in full beside it, and the rules;
and every band's raters, consensus and disputed span written as ranges: a short row per band
for the page's table, and its box (with the raters' bands pictured) on demand.
"""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from fma_bands.agreement.bootstrap import CHOSEN, GOOD_COVERAGE, METHODS
from fma_bands.agreement.metrics import (
    ANCHORING,
    METRICS,
    MIN_BANDS,
    MIN_VIGNETTES,
    POOLABLE,
    POOLED,
    POOLED_LABEL,
    Alpha,
    Report,
    counted,
    percent,
)
from fma_bands.agreement.panel import (
    BandAgreement,
    band_label,
    consensus_text,
    disputed_text,
    most_disputed_first,
)
from fma_bands.agreement.picture import Row
from fma_bands.core.actions import sub_action
from fma_bands.core.bands import AnyBand, MultilabelBand, band_from_values
from fma_bands.core.labels import address, case_label, describe_band
from fma_bands.core.spreadsheet import csv_text

METRIC_LABELS = {
    "band": "band (Jaccard, primary)",
    "membership": "membership (nominal)",
    "lower": "lower (lowest value)",
    "upper": "upper (highest value)",
    "verdict": "verdict (nominal, review mode)",
}
# The rule of each metric, as the page and the documentation state it.
RULES = {
    "band": "Jaccard distance between two raters' bands as sets of values (an interval is its "
    "integers, a boolean band false and/or true); for orders, the mean of the Jaccard distances "
    "of required and of defensible. Unit: a band rated by two or more raters who did not DECLINE.",
    "membership": "Nominal alpha over units (band, value), for every value of the sub-action's "
    "fixed domain (ESI 1 to 5, analgesia 0 to 3, no and yes): in or out of each rater's band. "
    "Ordinal and boolean sub-actions; score and count sub-actions are served by lower and upper.",
    "lower": "Alpha over the lowest value each rater admits, however the band was written: "
    "ordinal level for ESI and analgesia, interval level for urgency and follow-up. Never pooled.",
    "upper": "Alpha over the highest value each rater admits, however the band was written: "
    "ordinal level for ESI and analgesia, interval level for urgency and follow-up. Never pooled.",
    "verdict": "Nominal alpha over ACCEPT, AMEND and DECLINE, review-mode reviews only; here "
    "DECLINE is a category (elsewhere it is missing data).",
}
POOLING_RULE = (
    "Pooled (stratified by sub-action): 1 − Σ n(s) Do(s) / Σ n(s) De(s) over sub-actions s, each "
    "sub-action's observed and expected disagreement Do(s), De(s) from its own coincidence "
    "matrix and n(s) its pairable values; pairs across sub-actions never enter."
)

READING_RULE = (
    f"Reading, from the 95% interval: under {MIN_BANDS} bands or {MIN_VIGNETTES} vignettes, too "
    "few; lower bound >= 0.800, reliable; >= 0.667, tentative; upper bound < 0.667, unreliable; "
    "otherwise inconclusive (Krippendorff: rely on >= 0.800, tentative conclusions from 0.667). "
    "A pooled alpha reads no better than inconclusive while one of its sub-actions with enough "
    "bands reads unreliable, and names its weakest sub-action."
)
GUARDS_RULE = (
    "Beside each alpha: in review mode, the share of its reviews left as proposed (ACCEPT, or "
    "AMEND to the proposal's own band), of the reviews with a band on the bands the alpha reads "
    f"and said with their number, with a caution above {ANCHORING:.0%}, since raters who keep "
    "the proposal agree with it rather than with each other; and the alpha with each DECLINE "
    "counted as maximal disagreement instead of missing, with a caution when the two read "
    "differently. Blind-mode and review-mode ratings are reported apart, never pooled."
)
SIZES_RULE = (
    "Sizes: the bands and vignettes the reading rests on (bands rated by two or more raters who "
    "did not DECLINE; in a pool, only those of sub-actions whose values vary), the raters with a "
    "value in them, and the DECLINE ratings among the reviews of every band of the row (bands "
    "reviewed), whether the reading rests on that band or not."
)
# What the page's "left as proposed" cell is, said under the table and in its heading's help.
SHARE_NOTE = (
    "Left as proposed: of the reviews with a band on the bands the alpha reads (a band only one "
    "rater rated is not read, nor a DECLINE), the share that ACCEPT the proposal or AMEND to its "
    "own band; ACCEPT and AMEND apart under Details."
)
INTERVAL_RULE = (
    f"Interval: 95% {METHODS[CHOSEN]}. Vignettes are the unit it leaves out or resamples (each "
    "with all its bands and ratings), with the raters held fixed: it is about these raters, not "
    "raters in general. The method was chosen by how often it covered the true alpha in "
    f"simulation (docs/statistics.md); where it covered under {GOOD_COVERAGE:.0%} at about the "
    "study's size, a caution says so. The shares of alpha below 0.800 and 0.667 are over a "
    "vignette-cluster bootstrap."
)


def scope_label(scope: str) -> str:
    return POOLED_LABEL if scope == POOLED else sub_action(scope).label


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _kept(a: Alpha) -> tuple[int, int, int] | None:
    """The reviews the share left as proposed is over, those left as proposed, and those by
    ACCEPT; None in blind mode."""
    n = a.n_reviewed
    if n is None:
        return None
    return n, round((a.share_unchanged or 0) * n), round((a.share_accept or 0) * n)


def _unchanged(a: Alpha) -> str:
    """The short cell: the share and the reviews it is over ("75% of 4 reviews")."""
    kept = _kept(a)
    if kept is None:
        return "-"
    n, unchanged, _ = kept
    return counted(n, "review") if n == 0 else f"{percent(unchanged, n)} of {counted(n, 'review')}"


def _unchanged_how(a: Alpha) -> str:
    """The same in counts, ACCEPT and AMEND apart, and what the reviews are."""
    kept = _kept(a)
    if kept is None or kept[0] == 0:
        return "-"
    n, unchanged, accepted = kept
    said = f"{unchanged} of {counted(n, 'review')} on the bands this alpha reads"
    if unchanged == 0:
        return said
    if accepted == unchanged:
        return f"{said}, all by ACCEPT"
    amended = unchanged - accepted
    return f"{said}: {accepted} by ACCEPT, {amended} by AMEND to the proposal's own band"


def _declines(a: Alpha) -> str:
    if a.alpha_declines_as_disagreement is None:
        return "-"
    low, high = a.ci_low_declines_as_disagreement, a.ci_high_declines_as_disagreement
    interval = "" if low is None else f", {_number(low)} to {_number(high)}"
    # The reading first: a cell that began with a negative alpha and words would be guarded
    # in the CSV as text ('-0.071: ...), unlike the alpha column's bare numbers.
    alpha = f"{a.alpha_declines_as_disagreement:.3f}"
    return f"{a.reading_declines_as_disagreement} (alpha {alpha}{interval})"


def _weakest(a: Alpha) -> str:
    if a.weakest is None:
        return "-"
    return f"{sub_action(a.weakest).label} ({_number(a.weakest_alpha)})"


def _two_way(a: Alpha) -> str:
    if a.ci_low_two_way is None:
        return "-"
    return f"{_number(a.ci_low_two_way)} to {_number(a.ci_high_two_way)}"


# The two distances of this study's own, in words beside their codes (the JSON's); the standard
# levels are a statistician's own words already.
LEVEL_WORDS = {
    "jaccard": "Jaccard distance between sets (jaccard)",
    "orders": "mean Jaccard distance of required and of defensible orders (orders)",
}


def level_words(level: str | None) -> str:
    return "-" if not level else LEVEL_WORDS.get(level, level)


def _disagreements(a: Alpha) -> str:
    if a.d_observed is None or a.d_expected is None:
        return "-"
    return f"{a.d_observed:.4f} / {a.d_expected:.4f}"


# Each column of the table: its heading and how it is written from an Alpha. Every JSON field
# of an alpha is in one column (reason within the reading, the bounds within the interval).
COLUMNS: tuple[tuple[str, Callable[[Alpha], str]], ...] = (
    ("sub-action", lambda a: scope_label(a.scope)),
    ("alpha", lambda a: "undefined" if a.alpha is None else f"{a.alpha:.3f}"),
    (
        "95% interval",
        lambda a: "none" if a.ci_low is None else f"{_number(a.ci_low)} to {_number(a.ci_high)}",
    ),
    ("reading", lambda a: a.reading),
    ("bands", lambda a: str(a.n_bands)),
    ("raters", lambda a: str(a.n_raters)),
    ("pairable values", lambda a: str(a.n_pairable)),
    ("declined", lambda a: str(a.n_declined)),
    ("bands reviewed", lambda a: str(a.n_bands_reviewed)),
    ("units", lambda a: str(a.n_units)),
    ("vignettes", lambda a: str(a.n_vignettes)),
    ("vignettes read", lambda a: str(a.n_vignettes_reading)),
    ("mode", lambda a: a.mode),
    ("left as proposed", _unchanged),
    ("left as proposed, in counts", _unchanged_how),
    ("weakest sub-action", _weakest),
    ("metric", lambda a: a.metric),
    ("level", lambda a: level_words(a.level)),
    (
        "undefined resamples",
        lambda a: "-" if a.undefined_resamples is None else f"{a.undefined_resamples:.1%}",
    ),
    ("P(alpha < 0.800)", lambda a: _number(a.p_below_0800)),
    ("P(alpha < 0.667)", lambda a: _number(a.p_below_0667)),
    ("declines as disagreement", _declines),
    ("interval method", lambda a: a.method or "none"),
    ("measured coverage", lambda a: a.coverage_note or "-"),
    ("two-way interval (other raters too)", _two_way),
    (
        "percent agreement",
        lambda a: "-" if a.percent_agreement is None else f"{a.percent_agreement:.1%}",
    ),
    ("D_o / D_e", _disagreements),
    ("cautions", lambda a: "; ".join(a.warnings) or "-"),
)
HEADINGS = tuple(heading for heading, _ in COLUMNS)
# A spreadsheet or a statistics package reads a bound as a number of its own, not as the text
# "0.512 to 0.876": the CSV writes each interval as two columns.
SPLIT = {
    "95% interval": lambda a: (a.ci_low, a.ci_high),
    "two-way interval (other raters too)": lambda a: (a.ci_low_two_way, a.ci_high_two_way),
}
CSV_HEADINGS = tuple(
    part
    for heading in HEADINGS
    for part in ((f"{heading}, lower", f"{heading}, upper") if heading in SPLIT else (heading,))
)


def alpha_row(a: Alpha, modes: int = 1) -> dict[str, str]:
    """One alpha's row; with both modes in the report, its sub-action says which mode."""
    row = {heading: write(a) for heading, write in COLUMNS}
    if modes > 1:
        row["sub-action"] = f"{row['sub-action']}, {a.mode} mode"
    return row


def alphas_of(report: Report, metric: str | None = None) -> list[Alpha]:
    """The report's alphas (of `metric`, or of all), metric by metric, sub-actions then pooled."""
    return [
        a
        for m in METRICS
        if metric in (None, m)
        for by_metric in report.metrics.values()
        for a in [by_metric.get(m)]
        if a is not None
    ]


def alpha_rows(report: Report, metric: str | None = None) -> list[dict[str, str]]:
    """One row per alpha the report has (of `metric`, or of all), sub-actions then pooled."""
    return [alpha_row(a, len(report.modes)) for a in alphas_of(report, metric)]


def csv_row(a: Alpha, modes: int = 1) -> dict[str, str]:
    """alpha_row with each interval's bounds as well, for the CSV."""
    row = alpha_row(a, modes)
    for heading, bounds in SPLIT.items():
        low, high = bounds(a)
        row[f"{heading}, lower"], row[f"{heading}, upper"] = _number(low), _number(high)
    return row


def csv_rows(report: Report, metric: str) -> list[dict[str, str]]:
    return [csv_row(a, len(report.modes)) for a in alphas_of(report, metric)]


def table_csv(rows: Sequence[Mapping[str, str]]) -> str:
    """Rows of csv_rows (every column, each interval as its two bounds), as CSV a spreadsheet
    opens safely."""
    return csv_text(CSV_HEADINGS, rows)


# --- the page's short table ---------------------------------------------------------------------

# Few enough columns for a laptop's window: every other field of a row is in its details, and
# the whole row in the CSV download.
SUMMARY = (
    "sub-action",
    "alpha",
    "95% interval",
    "reading",
    "sizes",
    "left as proposed",
    "cautions",
)
# The details of a row, in the order a reader weighs them; "vignettes" there are those the
# interval resamples, as the sizes count the vignettes the reading counts.
DETAILS = (
    "left as proposed, in counts",
    "measured coverage",
    "two-way interval (other raters too)",
    "declines as disagreement",
    "percent agreement",
    "D_o / D_e",
    "weakest sub-action",
    "P(alpha < 0.800)",
    "P(alpha < 0.667)",
    "undefined resamples",
    "pairable values",
    "units",
    "vignettes",
    "level",
    "mode",
    "interval method",
)
DETAIL_LABELS = {
    "vignettes": "vignettes resampled",
    "D_o / D_e": "observed / expected disagreement (alpha is 1 - D_o / D_e)",
    "level": "level of measurement",
}


def sizes(a: Alpha) -> str:
    """What an alpha rests on, in words: the bands and vignettes its reading counts and the
    raters with a pairable value; then the DECLINE ratings, among the reviews of every band of
    the scope (a band with one rater left, or of a sub-action whose values never vary in a
    pool, is not among the bands read)."""
    read = ", ".join(
        (
            counted(a.n_bands, "band"),
            counted(a.n_vignettes_reading, "vignette"),
            counted(a.n_raters, "rater"),
        )
    )
    if not a.n_bands_reviewed:
        return f"{read}; {a.n_declined} declined"
    reviewed = counted(a.n_bands_reviewed, "band")
    return f"{read}; {a.n_declined} declined of the reviews of {reviewed}"


def summary_row(a: Alpha, modes: int = 1) -> dict[str, str]:
    """The page's short row of an alpha, in SUMMARY's order: the cells it shares with alpha_row
    written as there, its sizes in words, and how many cautions its details hold."""
    cells = {
        **alpha_row(a, modes),
        "sizes": sizes(a),
        "cautions": counted(len(a.warnings), "caution") if a.warnings else "none",
    }
    return {h: cells[h] for h in SUMMARY}


def summary_rows(report: Report, metric: str) -> list[dict[str, str]]:
    return [summary_row(a, len(report.modes)) for a in alphas_of(report, metric)]


@dataclass(frozen=True)
class Detail:
    """What the short row of an alpha leaves out: its cautions in full, and each other field
    that has a value, as "label: value"."""

    scope: str  # the row's sub-action cell
    cautions: tuple[str, ...]
    facts: tuple[str, ...]


def detail(a: Alpha, modes: int = 1) -> Detail:
    row = alpha_row(a, modes)
    facts = tuple(
        f"{DETAIL_LABELS.get(h, h)}: {row[h]}" for h in DETAILS if row[h] not in ("-", "none")
    )
    return Detail(scope=row["sub-action"], cautions=tuple(a.warnings), facts=facts)


def details(report: Report, metric: str) -> list[Detail]:
    return [detail(a, len(report.modes)) for a in alphas_of(report, metric)]


def rules(metric: str) -> list[str]:
    """How a metric's alphas are computed and read: the metric, its pooling where it pools, the
    interval, the reading and the guards beside it."""
    pooling = [POOLING_RULE] if metric in POOLABLE else []
    return [RULES[metric], *pooling, SIZES_RULE, INTERVAL_RULE, READING_RULE, GUARDS_RULE]


def absent_text(metric: str) -> str:
    return f"No sub-action in this study takes the {metric} metric."


def notes(metric: str, rows: Sequence[Mapping[str, str]] = ()) -> list[str]:
    """Every row's cautions, then the rules of the metric, pooling, interval and reading: what
    a text printed under the whole table has to say."""
    cautions = [f"{r['sub-action']}: {r['cautions']}." for r in rows if r["cautions"] != "-"]
    return [*(cautions if rows else [absent_text(metric)]), *rules(metric)]


def chart_points(report: Report, metric: str) -> list[dict]:
    """The defined alphas of `metric` with their intervals, for the chart under the table."""
    return [
        {
            "scope": scope_label(a.scope) + (f", {a.mode} mode" if len(report.modes) > 1 else ""),
            "alpha": a.alpha,
            "lo": a.ci_low,
            "hi": a.ci_high,
            "bands": a.n_bands,
            "reading": a.reading,
        }
        for by_metric in report.metrics.values()
        for a in [by_metric.get(metric)]
        if a is not None and a.alpha is not None
    ]


# --- bands ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BandRow:
    """One band's short row in the Agreement page's table of bands: every cell in words, no
    rater named (a rater reads it too), and the case by its neutral label for a rater."""

    index: int  # its place in Screen.agreements, to open its box
    sub_action: str
    title: str  # "case · sub-action", as the band's box is titled
    case: str
    action: str
    outcome: str  # one of OUTCOMES
    raters: str
    consensus: str
    disputed: str

    def cells(self) -> dict[str, str]:
        """The row as the table shows it, by column heading (BAND_COLUMNS)."""
        return {
            "case": self.case,
            "sub-action": self.action,
            "outcome": self.outcome,
            "raters": self.raters,
            "consensus": self.consensus,
            "disputed span": self.disputed,
        }


BAND_COLUMNS = ("case", "sub-action", "outcome", "raters", "consensus", "disputed span")
# Agreement reads every rater; the registry counts whom the policy counts (Policy.counts).
CONSENSUS_SCOPE_NOTE = (
    "Each band's consensus here is over every rater who reviewed it. Where the registry "
    "policy requires the specialty scope, the Band registry counts only the raters whose "
    "specialty covers the sub-action, so it may grant a band this table lists without a "
    "consensus, or refuse one it lists as agreed. A band only one rater gave has no consensus "
    "between raters here; the registry grants that rater's band if the policy's quorum is 1."
)
# What became of a band in the round, in the order a coordinator works through them.
OUTCOMES = (
    "no consensus",
    "agreed, span disputed",
    "agreed",
    "one rater only",
    "every rater declined",
)


def outcome(b: BandAgreement) -> str:
    """What became of a band, in a few words (one of OUTCOMES); rule_text says it in full."""
    c = b.consensus
    if c.rule == "applied":
        return "agreed, span disputed" if c.disputed else "agreed"
    if c.rule == "absent":
        return "every rater declined" if b.n_raters == 0 else "one rater only"
    return "no consensus"


def band_row(
    index: int,
    b: BandAgreement,
    names: Mapping[str, str] | None = None,
    *,
    reader: str | None = None,
    cases: Mapping[str, int] | None = None,
) -> BandRow:
    """A band's short row: the case by its number and id for the coordinator (as the Band
    registry lists them), by its neutral label for a rater (`reader`)."""
    c = b.consensus
    if reader is not None:
        case = case_label(cases or {}, b.vignette_id)
    elif cases and b.vignette_id in cases:
        case = f"{cases[b.vignette_id]} · {b.vignette_id}"
    else:
        case = b.vignette_id
    action = sub_action(b.sub_action).label
    agreed = consensus_text(c)
    if isinstance(c.band, MultilabelBand):  # orders by the names clinicians read, not keys
        agreed = describe_band(c.band, names or {})
    return BandRow(
        index=index,
        sub_action=b.sub_action,
        title=f"{case} · {action}",
        case=case,
        action=action,
        outcome=outcome(b),
        raters=f"{b.n_raters} with a band, {b.n_declined} declined",
        consensus=agreed or "none",
        # A disputed span is what some raters admit beyond a consensus: with none, there is none
        # (the raters' bands are in the band's details).
        disputed=(disputed_text(b.sub_action, c, names) if c.band is not None else None) or "none",
    )


@dataclass(frozen=True)
class BandView:
    """One band's box on the Agreement page."""

    vignette_id: str
    sub_action: str
    title: str
    caption: str
    rows: tuple[Row, ...]  # each rater's band, then the consensus with its disputed span
    orderables: tuple[str, ...]
    names: Mapping[str, str]  # orderable -> the name a clinician reads (cbc as "CBC")
    consensus: str | None  # "Consensus: ..." in words, None without one
    disputed: str | None
    query: Mapping[str, str]  # the address of the band's vignette page


@dataclass(frozen=True)
class Screen:
    tables: Mapping[str, list[dict[str, str]]]  # metric -> csv_rows, every field
    summaries: Mapping[str, list[dict[str, str]]]  # metric -> the page's short rows
    details: Mapping[str, list[Detail]]  # metric -> what each short row leaves out
    points: Mapping[str, list[dict]]  # metric -> chart points
    agreements: tuple[BandAgreement, ...]  # every band, most disputed first
    orderables: Mapping[str, tuple[str, ...]]  # vignette id -> its orderables
    names: Mapping[str, Mapping[str, str]]  # vignette id -> its orderables' readable names
    # A rater's own pseudonym: the others' bands are then shown without their names, and cases
    # by their neutral labels (an id can say its stratum, and round 2 is still to come).
    reader: str | None = None
    cases: Mapping[str, int] = field(default_factory=dict)  # vignette id -> case number
    case_key: bytes = b""  # the study's key for case tokens (a rater's links)

    def rows(self) -> list[BandRow]:
        """Every band's short row, most disputed first: the page's table of bands. Made once
        per screen (a page keeps its screen and reruns its table at every filter)."""
        return list(self._rows)

    @cached_property
    def _rows(self) -> tuple[BandRow, ...]:
        return tuple(
            band_row(
                i,
                b,
                self.names.get(b.vignette_id, {}),
                reader=self.reader,
                cases=self.cases,
            )
            for i, b in enumerate(self.agreements)
        )

    def bands(self, start: int = 0, stop: int | None = None) -> list[BandView]:
        """The boxes of bands start to stop, most disputed first: the page shows one page of
        them at a time, so each is put in words and pictures only when shown."""
        return [
            band_view(
                b,
                self.orderables.get(b.vignette_id, ()),
                self.names.get(b.vignette_id, {}),
                reader=self.reader,
                cases=self.cases,
                case_key=self.case_key,
            )
            for b in self.agreements[start:stop]
        ]


def rule_text(b: BandAgreement) -> str:
    c = b.consensus
    if c.rule == "applied":
        return "intersection rule applied"
    if c.rule == "absent":
        if b.n_raters == 0:
            return "every rater declined: no band to compare"
        return (
            "one rater only: the intersection rule does not bind (no agreement to measure; the "
            "Band registry may still adjudicate the band from that rater's signed review, if "
            "the study's quorum is 1)"
        )
    shared = frozenset.intersection(*(band.values() for _, band in b.bands))
    if shared and isinstance(b.bands[0][1], MultilabelBand):
        return "no consensus: an order one rater requires is not defensible to every rater"
    return "no consensus: the raters' bands share no value"


def band_view(
    b: BandAgreement,
    orderables: tuple[str, ...],
    names: Mapping[str, str] | None = None,
    *,
    reader: str | None = None,
    cases: Mapping[str, int] | None = None,
    case_key: bytes = b"",
) -> BandView:
    """The band's box; for a rater (`reader`), their own band as theirs and the others' unnamed."""
    c = b.consensus
    names = names or {}
    rows = [Row(rater, band) for rater, band in b.bands] if reader is None else _unnamed(b, reader)
    if c.band is not None:
        rows.append(Row("consensus", c.band, band_from_values(b.sub_action, c.disputed)))
    raters = f"{b.n_raters} rater{'s' if b.n_raters != 1 else ''} with a band"
    if reader is None:
        query = {"id": b.vignette_id}
        case = f"{case_label(cases, b.vignette_id)} · {b.vignette_id}" if cases else b.vignette_id
    else:
        # Without the study's key for case tokens, no link at all rather than one naming the id.
        query = address(b.vignette_id, key=case_key) if case_key else {}
        case = case_label(cases or {}, b.vignette_id)
    agreed, disputed = consensus_text(c), disputed_text(b.sub_action, c, names)
    if isinstance(c.band, MultilabelBand):  # orders by the names clinicians read, not keys
        agreed = describe_band(c.band, names)
    return BandView(
        vignette_id=b.vignette_id,
        sub_action=b.sub_action,
        title=f"{case} · {sub_action(b.sub_action).label}",
        caption=f"{raters}, {b.n_declined} declined · {rule_text(b)}",
        rows=tuple(rows),
        orderables=orderables,
        names=dict(names),
        consensus=None if agreed is None else f"Consensus: {agreed}",
        disputed=None
        if disputed is None
        else f"Disputed span: {disputed}"
        if c.band is not None
        else f"Admitted by some raters, by none of them all: {disputed}",
        query=query,
    )


def _unnamed(b: BandAgreement, reader: str) -> list[Row]:
    """Raters' bands without their names, as a round-2 panel must stay anonymous: the reader's
    own first, then the others in the order of their values, which says nothing of who."""
    own = [Row("your band", band) for rater, band in b.bands if rater == reader]
    others = sorted((band for rater, band in b.bands if rater != reader), key=_band_order)
    return own + [Row(f"another rater ({i})", band) for i, band in enumerate(others, 1)]


def _band_order(band: AnyBand) -> tuple:
    return (len(band.values()), repr(band_label(band)))


def screen(
    report: Report,
    orderables: Mapping[str, tuple[str, ...]],
    names: Mapping[str, Mapping[str, str]] | None = None,
    *,
    reader: str | None = None,
    cases: Mapping[str, int] | None = None,
    case_key: bytes = b"",
) -> Screen:
    return Screen(
        tables={m: csv_rows(report, m) for m in METRICS},
        summaries={m: summary_rows(report, m) for m in METRICS},
        details={m: details(report, m) for m in METRICS},
        points={m: chart_points(report, m) for m in METRICS},
        # Ties go by case number, as every page lists cases (and for a rater id order would
        # say each case's stratum); without the numbers, by id.
        agreements=tuple(most_disputed_first(report.bands, cases)),
        orderables=dict(orderables),
        names=dict(names or {}),
        reader=reader,
        cases=dict(cases or {}),
        case_key=case_key,
    )
