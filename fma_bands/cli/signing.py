"""`fma-bands attest`, `revoke` and `verify`: signed attestations, made and checked."""

from pathlib import Path

import click

from fma_bands.cli.base import cli, done, read_secret, settings, store, synced
from fma_bands.errors import FmaBandsError
from fma_bands.protocol import DECLARATIONS, MEANINGS


@cli.command()
@click.option("--rater", required=True, metavar="NAME")
@click.option("--passphrase-file", required=True, metavar="F")
@click.option("--meaning", type=click.Choice(MEANINGS), default="adjudication", show_default=True)
@click.option(
    "--declare",
    multiple=True,
    type=click.Choice(list(DECLARATIONS)),
    help="Repeat for each declaration; all three are required.",
)
def attest(rater: str, passphrase_file: str, meaning: str, declare: tuple[str, ...]) -> None:
    """Sign a rater's submitted reviews into a DSSE attestation."""
    from fma_bands.attestations import attest as sign
    from fma_bands.users import require_user

    passphrase = read_secret(passphrase_file)
    with store() as session:
        found, _ = synced(session)
        path = sign(
            session,
            found,
            rater=require_user(session, rater),
            passphrase=passphrase,
            meaning=meaning,
            declarations=list(declare),
            folder=settings().attestations,
        )
    click.echo(f"signed {path}")


@cli.command()
@click.argument("file", metavar="ATTESTATION")
@click.option("--rater", required=True, metavar="NAME")
@click.option("--passphrase-file", required=True, metavar="F")
@click.option("--reason", required=True)
def revoke(file: str, rater: str, passphrase_file: str, reason: str) -> None:
    """Revoke one of a rater's attestations with a signed revocation."""
    from fma_bands.attestations import revoke as sign_revocation
    from fma_bands.users import require_user

    passphrase = read_secret(passphrase_file)
    with store() as session:
        path = sign_revocation(
            session,
            rater=require_user(session, rater),
            passphrase=passphrase,
            attestation=Path(file),
            reason=reason,
            folder=settings().attestations,
        )
    click.echo(f"revoked {file}: {path}")


@cli.command()
@click.argument("paths", nargs=-1, metavar="[PATH]...")
def verify(paths: tuple[str, ...]) -> None:
    """Check attestation envelopes offline against adjudicators.yaml."""
    from fma_bands.envelopes import read_folder

    folder = settings().attestations
    _, checked = read_folder(folder, [Path(p) for p in paths] or None)
    if not checked:
        raise FmaBandsError(f"no attestation envelopes (*.dsse.json) in {folder}")
    failed = 0
    for env in checked:
        if env.error:
            failed += 1
            click.echo(f"FAIL {env.path}: {env.error[0]}: {env.error[1]}")
        else:
            click.echo(f"ok   {env.path}: {env.kind} by {env.pseudonym} ({env.keyid})")
    click.echo(f"{len(checked) - failed} of {len(checked)} envelope(s) verified")
    done(1 if failed else 0)
