"""`fma-bands policy set` and `policy show`: the registry policy in attestations/policy.yaml."""

import click

from fma_bands.cli.base import cli, coordinator, settings, store
from fma_bands.evidence.policy import SCOPES, read_policy


@cli.group()
def policy() -> None:
    """The registry policy in attestations/policy.yaml."""


@policy.command("set")
@click.option("--quorum", type=int, required=True)
@click.option("--scope", type=click.Choice(SCOPES), required=True)
def set_(quorum: int, scope: str) -> None:
    """Set quorum and scope (audited)."""
    from fma_bands.study.state import set_policy

    with store() as session:
        written = set_policy(
            session, settings().attestations, actor=coordinator(session), quorum=quorum, scope=scope
        )
    click.echo(f"policy: quorum {written.quorum}, scope {written.scope}")


@policy.command()
def show() -> None:
    """Print the policy in force."""
    current = read_policy(settings().attestations)
    click.echo(f"policy: quorum {current.quorum}, scope {current.scope}")
