"""`fma-bands assign`: who reviews what. Raters are added to or removed from bands, every band of
a vignette, or every band of a sub-action; `--show` lists each band's raters and the bands that
cannot be adjudicated as assigned."""

import click

from fma_bands.cli.base import cli, coordinator, print_json, store, synced
from fma_bands.core.errors import FmaBandsError


@cli.command()
@click.option("--rater", metavar="NAME", help="The rater to add or remove.")
@click.option("--band", "bands", multiple=True, metavar="VID:SUB", help="One band (repeatable).")
@click.option(
    "--sub-action", "sub_actions", multiple=True, metavar="SUB", help="Every band of a sub-action."
)
@click.option(
    "--vignette", "vignettes", multiple=True, metavar="VID", help="Every band of a vignette."
)
@click.option("--remove", is_flag=True, help="Remove the rater instead of adding them.")
@click.option("--show", is_flag=True, help="List every band's raters and the flagged bands.")
@click.option("--json", "as_json", is_flag=True, help="With --show: machine-readable output.")
def assign(
    rater: str | None,
    bands: tuple[str, ...],
    sub_actions: tuple[str, ...],
    vignettes: tuple[str, ...],
    remove: bool,
    show: bool,
    as_json: bool,
) -> None:
    """Assign raters to bands (coordinator; audited), or show the assignment.

    By default a band goes to every rater whose signed specialty covers its sub-action's
    scope; the latest change covering a band decides it."""
    from fma_bands.study.assignment import change, load, parse_band_ref
    from fma_bands.study.state import study

    changing = bool(rater or bands or sub_actions or vignettes or remove)
    if show == changing:
        raise FmaBandsError(
            "either --show, or --rater NAME with --band VID:SUB, --sub-action SUB or "
            "--vignette VID (and --remove to take the rater off)"
        )
    if as_json and not show:
        raise FmaBandsError("--json goes with --show")
    if show:
        _show(as_json)
        return
    if not rater:
        raise FmaBandsError("say whose assignment changes: --rater NAME")
    parsed = [parse_band_ref(b) for b in bands]
    with store() as session:
        found, _ = synced(session)
        made = change(
            session,
            found,
            actor=coordinator(session),
            rater=rater,
            bands=parsed,
            vignettes=vignettes,
            sub_actions=sub_actions,
            assigned=not remove,
        )
        count = len(load(session).bands_of(found, made[0].rater))
        current = study(session)
    verb = "removed from" if remove else "added to"
    for item in made:
        click.echo(f"{item.rater} {verb} {item.target}")
    click.echo(f"{made[0].rater} is now assigned {count} band(s)")
    if current.round >= 2 and current.phase == "open":
        # Round 2's raters were chosen when it opened (docs/design.md, Who reviews what).
        click.echo(
            f"note: round {current.round} is open, and its bands and raters were chosen when it "
            "opened: this assignment changes no one's round-"
            f"{current.round} queue (see `fma-bands round show`)",
            err=True,
        )


def _show(as_json: bool) -> None:
    from fma_bands.study.assignment import load
    from fma_bands.study.coverage import coverage, explain, study_quorum

    with store() as session:
        quorum = study_quorum(session)
        found, _ = synced(session)
        # Who reviews what is the coordinator's to see.
        rows = coverage(session, found, viewer=coordinator(session), quorum=quorum)
        assignments = load(session)
    if as_json:
        print_json(
            {
                "quorum": quorum,
                "bands": [r.as_dict() for r in rows],
                "changes": [c.as_dict() for c in assignments.changes],
            }
        )
        return
    click.echo(f"quorum {quorum} (policy.yaml)" if quorum else "no policy.yaml yet: quorum unknown")
    width = max((len(f"{r.vignette_id}:{r.sub_action}") for r in rows), default=4)
    for r in rows:
        names = ", ".join(r.raters) or "(nobody)"
        flag = f"  [{'; '.join(r.problems)}]" if r.problems else ""
        click.echo(f"{r.vignette_id + ':' + r.sub_action:<{width}}  {names}{flag}")
    flagged = [r for r in rows if r.problems]
    click.echo(f"{len(flagged)} of {len(rows)} band(s) cannot be adjudicated as assigned")
    for r in flagged:
        click.echo(f"  {r.vignette_id}:{r.sub_action}: {explain(r)}")
    if assignments.changes:
        click.echo("changes (the latest covering a band decides it):")
    for c in assignments.changes:
        verb = "added" if c.assigned else "removed"
        click.echo(f"  {c.made_at:%Y-%m-%d %H:%M} {c.made_by} {verb} {c.rater}: {c.target}")
