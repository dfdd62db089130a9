"""`fma-bands handback import`: a paper hand-back as a rater's submitted reviews."""

import click

from fma_bands.cli.base import cli, coordinator, read_text, store, synced


@cli.group()
def handback() -> None:
    """Import a paper hand-back."""


@handback.command("import")
@click.argument("file", metavar="FILE")
@click.option("--rater", required=True, metavar="NAME")
def import_(file: str, rater: str) -> None:
    """Turn a hand-back file into submitted reviews (all or nothing). In round 1 every line's
    band must be assigned to the rater (`fma-bands assign`), as for a review in the browser."""
    from fma_bands.study.handback import import_handback

    text = read_text(file, "hand-back")
    with store() as session:
        found, _ = synced(session)
        created = import_handback(
            session,
            found,
            actor=coordinator(session),
            rater_pseudonym=rater,
            text=text,
            source=file,
        )
    click.echo(f"imported {len(created)} submitted reviews for {rater} from {file}")
    for review in created:
        click.echo(f"  {review.vignette_id} {review.sub_action}: {review.verdict}")
