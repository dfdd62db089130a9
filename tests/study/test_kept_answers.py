"""A command's kept answers (fma_bands/study/kept_answers.py): keyed by everything they were made
from, pruned among themselves, never pushing out a kept report."""

from sqlmodel import select

from fma_bands.store.db import make_engine, session_scope, upgrade
from fma_bands.store.models import KeptReport
from fma_bands.study import kept_answers
from fma_bands.study.kept_answers import ANSWER, KEEP, answer_key, keep_answer, kept_answer
from fma_bands.study.kept_reports import STATE, prune

HEAD = (7, "sha256:ab")
FILES = "f" * 64


def key(**changes):
    given = {"head": HEAD, "files": FILES, "options": {"json": True, "seed": 1}, **changes}
    return answer_key("agreement", **given)


def test_every_input_is_in_the_key():
    assert key() == key()
    assert key().startswith(ANSWER)
    others = [
        key(head=(8, "sha256:ab")),
        key(head=(7, "sha256:cd")),
        key(files="e" * 64),
        key(options={"json": False, "seed": 1}),
        key(options={"json": True, "seed": 2}),
        answer_key("registry", head=HEAD, files=FILES, options={"json": True, "seed": 1}),
    ]
    assert len({key(), *others}) == len(others) + 1
    # Without a recorded state or with a file that cannot be read, nothing is kept.
    assert key(head=None) is None and key(files=None) is None


def test_the_code_is_in_the_key(monkeypatch):
    before = key()
    monkeypatch.setattr(kept_answers, "code_digest", lambda *libraries: "another fma-bands")
    assert key() != before


def test_only_the_newest_answers_are_kept_and_reports_stay(tmp_path):
    engine = make_engine(f"sqlite:///{tmp_path / 'kept.db'}")
    upgrade(engine)
    with session_scope(engine) as s:
        s.add(KeptReport(key="a" * 64, body="{}"))  # a report
        s.add(KeptReport(key=STATE + "b" * 64, body="c" * 64))  # a state
    keys = [key(head=(n, "sha256:ab")) for n in range(KEEP + 3)]
    for n, k in enumerate(keys):
        with session_scope(engine) as s:
            keep_answer(s, k, f"answer {n}\n")
    with session_scope(engine) as s:
        kept = {row.key for row in s.exec(select(KeptReport))}
        assert kept_answer(s, keys[-1]) == f"answer {KEEP + 2}\n"
        assert kept_answer(s, None) is None
    assert sum(k.startswith(ANSWER) for k in kept) == KEEP
    assert {"a" * 64, STATE + "b" * 64} <= kept
    # Reports are pruned among themselves: the answers do not count against them.
    with session_scope(engine) as s:
        prune(s, states=False)
        assert s.get(KeptReport, "a" * 64) is not None
        assert sum(row.key.startswith(ANSWER) for row in s.exec(select(KeptReport))) == KEEP
    engine.dispose()
