"""Kept agreement reports (issue 14): each report as computed, under the digest of its ratings,
so that the Agreement page and `fma-bands agreement` do not bootstrap the same ratings again.

Revision ID: 0050
Revises: 0040
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

revision = "0050"
down_revision = "0040"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "kept_report",
        sa.Column("key", sa.String(), primary_key=True),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("made_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("kept_report")
