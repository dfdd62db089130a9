"""Settings: only the study's signed log writes into the attestations folder."""

from pathlib import Path

import pytest

from fma_bands.core.errors import FmaBandsError
from fma_bands.core.settings import load_settings


@pytest.mark.parametrize("name", ["export_dir", "identity_key"])
@pytest.mark.parametrize("inside", ["attestations", "attestations/sub/file"])
def test_nothing_else_lives_in_the_attestations_folder(tmp_path, name, inside):
    with pytest.raises(FmaBandsError, match=f"setting {name} .*only the study's signed log"):
        load_settings(attestations=tmp_path / "attestations", **{name: tmp_path / inside})


def test_beside_the_attestations_folder_is_fine(tmp_path):
    found = load_settings(
        attestations=tmp_path / "attestations",
        export_dir=tmp_path / "exports",
        identity_key=tmp_path / "identity.key",
    )
    assert found.export_dir == tmp_path / "exports"


def _file(tmp_path):
    (tmp_path / "f").write_text("x")
    return tmp_path / "f"


def _loop(tmp_path):
    (tmp_path / "l1").symlink_to(tmp_path / "l2")
    (tmp_path / "l2").symlink_to(tmp_path / "l1")
    return tmp_path / "l1"


@pytest.mark.parametrize(
    ("name", "make", "why"),
    [
        ("attestations", _file, "is not a folder"),
        ("vignettes", _file, "is not a folder"),
        ("attestations", lambda t: Path("/dev/null"), "is not a folder"),
        ("identity_key", lambda t: t, "is a folder"),
        ("attestations", _loop, "cannot be looked up"),
        ("identity_key", _loop, "cannot be looked up"),
        ("vignettes", lambda t: t / ("a" * 300), "cannot be looked up"),
    ],
)
def test_a_path_setting_that_cannot_be_what_it_is_for_is_refused_by_name(tmp_path, name, make, why):
    """Before any command uses it (a file where the log's folder should be once crashed every
    command that opens the store)."""
    others = {"attestations": tmp_path / "att", "identity_key": tmp_path / "id.key"}
    with pytest.raises(FmaBandsError, match=f"setting {name} .*{why}") as refused:
        load_settings(**{**others, name: make(tmp_path)})
    assert refused.value.field == name
