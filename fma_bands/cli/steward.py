"""`fma-bands steward add` and `steward sign`: a co-signer of the study's root (the PI, a
journal's data editor). Once their account is activated, every change to the roster or the policy
needs their signature as well as the coordinator's."""

import click

from fma_bands.cli.base import acting_passphrase, cli, coordinator, read_secret, settings, store


@cli.group()
def steward() -> None:
    """Enrol a steward, and sign what awaits their approval."""


@steward.command()
@click.argument("name")
@click.option("--code-file", required=True, metavar="F", help="Write the enrolment code to F.")
@click.option("--jurisdiction")
def add(name: str, code_file: str, jurisdiction: str | None) -> None:
    """Enrol NAME as a steward with a one-time code. When they activate it, the root's threshold
    becomes 2."""
    from fma_bands.cli.paths import check_output
    from fma_bands.cli.users import _hand_over
    from fma_bands.study.enrolment import enrol

    check_output(code_file, "enrolment code")
    with store() as session:
        made, code = enrol(
            session,
            actor=coordinator(session),
            passphrase=acting_passphrase(),
            folder=settings().attestations,
            pseudonym=name,
            role="steward",
            jurisdiction=jurisdiction,
        )
        # Written before the enrolment commits: if the code cannot be written, nobody is enrolled.
        handed = _hand_over(made.pseudonym, code, code_file, made.code_expires_at)
    click.echo(f"enrolled {made.pseudonym} (steward), awaiting activation")
    click.echo(handed)
    click.echo(
        f"they activate with `fma-bands user activate {made.pseudonym} --code-file F "
        "--passphrase-file P`, or on the app's sign-in page; from then on the roster and the "
        "policy need their signature too"
    )


@steward.command()
@click.option("--steward", "name", required=True, metavar="NAME")
@click.option("--passphrase-file", required=True, metavar="P", help="The steward's passphrase.")
def sign(name: str, passphrase_file: str) -> None:
    """Approve every change to the roster and the policy that awaits NAME's signature."""
    from fma_bands.study.governance import approve
    from fma_bands.study.users import require_user

    passphrase = read_secret(passphrase_file)
    with store() as session:
        made = approve(
            session,
            actor=require_user(session, name),
            passphrase=passphrase,
            folder=settings().attestations,
        )
    for record in made:
        click.echo(f"approved: record {record.sequence} ({record.file_name})")
