"""The study's one settings row exists from the start (review mode, phase open), so two first
requests never race to create it.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        "INSERT INTO study_settings (id, mode, phase, updated_at) "
        "SELECT 1, 'review', 'open', CURRENT_TIMESTAMP "
        "WHERE NOT EXISTS (SELECT 1 FROM study_settings WHERE id = 1)"
    )


def downgrade() -> None:
    """Nothing to undo: the row is the one study() would have made on first use."""
