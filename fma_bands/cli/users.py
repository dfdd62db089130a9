"""`fma-bands user add` and `user list`: enrolling the study's people."""

import click

from fma_bands.cli.base import cli, read_secret, settings, store


@cli.group()
def user() -> None:
    """Enrol and list users."""


@user.command()
@click.argument("name")
@click.option("--role", type=click.Choice(["rater", "coordinator"]), default="rater")
@click.option("--specialty")
@click.option("--jurisdiction")
@click.option("--years", type=int, help="Years since registration.")
@click.option(
    "--passphrase-file",
    required=True,
    metavar="F",
    help="File whose first line is the passphrase (keeps it out of shell history).",
)
def add(
    name: str,
    role: str,
    specialty: str | None,
    jurisdiction: str | None,
    years: int | None,
    passphrase_file: str,
) -> None:
    """Enrol a user (a rater unless --role coordinator); NAME is the public pseudonym."""
    from fma_bands.attestations import publish_adjudicators
    from fma_bands.users import create_user

    passphrase = read_secret(passphrase_file)
    with store() as session:
        made = create_user(
            session,
            actor="cli",
            pseudonym=name,
            role=role,
            passphrase=passphrase,
            specialty=specialty,
            jurisdiction=jurisdiction,
            years_post_registration=years,
        )
        publish_adjudicators(session, settings().attestations)
    key = f", signing key {made.keyid}" if made.keyid else ""
    click.echo(f"enrolled {made.pseudonym} ({made.role}){key}")


@user.command("list")
def list_() -> None:
    """List enrolled users."""
    from fma_bands.users import list_users

    with store() as session:
        users = list_users(session)
    for u in users:
        detail = (
            f"{u.specialty}, {u.jurisdiction}, {u.years_post_registration} y" if u.specialty else ""
        )
        click.echo(f"{u.pseudonym:<20} {u.role:<12} {detail}")
