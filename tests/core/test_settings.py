"""Settings: only the study's signed log writes into the attestations folder."""

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
