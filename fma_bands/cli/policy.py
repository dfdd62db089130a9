"""`fma-bands policy set` and `policy show`: the registry policy, a root-signed record of the
study's log (attestations/policy.yaml is its readable copy)."""

import click

from fma_bands.cli.base import (
    acting_passphrase,
    cli,
    coordinator,
    done,
    print_json,
    settings,
    store,
)
from fma_bands.cli.numbers import Whole
from fma_bands.evidence.policy import SCOPES


@cli.group()
def policy() -> None:
    """The registry policy: a root-signed record of the study's log."""


@policy.command("set")
@click.option("--quorum", type=Whole(), required=True)
@click.option("--scope", type=click.Choice(SCOPES), required=True)
def set_(quorum: int, scope: str) -> None:
    """Sign a new policy record (audited); with a steward, it takes effect once they approve."""
    from fma_bands.study.governance import policy_in_force, set_policy

    with store() as session:
        written = set_policy(
            session,
            settings().attestations,
            actor=coordinator(session),
            passphrase=acting_passphrase(),
            quorum=quorum,
            scope=scope,
        )
        in_force = policy_in_force(session)
    click.echo(f"policy signed: quorum {written.quorum}, scope {written.scope}")
    if in_force != written:
        click.echo("it takes effect once the steward approves it (fma-bands steward sign)")


@policy.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def show(as_json: bool) -> None:
    """Print the policy in force (exit 1 when none is: nothing is granted then)."""
    from fma_bands.core.errors import FmaBandsError
    from fma_bands.study.governance import policy_in_force

    with store() as session:
        current = policy_in_force(session)
    if as_json:
        print_json({"policy": current.as_dict() if current else None})
        done(0 if current else 1)
    if current is None:
        raise FmaBandsError("no policy is in force: nothing is granted until one is set")
    click.echo(f"policy: quorum {current.quorum}, scope {current.scope}")
