"""`fma-bands audit verify`: the hash-chained audit log, checked."""

import click

from fma_bands.cli.base import cli, done, store


@cli.group()
def audit() -> None:
    """Check the audit log."""


@audit.command()
def verify() -> None:
    """Check the hash chain; exit 1 naming each edited, deleted or moved event."""
    from fma_bands.study import audit as log

    with store() as session:
        report = log.verify(session)
    click.echo(str(report))
    done(0 if report.ok else 1)
