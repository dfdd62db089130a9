"""`fma-bands attest`, `revoke` and `verify`: signed attestations, made and checked."""

from pathlib import Path

import click

from fma_bands.cli.base import cli, done, read_secret, settings, store, synced
from fma_bands.core.errors import FmaBandsError
from fma_bands.core.protocol import DECLARATIONS, MEANINGS


@cli.command()
@click.option("--rater", required=True, metavar="NAME")
@click.option("--passphrase-file", required=True, metavar="F", help="The rater's own passphrase.")
@click.option("--meaning", type=click.Choice(MEANINGS), default="adjudication", show_default=True)
@click.option(
    "--declare",
    multiple=True,
    type=click.Choice(list(DECLARATIONS)),
    help="Repeat for each declaration; all three are required.",
)
@click.option(
    "--confirm-imported",
    is_flag=True,
    help="Confirm, as the rater, every review imported from your paper hand-back listed, so "
    "the signature covers them; without it they are listed and not covered.",
)
def attest(
    rater: str,
    passphrase_file: str,
    meaning: str,
    declare: tuple[str, ...],
    confirm_imported: bool,
) -> None:
    """Sign a rater's submitted reviews into a DSSE attestation (the rater's own passphrase)."""
    from fma_bands.study.signing import attest as sign
    from fma_bands.study.signing_plan import plan
    from fma_bands.study.users import require_user

    passphrase = read_secret(passphrase_file)
    folder = settings().attestations
    with store() as session:
        found, _ = synced(session)
        who = require_user(session, rater)
        waiting = plan(session, found, who, folder).imported
        path = sign(
            session,
            found,
            rater=who,
            passphrase=passphrase,
            meaning=meaning,
            declarations=list(declare),
            folder=folder,
            confirm_imported=confirm_imported,
        )
    for review in waiting:
        entered = f"entered from your paper hand-back by {review['entered_by']} on " + (
            f"{review['entered_at']:%d %b %Y}"
        )
        band = f"{review['vignette_id']} {review['sub_action']}: {review['verdict']}"
        if confirm_imported:
            click.echo(f"confirmed and covered: {band} ({entered})")
        else:
            click.echo(f"not covered: {band} ({entered}); confirm with --confirm-imported")
    click.echo(f"signed {path}")


@cli.command()
@click.argument("file", metavar="ATTESTATION")
@click.option("--rater", required=True, metavar="NAME")
@click.option("--passphrase-file", required=True, metavar="F")
@click.option("--reason", required=True)
def revoke(file: str, rater: str, passphrase_file: str, reason: str) -> None:
    """Revoke one of a rater's attestations with a signed revocation."""
    from fma_bands.study.signing import revoke as sign_revocation
    from fma_bands.study.users import require_user

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
    """Check attestation envelopes offline against the self-signed public records."""
    from fma_bands.evidence.log import read_evidence

    folder = settings().attestations
    evidence = read_evidence(folder, [Path(p) for p in paths] if paths else None)
    if not evidence.envelopes:
        raise FmaBandsError(f"no attestation envelopes (*.dsse.json) in {folder}")
    failed = 0
    for env in evidence.envelopes:
        if env.error:
            failed += 1
            click.echo(f"FAIL {env.path}: {env.error[0]}: {env.error[1]}")
        else:
            click.echo(f"ok   {env.path}: {env.kind} by {env.pseudonym} ({env.keyid})")
    for code, message in evidence.problems:
        click.echo(f"FAIL {folder}: {code}: {message}")
    count, digest = evidence.head
    click.echo(
        f"{len(evidence.envelopes) - failed} of {len(evidence.envelopes)} envelope(s) verified; "
        f"folder head: {count} records, {digest}"
    )
    done(1 if failed or evidence.problems else 0)
