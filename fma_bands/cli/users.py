"""`fma-bands user ...`: enrolling people with a one-time code, activating an account, changing
one's passphrase, resetting an account, listing who is enrolled."""

from pathlib import Path

import click

from fma_bands.cli.base import (
    acting_passphrase,
    cli,
    coordinator,
    print_json,
    read_secret,
    settings,
    store,
)
from fma_bands.cli.numbers import Whole
from fma_bands.cli.paths import check_output
from fma_bands.core.errors import AccessDenied, FmaBandsError
from fma_bands.core.files import write_atomically


@cli.group()
def user() -> None:
    """Enrol, activate, reset and list users."""


def _hand_over(name: str, code: str, code_file: str | None, expires: object) -> str:
    """Write the one-time code to its file (readable by its owner only), or say it once."""
    until = f"valid until {expires:%d %b %Y %H:%M} UTC" if expires else "valid 14 days"
    if code_file:
        # Written through a private temporary file, so it is never readable by others.
        path = write_atomically(Path(code_file), code + "\n")
        path.chmod(0o600)
        return f"enrolment code for {name} written to {path} ({until}; it works once)"
    return (
        f"enrolment code for {name} (shown this once, {until}; give it to them privately):\n"
        f"  {code}"
    )


@user.command()
@click.argument("name")
@click.option("--role", type=click.Choice(["rater", "coordinator"]), default="rater")
@click.option("--specialty")
@click.option("--jurisdiction")
@click.option("--years", type=Whole(), help="Years since registration.")
@click.option(
    "--code-file",
    metavar="F",
    help="Write the one-time enrolment code to F instead of printing it.",
)
@click.option(
    "--passphrase-file",
    metavar="P",
    help="The first coordinator only: the file whose first line is their passphrase.",
)
def add(
    name: str,
    role: str,
    specialty: str | None,
    jurisdiction: str | None,
    years: int | None,
    code_file: str | None,
    passphrase_file: str | None,
) -> None:
    """Enrol NAME (the public pseudonym) and issue their one-time enrolment code.

    The person activates the account with the code and chooses their own passphrase; a rater's
    signing key is made then. The study's first coordinator instead gives their passphrase with
    --passphrase-file, which works only while no coordinator exists."""
    from fma_bands.study.enrolment import create_first_coordinator, enrol
    from fma_bands.study.users import has_coordinator

    if code_file:
        check_output(code_file, "enrolment code")
    with store(create=role == "coordinator") as session:
        if role == "coordinator" and not has_coordinator(session):
            if not passphrase_file:
                raise FmaBandsError(
                    "the first coordinator chooses a passphrase: give it with --passphrase-file P"
                )
            made = create_first_coordinator(
                session,
                pseudonym=name,
                passphrase=read_secret(passphrase_file),
                folder=settings().attestations,
            )
            click.echo(
                f"enrolled {made.pseudonym} (coordinator), the study's first: their key is the "
                "study's root key, and its root record is signed"
            )
            return
        if passphrase_file:
            raise AccessDenied(
                "nobody sets another person's passphrase: they choose it when they activate "
                "their account with the enrolment code (fma-bands user activate)"
            )
        made, code = enrol(
            session,
            actor=coordinator(session),
            passphrase=acting_passphrase(),
            folder=settings().attestations,
            pseudonym=name,
            role=role,
            specialty=specialty,
            jurisdiction=jurisdiction,
            years_post_registration=years,
        )
        # Written before the enrolment commits: if the code cannot be written, nobody is enrolled.
        handed = _hand_over(made.pseudonym, code, code_file, made.code_expires_at)
    click.echo(f"enrolled {made.pseudonym} ({made.role}), awaiting activation")
    click.echo(handed)
    click.echo(
        f"they activate with `fma-bands user activate {made.pseudonym} --code-file F "
        "--passphrase-file P`, or on the app's sign-in page"
    )


@user.command()
@click.argument("name")
@click.option("--code-file", required=True, metavar="F", help="File holding the enrolment code.")
@click.option(
    "--passphrase-file",
    required=True,
    metavar="P",
    help="File whose first line is the passphrase you choose (12 to 1024 characters).",
)
def activate(name: str, code_file: str, passphrase_file: str) -> None:
    """Activate your account NAME with your enrolment code, choosing your passphrase; a rater's
    new key then signs their public record into the attestations folder."""
    from fma_bands.study.enrolment import ACTIVATION_FAILED
    from fma_bands.study.enrolment import activate as activate_account

    code = read_secret(code_file)
    passphrase = read_secret(passphrase_file)
    with store() as session:
        made = activate_account(
            session,
            pseudonym=name,
            code=code,
            passphrase=passphrase,
            folder=settings().attestations,
        )
    if made is None:
        raise AccessDenied(ACTIVATION_FAILED)
    key = f"; signing key {made.keyid}, activation signed into the log" if made.keyid else ""
    click.echo(f"activated {made.pseudonym} ({made.role}){key}")


@user.command()
@click.argument("name")
@click.option("--passphrase-file", required=True, metavar="OLD", help="Your current passphrase.")
@click.option("--new-passphrase-file", required=True, metavar="NEW", help="The one you choose.")
def passphrase(name: str, passphrase_file: str, new_passphrase_file: str) -> None:
    """Change your passphrase (a rater's key stays the same, resealed under the new one)."""
    from fma_bands.study.users import change_passphrase, require_user

    old, new = read_secret(passphrase_file), read_secret(new_passphrase_file)
    with store() as session:
        change_passphrase(session, require_user(session, name).id, old, new)
    click.echo(f"passphrase of {name} changed")


@user.command()
@click.argument("name")
@click.option("--code-file", metavar="F", help="Write the new enrolment code to F.")
def reset(name: str, code_file: str | None) -> None:
    """Issue NAME a new enrolment code (coordinator). Their passphrase stops working; their next
    activation makes a new key, and the old one stays on record as retired."""
    from fma_bands.study.enrolment import reset as reset_account
    from fma_bands.study.users import get_user

    if code_file:
        check_output(code_file, "enrolment code")
    with store() as session:
        code = reset_account(
            session,
            actor=coordinator(session),
            pseudonym=name,
            passphrase=acting_passphrase(),
            folder=settings().attestations,
        )
        made = get_user(session, name)
        # Written before the reset commits: if the code cannot be written, nothing is reset.
        handed = _hand_over(name, code, code_file, made.code_expires_at if made else None)
    click.echo(f"{name} reset: their passphrase no longer works")
    click.echo(handed)


@user.command("list")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def list_(as_json: bool) -> None:
    """List enrolled users and whether each has activated their account."""
    from fma_bands.study.users import list_users

    with store() as session:
        users = list_users(session)
    if as_json:
        print_json(
            {
                "users": [
                    {
                        "pseudonym": u.pseudonym,
                        "role": u.role,
                        "active": u.active,
                        "demo": u.demo,
                        "specialty": u.specialty,
                        "jurisdiction": u.jurisdiction,
                        "years_post_registration": u.years_post_registration,
                        "keyid": u.keyid,
                    }
                    for u in users
                ]
            }
        )
        return
    for u in users:
        detail = (
            f"{u.specialty}, {u.jurisdiction}, {u.years_post_registration} y" if u.specialty else ""
        )
        state = "active" if u.active else "awaiting activation"
        if u.demo:
            state += " (demo)"
        click.echo(f"{u.pseudonym:<20} {u.role:<12} {state:<26} {detail}")
