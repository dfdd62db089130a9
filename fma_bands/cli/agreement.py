"""`fma-bands agreement [--round N]`: Krippendorff's alpha of one round's submitted reviews,
with consensus bands."""

from typing import TYPE_CHECKING

import click

from fma_bands.cli.base import cli, coordinator, print_json, store, synced
from fma_bands.cli.numbers import Whole

if TYPE_CHECKING:
    from fma_bands.agreement import Report

# The table's columns, in order, under short headings; each row's interval method and cautions
# follow it on indented lines of their own.
SHORT = {
    "pairable values": "pairable",
    "undefined resamples": "undefined",
    "P(alpha < 0.800)": "P(<0.800)",
    "P(alpha < 0.667)": "P(<0.667)",
}
BELOW = ("weakest sub-action", "declines as disagreement", "interval method", "cautions")
GAP = "  "  # between columns; no cell holds two spaces running
# More resamples than this change no reported digit and would run for hours; a seed is 32 bits.
MAX_BOOTSTRAP = 100_000
MAX_SEED = 2**32 - 1


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option(
    "--bootstrap",
    type=Whole(0, MAX_BOOTSTRAP),
    default=1000,
    show_default=True,
    metavar="B",
    help=f"Bootstrap resamples, 0 to {MAX_BOOTSTRAP:,} (0: no interval).",
)
@click.option(
    "--seed",
    type=Whole(0, MAX_SEED),
    default=20261129,
    show_default=True,
    help=f"Bootstrap seed, 0 to {MAX_SEED:,}.",
)
@click.option(
    "--round",
    "number",
    type=Whole(1, 2),
    default=1,
    show_default=True,
    help="1: the independent round (the reliability figure); 2: consensus-building.",
)
@click.option(
    "--fresh",
    is_flag=True,
    help="Compute the report again instead of reading the copy kept when it was last computed "
    "from the same ratings (the figures are the same; this checks it).",
)
def agreement(as_json: bool, bootstrap: int, seed: int, number: int, fresh: bool) -> None:
    """Krippendorff's alpha of one round's submitted reviews, with consensus bands."""
    from fma_bands.agreement import report_to_json
    from fma_bands.study.ratings import PURPOSES, ROUND_NOTES, study_report

    with store() as session:
        found, _ = synced(session)
        report = study_report(
            session,
            found,
            viewer=coordinator(session),
            bootstrap=bootstrap,
            seed=seed,
            round=number,
            fresh=fresh,
        )
    if as_json:
        print_json({"round": number, "purpose": PURPOSES[number], **report_to_json(report)})
        return
    click.echo(format_report(report))
    click.echo(f"\n{ROUND_NOTES[number]}")


def table(rows: list[list[str]]) -> list[str]:
    """Rows of cells as aligned columns (each as wide as its widest cell)."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [GAP.join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows]


def format_report(report: "Report") -> str:
    """The alpha table (every field of the JSON, one alpha to a row), then the bands."""
    from fma_bands.agreement.panel import consensus_text, disputed_text
    from fma_bands.agreement.views import HEADINGS, alpha_rows, rule_text

    columns = [h for h in HEADINGS if h not in BELOW]
    rows = alpha_rows(report)
    aligned = table([[SHORT.get(h, h) for h in columns], *([r[h] for h in columns] for r in rows)])
    lines = [aligned[0]]
    for row, line in zip(rows, aligned[1:], strict=True):
        lines.append(line)
        lines += [f"    {name}: {row[name]}" for name in BELOW if row[name] not in ("-", "none")]
    bands = [
        [f"{b.vignette_id} {b.sub_action}", str(b.n_raters), str(b.n_declined), rule_text(b)]
        for b in report.bands
    ]
    aligned = table([["band", "raters", "declined", "rule"], *bands])
    lines += ["", aligned[0]]
    for b, line in zip(report.bands, aligned[1:], strict=True):
        lines.append(line)
        for name, text in (
            ("consensus", consensus_text(b.consensus)),
            ("disputed span", disputed_text(b.sub_action, b.consensus)),
        ):
            lines += [f"    {name}: {text}"] if text else []
    return "\n".join(lines)
