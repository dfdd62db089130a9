"""Baseline: the schema fma-bands had at commit f9c098a, before migrations.

Revision ID: 0001
Revises:
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

WHEN = sa.DateTime(timezone=True)


def upgrade() -> None:
    """Every table of the baseline in one function: alembic runs a revision as one upgrade(), and
    splitting a schema that must stay frozen would only hide its shape."""
    op.create_table(
        "audit_event",
        sa.Column("seq", sa.Integer(), primary_key=True),
        sa.Column("at", WHEN, nullable=False),
        sa.Column("actor", sa.String(), nullable=True),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("prev_hash", sa.String(), nullable=False),
        sa.Column("hash", sa.String(), nullable=False, unique=True),
    )
    op.create_table(
        "study_settings",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("mode", sa.String(), nullable=False),
        sa.Column("phase", sa.String(), nullable=False),
        sa.Column("updated_at", WHEN, nullable=False),
    )
    op.create_table(
        "user",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("pseudonym", sa.String(), nullable=False),
        sa.Column("role", sa.String(), nullable=False),
        sa.Column("passphrase_hash", sa.String(), nullable=False),
        sa.Column("specialty", sa.String(), nullable=True),
        sa.Column("jurisdiction", sa.String(), nullable=True),
        sa.Column("years_post_registration", sa.Integer(), nullable=True),
        sa.Column("public_key", sa.String(), nullable=True),
        sa.Column("keyid", sa.String(), nullable=True),
        sa.Column("encrypted_private_key", sa.String(), nullable=True),
        sa.Column("identity_sealed", sa.String(), nullable=True),
        sa.Column("identity_commitment", sa.String(), nullable=True),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("created_at", WHEN, nullable=False),
    )
    op.create_index("ix_user_pseudonym", "user", ["pseudonym"], unique=True)
    op.create_table(
        "vignette",
        sa.Column("id", sa.String(), primary_key=True),
        sa.Column("domain", sa.String(), nullable=False),
        sa.Column("ambiguity", sa.String(), nullable=True),
        sa.Column("clinical_core", sa.String(), nullable=False),
        sa.Column("tool_results", sa.JSON(), nullable=False),
        sa.Column("canary", sa.String(), nullable=False),
        sa.Column("proposals", sa.JSON(), nullable=False),
        sa.Column("source_path", sa.String(), nullable=False),
        sa.Column("present", sa.Boolean(), nullable=False),
        sa.Column("synced_at", WHEN, nullable=False),
    )
    op.create_table(
        "review",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("vignette_id", sa.String(), sa.ForeignKey("vignette.id"), nullable=False),
        sa.Column("sub_action", sa.String(), nullable=False),
        sa.Column("rater_id", sa.Integer(), sa.ForeignKey("user.id"), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("mode", sa.String(), nullable=False),
        sa.Column("verdict", sa.String(), nullable=True),
        sa.Column("band", sa.JSON(), nullable=False),
        sa.Column("answers", sa.JSON(), nullable=False),
        sa.Column("reason", sa.String(), nullable=True),
        sa.Column("context_digest", sa.String(), nullable=False),
        sa.Column("proposal_digest", sa.String(), nullable=True),
        sa.Column("origin", sa.String(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("supersedes_id", sa.Integer(), sa.ForeignKey("review.id"), nullable=True),
        sa.Column("created_at", WHEN, nullable=False),
        sa.Column("updated_at", WHEN, nullable=False),
        sa.Column("submitted_at", WHEN, nullable=True),
        sa.UniqueConstraint("vignette_id", "sub_action", "rater_id", "revision"),
    )
    op.create_index("ix_review_vignette_id", "review", ["vignette_id"])
    op.create_index("ix_review_rater_id", "review", ["rater_id"])


def downgrade() -> None:
    for table in ("review", "vignette", "user", "study_settings", "audit_event"):
        op.drop_table(table)
