"""One settings object, read once: command-line options over FMA_BANDS_* variables over defaults.

An FMA_BANDS_* variable that nothing reads is refused by name: a misspelt one would otherwise be
ignored, and the study would quietly use the default it was meant to change.
"""

import difflib
import os
import stat
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from fma_bands.core.errors import FmaBandsError

DEFAULT_DATABASE_URL = "sqlite:///fma-bands.db"
PREFIX = "FMA_BANDS_"

# FMA_BANDS_* variables read by something other than Settings: the command line's --as and
# --passphrase-file, and those the test suite and CI read (tests/, .ci/run).
OTHER_VARIABLES = (
    "FMA_BANDS_AS",
    "FMA_BANDS_PASSPHRASE_FILE",
    "FMA_BANDS_CHROMIUM",
    "FMA_BANDS_DOCS_SLOW",
    "FMA_BANDS_PG_BIN",
    "FMA_BANDS_REQUIRE_BROWSER",
    "FMA_BANDS_REQUIRE_POSTGRES",
    "FMA_BANDS_REQUIRE_SHARED",
    "FMA_BANDS_SCREENSHOTS",
    "FMA_BANDS_SHARED",
    "FMA_BANDS_TEST_POSTGRES_URL",
)


def _user_cache() -> Path:
    """The user's cache folder ($XDG_CACHE_HOME, else ~/.cache)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")


def _upper(value: Any) -> Any:
    return value.upper() if isinstance(value, str) else value


# A logging level by name, in any case (info, INFO).
LogLevel = Annotated[Literal["DEBUG", "INFO", "WARNING", "ERROR"], BeforeValidator(_upper)]


def _named(value: Any) -> Any:
    """An empty folder name is refused: read as the working folder, it would put the kept
    answers' key wherever a command runs (a study's checkout, say)."""
    if isinstance(value, str) and not value.strip():
        raise ValueError(
            "is empty: name a folder of your own, or unset it for the default (~/.cache/fma-bands)"
        )
    return value


KeptFolder = Annotated[Path, BeforeValidator(_named)]


class Settings(BaseSettings):
    """Where the study lives. Each field is also the variable FMA_BANDS_<FIELD>."""

    model_config = SettingsConfigDict(env_prefix=PREFIX, frozen=True, extra="ignore")

    vignettes: Path = Path("vignettes")
    database_url: str = DEFAULT_DATABASE_URL
    attestations: Path = Path("attestations")
    # Seals raters' private identities at rest; never inside attestations/ or the repository.
    identity_key: Path = Path("fma-bands-identity.key")
    # The one folder the app writes exports to; the browser never names a server path.
    export_dir: Path = Path("exports")
    # The harness's trajectories.json files the registry page counts bands against (2.8).
    trajectories: Path = Path("trajectories")
    # The command line's log (docs/cli.md, "Logging"): each command's start and outcome, and an
    # unexpected error's details, so a person sees one line and a bug report has all.
    log_file: Path = Path("fma-bands.log")
    # Which events reach it: ERROR only bugs, WARNING refusals too, INFO every command. The
    # default writes a file only for a bug, wherever a command runs.
    log_level: LogLevel = "ERROR"
    # Where `registry` and `export` keep their answers, each under the digest of every file it
    # was decided from (evidence/kept.py): a folder of this user's alone, outside the study's.
    kept_answers: KeptFolder = Field(default_factory=lambda: _user_cache() / "fma-bands")
    # Minutes without a page run after which the app signs the person out (21 CFR 11.300(d)).
    idle_minutes: int = Field(default=30, ge=1, le=24 * 60)


def load_settings(**overrides: Any) -> Settings:
    """The settings, with the given options (None means "not given") over the environment."""
    given = {name: value for name, value in overrides.items() if value is not None}
    _refuse_unknown_variables()
    try:
        found = Settings(**given)
    except ValidationError as exc:
        first = exc.errors()[0]
        name = ".".join(str(p) for p in first["loc"])
        # A validator's own sentence, without pydantic's "Value error, " before it.
        said = first["msg"].removeprefix("Value error, ")
        raise FmaBandsError(
            f"setting {name} (FMA_BANDS_{name.upper()}): {said}", field=name
        ) from None
    _check_paths(found)
    _keep_out_of_the_log(found)
    return found


def known_variables() -> list[str]:
    """Every FMA_BANDS_* variable something reads."""
    return sorted({PREFIX + name.upper() for name in Settings.model_fields} | set(OTHER_VARIABLES))


def _refuse_unknown_variables() -> None:
    known = known_variables()
    # Matched as pydantic-settings matches them: whatever the case.
    for name in sorted(os.environ):
        if not name.upper().startswith(PREFIX) or name.upper() in known:
            continue
        # Compared without the prefix every name shares, which would make any two look alike.
        suffixes = [k.removeprefix(PREFIX) for k in known]
        close = difflib.get_close_matches(name.upper().removeprefix(PREFIX), suffixes, n=1)
        hint = f"did you mean {PREFIX}{close[0]}? " if close else ""
        settings = sorted({PREFIX + field.upper() for field in Settings.model_fields})
        raise FmaBandsError(
            f"this environment variable is no setting of fma-bands: {hint}unset it (the settings "
            f"are {', '.join(settings)})",
            field=name,
        )


# kept_answers is not among them: a folder of answers that cannot be used only costs their time.
FOLDERS = ("vignettes", "attestations", "export_dir", "trajectories")
FILES = ("identity_key", "log_file")


def _refuse(name: str, path: Path, why: str) -> FmaBandsError:
    return FmaBandsError(f"setting {name} (FMA_BANDS_{name.upper()}): {path} {why}", field=name)


def _check_paths(found: Settings) -> None:
    """Each path setting names something that can be what it is for, or nothing yet: a folder
    setting no file, a file setting no folder, and no path the system cannot look up (a name
    too long, a symlink loop). Refused here by the setting's name, before any command uses it."""
    for name in (*FOLDERS, *FILES):
        path: Path = getattr(found, name)
        try:
            kind = path.stat().st_mode
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise _refuse(name, path, f"cannot be looked up ({exc.strerror or exc})") from None
        if name in FOLDERS and not stat.S_ISDIR(kind):
            raise _refuse(name, path, "is not a folder")
        if name in FILES and stat.S_ISDIR(kind):
            raise _refuse(name, path, "is a folder: name a file")


def _keep_out_of_the_log(found: Settings) -> None:
    """Only the study's signed log writes into the attestations folder: neither the exports, the
    identity key nor the kept answers may live there (an export would sit among the records, a
    key in what is shared with editors)."""
    try:
        log = found.attestations.resolve()
    except (OSError, RuntimeError):  # a symlink loop where nothing was there to stat
        raise _refuse("attestations", found.attestations, "cannot be resolved") from None
    for name in ("export_dir", "identity_key", "kept_answers"):
        try:
            path = getattr(found, name).resolve()
        except (OSError, RuntimeError):
            raise _refuse(name, getattr(found, name), "cannot be resolved") from None
        if path == log or log in path.parents:
            raise FmaBandsError(
                f"setting {name} (FMA_BANDS_{name.upper()}): {getattr(found, name)} is inside "
                f"the attestations folder {found.attestations}, where only the study's signed "
                "log writes; choose a place outside it",
                field=name,
            )
