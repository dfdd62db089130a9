"""The schema the migrations build is the one the models describe, on SQLite and PostgreSQL:
a column or table added to models.py without its revision (or the reverse) fails here."""

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlmodel import SQLModel

from fma_bands.store import models  # noqa: F401  (registers the tables)


def test_the_migrated_schema_matches_the_models(engine):
    with engine.connect() as connection:
        differences = compare_metadata(MigrationContext.configure(connection), SQLModel.metadata)
    assert differences == []
