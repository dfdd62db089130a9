"""A study made before migrations existed survives the upgrade: the schema of commit f9c098a,
filled with a study that code of that commit ran (tests/fixtures/f9c098a), brought to head."""

import json
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import MetaData, inspect, select, text
from sqlalchemy.engine import Engine

from fma_bands.core.errors import ConflictError
from fma_bands.store.db import (
    BASELINE,
    HEAD,
    current_revision,
    head_revision,
    make_engine,
    session_scope,
    upgrade,
)
from fma_bands.store.models import AuditEvent, Review, SigningKey, User
from fma_bands.study import audit

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "f9c098a"
STUDY = json.loads((FIXTURES / "study.json").read_text())
TIMESTAMPS = {"at", "created_at", "updated_at", "submitted_at", "synced_at"}


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def empty_database(request, tmp_path):
    """A database with no schema at all, on each backend."""
    if request.param == "sqlite":
        engine = make_engine(f"sqlite:///{tmp_path / 'old.db'}")
        yield request.param, engine
        engine.dispose()
        return
    server = request.getfixturevalue("postgres_server")
    admin = make_engine(server)
    name = f"m_{uuid.uuid4().hex[:12]}"
    with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    engine = make_engine(server.rsplit("/", 1)[0] + f"/{name}")
    yield request.param, engine
    engine.dispose()
    with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f'DROP DATABASE "{name}" WITH (FORCE)'))
    admin.dispose()


def old_study(dialect: str, engine: Engine) -> None:
    """The f9c098a schema as create_all made it, and the study's rows as that code wrote them."""
    lines = (FIXTURES / f"schema.{dialect}.sql").read_text().splitlines()
    schema = "\n".join(line for line in lines if not line.startswith("--"))
    statements = [s for s in schema.split(";") if s.strip()]
    with engine.begin() as conn:
        for statement in statements:
            conn.execute(text(statement))
    meta = MetaData()
    meta.reflect(engine)
    with engine.begin() as conn:
        for table in meta.sorted_tables:
            rows = [
                {k: _when(v) if k in TIMESTAMPS else v for k, v in row.items()}
                for row in STUDY[table.name]
            ]
            conn.execute(table.insert(), rows)
        if dialect == "postgresql":
            # Rows inserted with their ids leave the sequences behind, as a restore would.
            for name, column in (("user", "id"), ("review", "id"), ("audit_event", "seq")):
                conn.execute(
                    text(
                        f"SELECT setval(pg_get_serial_sequence('\"{name}\"', '{column}'), "
                        f'(SELECT max({column}) FROM "{name}"))'
                    )
                )


def _when(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value).replace(tzinfo=UTC)


def test_a_study_from_before_migrations_is_upgraded_intact(empty_database):
    dialect, engine = empty_database
    old_study(dialect, engine)
    assert current_revision(engine) is None  # made by create_all: no alembic_version yet

    assert upgrade(engine) == head_revision()
    assert current_revision(engine) == head_revision() != BASELINE

    with session_scope(engine) as s:
        reviews = s.exec(select(Review).order_by(Review.id)).scalars().all()
        users = s.exec(select(User).order_by(User.id)).scalars().all()
        events = s.exec(select(AuditEvent).order_by(AuditEvent.seq)).scalars().all()
        report = audit.verify(s)
    assert report.ok, str(report)
    assert report.n_events == len(STUDY["audit_event"])
    for rows, stored, skip in (
        # 0004 moves the band digest out of proposal_digest (checked below).
        (reviews, STUDY["review"], {"proposal_digest"}),
        # active: dropped by 0002 (nothing read it); the key columns moved to signing_key in 0003.
        (users, STUDY["user"], {"active", "public_key", "keyid", "encrypted_private_key"}),
        (events, STUDY["audit_event"], set()),
    ):
        assert len(rows) == len(stored)
        for row, old in zip(rows, stored, strict=True):
            for key, value in old.items():
                if key in skip:
                    continue
                now = getattr(row, key)
                assert (now.isoformat() if isinstance(now, datetime) else now) == (
                    _when(value).isoformat() if key in TIMESTAMPS and value else value
                ), (key, row)
    assert "active" not in {c["name"] for c in inspect(engine).get_columns("user")}
    for row, old in zip(reviews, STUDY["review"], strict=True):
        assert row.band_digest == old["proposal_digest"]
    with session_scope(engine) as s:
        keys = {k.user_id: k for k in s.exec(select(SigningKey)).scalars()}
    for old in STUDY["user"]:
        if old["keyid"]:
            key = keys[old["id"]]
            assert (key.keyid, key.public_key, key.encrypted_private_key, key.retired_at) == (
                old["keyid"],
                old["public_key"],
                old["encrypted_private_key"],
                None,
            )


def test_the_upgraded_study_works_with_todays_code(empty_database):
    from fma_bands.core.vignettes import load_library
    from fma_bands.study.submissions import submitted_reviews
    from fma_bands.study.users import get_user, sign_in
    from tests.conftest import DEMO_VIGNETTES

    dialect, engine = empty_database
    old_study(dialect, engine)
    upgrade(engine)
    library = load_library([DEMO_VIGNETTES])
    with session_scope(engine) as s:
        assert sign_in(s, "rater-01", "rater-01-demo") is not None  # the old passphrase hash
        coordinator = get_user(s, "coordinator")
        submitted = submitted_reviews(s, library, viewer=coordinator, include_stale=True)
        assert len(submitted) == sum(1 for r in STUDY["review"] if r["status"] == "submitted")
        audit.record(s, kind="after_upgrade", actor="test", payload={})
    with session_scope(engine) as s:
        assert audit.verify(s).ok  # the chain goes on from the old head


def test_upgrading_twice_changes_nothing(empty_database):
    _, engine = empty_database
    assert upgrade(engine) == head_revision()
    assert upgrade(engine) == head_revision()


def test_the_head_known_without_alembic_is_alembics_head():
    # A new revision must move db.HEAD too, or databases at the old head would skip it.
    assert head_revision() == HEAD


def test_a_database_one_revision_behind_is_upgraded_not_skipped(empty_database):
    """The quick check at start recognises only a database at HEAD; one a revision behind still
    goes through alembic to head."""
    _, engine = empty_database
    assert upgrade(engine, "0040") == "0040"
    assert "kept_report" not in inspect(engine).get_table_names()
    assert upgrade(engine) == HEAD
    assert "kept_report" in inspect(engine).get_table_names()


def _rows(engine: Engine) -> dict[str, list[dict]]:
    """Every row of every table, by table, in primary-key order."""
    meta = MetaData()
    meta.reflect(engine)
    found: dict[str, list[dict]] = {}
    with engine.connect() as conn:
        for table in meta.sorted_tables:
            if table.name == "alembic_version":
                continue
            order = list(table.primary_key.columns) or list(table.columns)
            found[table.name] = [
                dict(row._mapping) for row in conn.execute(table.select().order_by(*order))
            ]
    return found


def test_0060_adds_the_signed_log_and_the_study_id_and_keeps_every_row(empty_database):
    """From 0050 (a study with data) to 0060: log_record as the LogRecord model has it, a
    study_id column on study_settings left empty, and every row of every older table as it was."""
    from fma_bands.store.models import LogRecord, StudySettings

    dialect, engine = empty_database
    old_study(dialect, engine)
    assert upgrade(engine, "0050") == "0050"
    tables = inspect(engine).get_table_names()
    assert "log_record" not in tables
    assert "study_id" not in {c["name"] for c in inspect(engine).get_columns("study_settings")}
    before = _rows(engine)
    assert sum(map(len, before.values())) > 0 and before["study_settings"]

    assert upgrade(engine, "0060") == "0060"
    inspector = inspect(engine)
    columns = {c["name"]: c for c in inspector.get_columns("log_record")}
    assert set(columns) == set(LogRecord.model_fields)
    assert {name for name, c in columns.items() if c["nullable"]} == {"about", "sealed_round"}
    assert inspector.get_pk_constraint("log_record")["constrained_columns"] == ["sequence"]
    constraints = inspector.get_unique_constraints("log_record")
    indexes = [i for i in inspector.get_indexes("log_record") if i["unique"]]
    unique = {tuple(u["column_names"]) for u in [*constraints, *indexes]}
    assert {("digest",), ("file_name",)} <= unique
    settings_columns = {c["name"]: c for c in inspector.get_columns("study_settings")}
    assert set(settings_columns) == set(StudySettings.model_fields)
    assert settings_columns["study_id"]["nullable"]

    after = _rows(engine)
    assert after.pop("log_record") == []
    assert set(after) == set(before)
    for name, rows in before.items():
        kept = [{k: row[k] for k in old} for row, old in zip(after[name], rows, strict=True)]
        assert kept == rows, name
        assert len(after[name]) == len(rows), name
    assert all(row["study_id"] is None for row in after["study_settings"])

    # Today's code writes and reads both, and a digest or file name is taken only once.
    record = {
        "digest": "sha256:" + "0" * 64,
        "kind": "root",
        "signer": "coordinator",
        "file_name": "000000-root-coordinator-000000000000.dsse.json",
        "envelope": "{}",
    }
    with session_scope(engine) as s:
        s.add(LogRecord(sequence=0, **record))
        s.get(StudySettings, before["study_settings"][0]["id"]).study_id = "fma-test"
    with session_scope(engine) as s:
        assert s.get(LogRecord, 0).envelope == "{}"
        assert s.get(StudySettings, before["study_settings"][0]["id"]).study_id == "fma-test"
    for other in ("digest", "file_name"):
        # Only the named field repeats; the store reports the violation as a conflict.
        changed = {**record, other: record[other].replace("0", "1")}
        with pytest.raises(ConflictError), session_scope(engine) as s:
            s.add(LogRecord(sequence=1, **changed))
    with session_scope(engine) as s:
        assert [r.sequence for r in s.exec(select(LogRecord)).scalars()] == [0]


def test_0070_adds_the_reviews_corrections_and_keeps_every_row(empty_database):
    """From 0060 (a study with reviews) to 0070: review.corrections, nullable JSON, empty on
    every review made before; the rest of every row as it was; and back down again."""
    dialect, engine = empty_database
    old_study(dialect, engine)
    assert upgrade(engine, "0060") == "0060"
    assert "corrections" not in {c["name"] for c in inspect(engine).get_columns("review")}
    before = _rows(engine)
    assert before["review"]

    assert upgrade(engine, "0070") == "0070"
    columns = {c["name"]: c for c in inspect(engine).get_columns("review")}
    assert columns["corrections"]["nullable"]
    after = _rows(engine)
    assert all(row.pop("corrections") is None for row in after["review"])
    assert after == before

    # Today's code stores an AMEND's corrections and reads them back as written.
    corrections = {"clause": "Within a month.", "disputed_span": None}
    first = before["review"][0]["id"]
    with session_scope(engine) as s:
        s.get(Review, first).corrections = corrections
    with session_scope(engine) as s:
        assert s.get(Review, first).corrections == corrections
