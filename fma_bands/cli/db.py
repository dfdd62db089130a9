"""`fma-bands db upgrade` and `db current`: the database schema and its migrations."""

import click

from fma_bands.cli.base import cli, print_json, settings


@cli.group()
def db() -> None:
    """The database schema: which revision it is at, and upgrading it."""


@db.command()
def upgrade() -> None:
    """Bring the database to the schema this fma-bands needs (back it up first)."""
    from fma_bands.store.db import current_revision, make_engine, shown_url
    from fma_bands.store.db import upgrade as upgrade_schema

    engine = make_engine(settings().database_url)
    try:
        before = current_revision(engine)
        after = upgrade_schema(engine)
    finally:
        engine.dispose()
    url = shown_url(settings().database_url)  # never its password
    if before == after:
        click.echo(f"database {url}: already at revision {after}")
    else:
        click.echo(f"database {url}: upgraded from {before or 'no schema'} to {after}")


@db.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def current(as_json: bool) -> None:
    """Print the database's schema revision and the newest this fma-bands knows."""
    from fma_bands.store.db import current_revision, head_revision, make_engine, shown_url

    revision = None
    if not _missing_sqlite_file(settings().database_url):  # a check creates no database
        engine = make_engine(settings().database_url)
        try:
            revision = current_revision(engine)
        finally:
            engine.dispose()
    head = head_revision()
    url = shown_url(settings().database_url)  # never its password
    if as_json:
        print_json(
            {"database": url, "revision": revision, "head": head, "up_to_date": revision == head}
        )
        return
    state = "up to date" if revision == head else "run `fma-bands db upgrade`"
    click.echo(f"database {url}: revision {revision or 'none'} (head {head}; {state})")


def _missing_sqlite_file(url: str) -> bool:
    """A SQLite URL naming a file that does not exist (connecting would create it empty)."""
    from pathlib import Path

    from fma_bands.store.db import check_url, normalise_url

    parsed = check_url(normalise_url(url))  # a URL that cannot be used is refused by name
    name = parsed.database
    if parsed.get_backend_name() != "sqlite" or name in (None, "", ":memory:"):
        return False
    try:
        return not Path(name).exists()
    except OSError:  # a name the system refuses: connecting says so by name
        return False
