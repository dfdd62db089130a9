"""`fma-bands audit verify`: the hash-chained audit log, checked."""

from pathlib import Path

import click

from fma_bands.cli.base import cli, done, forget_statements, print_json, settings, store
from fma_bands.core.errors import FmaBandsError


@cli.group()
def audit() -> None:
    """Check the audit log."""


@audit.command()
@click.option(
    "--export",
    "exports",
    multiple=True,
    metavar="FILE",
    help="A bands.yaml kept from earlier (repeatable): the log must still hold the audit head "
    "it carries.",
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def verify(exports: tuple[str, ...], as_json: bool) -> None:
    """Check the hash chain, and that it still holds the head every signed record of the
    study's log (in the store and in the attestations folder) and every export given carries;
    exit 1 naming each edited, deleted, moved or truncated event."""
    from fma_bands.study import audit as log
    from fma_bands.study.ledger import audit_anchors

    kept = [exported_audit_head(path) for path in exports]
    with store() as session:
        anchors = audit_anchors(session, settings().attestations) + kept
        forget_statements()
        report = log.verify(session, anchors=sorted(anchors))
    if as_json:
        print_json(
            {
                "valid": report.ok,
                "events": report.n_events,
                "head": {"seq": report.head[0], "hash": report.head[1]} if report.head else None,
                "problems": [
                    {"seq": p.seq, "kind": p.kind, "message": p.message} for p in report.problems
                ],
            }
        )
    else:
        click.echo(str(report))
    done(0 if report.ok else 1)


def exported_audit_head(path: str) -> tuple[int, str, str]:
    """(seq, hash, file) of the audit head a bands.yaml carries; refused by name if it has none."""
    from fma_bands.evidence.export import read_export_header
    from fma_bands.evidence.head import parse_audit_head

    header = read_export_header(path)
    found = parse_audit_head(header.get("audit_head"))
    if found is None:
        raise FmaBandsError(
            "carries no audit head (attestations.audit_head): it was exported without a "
            "database, or by an older fma-bands",
            file=path,
        )
    return found[0], found[1], Path(path).name
