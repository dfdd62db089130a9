"""Reviews bind the whole proposal (issue 9): band digest, whole-proposal digest, round, and who
entered a hand-back and when the rater confirmed it.

`proposal_digest` used to be the digest of the proposed band alone; it moves to `band_digest`,
and `proposal_digest` becomes the digest of the whole proposal the rater saw. For reviews made
before this revision that is not known, so it is left empty: those reviews show as changed
since they were made, and the rater revises them before they can be signed.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

WHEN = sa.DateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table("review") as batch:
        batch.add_column(sa.Column("band_digest", sa.String(), nullable=True))
        batch.add_column(sa.Column("round", sa.Integer(), nullable=False, server_default="1"))
        batch.add_column(sa.Column("entered_by", sa.String(), nullable=True))
        batch.add_column(sa.Column("confirmed_at", WHEN, nullable=True))
    # Who entered an earlier hand-back is in the audit log (handback_imported), not guessed here.
    op.execute("UPDATE review SET band_digest = proposal_digest, proposal_digest = NULL")


def downgrade() -> None:
    op.execute("UPDATE review SET proposal_digest = band_digest")
    with op.batch_alter_table("review") as batch:
        batch.drop_column("confirmed_at")
        batch.drop_column("entered_by")
        batch.drop_column("round")
        batch.drop_column("band_digest")
