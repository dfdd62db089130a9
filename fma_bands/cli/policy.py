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
from fma_bands.evidence.policy import SCOPES, Policy


@cli.group()
def policy() -> None:
    """The registry policy: a root-signed record of the study's log."""


@policy.command("set")
@click.option("--quorum", type=Whole(), required=True)
@click.option("--scope", type=click.Choice(SCOPES), required=True)
@click.option(
    "--chair",
    metavar="NAME",
    help="The enrolled rater who may decide a band still in dispute after round 2 (the "
    "chair's decision); without it the policy names no chair.",
)
def set_(quorum: int, scope: str, chair: str | None) -> None:
    """Sign a new policy record (audited); with a steward, it takes effect once they approve."""
    from fma_bands.study.governance import policy_in_force, set_policy

    with store() as session:
        actor = coordinator(session)
        before = policy_in_force(session)
        written = set_policy(
            session,
            settings().attestations,
            actor=actor,
            passphrase=acting_passphrase(),
            quorum=quorum,
            scope=scope,
            chair=chair,
        )
        in_force = policy_in_force(session)
    click.echo(f"policy signed: {_said(written)}")
    if before is not None and before.chair and written.chair != before.chair:
        click.echo(
            f"{before.chair} is no longer the chair: their decisions settle no band now"
            + ("" if written.chair else " (the policy names no chair; --chair NAME names one)")
        )
    if in_force != written:
        click.echo("it takes effect once the steward approves it (fma-bands steward sign)")


def _said(policy: Policy) -> str:
    said = f"quorum {policy.quorum}, scope {policy.scope}"
    return said + (f", chair {policy.chair}" if policy.chair else "")


@policy.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def show(as_json: bool) -> None:
    """Print the policy in force (exit 1 when none is: nothing is granted then)."""
    from fma_bands.core.errors import FmaBandsError
    from fma_bands.study.governance import policy_in_force

    with store() as session:
        current = policy_in_force(session)
    if as_json:
        # Scripts read the same keys whether or not a chair is named (the signed record
        # itself leaves `chair` out when there is none).
        shown = {**current.as_dict(), "chair": current.chair} if current else None
        print_json({"policy": shown})
        done(0 if current else 1)
    if current is None:
        raise FmaBandsError("no policy is in force: nothing is granted until one is set")
    click.echo(f"policy: {_said(current)}")
