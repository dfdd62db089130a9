"""`fma-bands impact`: which bands decide the harness's run pairs, from its trajectories.json
files, paired as the harness pairs them (coordinator only: raters never see these counts)."""

import json
from collections import Counter

import click

from fma_bands.cli.base import cli, coordinator, print_json, store, synced
from fma_bands.core.errors import FmaBandsError


@cli.command()
@click.option(
    "--trajectories",
    "files",
    multiple=True,
    metavar="FILE...",
    help="The harness's trajectories.json files (one or more; only complete runs count).",
)
@click.argument("more", nargs=-1, metavar="")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def impact(files: tuple[str, ...], more: tuple[str, ...], as_json: bool) -> None:
    """Per band, for the proposal, the consensus and the consensus widened by the disputed
    span: runs whose action lands in it, run pairs of one vignette both in it, and of those the
    pairs on opposite sides of its threshold; the bands deciding most pairs first. A vignette's
    runs pair as the harness pairs them: the reference condition with each counterfactual one
    (control arms left out) where the runs hold both, else replicates of one condition, the
    noise floor; each row says which."""
    from fma_bands.study.impact import (
        NOISE_FLOOR,
        PAIRING_LABELS,
        REFERENCE,
        REFERENCE_PAIRS,
        count_runs,
        read_runs,
        reviewed_impact,
        script_row,
    )

    if not files:
        raise FmaBandsError("name the harness's trajectories files: --trajectories FILE...")
    runs = count_runs(read_runs([*files, *more]))
    with store() as session:
        found, _ = synced(session)
        rows = reviewed_impact(session, found, runs, viewer=coordinator(session))
    if as_json:
        print_json([script_row(r) for r in rows])
        return
    click.echo(f"{runs.runs} complete runs from {len(files) + len(more)} file(s)")
    banded = {r.vignette_id for r in rows}
    paired = Counter(runs.pairing(v) for v in banded if v in runs.pairings)
    if paired[REFERENCE_PAIRS]:
        click.echo(
            f"{paired[REFERENCE_PAIRS]} vignette(s): the reference condition {REFERENCE} paired "
            "with each counterfactual one, control arms left out, as the harness's within-range "
            "flip rate pairs them"
        )
    if paired[NOISE_FLOOR]:
        click.echo(
            f"{paired[NOISE_FLOOR]} vignette(s): replicate runs of one condition paired, the "
            "noise floor (the runs hold no reference and counterfactual runs to pair)"
        )
    if unrun := len(banded - set(runs.pairings)):
        click.echo(f"{unrun} vignette(s) with bands: no complete run")
    heads = ("band", "which", "pairs of", "acceptable", "runs", "in band", "pairs", "across")
    table = [heads] + [
        (
            f"{r.vignette_id}:{r.sub_action}",
            r.band,
            PAIRING_LABELS[r.pairing],
            _text(r.acceptable),
            str(r.runs),
            *(_count(n) for n in (r.runs_in_band, r.pairs_in_band, r.pairs_across_threshold)),
        )
        for r in rows
    ]
    widths = [max(len(row[i]) for row in table) for i in range(len(heads))]
    for row in table:
        click.echo("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    click.echo(
        "in band: runs whose action the band admits; pairs: pairs of those runs of one "
        "vignette, as 'pairs of' says, within one model and scaffold (and seed, for reference "
        "pairs); across: of those pairs, the ones on opposite sides of the threshold "
        "(- where the band has no threshold or the harness cannot score it)"
    )
    for note in sorted({f"{r.sub_action}: {r.note}" for r in rows if r.note}):
        click.echo(f"note: {note}")


def _count(value: int | None) -> str:
    return "-" if value is None else str(value)


def _text(acceptable: object) -> str:
    return json.dumps(acceptable, separators=(",", ":"))
