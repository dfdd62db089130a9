"""`fma-bands identity set`, `reveal` and `check`: a rater's private identity and commitment."""

import click

from fma_bands.cli.base import (
    acting_passphrase,
    cli,
    coordinator,
    done,
    read_yaml,
    settings,
    store,
)
from fma_bands.core.protocol import IDENTITY_FIELDS


@cli.group()
def identity() -> None:
    """A rater's private identity and its published commitment."""


@identity.command("set")
@click.argument("name")
@click.option(
    "--from",
    "source",
    required=True,
    metavar="FILE",
    help=f"YAML with exactly the keys {', '.join(IDENTITY_FIELDS)}.",
)
def set_(name: str, source: str) -> None:
    """Record rater NAME's private identity from a YAML file (sealed at rest), and sign its
    commitment into the study's roster with your root key."""
    from fma_bands.study.identity import set_identity

    data = read_yaml(source, "identity file")
    with store() as session:
        actor = coordinator(session)
        commitment = set_identity(
            session,
            actor=actor,
            pseudonym=name,
            record=data,
            key_path=settings().identity_key,
            passphrase=acting_passphrase(),
            folder=settings().attestations,
            source=source,
        )
    click.echo(
        f"identity of {name} recorded; commitment {commitment}, signed into the study's roster"
    )


@identity.command()
@click.argument("name")
def reveal(name: str) -> None:
    """Print the private record with its salt, for an editor (audited)."""
    from fma_bands.study.identity import reveal_identity, revealed_text

    with store() as session:
        revealed = reveal_identity(
            session, actor=coordinator(session), pseudonym=name, key_path=settings().identity_key
        )
    click.echo(revealed_text(revealed), nl=False)


@identity.command()
@click.argument("file", metavar="FILE")
def check(file: str) -> None:
    """Check a revealed record against the published commitment."""
    from fma_bands.evidence.log import read_evidence
    from fma_bands.study.identity import check_revealed

    revealed = read_yaml(file, "revealed identity")
    ok, message = check_revealed(revealed, read_evidence(settings().attestations).records())
    click.echo(f"{file}: {message}")
    done(0 if ok else 1)
