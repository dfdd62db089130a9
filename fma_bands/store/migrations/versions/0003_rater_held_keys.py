"""Rater-held passphrases and keys (issue 9): enrolment codes, a key history, sign-in throttling.

A user's key pair moves to signing_key (one row per key, retired ones kept); the passphrase hash
may be empty until the person activates the account with a one-time enrolment code. Accounts
made before this revision keep their key and passphrase; raters among them are marked `demo`:
their passphrase was chosen by whoever enrolled them, not by them, and their records say so.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

WHEN = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "signing_key",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("user_id", sa.Integer(), sa.ForeignKey("user.id"), nullable=False),
        sa.Column("keyid", sa.String(), nullable=False, unique=True),
        sa.Column("public_key", sa.String(), nullable=False),
        sa.Column("encrypted_private_key", sa.String(), nullable=False),
        sa.Column("created_at", WHEN, nullable=False),
        sa.Column("retired_at", WHEN, nullable=True),
    )
    op.create_index("ix_signing_key_user_id", "signing_key", ["user_id"])
    op.execute(
        "INSERT INTO signing_key (user_id, keyid, public_key, encrypted_private_key, created_at) "
        'SELECT id, keyid, public_key, encrypted_private_key, created_at FROM "user" '
        "WHERE keyid IS NOT NULL AND public_key IS NOT NULL AND encrypted_private_key IS NOT NULL"
    )
    with op.batch_alter_table("user") as batch:
        batch.add_column(sa.Column("enrolment_code_hash", sa.String(), nullable=True))
        batch.add_column(sa.Column("enrolment_code_expires_at", WHEN, nullable=True))
        batch.add_column(sa.Column("activated_at", WHEN, nullable=True))
        batch.add_column(sa.Column("demo", sa.Boolean(), nullable=False, server_default=sa.false()))
        batch.alter_column("passphrase_hash", existing_type=sa.String(), nullable=True)
        batch.drop_column("public_key")
        batch.drop_column("keyid")
        batch.drop_column("encrypted_private_key")
    # Every rater so far had their passphrase set by whoever enrolled them.
    op.execute('UPDATE "user" SET activated_at = created_at')
    op.execute("UPDATE \"user\" SET demo = true WHERE role = 'rater'")
    op.create_table(
        "sign_in_throttle",
        sa.Column("key", sa.String(), primary_key=True),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("last_failure_at", WHEN, nullable=True),
    )
    op.create_table(
        "app_secret",
        sa.Column("name", sa.String(), primary_key=True),
        sa.Column("value", sa.String(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("app_secret")
    op.drop_table("sign_in_throttle")
    with op.batch_alter_table("user") as batch:
        batch.add_column(sa.Column("public_key", sa.String(), nullable=True))
        batch.add_column(sa.Column("keyid", sa.String(), nullable=True))
        batch.add_column(sa.Column("encrypted_private_key", sa.String(), nullable=True))
    op.execute(
        'UPDATE "user" SET public_key = k.public_key, keyid = k.keyid, '
        "encrypted_private_key = k.encrypted_private_key FROM signing_key AS k "
        'WHERE k.user_id = "user".id AND k.retired_at IS NULL'
    )
    op.execute("UPDATE \"user\" SET passphrase_hash = '' WHERE passphrase_hash IS NULL")
    with op.batch_alter_table("user") as batch:
        batch.drop_column("demo")
        batch.drop_column("activated_at")
        batch.drop_column("enrolment_code_expires_at")
        batch.drop_column("enrolment_code_hash")
        batch.alter_column("passphrase_hash", existing_type=sa.String(), nullable=False)
    op.drop_index("ix_signing_key_user_id", "signing_key")
    op.drop_table("signing_key")
