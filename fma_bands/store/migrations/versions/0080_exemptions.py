"""The harness's confounded-pair exemptions (issue 22): the entries the coordinator loads and
the raters' reviews of them.

Revision ID: 0080
Revises: 0070
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op

revision = "0080"
down_revision = "0070"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "exemption_entry",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("attribute", sa.String(), nullable=False),
        sa.Column("sub_action", sa.String(), nullable=False),
        sa.Column("direction", sa.String(), nullable=False),
        sa.Column("requires_adjudication", sa.Boolean(), nullable=False),
        sa.Column("age_gate", sa.JSON(), nullable=True),
        sa.Column("rationale", sa.Text(), nullable=True),
        sa.Column("digest", sa.String(), nullable=False),
        sa.Column("source", sa.String(), nullable=False),
        sa.Column("present", sa.Boolean(), nullable=False),
        sa.Column("loaded_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("attribute", "sub_action"),
    )
    op.create_table(
        "exemption_review",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("attribute", sa.String(), nullable=False),
        sa.Column("sub_action", sa.String(), nullable=False),
        sa.Column("rater_id", sa.Integer(), sa.ForeignKey("user.id"), nullable=False),
        sa.Column("round", sa.Integer(), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("verdict", sa.String(), nullable=False),
        sa.Column("direction", sa.String(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("entry_digest", sa.String(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_exemption_review_rater_id", "exemption_review", ["rater_id"])


def downgrade() -> None:
    op.drop_index("ix_exemption_review_rater_id", "exemption_review")
    op.drop_table("exemption_review")
    op.drop_table("exemption_entry")
