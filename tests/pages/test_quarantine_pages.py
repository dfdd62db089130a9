"""A file that cannot be read is left out and named to the coordinator; sign-in, the queue and
every other page keep working (issue 20: a bad file is quarantined, never fatal)."""

import shutil

import pytest

from tests import page_helpers
from tests.page_helpers import go, open_app, pages_of, shown

fresh_caches, app_env, template, study = (
    page_helpers.fresh_caches,
    page_helpers.app_env,
    page_helpers.template,
    page_helpers.study,
)
BIG = "9" * 5000


@pytest.fixture
def hostile(study, tmp_path, monkeypatch, shared_vignettes):
    """The study, its vignette folder beside five files that cannot be read, and an envelope
    holding an integer Python refuses to convert in its attestations folder."""
    folder = tmp_path / "vignettes"
    shutil.copytree(shared_vignettes, folder)
    good = (folder / "draft_triage_01.yaml").read_text()
    (folder / "huge_int.yaml").write_text(
        good.replace("id: draft_triage_01", "id: huge_int") + f"ambiguity: {BIG}\n"
    )
    escaped_nul = good.replace("id: draft_triage_01", "id: escaped_nul")
    (folder / "escaped_nul.yaml").write_text(
        escaped_nul.replace("canary: ", 'canary: "before\\0after"\nx_canary: ', 1)
    )
    (folder / "utf16.yaml").write_bytes(b"\xff\xfe" + good.encode("utf-16-le"))
    (folder / "dangling.yaml").symlink_to(tmp_path / "nowhere.yaml")
    (folder / "саse.yaml").write_text(good.replace("id: draft_triage_01", "id: саse"))
    monkeypatch.setenv("FMA_BANDS_VIGNETTES", str(folder))
    attestations = tmp_path / "attestations"
    attestations.mkdir(exist_ok=True)
    (attestations / "huge.dsse.json").write_text('{"payload": ' + BIG + "}")
    return study


HOSTILE = ("huge_int.yaml", "escaped_nul.yaml", "utf16.yaml", "dangling.yaml", "саse.yaml")


def test_sign_in_and_the_raters_pages_work_beside_files_that_cannot_be_read(hostile):
    assert "Sign in" in shown(open_app())
    at = open_app(hostile.rater)
    for page in ("app_pages/queue.py", "app_pages/library.py"):
        text = shown(go(at, page))
        # A rater is not shown where the files are or what is wrong with them.
        assert not any(name in text for name in HOSTILE), text


def test_the_coordinator_is_told_which_file_why_and_what_to_do(hostile):
    at = open_app(hostile.coordinator)
    for page in pages_of(at):
        go(at, page)  # every page the coordinator may open runs without an exception
    go(at, "app_pages/library.py")
    # the files that cannot be read; the harness's files that load but warn are listed apart
    [listing, warned] = [c.value for c in at.code]
    assert "huge_int.yaml" not in warned and "clinical_core" in warned
    assert "16 vignettes in the study" in shown(at)
    assert "Fix or remove each file" in shown(at)
    for name, why in [
        ("huge_int.yaml", "ambiguity: holds a number of 5,000 digits"),
        ("escaped_nul.yaml", "canary: holds a NUL byte"),
        ("utf16.yaml", "UTF-16"),
        ("dangling.yaml", "No such file"),
        ("саse.yaml", "is not an id"),
    ]:
        [line] = [line for line in listing.splitlines() if name in line]
        assert why in line, line
