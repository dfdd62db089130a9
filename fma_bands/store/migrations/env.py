"""Alembic's environment: run on the connection fma_bands.store.db.upgrade hands over."""

from alembic import context

from fma_bands.store import models  # noqa: F401  (registers the tables)
from fma_bands.store.models import SQLModel

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=SQLModel.metadata,
    # SQLite cannot alter most of a table in place: batch mode copies it instead.
    render_as_batch=True,
)
with context.begin_transaction():
    context.run_migrations()
