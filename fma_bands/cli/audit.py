"""`fma-bands audit verify`: the hash-chained audit log, checked."""

import click

from fma_bands.cli.base import cli, done, settings, store


@cli.group()
def audit() -> None:
    """Check the audit log."""


@audit.command()
def verify() -> None:
    """Check the hash chain, and that it still holds the head every signed record of the
    study's log (in the store and in the attestations folder) carries; exit 1 naming each
    edited, deleted, moved or truncated event."""
    from fma_bands.study import audit as log
    from fma_bands.study.ledger import audit_anchors

    with store() as session:
        report = log.verify(session, anchors=audit_anchors(session, settings().attestations))
    click.echo(str(report))
    done(0 if report.ok else 1)
