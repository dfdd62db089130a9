"""`fma-bands attest`, `revoke` and `verify`: signed attestations, made and checked."""

from pathlib import Path

import click

from fma_bands.cli.base import cli, done, print_json, read_secret, settings, store, synced
from fma_bands.core.errors import FmaBandsError
from fma_bands.core.markup import terminal_escape
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
        waiting = plan(session, found, who).imported
        receipt = sign(
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
    _print_receipt(receipt)


def _print_receipt(receipt) -> None:
    """The signer's receipt: what they keep to check the folder later."""
    where = receipt.as_dict()
    for record in where["records"]:
        click.echo(f"signed record {record['sequence']}: {record['file']} ({record['digest']})")
    click.echo(f"key fingerprint: {receipt.keyid}")
    click.echo(f"head after signing: {where['since']}")
    click.echo(
        f"in the attestations folder {where['in_folder']}; keep the head to check it later "
        f"with `fma-bands verify --since {where['since']}`"
    )


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
        receipt = sign_revocation(
            session,
            rater=require_user(session, rater),
            passphrase=passphrase,
            attestation=file,
            reason=reason,
            folder=settings().attestations,
        )
    click.echo(f"revoked {Path(file).name}")
    _print_receipt(receipt)


@cli.command()
@click.option(
    "--since",
    metavar="SEQ:DIGEST",
    help="A head seen before (an export's, a receipt's): the folder must still hold it.",
)
@click.option("--study", metavar="ID", help="The study the folder must be the log of.")
@click.option(
    "--export",
    "export_file",
    metavar="FILE",
    help="A bands.yaml: its head must be signed by a root key of the folder's study, and the "
    "folder must still hold it.",
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def verify(since: str | None, study: str | None, export_file: str | None, as_json: bool) -> None:
    """Check the attestations folder from its files alone: one chain from the study's root,
    every record signed by a key the root-signed roster gives its signer at that place, the
    readable copies exact. Exits 1 when it does not verify."""
    from fma_bands.evidence.log import parse_head, read_evidence

    folder = settings().attestations
    exported = _exported_head(export_file) if export_file else None
    if exported is not None:
        study = study or exported[0]
        since = since or f"{exported[1]}:{exported[2]}"
    evidence = read_evidence(
        folder, study=study, since=parse_head(since) if since is not None else None
    )
    # Whether the folder itself verifies, before the export's own problems join the list.
    folder_valid = evidence.valid
    if export_file is not None:
        _check_export_head(evidence, export_file)
    sequence, digest = evidence.head
    if as_json:
        print_json(
            {
                "valid": evidence.valid,
                "study": evidence.study,
                "head": {"sequence": sequence, "digest": digest} if digest else None,
                "root_keys": [
                    {"keyid": keyid, "holder": holder}
                    for keyid, holder in sorted(evidence.root_keys.items())
                ],
                "threshold": evidence.threshold,
                "problems": [p.as_dict() for p in evidence.problems],
                "strays": [p.as_dict() for p in evidence.strays],
            }
        )
        done(0 if evidence.valid else 1)
    click.echo(f"study {evidence.study or '(none found)'}: {folder}")
    # Columns as wide as the longest kind and name listed (chair_decision is 14 letters).
    kind_width = max((len(env.kind or "") for env in evidence.chain), default=0)
    name_width = max((len(env.pseudonym or "") for env in evidence.chain), default=0)
    for env in evidence.chain:
        position = env.position
        assert position is not None
        click.echo(
            f"ok    {position[1]:>6} {env.kind or '':<{kind_width}} "
            f"{env.pseudonym or '':<{name_width}} {terminal_escape(env.path.name)}"
        )
    for problem in evidence.strays:
        click.echo(f"stray {problem}")
    for problem in evidence.problems:
        click.echo(f"FAIL  {problem}")
    roots = ", ".join(f"{holder} {keyid}" for keyid, holder in sorted(evidence.root_keys.items()))
    click.echo(f"root keys (threshold {evidence.threshold}): {roots or 'none'}")
    if digest:
        click.echo(f"head: {sequence}:{digest}")
    if not folder_valid:
        click.echo("the folder does NOT verify")
    elif not evidence.valid:
        click.echo(
            f"the folder verifies, but the export {Path(export_file or '').name} does NOT "
            "(FAIL above; an export made without --sign-head has no signed head)"
        )
    else:
        click.echo("the folder verifies" + (" and so does the export" if export_file else ""))
    done(0 if evidence.valid else 1)


def _exported_head(path: str) -> tuple[str, int, str] | None:
    """The (study, sequence, digest) a bands.yaml states it was decided from."""
    from fma_bands.evidence.export import read_export_header

    header = read_export_header(path)
    try:
        head = header["head"]
        return header["study"], head["sequence"], head["digest"]
    except (KeyError, TypeError):
        raise FmaBandsError("states no study and head (attestations.head)", file=path) from None


def _check_export_head(evidence, path: str) -> None:
    """The export's head must be signed by a root key of the study the folder is the log of."""
    from fma_bands.evidence.export import read_export_header
    from fma_bands.evidence.head import check_head
    from fma_bands.evidence.log import Problem

    header = read_export_header(path)
    signed = header.get("head_signature")
    name = Path(path).name
    if signed is None:
        evidence.problems.append(
            Problem(name, "unsigned_head", "the export's head is not signed by the study's root")
        )
        return
    try:
        head = check_head(signed, evidence.root_public)
    except FmaBandsError as exc:
        evidence.problems.append(Problem(name, "bad_signature", f"its signed head: {exc.message}"))
        return
    stated = header.get("head") or {}
    if (head.study, head.sequence, head.digest, head.audit_head) != (
        header.get("study"),
        stated.get("sequence"),
        stated.get("digest"),
        header.get("audit_head"),
    ):
        evidence.problems.append(
            Problem(name, "bad_signature", "the signed head is not the head the export states")
        )
