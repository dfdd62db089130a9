"""The study's signed log (issue 19): every signed record in one chain, kept in the store and
published to attestations/; the study's random id.

Revision ID: 0060
Revises: 0050
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op

revision = "0060"
down_revision = "0050"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "log_record",
        sa.Column("sequence", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("digest", sa.String(), nullable=False, unique=True),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("signer", sa.String(), nullable=False),
        sa.Column("about", sa.String(), nullable=True),
        sa.Column("file_name", sa.String(), nullable=False, unique=True),
        sa.Column("envelope", sa.Text(), nullable=False),
        sa.Column("sealed_round", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    with op.batch_alter_table("study_settings") as batch:
        batch.add_column(sa.Column("study_id", sa.String(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("study_settings") as batch:
        batch.drop_column("study_id")
    op.drop_table("log_record")
