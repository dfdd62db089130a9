"""The methods report (GRRAS): every figure in the markdown is the report's JSON written as the
page writes it, the CSV holds the JSON's own numbers, LaTeX and markdown show people's text
verbatim whatever characters it holds, and the paragraph says which round, whether it is
provisional, and how each interval was made."""

import csv
import io
import json
import random
import re
from dataclasses import replace

import pytest

from fma_bands.agreement import METRICS, agreement_report, report_to_json
from fma_bands.agreement.methods import (
    COLUMNS,
    CSV_COLUMNS,
    RaterFacts,
    StudyFacts,
    md_escape,
    render,
    tex_escape,
)
from fma_bands.agreement.views import METRIC_LABELS, scope_label
from fma_bands.core import actions
from fma_bands.core.errors import FmaBandsError
from tests.agreement.build import rate

SUBS = ("esi_acuity", "followup_days", "admit", "orders")
ORDERS = ("cbc", "ecg", "troponin", "cxr")
TRICKY = "[a]_b 50% & c#1 $x$ {y} ~z^ \\end <b>|"


def band(rng: random.Random, sub: str, truth: int):
    if sub == "esi_acuity":
        low = max(1, min(5, truth + rng.choice((-1, 0, 0, 1))))
        return {"min": low, "max": min(5, low + rng.choice((0, 1)))}
    if sub == "followup_days":
        low = 3 * truth + rng.choice((-2, 0, 1))
        return {"min": max(0, low), "max": max(0, low) + rng.choice((3, 7))}
    if sub == "admit":
        return [truth % 2 == 0] if rng.random() < 0.8 else [False, True]
    defensible = [o for o in ORDERS if rng.random() < 0.7] or ["ecg"]
    return {"required": defensible[:1], "defensible": defensible}


def study_ratings(n_vignettes=14, raters=("r1", "r2", "r3"), mode="review", seed=3):
    """Raters near each vignette's truth, with a few declines."""
    rng = random.Random(seed)
    out = []
    for v in range(n_vignettes):
        truth = rng.randint(1, 5)
        for sub in SUBS:
            for r in raters:
                raw = None if rng.random() < 0.08 else band(rng, sub, truth)
                verdict = "ACCEPT" if raw is not None and rng.random() < 0.3 else None
                out.append(rate(f"v{v:02d}", sub, r, raw, verdict=verdict, mode=mode))
    return out


def facts(**changes) -> StudyFacts:
    base = StudyFacts(
        round=1,
        rounds_held=1,
        phase="closed",
        raters=(
            RaterFacts("r1", "emergency medicine", 12),
            RaterFacts("r2", "geriatrics", 7),
            RaterFacts("r3", None, None),
        ),
        n_submitting=3,
        n_vignettes=14,
        strata={"clear": 5, "intermediate": 5, "borderline": 4},
        domains={"triage": 7, "documentation": 7},
        n_bands=56,
        n_sub_actions=4,
        quorum=2,
        scope_rule="warn",
        policy_signed=True,
        assignment_changes=0,
        raters_per_band=(3, 3),
        round_two_bands=None,
        versions={"fma-bands": "0.1.0", "krippendorff": "0.9.0", "numpy": "2.4.6"},
        study_id="fma-test",
    )
    return replace(base, **changes)


@pytest.fixture(scope="module")
def report():
    return agreement_report(study_ratings(), bootstrap=200, seed=7)


# --- what the figures must be, straight from the JSON ----------------------------------------


def expected_cells(a: dict) -> dict[str, str]:
    """A row's figures written from the JSON alone (not through views), for comparison."""

    def three(x):
        return f"{x:.3f}"

    # The share left as proposed, with the number of reviews it is over; none in blind mode.
    shares, n = "-", a["n_reviewed"]
    if n == 0:
        assert a["share_unchanged"] is None
        shares = "0 reviews"
    elif n is not None:
        shares = f"{a['share_unchanged']:.0%} of {n} review{'s' if n > 1 else ''}"
    return {
        "alpha": "undefined" if a["alpha"] is None else three(a["alpha"]),
        "95% interval": "none"
        if a["ci_low"] is None
        else f"{three(a['ci_low'])} to {three(a['ci_high'])}",
        "reading": a["reading"],
        "bands": str(a["n_bands"]),
        "vignettes": str(a["n_vignettes"]),
        "raters": str(a["n_raters"]),
        "declined": str(a["n_declined"]),
        "bands reviewed": str(a["n_bands_reviewed"]),
        "left as proposed": shares,
    }


def json_rows(data: dict) -> dict[tuple[str, str], dict]:
    """(metric, the row's sub-action cell) -> the JSON alpha."""
    keys = data["metrics"]
    modes = any(":" in key for key in keys)
    out = {}
    for key, by_metric in keys.items():
        mode, _, scope = key.rpartition(":")
        label = scope_label(scope) + (f", {mode} mode" if modes else "")
        for metric, a in by_metric.items():
            out[(metric, label)] = a
    return out


def unescape_md(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def md_tables(text: str) -> dict[str, list[dict[str, str]]]:
    """metric -> the rows of its results table in the markdown, cells unescaped."""
    by_label = {md_escape(METRIC_LABELS[m]): m for m in METRICS}
    tables: dict[str, list[dict[str, str]]] = {}
    metric = None
    for line in text.splitlines():
        if line.startswith("### "):
            metric = by_label[line[4:]]
            tables[metric] = []
        elif metric and line.startswith("| ") and not line.startswith("| sub-action |"):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
            assert len(cells) == len(COLUMNS), line
            tables[metric].append(dict(zip(COLUMNS, map(unescape_md, cells), strict=True)))
    return tables


NUMBER = re.compile(r"-?\d+(?:\.\d+)*%?")


def numbers_in(value) -> set[str]:
    """Every number a JSON value shows, as the page writes it and as its text holds it."""
    if isinstance(value, dict):
        return set().union(*(numbers_in(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(numbers_in(v) for v in value)) if value else set()
    if isinstance(value, bool) or value is None:
        return set()
    if isinstance(value, int):
        return {str(value)}
    if isinstance(value, float):
        return {f"{value:.3f}", f"{value:.0%}", f"{value:.1%}", f"{-value:.3f}"}
    return set(NUMBER.findall(str(value)))


def fact_numbers(f: StudyFacts) -> set[str]:
    found = {str(n) for n in (f.round, f.rounds_held, f.n_submitting, f.n_vignettes)}
    found |= {str(n) for n in (f.n_bands, f.n_sub_actions, f.quorum, f.assignment_changes)}
    found |= {str(n) for n in (*f.strata.values(), *f.domains.values(), len(f.raters))}
    found |= {str(r.years_post_registration) for r in f.raters}
    found |= {str(n) for n in f.raters_per_band or ()} | {str(f.round_two_bands)}
    for text in (*f.versions.values(), f.study_id or "", *(r.pseudonym for r in f.raters)):
        found |= set(NUMBER.findall(text))
    for r in f.raters:
        found |= set(NUMBER.findall(r.specialty or ""))
    return found


# The constants of the rules and references the paragraph quotes: thresholds, domains, years.
CONSTANTS = {
    "0.800", "0.667", "95%", "80%", "10", "1", "2", "3", "5", "0", "1.96", "2011", "64", "96",
    "-106", "100", "365",
}  # fmt: skip


def check_against_json(text: str, data: dict, f: StudyFacts) -> None:
    """Every table cell equals the JSON written as the page writes it, every defined alpha has
    its row, and every number anywhere in the text is a JSON figure, a fact or a rule's."""
    rows = json_rows(data)
    tables = md_tables(text)
    for metric, table in tables.items():
        for row in table:
            expected = expected_cells(rows[(metric, row["sub-action"])])
            assert {c: row[c] for c in expected} == expected, (metric, row)
    shown = {(m, r["sub-action"]) for m, table in tables.items() for r in table}
    defined = {key for key, a in rows.items() if a["alpha"] is not None}
    assert defined <= shown
    allowed = numbers_in(data) | fact_numbers(f) | CONSTANTS
    stray = set(NUMBER.findall(unescape_md(text))) - allowed
    assert not stray, stray


# --- the tests -----------------------------------------------------------------------------------


def test_every_figure_in_the_markdown_is_the_jsons(report):
    text = render(report, facts(), "md")
    data = json.loads(json.dumps(report_to_json(report)))
    check_against_json(text, data, facts())
    tables = md_tables(text)
    assert list(tables) == list(METRICS)  # every metric the study has, band first
    pooled = next(r for r in tables["band"] if r["sub-action"].startswith("pooled"))
    assert pooled["alpha"] != "undefined" and " to " in pooled["95% interval"]
    assert "reliability figure is the pooled band alpha" in text


def test_a_changed_figure_is_caught(report):
    # The check itself can fail: one alpha written differently is found.
    text = render(report, facts(), "md")
    data = json.loads(json.dumps(report_to_json(report)))
    pooled = data["metrics"]["pooled"]["band"]
    wrong = text.replace(f"| {pooled['alpha']:.3f} |", f"| {pooled['alpha'] + 0.001:.3f} |", 1)
    assert wrong != text
    with pytest.raises(AssertionError):
        check_against_json(wrong, data, facts())


def test_the_paragraph_states_the_design(report):
    text = unescape_md(render(report, facts(), "md"))
    for said in (
        "3 raters enrolled (1 in emergency medicine, 1 in geriatrics, 1 with no specialty "
        "recorded; 7 to 12 years since registration (1 not recorded))",
        "3 raters submitted reviews in round 1",
        "14 vignettes",
        "5 clear, 5 intermediate, 4 borderline",
        "56 proposed bands",
        "a quorum of 2 raters with a band, the specialty scope rule only warned about",
        "1 round held: round 1 (closed) is the independent round",
        "its alpha is the inter-rater reliability the study reports",
        "review mode: each rater saw the proposed band",
        "fma-bands 0.1.0, krippendorff 0.9.0, numpy 2.4.6",
        "GRRAS",
        "raters held fixed",  # from the Alphas' own method text
        "Jaccard",
    ):
        assert said in text, said
    assert "provisional" not in text


def test_an_open_round_is_provisional_and_round_two_no_reliability_figure(report):
    opened = unescape_md(render(report, facts(phase="open"), "md"))
    assert "Round 1 is still open: every figure here is provisional" in opened
    second = facts(round=2, rounds_held=2, phase="closed", round_two_bands=4)
    text = unescape_md(render(report, second, "md"))
    assert "round 2 (closed, 4 bands) is consensus-building" in text
    assert "its agreement is not a reliability figure" in text
    assert "reliability figure is the pooled band alpha" not in text


def test_no_policy_says_the_default_quorum(report):
    text = unescape_md(render(report, facts(policy_signed=False, quorum=1), "md"))
    assert "No registry policy is signed yet: the default quorum of 1 holds" in text


def test_each_alphas_method_and_coverage_note_are_quoted(report):
    text = unescape_md(render(report, facts(), "md"))
    esi = report.metrics["esi_acuity"]["band"]
    lines = text.splitlines()
    for a in (esi, report.metrics["pooled"]["band"]):
        for said in (a.method, a.coverage_note):
            assert said
            said = said[:1].upper() + said[1:].rstrip(".")
            line = next(line for line in lines if line.startswith(f"- {said}. Rows: "))
            rows = line.split(". Rows: ")[1].rstrip(".")
            named = f"band, {scope_label(a.scope)}" in rows.split("; ")
            assert named or rows == "every defined alpha"
    # Each distinct method once, however many rows share it.
    defined = [a for by_metric in report.metrics.values() for a in by_metric.values() if a.method]
    for method in {a.method for a in defined if a.alpha is not None}:
        assert sum(line.startswith(f"- {method[:1].upper()}") for line in lines) >= 1
        assert text.count(f"{method[1:].rstrip('.')}. Rows: ") == 1


def test_both_modes_are_reported_apart():
    ratings = study_ratings(8, mode="review") + [
        replace(r, vignette_id=r.vignette_id + "b", mode="blind") for r in study_ratings(8, seed=5)
    ]
    report = agreement_report(ratings, bootstrap=50, seed=1)
    text = render(report, facts(), "md")
    assert "two modes, reported apart and never pooled" in text
    tables = md_tables(text)
    labels = [r["sub-action"] for r in tables["band"]]
    assert "pooled (stratified by sub-action), review mode" in labels
    assert "pooled (stratified by sub-action), blind mode" in labels
    check_against_json(text, json.loads(json.dumps(report_to_json(report))), facts())


def test_the_csv_holds_the_jsons_numbers(report):
    rows = list(csv.DictReader(io.StringIO(render(report, facts(), "csv"))))
    data = report_to_json(report)
    assert len(rows) == sum(len(by_metric) for by_metric in report.metrics.values())
    assert set(rows[0]) == set(CSV_COLUMNS)
    for row in rows:
        a = data["metrics"][row["scope"]][row["metric"]]
        for name in ("alpha", "ci_low", "ci_high", "share_unchanged", "share_accept"):
            assert (None if row[name] == "" else float(row[name])) == a[name], (row, name)
        for name in ("n_bands", "n_vignettes", "n_vignettes_reading", "n_raters", "n_declined",
                     "n_bands_reviewed"):  # fmt: skip
            assert int(row[name]) == a[name]
        assert (None if row["n_reviewed"] == "" else int(row["n_reviewed"])) == a["n_reviewed"]
        assert (row["reading"], row["level"], row["round"]) == (a["reading"], a["level"] or "", "1")


def test_a_round_without_reviews_says_so():
    report = agreement_report([], bootstrap=10)
    text = unescape_md(render(report, facts(n_submitting=0), "md"))
    assert "No review of round 1 is submitted yet: there is no alpha to report." in text
    assert "0 raters submitted reviews in round 1" in text
    assert "No alpha is defined, so no interval was made." in text
    assert "| sub-action |" not in text
    assert render(report, facts(), "csv") == ",".join(CSV_COLUMNS) + "\n"


def test_an_undefined_alpha_is_empty_in_the_csv_never_zero():
    ratings = [rate(f"v{i}", "admit", r, [True]) for i in range(3) for r in ("r1", "r2")]
    report = agreement_report(ratings, bootstrap=20)
    rows = list(csv.DictReader(io.StringIO(render(report, facts(), "csv"))))
    band = next(r for r in rows if (r["metric"], r["scope"]) == ("band", "admit"))
    assert (band["alpha"], band["ci_low"], band["reading"]) == ("", "", "undefined: no variation")


# --- people's text, verbatim -----------------------------------------------------------------

LATEX_SPECIAL = re.compile(r"(?<!\\)[&%$#_{}~^\[\]]")


def tex_text_is_safe(escaped: str, columns: int | None = None) -> None:
    """No special character of LaTeX is left bare: braces only those of the commands the escape
    writes, no bare & except the table's own column separators, no % $ # _ ~ ^."""
    bare = escaped
    for command in (r"\textbackslash{}", r"\textasciitilde{}", r"\textasciicircum{}"):
        bare = bare.replace(command, "")
    for command in (r"\textless{}", r"\textgreater{}", r"\textbar{}", r"$\Sigma$", r"$\geq$"):
        bare = bare.replace(command, "")
    for command in (r"\textperiodcentered{}", "{[}", "{]}"):
        bare = bare.replace(command, "")
    if columns is not None:
        assert bare.endswith(r" \\")
        bare = bare[: -len(r" \\")]
        assert len(re.findall(r"(?<!\\)&", bare)) == columns - 1, escaped
        bare = re.sub(r"(?<!\\)&", "", bare)
    assert not LATEX_SPECIAL.findall(bare), escaped
    assert "\\\\" not in bare


def test_tex_escape_leaves_no_special_character():
    tex_text_is_safe(tex_escape(TRICKY + " 1 − Σ ≥ ·\n\nnext"))
    assert "\n" not in tex_escape("one\n\ntwo")
    assert tex_escape("a_b 50% & c") == r"a\_b 50\% \& c"


def test_latex_with_underscores_percent_and_ampersands_in_names_and_labels(report, monkeypatch):
    tricky_label = "ESI_acuity 100% & more #1"
    monkeypatch.setitem(
        actions.SUB_ACTIONS,
        "esi_acuity",
        replace(actions.SUB_ACTIONS["esi_acuity"], label=tricky_label),
    )
    people = (RaterFacts("dr_50%&co", TRICKY, 3), RaterFacts("r#2", "ED & ICU_care 100%", 4))
    text = render(report, facts(raters=people, study_id="fma_x%1"), "tex")
    assert r"ESI\_acuity 100\% \& more \#1" in text
    assert r"dr\_50\%\&co" in text and r"ED \& ICU\_care 100\%" in text
    assert text.count(r"\begin{tabular}") == text.count(r"\end{tabular}") == len(METRICS)
    assert text.count(r"\begin{itemize}") == text.count(r"\end{itemize}")
    in_table, checked = False, 0
    for line in text.splitlines():
        if line.startswith(r"\begin{tabular}"):
            in_table = True
        elif line.startswith(r"\end{tabular}"):
            in_table = False
        elif in_table and line != r"\hline":
            tex_text_is_safe(line, columns=len(COLUMNS))
        elif prose := re.match(r"(\\textit\{[A-Za-z]+\.\}|  \\item|%) (.*)", line):
            tex_text_is_safe(prose.group(2))
            checked += 1
    assert checked > 10


def test_markdown_shows_names_and_specialties_verbatim(report):
    people = (RaterFacts("r<script>|1", "*ED* _x_ [link](http://e) | `c` $m$", 3),)
    text = render(report, facts(raters=people), "md")
    raters = next(line for line in text.splitlines() if line.startswith("**Raters.**"))
    assert r"r\<script\>\|1 (\*ED\* \_x\_ \[link\](http://e) \| \`c\` \$m\$)" in raters
    assert unescape_md(raters).endswith(
        "r<script>|1 (*ED* _x_ [link](http://e) | `c` $m$). 3 raters submitted reviews in round 1."
    )


def test_an_unknown_format_is_refused_by_name(report):
    with pytest.raises(FmaBandsError, match="unknown report format 'pdf'"):
        render(report, facts(), "pdf")
