"""The library sync's own guard: files that load no vignette never retire the study's."""

import pytest
from sqlmodel import select

from fma_bands.core.errors import FmaBandsError
from fma_bands.core.vignettes import load_library
from fma_bands.store.db import session_scope
from fma_bands.store.models import AuditEvent, VignetteRecord
from fma_bands.study.library import sync_vignettes
from tests.conftest import DEMO_VIGNETTES


def store_state(engine) -> tuple[list[tuple[str, bool]], int]:
    with session_scope(engine) as s:
        rows = sorted((r.id, r.present) for r in s.exec(select(VignetteRecord)))
        return rows, len(s.exec(select(AuditEvent)).all())


@pytest.mark.parametrize("kind", ["empty", "missing", "only broken files"])
def test_a_folder_with_no_vignette_is_refused_and_retires_nothing(engine, tmp_path, kind):
    with session_scope(engine) as s:
        report = sync_vignettes(s, load_library([DEMO_VIGNETTES]), actor="test")
    assert len(report.added) == 12
    before = store_state(engine)
    assert len(before[0]) == 12 and all(present for _, present in before[0])

    folder = tmp_path / "vignettes"
    if kind != "missing":
        folder.mkdir()
    if kind == "only broken files":
        (folder / "broken.yaml").write_text("id: [unclosed\n", encoding="utf-8")
    empty = load_library([folder])
    with session_scope(engine) as s, pytest.raises(FmaBandsError) as caught:
        sync_vignettes(s, empty, actor="test")
    assert str(folder) in caught.value.message
    assert "nothing was synced" in caught.value.message
    assert caught.value.problems == empty.problems and empty.problems
    assert store_state(engine) == before  # nothing retired, no vignettes_synced event


def test_the_same_folder_again_changes_nothing_and_logs_nothing(engine):
    library = load_library([DEMO_VIGNETTES])
    with session_scope(engine) as s:
        sync_vignettes(s, library, actor="test")
    before = store_state(engine)
    with session_scope(engine) as s:
        report = sync_vignettes(s, library, actor="test")
    assert (report.added, report.changed, report.retired) == ([], [], [])
    assert store_state(engine) == before
