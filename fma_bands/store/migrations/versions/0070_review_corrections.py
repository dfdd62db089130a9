"""A rater's corrections to the proposal they AMEND (issue 22): the clause, source, reasoning
and disputed span they changed, only the keys they changed; null when they changed none.

Revision ID: 0070
Revises: 0060
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op

revision = "0070"
down_revision = "0060"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("review") as batch:
        batch.add_column(sa.Column("corrections", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("review") as batch:
        batch.drop_column("corrections")
