"""The store's engine: URL normalisation, SQLite pragmas, UTC timestamps, atomic sessions."""

from datetime import datetime

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError, StatementError
from sqlmodel import select

from fma_bands.store.db import make_engine, normalise_url, session_scope
from fma_bands.store.models import Review, StudySettings
from fma_bands.study.state import study


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("postgres://u@h:5432/db", "postgresql+psycopg://u@h:5432/db"),
        ("postgresql://u@h/db", "postgresql+psycopg://u@h/db"),
        ("postgresql+psycopg://u@h/db", "postgresql+psycopg://u@h/db"),
        ("sqlite:///fma-bands.db", "sqlite:///fma-bands.db"),
    ],
)
def test_urls_are_normalised_to_psycopg3(given, expected):
    assert normalise_url(given) == expected


def test_sqlite_connections_enforce_foreign_keys_and_use_wal(tmp_path):
    engine = make_engine(f"sqlite:///{tmp_path / 'x.db'}")
    with engine.connect() as conn:
        assert conn.execute(text("PRAGMA foreign_keys")).scalar() == 1
        assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert conn.execute(text("PRAGMA busy_timeout")).scalar() == 15000
    engine.dispose()


def test_foreign_keys_hold_and_a_failed_session_writes_nothing(engine):
    with session_scope(engine) as s:
        study(s)  # the one study row (made by migration 0005, or on first use)
    # A session that changes it and then breaks a foreign key leaves it as it was.
    with pytest.raises(IntegrityError), session_scope(engine) as s:
        s.exec(select(StudySettings)).one().mode = "blind"
        s.flush()
        s.add(Review(vignette_id="nope", sub_action="admit", rater_id=99, context_digest="d"))
    with session_scope(engine) as s:
        assert [row.mode for row in s.exec(select(StudySettings))] == ["review"]


def test_timestamps_come_back_as_utc_and_naive_ones_are_refused(engine):
    with session_scope(engine) as s:
        study(s)
    with session_scope(engine) as s:
        stamp = s.exec(select(StudySettings)).one().updated_at
    assert stamp.utcoffset().total_seconds() == 0
    with pytest.raises(StatementError, match="naive datetime"), session_scope(engine) as s:
        row = s.exec(select(StudySettings)).one()
        row.updated_at = datetime(2026, 11, 29, 18, 0)
        s.flush()


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("before\x00after", "a NUL byte"),
        ("a line\x0bpasted from a word processor", r"U\+000B"),
        ("a bell \x07", r"U\+0007"),
    ],
)
def test_text_with_a_control_character_is_refused_by_field_and_nothing_written(engine, text, shown):
    """What is stored is signed and exported, where the bounded reader refuses such text: it is
    refused here, naming the field, before anything is written."""
    from fma_bands.core.errors import FmaBandsError

    with session_scope(engine) as s:
        study(s)
    with pytest.raises(FmaBandsError, match=shown) as refused, session_scope(engine) as s:
        s.exec(select(StudySettings)).one().mode = text
        s.flush()
    assert refused.value.field == "mode"
    with session_scope(engine) as s:
        assert [row.mode for row in s.exec(select(StudySettings))] == ["review"]
        # Tab and line breaks are text people type.
        s.exec(select(StudySettings)).one().mode = "review\twith\nbreaks\r\n"
        s.flush()
        s.rollback()
