"""Round state under one lock (fma_bands.study.state.lock_study), on a real SQLite file and a real
PostgreSQL: ten raters submitting while the coordinator closes round 1, a kept draft racing the
close, and a submission racing the coordinator's removal of the band. Each write either lands
before the change or is refused after it; none is recorded after a change it was checked against.

The race is made certain rather than likely: the first writer to read what its write depends on
(the study's round, or the assignment) is held right after that read until the coordinator's
change has committed, or for HOLD seconds when the change waits for the writer (as it must)."""

import threading
from collections.abc import Callable
from datetime import datetime

import pytest
from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from fma_bands.core.actions import SUB_ACTIONS
from fma_bands.core.errors import FmaBandsError
from fma_bands.core.people import UserPublic
from fma_bands.core.vignettes import Library, load_library
from fma_bands.store.db import make_engine, session_scope
from fma_bands.store.models import AuditEvent, Review, ScreenDraft, User
from fma_bands.study import drafts
from fma_bands.study.assignment import NOT_ASSIGNED, change
from fma_bands.study.library import sync_vignettes
from fma_bands.study.reviews import ReviewForm, save
from fma_bands.study.rounds import close_round
from fma_bands.study.users import require_user
from tests.conftest import DEMO_VIGNETTES
from tests.store.workers import ANSWERS

RATERS = [f"rater-{i:02d}" for i in range(10)]
# Long enough for an unlocked change to commit while a writer is held; paid once per race when
# the change rightly waits for the held writer.
HOLD = 1.0


@pytest.fixture
def study(engine):
    """The demo vignettes, a coordinator and ten raters, each assigned every band. The accounts
    are bare rows: enrolment (keys, signed records) is not under test, and is slow."""
    library = load_library([DEMO_VIGNETTES])
    with session_scope(engine) as s:
        sync_vignettes(s, library, actor="test")
        for name in ("coordinator", *RATERS):
            role = "coordinator" if name == "coordinator" else "rater"
            s.add(User(pseudonym=name, role=role, specialty="emergency medicine"))
        s.flush()
        coordinator = require_user(s, "coordinator")
        for name in RATERS:
            change(s, library, actor=coordinator, rater=name, sub_actions=SUB_ACTIONS)
    with session_scope(engine) as s:
        people = {name: require_user(s, name) for name in ("coordinator", *RATERS)}
    bands = [(v.id, p.sub_action) for v in library for p in v.proposals]
    return engine, library, people, bands


class Race:
    """Writers, each with an engine (so a connection) of its own, and the coordinator's change.
    The first writer to read `table` is held there until the change commits (or HOLD)."""

    def __init__(self, engine: Engine, table: str) -> None:
        self.url = engine.url.render_as_string(hide_password=False)
        self.marker = f"from {table}"
        self.read = threading.Event()  # a writer has read what its write depends on
        self.changed = threading.Event()  # the coordinator's change has committed
        self.guard = threading.Lock()
        self.engines: list[Engine] = []

    def engine(self) -> Engine:
        made = make_engine(self.url)
        event.listen(made, "after_cursor_execute", self._hold)
        self.engines.append(made)
        return made

    def _hold(self, _conn, _cursor, statement: str, *_args) -> None:
        if self.marker not in statement.lower():
            return
        with self.guard:
            if self.read.is_set():
                return
            self.read.set()
        self.changed.wait(HOLD)

    def run(self, writers: list[Callable[[Engine], object]], change: Callable[[Engine], object]):
        """Every writer and the change at once: each writer's result (or error), in order."""
        results: list[object] = [None] * len(writers)
        failed: list[BaseException] = []

        def write(index: int) -> None:
            try:
                results[index] = writers[index](self.engine())
            except Exception as exc:  # what each writer met is its result
                results[index] = exc

        def coordinate(engine: Engine) -> None:
            try:
                assert self.read.wait(10), "no writer read what its write depends on"
                change(engine)
            except BaseException as exc:  # said by the test's own thread, below
                failed.append(exc)
            finally:
                self.changed.set()

        threads = [threading.Thread(target=write, args=(i,)) for i in range(len(writers))]
        closer = threading.Thread(target=coordinate, args=(make_engine(self.url),))
        for thread in [*threads, closer]:
            thread.start()
        for thread in [*threads, closer]:
            thread.join(60)
            assert not thread.is_alive(), "a writer is stuck"
        for made in self.engines:
            made.dispose()
        assert not failed, f"the coordinator's change failed: {failed[0]!r}"
        return results


def _submit(library: Library, rater: UserPublic, bands: list[tuple[str, str]]):
    def submit(engine: Engine) -> list[object]:
        outcomes: list[object] = []
        for vid, name in bands:
            try:
                with session_scope(engine) as s:
                    form = ReviewForm(verdict="ACCEPT", answers=ANSWERS, reason=rater.pseudonym)
                    save(s, library, rater, vid, name, form, expected_version=0, submit=True)
                outcomes.append("ok")
            except FmaBandsError as exc:
                outcomes.append(exc)
        return outcomes

    return submit


def _close(coordinator: UserPublic) -> Callable[[Engine], object]:
    def close(engine: Engine) -> None:
        with session_scope(engine) as s:
            close_round(s, actor=coordinator)
        engine.dispose()

    return close


def _events(session: Session, kind: str) -> list[AuditEvent]:
    query = select(AuditEvent).where(AuditEvent.kind == kind).order_by(col(AuditEvent.seq))
    return list(session.exec(query))


def test_no_review_of_a_round_is_recorded_after_it_closes(study):
    engine, library, people, bands = study
    mine = bands[:3]
    race = Race(engine, "study_settings")
    submitters = [_submit(library, people[name], mine) for name in RATERS]
    results = race.run(submitters, _close(people["coordinator"]))
    assert all(isinstance(result, list) for result in results), results  # none failed outright
    outcomes = [o for result in results for o in result]  # type: ignore[attr-defined]
    refused = [o for o in outcomes if o != "ok"]
    for error in refused:
        assert isinstance(error, FmaBandsError), error
        assert "closed" in error.message and "frozen" in error.message, error
    with session_scope(engine) as s:
        (closed,) = _events(s, "phase_changed")
        submitted = _events(s, "review_submitted")
        late = [e.payload for e in submitted if e.seq > closed.seq]
        assert not late, f"{len(late)} review(s) of round 1 recorded after it closed: {late}"
        stored = s.exec(select(Review).where(Review.status == "submitted")).all()
        assert len(stored) == len(submitted) == outcomes.count("ok") >= 1


def test_no_draft_is_kept_after_the_round_closes(study):
    engine, _, people, bands = study
    vid, name = bands[0]
    race = Race(engine, "study_settings")

    def keeper(rater: str):
        def keep(engine: Engine) -> None:
            with session_scope(engine) as s:
                drafts.keep(s, people[rater], vid, name, {"reason": "typing"}, base_version=0)

        return keep

    results = race.run([keeper(rater) for rater in RATERS[:3]], _close(people["coordinator"]))
    assert results == [None] * 3  # a keep from a closed round keeps nothing, and says nothing
    with session_scope(engine) as s:
        (closed,) = _events(s, "phase_changed")
        kept: list[datetime] = [d.updated_at for d in s.exec(select(ScreenDraft))]
    assert all(at < closed.at for at in kept), (kept, closed.at)


def test_no_review_is_recorded_after_its_rater_is_removed_from_the_band(study):
    engine, library, people, bands = study
    band = bands[0]
    race = Race(engine, "assignment")

    def remove(engine: Engine) -> None:
        with session_scope(engine) as s:
            change(s, library, actor=people["coordinator"], rater=RATERS[0], bands=[band],
                   assigned=False)  # fmt: skip
        engine.dispose()

    (result,) = race.run([_submit(library, people[RATERS[0]], [band])], remove)
    with session_scope(engine) as s:
        removed = _events(s, "assignment_changed")[-1]
        submitted = _events(s, "review_submitted")
    if result == ["ok"]:
        assert [e.seq < removed.seq for e in submitted] == [True]
    else:
        (error,) = result  # type: ignore[misc]
        assert isinstance(error, FmaBandsError) and error.message == NOT_ASSIGNED, error
        assert submitted == []
