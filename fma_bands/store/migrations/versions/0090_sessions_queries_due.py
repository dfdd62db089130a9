"""The clinician's day (issue 24): browser sessions that survive a reload, queries between the
coordinator and a rater on a band, and a due date per round.

Revision ID: 0090
Revises: 0080
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op

revision = "0090"
down_revision = "0080"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "browser_session",
        sa.Column("token_hash", sa.String(), primary_key=True),
        sa.Column("user_id", sa.Integer(), sa.ForeignKey("user.id"), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_seen_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index("ix_browser_session_user_id", "browser_session", ["user_id"])
    op.create_table(
        "query_message",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("vignette_id", sa.String(), sa.ForeignKey("vignette.id"), nullable=False),
        sa.Column("sub_action", sa.String(), nullable=False),
        sa.Column("rater_id", sa.Integer(), sa.ForeignKey("user.id"), nullable=False),
        sa.Column("author", sa.String(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("closes", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_query_message_rater_id", "query_message", ["rater_id"])
    op.create_table(
        "round_due",
        sa.Column("round", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("due_on", sa.Date(), nullable=False),
        sa.Column("set_by", sa.String(), nullable=False),
        sa.Column("set_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("round_due")
    op.drop_index("ix_query_message_rater_id", "query_message")
    op.drop_table("query_message")
    op.drop_index("ix_browser_session_user_id", "browser_session")
    op.drop_table("browser_session")
