"""`fma-bands report --format md|csv|tex [--out FILE] [--round N]`: the methods paragraph (GRRAS)
and results table of one round's agreement, with the figures `fma-bands agreement` shows."""

import click

from fma_bands.cli.agreement import MAX_BOOTSTRAP, MAX_SEED
from fma_bands.cli.base import cli, coordinator, store, synced
from fma_bands.cli.numbers import Whole


@cli.command()
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["md", "csv", "tex"]),
    default="md",
    show_default=True,
    help="md: the paragraph and tables in markdown; csv: the results table only; tex: a LaTeX "
    "fragment (the paragraph and a tabular per metric).",
)
@click.option("--out", metavar="FILE", help="Write the report to FILE (default: print it).")
@click.option(
    "--round",
    "number",
    type=Whole(1, 2),
    default=1,
    show_default=True,
    help="1: the independent round (the reliability figure); 2: consensus-building.",
)
@click.option(
    "--bootstrap",
    type=Whole(0, MAX_BOOTSTRAP),
    default=1000,
    show_default=True,
    metavar="B",
    help="Bootstrap resamples, as for `fma-bands agreement` (0: no interval).",
)
@click.option(
    "--seed",
    type=Whole(0, MAX_SEED),
    default=20261129,
    show_default=True,
    help="Bootstrap seed, as for `fma-bands agreement`.",
)
def report(fmt: str, out: str | None, number: int, bootstrap: int, seed: int) -> None:
    """The methods paragraph and results table of one round's agreement (coordinator only)."""
    from fma_bands.core.files import write_atomically
    from fma_bands.study.methods_facts import study_methods_report

    if out is not None:
        from fma_bands.cli.paths import check_output

        check_output(out, "report")  # refused before anything is computed
    with store() as session:
        found, _ = synced(session)
        text = study_methods_report(
            session,
            found,
            viewer=coordinator(session),
            fmt=fmt,
            round=number,
            bootstrap=bootstrap,
            seed=seed,
        )
    if out is None:
        click.echo(text, nl=False)
        return
    path = write_atomically(out, text, shared=True)
    click.echo(f"wrote the {fmt} report of round {number} to {path}", err=True)
