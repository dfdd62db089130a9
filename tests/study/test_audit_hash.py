"""verify hashes the audit log from its stored text; these tests hold that to the plain way, which
reads every event through the model, on SQLite and PostgreSQL, for ordinary and hostile rows.
Content stored in a form fma-bands never writes is an edit both ways."""

import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select, text
from sqlalchemy.exc import DBAPIError, SQLAlchemyError
from sqlmodel import Session, col

from fma_bands.core.canonical import (
    canonical_json,
    canonical_text_float_free,
    canonical_text_of_string,
    loads_float_free,
)
from fma_bands.store.db import session_scope
from fma_bands.store.models import AuditEvent
from fma_bands.study import audit
from fma_bands.study.audit_hash import (
    StoredEvent,
    _digest_of_stored_text,
    _document_json,
    columns,
    content_digests,
    event_hash,
    stored_events,
)

DB_SETTINGS = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# Text as a payload may hold it, lone surrogates (written as JSON escapes) included.
CHARS = st.characters() | st.sampled_from(["\ud800", "\udfff", "\u2028", "\x00", '"', "\\", "é"])
KEYS = st.text(CHARS, max_size=4)


def json_values(scalars):
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
        max_leaves=8,
    )


FLOAT_FREE = json_values(st.none() | st.booleans() | st.integers() | st.text(CHARS, max_size=6))
ANY_JSON = json_values(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(CHARS, max_size=6)
)
# Stored payload text no writer of this app makes, but a hand with SQL might.
HOSTILE_PAYLOADS = [
    '{"a": 1.0}',
    '{"a": 1e2}',
    '{"a": -0.0}',
    '{"a": 1E400}',
    '{"a": NaN}',
    "[Infinity, -Infinity]",
    '{"a": -0}',
    '{"a": 1, "a": 2}',
    '{"\\u0061": "\\u00e9\\ud83d\\ude00"}',
    '{"a": "\\ud800"}',
    '{"a": "\\u0000"}',
    " \n[]\t",
    "null",
    '"text"',
    "5",
    '{"n": ' + "9" * 5000 + "}",
    "[" * 50 + "]" * 50,
    "[" * 3000 + "]" * 3000,
    "{bad",
    '{"x": 1} trailing',
    "\ufeff{}",
    "",
]


@st.composite
def payload_texts(draw, values=ANY_JSON):
    """A payload as stored text: JSON in any of the spellings json.dumps can give, or hostile."""
    if draw(st.integers(0, 4)) == 4:
        return draw(st.sampled_from(HOSTILE_PAYLOADS))
    value = draw(values)
    options = {
        "sort_keys": draw(st.booleans()),
        "separators": draw(st.sampled_from([None, (",", ":"), (" ,", ":  ")])),
        "indent": draw(st.sampled_from([None, 2])),
    }
    spelled = json.dumps(value, ensure_ascii=draw(st.booleans()), **options)
    if not _utf8(spelled):  # a lone surrogate can be stored only as an escape
        spelled = json.dumps(value, ensure_ascii=True, **options)
    return spelled


def _utf8(s: str) -> bool:
    try:
        s.encode()
    except UnicodeEncodeError:
        return False
    return True


AWARE = st.datetimes(
    min_value=datetime(1900, 1, 1),
    max_value=datetime(2100, 1, 1),
    timezones=st.just(UTC)
    | st.builds(timezone, st.timedeltas(timedelta(hours=-23), timedelta(hours=23))),
)


SQLITE_INTS = st.integers(-(2**63), 2**63 - 1)
UTF8_TEXT = st.text(st.characters(codec="utf-8"), max_size=8)  # a column of text holds no other


def mostly(ordinary, odd):
    """`ordinary` five times in six, else `odd`: a row or two of a log tampered here and there."""
    return st.integers(0, 5).flatmap(lambda roll: odd if roll == 5 else ordinary)


@st.composite
def sqlite_at_values(draw):
    """`at` as SQLite may hold it: as SQLAlchemy writes it, other spellings, and nonsense."""
    when = draw(AWARE).astimezone(UTC)
    stored = when.replace(tzinfo=None).isoformat(sep=" ", timespec="microseconds")
    odd = st.sampled_from(
        [
            when.isoformat(),  # a T and +00:00
            when.astimezone(timezone(timedelta(hours=5, minutes=30))).isoformat(sep=" "),
            when.replace(tzinfo=None).isoformat(sep=" ", timespec="seconds"),
            stored.replace(".", ","),
            stored[:10],
            stored.replace("-", "\uff10", 1),  # a full-width digit where a hyphen was
            "２０２６-12-01 16:01:07.095213",  # full-width digits
            "2026-13-01 16:01:07.095213",
            "2026-02-30 16:01:07.095213",
            "0000-01-01 00:00:00.000000",
            "yesterday",
            "",
        ]
    )
    return draw(
        mostly(
            st.just(stored),
            odd
            | st.from_regex(
                r"[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}", fullmatch=True
            )
            | SQLITE_INTS
            | st.just(1.5),
        )
    )


@st.composite
def stored_rows(draw, dialect: str):
    """1-4 rows of audit_event, column by column as SQL could write them on this dialect."""
    rows = []
    for i in range(draw(st.integers(1, 4))):
        if dialect == "sqlite":
            at = draw(sqlite_at_values())
            actor = draw(mostly(st.none() | UTF8_TEXT, SQLITE_INTS | st.binary(max_size=3)))
            kind = draw(mostly(UTF8_TEXT, SQLITE_INTS | st.just(2.5)))
            payload = draw(
                mostly(payload_texts(), SQLITE_INTS | st.builds(str.encode, payload_texts()))
            )
        else:
            pg_text = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=8)
            at = draw(AWARE)
            actor = draw(st.none() | pg_text)
            kind = draw(pg_text)
            payload = draw(payload_texts())
        prev_hash = draw(st.sampled_from([audit.GENESIS, "sha256:forged", f"sha256:{i}"]))
        rows.append(
            {
                "seq": i + 1,
                "at": at,
                "actor": actor,
                "kind": kind,
                "payload": payload,
                "prev_hash": prev_hash,
                "hash": f"sha256:h{i}",
            }
        )
    return rows


def put(engine, rows: list[dict]) -> bool:
    """Replace the log with these rows by raw SQL; False if the database refuses one of them."""
    postgres = engine.dialect.name == "postgresql"
    payload = "CAST(:payload AS json)" if postgres else ":payload"
    insert = text(
        "INSERT INTO audit_event (seq, at, actor, kind, payload, prev_hash, hash) "
        f"VALUES (:seq, :at, :actor, :kind, {payload}, :prev_hash, :hash)"
    )
    try:
        with engine.begin() as conn:
            conn.execute(text("DELETE FROM audit_event"))
            for row in rows:
                conn.execute(insert, row)
    except DBAPIError:
        return False
    return True


def outcome(compute):
    """What computing gives: its value, or the exception it raises (as the CLI would word it)."""
    try:
        return ("value", compute())
    except SQLAlchemyError as exc:
        return (type(exc), str(getattr(exc, "orig", exc)))
    except Exception as exc:
        return (type(exc), str(exc))


def written_form(event: StoredEvent) -> bool:
    """Stored as fma-bands writes an event: text in every text column (actor may be NULL) and,
    on SQLite, `at` as SQLAlchemy writes a datetime (PostgreSQL hands back a datetime)."""
    texts = (event.kind, event.payload, event.prev_hash)
    if not all(isinstance(v, str) for v in texts) or not isinstance(event.actor, str | None):
        return False
    if not isinstance(event.at, str):
        return isinstance(event.at, datetime)
    try:
        parsed = datetime.fromisoformat(event.at)
    except ValueError:
        return False
    written = parsed.isoformat(sep=" ", timespec="microseconds")
    return parsed.tzinfo is None and written == event.at


def plain_digests(session) -> list[str | None]:
    """Every event in the written form read through the model and hashed by event_hash; None
    (edited) for any other, and for one the model cannot read or hash."""
    digests: list[str | None] = []
    for event in stored_events(session):
        if not written_form(event):
            digests.append(None)
            continue
        try:
            row = session.execute(select(*columns()).where(col(AuditEvent.seq) == event.seq)).one()
            digest = event_hash(
                at=row.at,
                actor=row.actor,
                kind=row.kind,
                payload=row.payload,
                prev_hash=row.prev_hash,
            )
        except (ValueError, TypeError, RecursionError):
            digest = None  # a float, a lone surrogate, nesting deeper than Python parses
        digests.append(digest)
    return digests


def fast_digests(session) -> list[str | None]:
    return list(content_digests(stored_events(session)))


def plain_verify(session, expected_head=None) -> audit.AuditReport:
    """verify as it was: every event through the model, and every one through _check."""
    # The columns every row can be read by; its content through the model, one event at a time.
    places = (
        col(AuditEvent.seq),
        col(AuditEvent.kind),
        col(AuditEvent.prev_hash),
        col(AuditEvent.hash),
    )
    rows = session.execute(select(*places).order_by(col(AuditEvent.seq))).all()
    seq_of_hash = {row.hash: row.seq for row in rows}
    problems: list[audit.AuditProblem] = []
    previous = None
    for row, digest in zip(rows, plain_digests(session), strict=True):
        problems.extend(audit._check(row, previous, seq_of_hash, digest == row.hash))
        previous = row
    last = None if previous is None else (previous.seq, previous.hash)
    if expected_head is not None:
        hash_of_seq = {row.seq: row.hash for row in rows}
        problems.extend(audit._check_head(expected_head, hash_of_seq, seq_of_hash, last))
    return audit.AuditReport(ok=not problems, n_events=len(rows), head=last, problems=problems)


# --- the pieces, without a database ------------------------------------------------------------


@given(FLOAT_FREE)
def test_float_free_parsing_and_encoding_agree_with_canonical_json(value):
    spelled = json.dumps(value)  # as SQLAlchemy's JSON type stores it
    parsed = loads_float_free(spelled)
    assert parsed == json.loads(spelled)
    try:
        expected = canonical_json(json.loads(spelled))
    except UnicodeEncodeError:  # a lone surrogate: canonical JSON is UTF-8, and has none
        expected = None
    encoded = canonical_text_float_free(parsed)
    assert (encoded.encode() if _utf8(encoded) else None) == expected


@given(st.none() | st.text())
def test_a_string_or_none_is_encoded_as_canonical_json_encodes_it(text):
    try:
        expected = canonical_json(text)
    except UnicodeEncodeError:  # a lone surrogate, as above
        expected = None
    encoded = canonical_text_of_string(text)
    assert (encoded.encode() if _utf8(encoded) else None) == expected


@given(st.text(max_size=12) | payload_texts())
def test_float_free_parsing_refuses_what_json_loads_would_give_a_float(spelled):
    try:
        expected = json.loads(spelled)
    except (ValueError, RecursionError) as exc:
        with pytest.raises(type(exc)):
            loads_float_free(spelled)
        return
    if "float" in repr(_types(expected)):
        with pytest.raises(ValueError, match="a float in JSON"):
            loads_float_free(spelled)
    else:
        assert loads_float_free(spelled) == expected


def _types(value) -> set[type]:
    if isinstance(value, dict):
        return {dict}.union(*(_types(v) for v in value.values()))
    if isinstance(value, list):
        return {list}.union(*(_types(v) for v in value))
    return {type(value)}


@given(AWARE, st.none() | st.text(), st.text(), FLOAT_FREE, st.text())
def test_stored_text_digest_is_event_hash(at, actor, kind, payload, prev_hash):
    """For every event record() can write, the fast way answers, and answers event_hash."""
    stored_payload = json.dumps(payload)  # what SQLAlchemy's JSON type writes
    utc = at.astimezone(UTC)
    sqlite_at = utc.replace(tzinfo=None).isoformat(sep=" ", timespec="microseconds")
    try:
        expected = event_hash(at=at, actor=actor, kind=kind, payload=payload, prev_hash=prev_hash)
    except UnicodeEncodeError:  # record() refuses these, and verify calls them edited
        expected = None
    for stored_at in (sqlite_at, utc):  # SQLite's text, PostgreSQL's datetime
        event = StoredEvent(1, stored_at, actor, kind, stored_payload, prev_hash, "")
        assert _digest_of_stored_text(event, {}) == expected
    if expected is not None:
        document = {
            "at": audit_iso(at),
            "actor": actor,
            "kind": kind,
            "payload": payload,
            "prev_hash": prev_hash,
        }
        payload_json = canonical_text_float_free(payload)
        body = _document_json(audit_iso(at), actor, kind, payload_json, prev_hash)
        assert body.encode() == canonical_json(document)


def audit_iso(at: datetime) -> str:
    return at.astimezone(UTC).isoformat(timespec="microseconds")


def test_a_repeated_payload_is_hashed_from_its_own_text():
    """The cache of payloads is keyed by their stored text, so two spellings never mix."""
    cache: dict[str, str] = {}
    at = "2026-12-01 16:01:07.095213"
    one = StoredEvent(1, at, "a", "k", '{"x": 1}', audit.GENESIS, "")
    other = StoredEvent(2, at, "a", "k", '{"x": 2}', audit.GENESIS, "")
    assert _digest_of_stored_text(one, cache) == _digest_of_stored_text(one, {})
    assert _digest_of_stored_text(other, cache) == _digest_of_stored_text(other, {})
    assert _digest_of_stored_text(one, cache) != _digest_of_stored_text(other, cache)


# --- on the database: stored text against reading through the model ---------------------------


@DB_SETTINGS
@given(data=st.data())
def test_stored_text_digests_are_the_plain_ones(engine, data):
    rows = data.draw(stored_rows(engine.dialect.name))
    if not put(engine, rows):
        return  # the database refused the row itself (PostgreSQL's json type, say)
    with Session(engine) as s:
        assert outcome(lambda: fast_digests(s)) == outcome(lambda: plain_digests(s))


def append(engine, payloads: list[dict]) -> list[tuple[int, str]]:
    heads = []
    for i, payload in enumerate(payloads):
        with session_scope(engine) as s:
            event = audit.record(s, kind=f"k{i % 2}", actor=None if i % 3 else "r", payload=payload)
            heads.append((event.seq, event.hash))
    return heads


TAMPERING = st.lists(
    st.tuples(
        st.sampled_from(["delete", "renumber", "payload", "prev_hash", "kind", "at"]),
        st.integers(1, 6),
        st.integers(-1, 9),
        payload_texts(),
    ),
    max_size=3,
)


@DB_SETTINGS
@given(
    payloads=st.lists(
        st.sampled_from([{}, {"a": 1}, {"b": [True, None]}, {"a": 1}]), min_size=1, max_size=6
    ),
    tampering=TAMPERING,
    head_at=st.integers(0, 5),
)
def test_verify_reports_what_the_plain_way_reports(engine, payloads, tampering, head_at):
    """Random tampering of a real log: the same report, word for word, as checking every event
    through the model and through _check."""
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM audit_event"))
    heads = append(engine, payloads)
    for action, seq, other, spelled in tampering:
        _tamper(engine, action, seq, other, spelled, heads)
    expected_head = heads[min(head_at, len(heads) - 1)]
    with Session(engine) as s:
        for kwargs in ({}, {"expected_head": expected_head}):
            fast = outcome(lambda kwargs=kwargs: str(audit.verify(s, **kwargs)))
            assert fast == outcome(lambda kwargs=kwargs: str(plain_verify(s, **kwargs)))
            if fast[0] == "value":
                assert audit.verify(s, **kwargs) == plain_verify(s, **kwargs)


def _tamper(engine, action, seq, other, spelled, heads) -> None:
    postgres = engine.dialect.name == "postgresql"
    statements = {
        "delete": ("DELETE FROM audit_event WHERE seq = :seq", {}),
        "renumber": ("UPDATE audit_event SET seq = :other WHERE seq = :seq", {}),
        "payload": (
            "UPDATE audit_event SET payload = "
            + ("CAST(:v AS json)" if postgres else ":v")
            + " WHERE seq = :seq",
            {"v": spelled},
        ),
        "prev_hash": (
            "UPDATE audit_event SET prev_hash = :v WHERE seq = :seq",
            {"v": heads[other % len(heads)][1] if other >= 0 else audit.GENESIS},
        ),
        "kind": ("UPDATE audit_event SET kind = :v WHERE seq = :seq", {"v": f"k{other}"}),
        "at": (
            "UPDATE audit_event SET at = at + interval '1 second' WHERE seq = :seq"
            if postgres
            else "UPDATE audit_event SET at = replace(at, ' ', 'T') WHERE seq = :seq",
            {},
        ),
    }
    statement, params = statements[action]
    try:
        with engine.begin() as conn:
            conn.execute(text(statement), {"seq": seq, "other": other, **params})
    except DBAPIError:
        pass  # a renumbering onto a taken seq, or text PostgreSQL's json refuses


# --- named cases ---------------------------------------------------------------------------------


def test_every_event_record_writes_is_hashed_from_its_stored_text(engine):
    """The fast way must answer for what the app writes, or verify is as slow as before."""
    append(engine, [{}, {"a": 1}, {"b": [True, None, "é"]}, {"n": 12345678901234567890}])
    with Session(engine) as s:
        events = stored_events(s)
        assert [type(e.payload) for e in events] == [str] * 4
        assert [_digest_of_stored_text(e, {}) for e in events] == [e.hash for e in events]


FLOAT_PAYLOADS = ['{"score": 0.5}', '{"n": 1.0}', '{"n": 1e2}', '{"n": [2E400]}', '{"x": NaN}']


@pytest.mark.parametrize("spelled", FLOAT_PAYLOADS)
def test_a_float_written_by_sql_is_edited_even_with_a_matching_hash(engine, spelled):
    """A float hashes unstably, so no hash vouches for one: not even one recomputed to match."""
    heads = append(engine, [{"a": 1}, {"b": 2}, {"c": 3}])
    if engine.dialect.name == "postgresql" and "NaN" in spelled:
        assert not put_payload(engine, 3, spelled)  # PostgreSQL's json type refuses NaN
        return
    assert put_payload(engine, 3, spelled)
    with Session(engine) as s:
        row = s.execute(select(*columns()).where(col(AuditEvent.seq) == 3)).one()
    document = {
        "at": audit_iso(row.at),
        "actor": row.actor,
        "kind": row.kind,
        "payload": json.loads(spelled),
        "prev_hash": row.prev_hash,
    }
    body = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    forged = "sha256:" + hashlib.sha256(body.encode()).hexdigest()
    with engine.begin() as conn:
        conn.execute(text("UPDATE audit_event SET hash = :h WHERE seq = 3"), {"h": forged})
    with Session(engine) as s:
        report = audit.verify(s, expected_head=heads[1])
        assert report == plain_verify(s, expected_head=heads[1])
    assert [(p.seq, p.kind) for p in report.problems] == [(3, "edited")]
    assert report.problems[0].message == (
        "event 3 (k0) was edited: its content no longer matches its hash"
    )


def put_payload(engine, seq: int, spelled: str) -> bool:
    payload = "CAST(:v AS json)" if engine.dialect.name == "postgresql" else ":v"
    try:
        with engine.begin() as conn:
            conn.execute(
                text(f"UPDATE audit_event SET payload = {payload} WHERE seq = :seq"),
                {"v": spelled, "seq": seq},
            )
    except DBAPIError:
        return False
    return True


@pytest.mark.parametrize(
    "spelled",
    ['{"a":1}', '{\n  "a": 1\n}', '{"\\u0061": 1}', '{"a": 2, "a": 1}', '{"a": -0, "a": 1}'],
)
def test_another_spelling_of_the_same_payload_is_intact_as_before(engine, spelled):
    """The hash covers the content, not its spelling: both ways decode the text before hashing."""
    append(engine, [{"b": 0}, {"a": 1}, {"c": 2}])
    assert put_payload(engine, 2, spelled)
    with Session(engine) as s:
        report = audit.verify(s)
        assert report.ok and report == plain_verify(s)


def test_another_spelling_of_the_same_instant_is_an_edit(tmp_path):
    """SQLite holds `at` as text; a spelling SQLAlchemy does not write, even of the same
    instant, was written by someone else."""
    from fma_bands.store.db import make_engine, upgrade

    engine = make_engine(f"sqlite:///{tmp_path / 'fma-bands.db'}")
    upgrade(engine)
    append(engine, [{"a": 1}, {"b": 2}])
    with engine.begin() as conn:
        conn.execute(text("UPDATE audit_event SET at = replace(at, ' ', 'T') WHERE seq = 1"))
        conn.execute(text("UPDATE audit_event SET at = at || '+00:00' WHERE seq = 2"))
    with Session(engine) as s:
        report = audit.verify(s)
        assert report == plain_verify(s)
    assert [(p.seq, p.kind) for p in report.problems] == [(1, "edited"), (2, "edited")]
    engine.dispose()


@pytest.mark.parametrize(
    "edit",
    [
        "at = '2026-02-30 10:00:00.000000'",  # a day that does not exist
        "payload = '{\"a\": 1'",  # text that is not JSON
        "payload = 7",  # not text at all
    ],
)
def test_content_the_model_cannot_read_is_reported_edited_not_a_crash(tmp_path, edit):
    """SQLite stores whatever an UPDATE writes. Content no fma-bands could have written is an
    edit of the log, and verify says so, naming the event, instead of failing."""
    report = verified_after_sql(tmp_path, f"UPDATE audit_event SET {edit} WHERE seq = 2")
    assert [(p.seq, p.kind) for p in report.problems] == [(2, "edited")]


def verified_after_sql(tmp_path, statement: str) -> audit.AuditReport:
    """audit.verify of a SQLite log of three events, after `statement` ran on it."""
    from fma_bands.store.db import make_engine, upgrade

    engine = make_engine(f"sqlite:///{tmp_path / 'fma-bands.db'}")
    upgrade(engine)
    append(engine, [{"a": 1}, {"b": 2}, {"c": 3}])
    with engine.begin() as conn:
        conn.execute(text(statement))
    with Session(engine) as s:
        report = audit.verify(s)
    engine.dispose()
    return report


@contextmanager
def column_of_type(engine, column: str, wanted: str) -> Iterator[None]:
    """audit_event's column changed to another type by SQL, its values converted, for the block;
    then the log emptied and the column given back its type (the database serves the session)."""
    with engine.begin() as conn:
        before = conn.execute(
            text(
                "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
                "WHERE attrelid = 'audit_event'::regclass AND attname = :column"
            ),
            {"column": column},
        ).scalar_one()
        conn.execute(text(f"ALTER TABLE audit_event ALTER COLUMN {column} TYPE {wanted}"))
    try:
        yield
    finally:
        with engine.begin() as conn:
            conn.execute(text("TRUNCATE audit_event RESTART IDENTITY"))
            conn.execute(
                text(
                    f"ALTER TABLE audit_event ALTER COLUMN {column} TYPE {before} "
                    f"USING {column}::{before}"
                )
            )


@pytest.mark.parametrize("seq", [2, 3], ids=["an event before the newest", "the newest event"])
def test_a_hash_stored_as_bytes_is_an_edit_said_as_text_and_as_json(tmp_path, seq):
    """SQLite stores what an UPDATE writes: an event's hash as a BLOB is an edit, and the report,
    its newest event's included, is said as text and as JSON without failing."""
    statement = f"UPDATE audit_event SET hash = CAST(hash AS BLOB) WHERE seq = {seq}"
    report = verified_after_sql(tmp_path, statement)
    assert (seq, "edited") in [(p.seq, p.kind) for p in report.problems]
    assert report.head == (3, None if seq == 3 else report.head[1])
    said = str(report)
    assert "head is event 3" in said and ("not a hash" in said) == (seq == 3)
    json.dumps({"head": report.head, "problems": [p.message for p in report.problems]})


@pytest.mark.postgres
@pytest.mark.parametrize(
    ("column", "wanted"),
    [
        ("hash", "bytea USING hash::bytea"),
        ("at", "text USING at::text"),
        ("at", "timestamp without time zone"),
    ],
)
def test_a_column_changed_to_another_type_by_sql_is_an_edit_not_a_crash(
    postgres_engine, column, wanted
):
    """On PostgreSQL, a column of the log changed to another type by ALTER TABLE (its values
    with it) holds what fma-bands never writes: every event is reported edited, and the report
    is said, never a failure to read it."""
    engine = postgres_engine
    with engine.begin() as conn:
        conn.execute(text("TRUNCATE audit_event RESTART IDENTITY"))
    append(engine, [{"a": 1}, {"b": 2}])
    with column_of_type(engine, column, wanted), Session(engine) as s:
        report = audit.verify(s)
    assert {(p.seq, p.kind) for p in report.problems} >= {(1, "edited"), (2, "edited")}
    assert "head is event 2" in str(report)
    json.dumps({"head": report.head, "problems": [p.message for p in report.problems]})


def test_verify_flushes_the_session_first_as_before(engine):
    """An event added to the session but not yet flushed is checked too, as it always was."""
    heads = append(engine, [{"a": 1}])
    with Session(engine) as s:
        at = datetime(2026, 12, 1, tzinfo=UTC)
        s.add(
            AuditEvent(seq=2, at=at, kind="k", payload={}, prev_hash=heads[0][1], hash="sha256:x")
        )
        report = audit.verify(s)
        assert report.n_events == 2 and [(p.seq, p.kind) for p in report.problems] == [
            (2, "edited")
        ]
        s.rollback()
        assert audit.verify(s).n_events == 1
