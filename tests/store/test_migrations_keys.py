"""The schema migrations that gave raters their own keys (0003, 0004) on a study made before them,
on SQLite and PostgreSQL: keys move to signing_key, reviews keep their band digest, nothing is lost,
and the tables the migrations make are the tables the models declare."""

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import text
from sqlmodel import SQLModel

from fma_bands.store.db import head_revision, make_engine, upgrade

WHEN = "2026-01-01 00:00:00+00:00"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def old_engine(request, tmp_path):
    """An empty database at revision 0002 (before 0003 and 0004)."""
    if request.param == "sqlite":
        engine = make_engine(f"sqlite:///{tmp_path / 'old.db'}")
        yield engine
        engine.dispose()
        return
    import uuid

    server = request.getfixturevalue("postgres_server")
    admin = make_engine(server)
    name = f"m_{uuid.uuid4().hex[:12]}"
    with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    engine = make_engine(server.rsplit("/", 1)[0] + f"/{name}")
    yield engine
    engine.dispose()
    with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f'DROP DATABASE "{name}" WITH (FORCE)'))
    admin.dispose()


def test_a_study_made_before_issue_9_survives_the_upgrade(old_engine):
    assert upgrade(old_engine, "0002") == "0002"
    with old_engine.begin() as c:
        c.execute(
            text(
                "INSERT INTO vignette (id, domain, clinical_core, tool_results, canary, proposals,"
                " source_path, present, synced_at) VALUES ('v1', 'triage', 'core', '{}', 'x',"
                " '[]', 'v1.yaml', true, :when)"
            ),
            {"when": WHEN},
        )
        for uid, name, role, key in (
            (1, "coordinator", "coordinator", None),
            (2, "r-1", "rater", "sha256:ab"),
        ):
            c.execute(
                text(
                    'INSERT INTO "user" (id, pseudonym, role, passphrase_hash, keyid, public_key,'
                    " encrypted_private_key, created_at) VALUES (:id, :name, :role, 'hash', :key,"
                    " :pk, :sealed, :when)"
                ),
                {
                    "id": uid,
                    "name": name,
                    "role": role,
                    "key": key,
                    "when": WHEN,
                    "pk": "pk" if key else None,
                    "sealed": "sealed" if key else None,
                },
            )
        c.execute(
            text(
                "INSERT INTO review (vignette_id, sub_action, rater_id, revision, status, mode,"
                " band, answers, context_digest, proposal_digest, origin, version, created_at,"
                " updated_at) VALUES ('v1', 'esi_acuity', 2, 1, 'submitted', 'review', 'null',"
                " '{}', 'c', 'sha256:band', 'handback', 1, :when, :when)"
            ),
            {"when": WHEN},
        )
    assert upgrade(old_engine) == head_revision()
    with old_engine.connect() as c:
        keys = c.execute(
            text("SELECT user_id, keyid, public_key, retired_at FROM signing_key")
        ).all()
        users = c.execute(
            text('SELECT pseudonym, passphrase_hash, demo, activated_at FROM "user" ORDER BY id')
        ).all()
        reviews = c.execute(
            text("SELECT band_digest, proposal_digest, round, entered_by FROM review")
        ).all()
    assert [tuple(k) for k in keys] == [(2, "sha256:ab", "pk", None)]
    assert [(u[0], u[1], bool(u[2]), u[3] is not None) for u in users] == [
        ("coordinator", "hash", False, True),
        ("r-1", "hash", True, True),  # a passphrase someone else chose: marked
    ]
    assert [tuple(r) for r in reviews] == [("sha256:band", None, 1, None)]


def test_the_migrations_make_exactly_the_models(old_engine):
    upgrade(old_engine)
    with old_engine.connect() as c:
        differences = compare_metadata(MigrationContext.configure(c), SQLModel.metadata)
    assert differences == []
