"""Who reviews what: the coordinator's additions and removals of raters per band,
per vignette or per sub-action (assignment); bands no change covers go by specialty scope.

Revision ID: 0030
Revises: 0020
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op

revision = "0030"
down_revision = "0020"
branch_labels = None
depends_on = None

WHEN = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "assignment",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("rater_id", sa.Integer(), sa.ForeignKey("user.id"), nullable=False),
        sa.Column("vignette_id", sa.String(), sa.ForeignKey("vignette.id"), nullable=True),
        sa.Column("sub_action", sa.String(), nullable=True),
        sa.Column("assigned", sa.Boolean(), nullable=False),
        sa.Column("made_by", sa.String(), nullable=False),
        sa.Column("made_at", WHEN, nullable=False),
    )
    op.create_index("ix_assignment_rater_id", "assignment", ["rater_id"])


def downgrade() -> None:
    op.drop_index("ix_assignment_rater_id", table_name="assignment")
    op.drop_table("assignment")
