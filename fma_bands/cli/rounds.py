"""`fma-bands round show | open 2 [--band VID:SUB ...] | close`: the study's review rounds."""

import click

from fma_bands.cli.base import cli, coordinator, print_json, settings, store, synced
from fma_bands.cli.numbers import Whole


@cli.group("round")
def round_() -> None:
    """Show, open or close the study's review rounds (a closed round is never reopened)."""


@round_.command("show")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def show(as_json: bool) -> None:
    """The current round and its phase; from round 2, its bands and their raters, and after a
    closed round the bands still discordant."""
    from fma_bands.study.rounds import discordant_bands, state

    with store() as session:
        found, _ = synced(session)
        actor = coordinator(session)
        current = state(session, viewer=actor)
        discord = []
        if current.phase == "closed":
            discord = discordant_bands(
                session, found, viewer=actor, folder=settings().attestations, round=current.number
            )
    if as_json:
        print_json(
            {
                "round": current.number,
                "phase": current.phase,
                "bands": [
                    {"vignette_id": b.vignette_id, "sub_action": b.sub_action, "raters": b.raters}
                    for b in current.bands
                ],
                "discordant": [
                    {"vignette_id": d.vignette_id, "sub_action": d.sub_action, "reasons": d.reasons}
                    for d in discord
                ],
            }
        )
        return
    click.echo(current.describe())
    for b in current.bands:
        click.echo(f"  {b.vignette_id}:{b.sub_action}  raters: {', '.join(b.raters)}")
    if current.phase == "closed":
        click.echo(f"discordant after round {current.number}: {len(discord)} band(s)")
        for d in discord:
            click.echo(f"  {d.vignette_id}:{d.sub_action}  {d.describe()}")


@round_.command("open")
@click.argument("number", type=Whole(1, 2))
@click.option(
    "--band",
    "bands",
    multiple=True,
    metavar="VID:SUB",
    help="A band to re-review (repeatable); by default every discordant band of round 1.",
)
def open_(number: int, bands: tuple[str, ...]) -> None:
    """Open round NUMBER (2) for the chosen bands, once round 1 is closed."""
    from fma_bands.study.rounds import open_round, parse_band_names

    chosen = parse_band_names(bands) if bands else None
    with store() as session:
        found, _ = synced(session)
        opened = open_round(
            session,
            found,
            actor=coordinator(session),
            number=number,
            folder=settings().attestations,
            bands=chosen,
        )
    click.echo(opened.describe())
    for b in opened.bands:
        click.echo(f"  {b.vignette_id}:{b.sub_action}  raters: {', '.join(b.raters)}")


@round_.command("close")
def close() -> None:
    """Close the open round: its reviews are frozen, and it is never reopened."""
    from fma_bands.study.rounds import close_round

    with store() as session:
        closed = close_round(session, actor=coordinator(session), folder=settings().attestations)
    click.echo(closed.describe())
