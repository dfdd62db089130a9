"""What every page shares: settings, the engine, the vignette library, the signed-in user."""

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import streamlit as st
from sqlalchemy.engine import Engine
from sqlmodel import Session

from fma_bands.bands import describe
from fma_bands.envelopes import signed_revisions
from fma_bands.picture import Row, band_chart, straddle_sentence
from fma_bands.records import recover
from fma_bands.settings import Settings, load_settings
from fma_bands.store.db import make_engine, session_scope, upgrade
from fma_bands.study import study, sync_vignettes
from fma_bands.users import UserPublic
from fma_bands.vignettes import Library, Proposal, Vignette, load_library


def settings() -> Settings:
    return load_settings()


@st.cache_resource(show_spinner=False)
def _engine(url: str) -> Engine:
    engine = make_engine(url)
    # The app brings the database to the current schema, as `fma-bands init` does.
    upgrade(engine)
    return engine


# The (database, attestations folder) pairs this process has recovered (fma_bands.records).
_recovered: set[tuple[str, str]] = set()


def engine() -> Engine:
    found = _engine(settings().database_url)
    key = (settings().database_url, str(settings().attestations))
    if key not in _recovered:
        # A process killed halfway through signing left its record waiting: finish it first.
        with _sync_lock:
            if key not in _recovered:
                with session_scope(found) as s:
                    recover(s, settings().attestations)
                _recovered.add(key)
    return found


@contextmanager
def session() -> Iterator[Session]:
    with session_scope(engine()) as s:
        yield s


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


# The folder states this process has already brought the store in line with, per database.
_synced: set[tuple[str, str, tuple]] = set()
_sync_lock = threading.Lock()


def library() -> Library:
    """The vignettes, with the store following the files: a changed file is synced once (its
    reviews kept and shown as stale), by the first rerun that sees the change."""
    folder = settings().vignettes
    state = _folder_state(folder)
    found = _load(str(folder), state)
    key = (settings().database_url, str(folder), state)
    if key not in _synced:
        with _sync_lock:
            if key not in _synced:
                with session() as s:
                    sync_vignettes(s, found, actor=None)
                _synced.add(key)
    return found


def current_user() -> UserPublic | None:
    data = st.session_state.get("user")
    return UserPublic(**data) if data else None


def require_user(role: str | None = None) -> UserPublic:
    user = current_user()
    if user is None or (role and user.role != role):
        st.error("This page is not available to you.")
        st.stop()
    return user


def show_errors(errors: dict[str, str], field: str) -> None:
    """A validation message beside its field, in plain words."""
    if field in errors:
        st.error(errors[field], icon=":material/error:")


def proposals_visible(user: UserPublic) -> bool:
    """Blind mode hides every proposal from raters, on every page, not only the review screen."""
    if user.is_coordinator:
        return True
    with session() as s:
        return study(s).mode == "review"


def show_proposal(proposal: Proposal, vignette: Vignette) -> None:
    """A proposed band as raters and coordinators read it: values, picture, source and reasoning."""
    threshold = proposal.effective_threshold
    st.markdown(f"**Acceptable:** {describe(proposal.acceptable)}")
    if proposal.disputed_span is not None:
        st.markdown(f"**Disputed span:** {describe(proposal.disputed_span)}")
    st.altair_chart(
        band_chart(
            proposal.sub_action,
            [Row("proposal", proposal.acceptable, proposal.disputed_span)],
            threshold=threshold,
            orderables=vignette.orderables,
        )
    )
    st.markdown(straddle_sentence(proposal.acceptable, threshold))
    for label, text in (
        ("Source", proposal.source),
        ("Clause", proposal.clause),
        ("Reasoning", proposal.reasoning),
        ("Notes", proposal.notes),
    ):
        if text:
            st.markdown(f"**{label}.** {text}")
    st.caption(f"Provenance: {proposal.provenance}.")


@st.cache_data(show_spinner=False, max_entries=16)
def _signed(folder: str, state: tuple, pseudonym: str) -> dict:
    return signed_revisions(Path(folder), pseudonym)


def signed_bands(pseudonym: str) -> dict:
    """The rater's signed review revisions, re-read only when an envelope file changes: the
    review page asks on every rerun, and each read verifies every signature."""
    folder = settings().attestations
    files = sorted(folder.glob("*.dsse.json")) if folder.is_dir() else []
    state = tuple((p.name, p.stat().st_mtime_ns) for p in files)
    return _signed(str(folder), state, pseudonym)
