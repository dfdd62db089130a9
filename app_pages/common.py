"""What every page shares: settings, the vignette library (cached by file state), plain labels."""

from pathlib import Path

import streamlit as st

from fma_bands.settings import Settings
from fma_bands.vignettes import Library, load_library


def settings() -> Settings:
    return Settings.from_env()


def _folder_state(folder: Path) -> tuple:
    # Reload only when a vignette file changes: names, sizes and modification times.
    if not folder.is_dir():
        return ()
    return tuple(
        (p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(folder.glob("*.y*ml"))
    )


@st.cache_data(show_spinner=False, max_entries=4)
def _load(folder: str, state: tuple) -> Library:
    return load_library([folder])


def library() -> Library:
    folder = settings().vignettes
    return _load(str(folder), _folder_state(folder))
