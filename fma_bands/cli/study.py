"""`fma-bands init`, `demo`, `phase` and `mode`: setting up a study and running its phases."""

import click

from fma_bands.cli.base import cli, coordinator, done, settings, store, synced
from fma_bands.core.errors import AccessDenied, FmaBandsError

# The accounts `fma-bands demo` makes: demo only, printed, never secret.
DEMO_USERS = (
    {"pseudonym": "coordinator", "role": "coordinator", "passphrase": "coordinator-demo"},
    {
        "pseudonym": "rater-01",
        "role": "rater",
        "passphrase": "rater-01-demo",
        "specialty": "emergency medicine",
        "jurisdiction": "Australia",
        "years_post_registration": 9,
    },
    {
        "pseudonym": "rater-02",
        "role": "rater",
        "passphrase": "rater-02-demo",
        "specialty": "general medicine",
        "jurisdiction": "United Kingdom",
        "years_post_registration": 15,
    },
)


@cli.command()
def init() -> None:
    """Create the database (or bring it to the current schema) and load the vignettes."""
    from fma_bands.store.db import shown_url
    from fma_bands.study.state import study

    with store() as session:
        found, report = synced(session)
        current = study(session)
    click.echo(
        f"database {shown_url(settings().database_url)}: {len(found)} vignettes loaded ({report})"
    )
    click.echo(f"review phase {current.phase}, {current.mode} mode (round {current.round})")
    done(0 if found.ok else 1)


@cli.command()
def demo() -> None:
    """Set up a ready demo study (coordinator and two raters) and say how to sign in.

    Refused on a database that already holds a study: the demo accounts' passphrases are
    printed, so they never join a real one."""
    from fma_bands.store.db import shown_url
    from fma_bands.study.enrolment import create_user
    from fma_bands.study.governance import set_policy
    from fma_bands.study.users import has_users, require_user

    folder = settings().attestations
    with store() as session:
        if has_users(session):
            raise FmaBandsError(
                f"{shown_url(settings().database_url)} already holds a study: `fma-bands demo` "
                "only sets up a new one. Give another --db (or delete that database file) to start "
                "over."
            )
        if any(folder.glob("*.dsse.json")):
            raise FmaBandsError(
                f"{folder} already holds another study's signed records: `fma-bands demo` "
                "needs an attestations folder of its own (give another --attestations)."
            )
        found, _ = synced(session)
        root = DEMO_USERS[0]["passphrase"]
        for fields in DEMO_USERS:
            create_user(session, actor="demo", folder=folder, root_passphrase=root, **fields)
        set_policy(
            session,
            folder,
            actor=require_user(session, "coordinator"),
            passphrase=root,
            quorum=1,
            scope="warn",
        )
    click.echo(f"Demo study ready in {shown_url(settings().database_url)}: {len(found)} vignettes.")
    click.echo("Run `streamlit run app.py` and sign in with one of these (demo only, not secret):")
    for fields in DEMO_USERS:
        click.echo(
            f"  {fields['pseudonym']:<12} passphrase {fields['passphrase']:<17} ({fields['role']})"
        )
    click.echo(
        "These are demo accounts: their passphrases are printed here, so the raters' signed "
        "activation records say demo and the registry warns. A real rater is enrolled with a "
        "code and chooses their own passphrase."
    )


@cli.command()
@click.argument("state", required=False, type=click.Choice(["open", "closed"]))
def phase(state: str | None) -> None:
    """Show the phase of the current round, or close it, as `fma-bands round close` does (a
    closed round is never reopened: see `fma-bands round`)."""
    from fma_bands.study.rounds import close_round
    from fma_bands.study.state import study

    with store() as session:
        current = study(session)
        number, shown = current.round, str(current.phase)
        if state:
            actor = coordinator(session)
            if state == "closed":
                closed = close_round(session, actor=actor, folder=settings().attestations)
                number, shown = closed.number, closed.phase
            elif current.phase == "closed":
                raise AccessDenied(
                    f"round {number} is closed and a closed round is never reopened: open round "
                    "2 for the bands still in dispute instead (fma-bands round open 2)"
                )
    click.echo(f"review phase {shown}" + (f" (round {number})" if number > 1 else ""))


@cli.command()
@click.argument("state", required=False, type=click.Choice(["review", "blind"]))
def mode(state: str | None) -> None:
    """Show the review mode, or set it."""
    from fma_bands.study.state import set_mode, study

    with store() as session:
        current = study(session)
        if state:
            current = set_mode(session, actor=coordinator(session), mode=state)
    click.echo(f"{current.mode} mode")
