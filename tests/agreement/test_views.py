"""What the Agreement page writes of a report: a short row per alpha with its sizes in words, the
fields it leaves out in its details (none lost), the share left as proposed short and with the
reviews it is over, the rules of each metric, and the whole rows as CSV a spreadsheet opens
safely and R or pandas read numbers from."""

import csv
import io
import re
from dataclasses import replace

from fma_bands.agreement import METRICS, POOLED, agreement_report, report_to_json
from fma_bands.agreement.metrics import POOLABLE, Alpha
from fma_bands.agreement.views import (
    CSV_HEADINGS,
    DETAIL_LABELS,
    DETAILS,
    GUARDS_RULE,
    HEADINGS,
    INTERVAL_RULE,
    POOLING_RULE,
    RULES,
    SHARE_NOTE,
    SUMMARY,
    alpha_row,
    alpha_rows,
    alphas_of,
    csv_row,
    csv_rows,
    detail,
    details,
    notes,
    rules,
    sizes,
    summary_row,
    summary_rows,
    table_csv,
)
from fma_bands.core.spreadsheet import cell
from tests.agreement.build import rate
from tests.agreement.test_guards import beside_single_reviews

# The columns the short row writes in words as its sizes.
IN_SIZES = ("bands", "vignettes read", "raters", "declined", "bands reviewed")


def study(n_vignettes: int = 12):
    """Three raters on ESI and admission bands, one DECLINE, some disagreement."""
    ratings = []
    for v in range(n_vignettes):
        vid = f"v{v:02d}"
        ratings += [
            rate(vid, "esi_acuity", "r1", [2, 3]),
            rate(vid, "esi_acuity", "r2", [2] if v % 3 else [3, 4]),
            rate(vid, "esi_acuity", "r3", None if v == 0 else [2, 3], verdict=None),
            rate(vid, "admit", "r1", [True]),
            rate(vid, "admit", "r2", [True] if v % 4 else [False, True]),
        ]
    return agreement_report(ratings, bootstrap=200, seed=3)


def test_sizes_are_written_in_words_with_their_numbers():
    a = Alpha("band", "esi_acuity", "jaccard", 0.5, None, n_bands=1, n_raters=3, n_declined=1)
    one = replace(a, n_vignettes_reading=12, n_bands_reviewed=1)
    assert sizes(one) == "1 band, 12 vignettes, 3 raters; 1 declined of the reviews of 1 band"
    many = replace(a, n_bands=13, n_vignettes_reading=1, n_raters=1, n_declined=0)
    assert sizes(many) == "13 bands, 1 vignette, 1 rater; 0 declined"
    reviewed = sizes(replace(many, n_bands_reviewed=14))
    assert reviewed.endswith("0 declined of the reviews of 14 bands")


def test_a_pools_sizes_say_which_bands_each_counts():
    # A round 2 of three bands: urgency's values vary, admission's never do, and ESI's second
    # rater DECLINEs. The reading rests on urgency's band alone; the DECLINE is ESI's.
    ratings = [
        rate("v1", "urgency_score", "a", {"min": 40, "max": 60}),
        rate("v1", "urgency_score", "b", {"min": 50, "max": 70}),
        rate("v1", "admit", "a", [True], "ACCEPT"),
        rate("v1", "admit", "b", [True], "ACCEPT"),
        rate("v1", "esi_acuity", "a", [2], "ACCEPT"),
        rate("v1", "esi_acuity", "b", None),
    ]
    report = agreement_report(ratings, bootstrap=50, seed=1)
    pooled, esi = report.metrics[POOLED]["band"], report.metrics["esi_acuity"]["band"]
    assert sizes(pooled) == "1 band, 1 vignette, 2 raters; 1 declined of the reviews of 3 bands"
    assert sizes(esi) == "0 bands, 0 vignettes, 0 raters; 1 declined of the reviews of 1 band"
    # The units and pairable values count admission's band too, and a caution says so.
    assert (pooled.n_units, pooled.n_pairable) == (2, 4)
    (said,) = [w for w in pooled.warnings if "never vary" in w]
    assert said.startswith("the values of Admit to hospital (1 band) never vary")
    assert "units, pairable values, D_o / D_e" in said
    assert not any("never vary" in w for w in esi.warnings)
    assert report_to_json(report)["metrics"][POOLED]["band"]["n_bands_reviewed"] == 3


def test_a_short_row_says_what_the_full_row_says():
    report = study()
    assert [a.scope for a in alphas_of(report, "band")] == ["admit", "esi_acuity", POOLED]
    for metric in METRICS:
        shorts, fulls = summary_rows(report, metric), alpha_rows(report, metric)
        assert len(shorts) == len(fulls) == len(alphas_of(report, metric))
        for a, short, full in zip(alphas_of(report, metric), shorts, fulls, strict=True):
            assert tuple(short) == SUMMARY
            for heading in set(SUMMARY) & set(HEADINGS) - {"cautions"}:
                assert short[heading] == full[heading], (metric, heading)
            words = [int(n) for n in re.findall(r"\d+", short["sizes"])]
            said = [int(full[h]) for h in IN_SIZES]
            assert words == (said if said[-1] else said[:-1]), (short, full)
            assert short["cautions"] == (
                f"{len(a.warnings)} caution{'s' if len(a.warnings) != 1 else ''}"
                if a.warnings
                else "none"
            )


def test_cautions_are_counted_in_the_row_and_written_out_in_the_details():
    [pooled] = [a for a in alphas_of(study(), "band") if a.scope == POOLED]
    two = replace(pooled, warnings=("first caution; with a semicolon", "second caution"))
    assert summary_row(two)["cautions"] == "2 cautions"
    assert summary_row(replace(pooled, warnings=("one",)))["cautions"] == "1 caution"
    assert summary_row(replace(pooled, warnings=()))["cautions"] == "none"
    assert detail(two).cautions == two.warnings
    assert detail(two).scope == alpha_row(two)["sub-action"]


def test_no_field_of_a_row_is_lost_between_the_short_row_and_its_details():
    # A column added to the full row must be placed: in the short row, its sizes or its details.
    placed = set(SUMMARY) | set(IN_SIZES) | set(DETAILS) | {"metric"}
    assert set(HEADINGS) <= placed, set(HEADINGS) - placed
    for a in alphas_of(study()):
        full, facts = alpha_row(a), detail(a).facts
        for heading in DETAILS:
            fact = f"{DETAIL_LABELS.get(heading, heading)}: {full[heading]}"
            assert (fact in facts) == (full[heading] not in ("-", "none")), (a.scope, fact)


def test_both_modes_name_their_mode_in_the_short_row_and_the_details():
    # A rater rates a band once: two raters in each mode.
    ratings = [
        rate(f"v{v}", "admit", f"{mode}-{r}", [v % 2 == 0 or r == 1], mode=mode)
        for v in range(4)
        for r in (1, 2)
        for mode in ("review", "blind")
    ]
    report = agreement_report(ratings, bootstrap=0)
    scopes = [row["sub-action"] for row in summary_rows(report, "band")]
    assert "Admit to hospital, review mode" in scopes and "Admit to hospital, blind mode" in scopes
    modes = len(report.modes)
    assert [detail(a, modes).scope for a in alphas_of(report, "band")] == scopes


def test_each_metric_has_its_rules_and_only_pooled_metrics_the_pooling_rule():
    for metric in METRICS:
        found = rules(metric)
        assert found[0] == RULES[metric] and INTERVAL_RULE in found
        assert (POOLING_RULE in found) == (metric in POOLABLE)
    assert "raters held fixed" in INTERVAL_RULE


def test_notes_put_each_rows_cautions_before_the_rules():
    rows = alpha_rows(study(), "band")
    cautioned = [r for r in rows if r["cautions"] != "-"]
    assert cautioned, "the study should carry at least one caution"
    found = notes("band", rows)
    assert found[: len(cautioned)] == [f"{r['sub-action']}: {r['cautions']}." for r in cautioned]
    assert found[len(cautioned) :] == rules("band")
    assert notes("lower")[0] == "No sub-action in this study takes the lower metric."


def test_the_csv_holds_every_field_of_every_row_safely():
    rows = csv_rows(study(), "band")
    read = list(csv.DictReader(io.StringIO(table_csv(rows))))
    assert [tuple(r) for r in read] == [CSV_HEADINGS] * len(rows)
    assert read == [{h: cell(row[h]) for h in CSV_HEADINGS} for row in rows]
    # Each interval is two numbers of its own, the same bounds the page shows as one range.
    for r, row in zip(read, rows, strict=True):
        for heading in ("95% interval", "two-way interval (other raters too)"):
            assert heading not in r
            low, high = r[f"{heading}, lower"], r[f"{heading}, upper"]
            assert row[heading] in ("none", "-") or row[heading] == f"{low} to {high}"
            for bound in (low, high):
                assert bound == "-" or float(bound) <= 1.0
    # Numbers, ranges of numbers and "-" for none are written as they are (as data); only text
    # that merely starts with a number ("-0.095, -0.288 to 0.069: unreliable") is guarded.
    data = re.compile(r"-|-?[0-9.]+%?(?: to -?[0-9.]+)?")
    cells = [(r[h], row[h]) for r, row in zip(read, rows, strict=True) for h in CSV_HEADINGS]
    assert any(shown.startswith("-") and data.fullmatch(shown) for _, shown in cells)
    for written, shown in cells:
        assert written == (shown if data.fullmatch(shown) else cell(shown))
        assert not written.startswith("'") or not data.fullmatch(shown)


def test_negative_figures_in_the_csv_read_as_numbers_and_text_formulas_stay_inert():
    [pooled] = [a for a in alphas_of(study(), "band") if a.scope == POOLED]
    negative = replace(pooled, alpha=-0.25, ci_low=-3.857, ci_high=0.847, weakest=None)
    row = csv_row(negative)
    assert (row["alpha"], row["95% interval"], row["weakest sub-action"]) == (
        "-0.250",
        "-3.857 to 0.847",
        "-",
    )
    hostile = {**row, "reading": '=HYPERLINK("http://x")', "cautions": "-2+3+cmd|' /C calc'!A0"}
    [read, guarded] = csv.DictReader(io.StringIO(table_csv([row, hostile])))
    # As R's read.csv or pandas see them: numbers, each bound its own, and "-" for none.
    assert float(read["alpha"]) == -0.25
    bounds = (read["95% interval, lower"], read["95% interval, upper"])
    assert [float(x) for x in bounds] == [-3.857, 0.847]
    assert read["weakest sub-action"] == "-"
    assert guarded["reading"] == '\'=HYPERLINK("http://x")'
    assert guarded["cautions"] == "'-2+3+cmd|' /C calc'!A0"


def test_left_as_proposed_is_a_short_cell_and_its_counts_are_in_the_details():
    a = Alpha("band", "admit", "jaccard", 0.5, None, n_bands=2, n_reviewed=5)
    cells = {
        (0.8, 0.6): ("80% of 5 reviews", "4 of 5 reviews on the bands this alpha reads: "
                     "3 by ACCEPT, 1 by AMEND to the proposal's own band"),
        (0.8, 0.8): ("80% of 5 reviews", "4 of 5 reviews on the bands this alpha reads, "
                     "all by ACCEPT"),
        (0.0, 0.0): ("0% of 5 reviews", "0 of 5 reviews on the bands this alpha reads"),
    }  # fmt: skip
    for (kept, accepted), (short, counts) in cells.items():
        row = alpha_row(replace(a, share_unchanged=kept, share_accept=accepted))
        assert (row["left as proposed"], row["left as proposed, in counts"]) == (short, counts)
    one = alpha_row(replace(a, n_reviewed=1, share_unchanged=1.0, share_accept=1.0))
    assert one["left as proposed"] == "100% of 1 review"
    # Never all or none when it is not.
    most = alpha_row(replace(a, n_reviewed=200, share_unchanged=199 / 200, share_accept=0.5))
    few = alpha_row(replace(a, n_reviewed=300, share_unchanged=1 / 300, share_accept=1 / 300))
    assert most["left as proposed"] == "over 99% of 200 reviews"
    assert few["left as proposed"] == "under 1% of 300 reviews"
    # An alpha that reads no band has no share, and says over how many reviews: none.
    none = alpha_row(replace(a, alpha=None, n_bands=0, n_reviewed=0))
    assert (none["left as proposed"], none["left as proposed, in counts"]) == ("0 reviews", "-")
    # Blind mode has no proposal: nothing to count.
    blind = alpha_row(replace(a, mode="blind", n_reviewed=None))
    assert (blind["left as proposed"], blind["left as proposed, in counts"]) == ("-", "-")


def test_left_as_proposed_beside_reviews_no_other_rater_made():
    report = agreement_report(beside_single_reviews(), bootstrap=0)
    rows = {r["sub-action"]: r for r in summary_rows(report, "band")}
    assert rows["Admit to hospital"]["left as proposed"] == "75% of 4 reviews"
    assert rows["ESI acuity level"]["sizes"].startswith("0 bands, 0 vignettes, 0 raters")
    assert rows["ESI acuity level"]["left as proposed"] == "0 reviews"
    assert rows["pooled (stratified by sub-action)"]["left as proposed"] == "75% of 4 reviews"
    # Short enough for its column (three lines of about twelve characters), never cut off.
    assert all(len(r["left as proposed"]) <= 24 for r in rows.values())
    admit = next(d for d in details(report, "band") if d.scope == "Admit to hospital")
    counts = "3 of 4 reviews on the bands this alpha reads, all by ACCEPT"
    assert f"left as proposed, in counts: {counts}" in admit.facts
    # What the cell is over is said where there is room: the rules, and the note under the table.
    for text in (SHARE_NOTE, GUARDS_RULE):
        assert "the bands the alpha reads" in text and "with a band" in text


def test_an_alpha_without_variation_still_cautions_on_reviews_left_as_proposed():
    # Two ACCEPTs and a DECLINE of one analgesia band: the band alpha has no variation, while
    # membership and verdict are defined; all three read the same two reviews left as proposed.
    ratings = [
        rate("v1", "analgesia_tier", "a", [1, 2], "ACCEPT"),
        rate("v1", "analgesia_tier", "b", [1, 2], "ACCEPT"),
        rate("v1", "analgesia_tier", "c", None),
    ]
    by_metric = agreement_report(ratings, bootstrap=50, seed=1).metrics["analgesia_tier"]
    assert by_metric["band"].alpha is None
    for metric in ("band", "membership", "verdict"):
        (said,) = by_metric[metric].warnings
        assert said.startswith("100% of the 2 reviews on the bands this alpha reads"), metric
