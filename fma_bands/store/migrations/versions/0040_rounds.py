"""Rounds (issue 13): the study's current round beside its phase, and the bands (with their
raters) re-reviewed in a later round.

Revision ID: 0040
Revises: 0030
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op

revision = "0040"
down_revision = "0030"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("study_settings") as batch:
        batch.add_column(sa.Column("round", sa.Integer(), nullable=False, server_default="1"))
    op.create_table(
        "round_band",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("round", sa.Integer(), nullable=False),
        sa.Column("vignette_id", sa.String(), sa.ForeignKey("vignette.id"), nullable=False),
        sa.Column("sub_action", sa.String(), nullable=False),
        sa.Column("rater_id", sa.Integer(), sa.ForeignKey("user.id"), nullable=False),
        sa.Column("opened_by", sa.String(), nullable=False),
        sa.Column("opened_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("round", "vignette_id", "sub_action", "rater_id"),
    )
    op.create_index("ix_round_band_round", "round_band", ["round"])
    op.create_index("ix_round_band_rater_id", "round_band", ["rater_id"])


def downgrade() -> None:
    op.drop_index("ix_round_band_rater_id", table_name="round_band")
    op.drop_index("ix_round_band_round", table_name="round_band")
    op.drop_table("round_band")
    with op.batch_alter_table("study_settings") as batch:
        batch.drop_column("round")
