"""One settings object, read once: command-line options over FMA_BANDS_* variables over defaults."""

from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from fma_bands.core.errors import FmaBandsError

DEFAULT_DATABASE_URL = "sqlite:///fma-bands.db"


class Settings(BaseSettings):
    """Where the study lives. Each field is also the variable FMA_BANDS_<FIELD>."""

    model_config = SettingsConfigDict(env_prefix="FMA_BANDS_", frozen=True, extra="ignore")

    vignettes: Path = Path("vignettes")
    database_url: str = DEFAULT_DATABASE_URL
    attestations: Path = Path("attestations")
    # Seals raters' private identities at rest; never inside attestations/ or the repository.
    identity_key: Path = Path("fma-bands-identity.key")
    # The one folder the app writes exports to; the browser never names a server path.
    export_dir: Path = Path("exports")
    # The harness's trajectories.json files the registry page counts bands against (2.8).
    trajectories: Path = Path("trajectories")
    # Where an unexpected error's details go, so a person sees one line and a bug report has all.
    log_file: Path = Path("fma-bands.log")
    # Minutes without a page run after which the app signs the person out (21 CFR 11.300(d)).
    idle_minutes: int = Field(default=30, ge=1, le=24 * 60)


def load_settings(**overrides: Any) -> Settings:
    """The settings, with the given options (None means "not given") over the environment."""
    given = {name: value for name, value in overrides.items() if value is not None}
    try:
        found = Settings(**given)
    except ValidationError as exc:
        first = exc.errors()[0]
        name = ".".join(str(p) for p in first["loc"])
        raise FmaBandsError(
            f"setting {name} (FMA_BANDS_{name.upper()}): {first['msg']}", field=name
        ) from None
    _keep_out_of_the_log(found)
    return found


def _keep_out_of_the_log(found: Settings) -> None:
    """Only the study's signed log writes into the attestations folder: neither the exports nor
    the identity key may live there (an export would sit among the records, the key in what is
    shared with editors)."""
    log = found.attestations.resolve()
    for name in ("export_dir", "identity_key"):
        path = getattr(found, name).resolve()
        if path == log or log in path.parents:
            raise FmaBandsError(
                f"setting {name} (FMA_BANDS_{name.upper()}): {getattr(found, name)} is inside "
                f"the attestations folder {found.attestations}, where only the study's signed "
                "log writes; choose a place outside it",
                field=name,
            )
