"""`fma-bands init`, `demo`, `phase` and `mode`: setting up a study and running its phases."""

import click

from fma_bands.cli.base import cli, coordinator, done, settings, store, synced

# The accounts `fma-bands demo` makes: demo only, printed, never secret.
DEMO_USERS = (
    {"pseudonym": "coordinator", "role": "coordinator", "passphrase": "coordinator-demo"},
    {
        "pseudonym": "rater-01",
        "role": "rater",
        "passphrase": "rater-01-demo",
        "specialty": "emergency medicine",
        "jurisdiction": "Australia",
        "years_post_registration": 9,
    },
    {
        "pseudonym": "rater-02",
        "role": "rater",
        "passphrase": "rater-02-demo",
        "specialty": "general medicine",
        "jurisdiction": "United Kingdom",
        "years_post_registration": 15,
    },
)


@cli.command()
def init() -> None:
    """Create the database (or bring it to the current schema) and load the vignettes."""
    from fma_bands.study import study

    with store() as session:
        found, report = synced(session)
        current = study(session)
    click.echo(f"database {settings().database_url}: {len(found)} vignettes loaded ({report})")
    click.echo(f"review phase {current.phase}, {current.mode} mode")
    done(0 if found.ok else 1)


@cli.command()
def demo() -> None:
    """Set up a ready demo study (coordinator and two raters) and say how to sign in."""
    from fma_bands.attestations import publish_adjudicators
    from fma_bands.users import create_user, get_user

    with store() as session:
        found, _ = synced(session)
        for fields in DEMO_USERS:
            if get_user(session, str(fields["pseudonym"])) is None:
                create_user(session, actor="demo", **fields)
            elif fields["role"] == "coordinator":
                click.echo("the demo study already exists; its accounts are unchanged")
        publish_adjudicators(session, settings().attestations)
    click.echo(f"Demo study ready in {settings().database_url}: {len(found)} vignettes.")
    click.echo("Run `streamlit run app.py` and sign in with one of these (demo only, not secret):")
    for fields in DEMO_USERS:
        click.echo(
            f"  {fields['pseudonym']:<12} passphrase {fields['passphrase']:<17} ({fields['role']})"
        )


@cli.command()
@click.argument("state", required=False, type=click.Choice(["open", "closed"]))
def phase(state: str | None) -> None:
    """Show the review phase, or open or close it."""
    from fma_bands.study import set_phase, study

    with store() as session:
        current = study(session)
        if state:
            current = set_phase(session, actor=coordinator(session), phase=state)
    click.echo(f"review phase {current.phase}")


@cli.command()
@click.argument("state", required=False, type=click.Choice(["review", "blind"]))
def mode(state: str | None) -> None:
    """Show the review mode, or set it."""
    from fma_bands.study import set_mode, study

    with store() as session:
        current = study(session)
        if state:
            current = set_mode(session, actor=coordinator(session), mode=state)
    click.echo(f"{current.mode} mode")
