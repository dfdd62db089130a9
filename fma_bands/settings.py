"""One settings object: where the vignettes, the database and the attestations live."""

import os
from dataclasses import dataclass, replace
from pathlib import Path

DEFAULT_DATABASE_URL = "sqlite:///fma-bands.db"


@dataclass(frozen=True)
class Settings:
    vignettes: Path = Path("vignettes")
    database_url: str = DEFAULT_DATABASE_URL
    attestations: Path = Path("attestations")
    # Seals raters' private identities at rest; never inside attestations/ or the repository.
    identity_key: Path = Path("fma-bands-identity.key")

    @classmethod
    def from_env(cls, **overrides: object) -> "Settings":
        """Environment first (FMA_BANDS_VIGNETTES, _DATABASE_URL, _ATTESTATIONS), then overrides."""
        env = os.environ
        settings = cls(
            vignettes=Path(env.get("FMA_BANDS_VIGNETTES", "vignettes")),
            database_url=env.get("FMA_BANDS_DATABASE_URL", DEFAULT_DATABASE_URL),
            attestations=Path(env.get("FMA_BANDS_ATTESTATIONS", "attestations")),
            identity_key=Path(env.get("FMA_BANDS_IDENTITY_KEY", "fma-bands-identity.key")),
        )
        given = {k: v for k, v in overrides.items() if v is not None}
        if "vignettes" in given:
            given["vignettes"] = Path(given["vignettes"])
        for name in ("attestations", "identity_key"):
            if name in given:
                given[name] = Path(given[name])
        return replace(settings, **given)
