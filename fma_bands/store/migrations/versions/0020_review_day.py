"""A rater's working day: a confidence on each review, the review screen kept as the rater types
(screen_draft), and bands skipped for now or flagged for the coordinator (band_mark).

Revision ID: 0020
Revises: 0005
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0005"
branch_labels = None
depends_on = None

WHEN = sa.DateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table("review") as batch:
        batch.add_column(sa.Column("confidence", sa.String(), nullable=True))
    op.create_table(
        "screen_draft",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("rater_id", sa.Integer(), sa.ForeignKey("user.id"), nullable=False),
        sa.Column("vignette_id", sa.String(), sa.ForeignKey("vignette.id"), nullable=False),
        sa.Column("sub_action", sa.String(), nullable=False),
        sa.Column("entries", sa.JSON(), nullable=False),
        sa.Column("base_version", sa.Integer(), nullable=False),
        sa.Column("updated_at", WHEN, nullable=False),
        sa.UniqueConstraint("rater_id", "vignette_id", "sub_action"),
    )
    op.create_index("ix_screen_draft_rater_id", "screen_draft", ["rater_id"])
    op.create_table(
        "band_mark",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("rater_id", sa.Integer(), sa.ForeignKey("user.id"), nullable=False),
        sa.Column("vignette_id", sa.String(), sa.ForeignKey("vignette.id"), nullable=False),
        sa.Column("sub_action", sa.String(), nullable=False),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("note", sa.String(), nullable=True),
        sa.Column("created_at", WHEN, nullable=False),
        sa.Column("cleared_at", WHEN, nullable=True),
        sa.Column("cleared_by", sa.String(), nullable=True),
    )
    op.create_index("ix_band_mark_rater_id", "band_mark", ["rater_id"])


def downgrade() -> None:
    op.drop_index("ix_band_mark_rater_id", table_name="band_mark")
    op.drop_table("band_mark")
    op.drop_index("ix_screen_draft_rater_id", table_name="screen_draft")
    op.drop_table("screen_draft")
    with op.batch_alter_table("review") as batch:
        batch.drop_column("confidence")
