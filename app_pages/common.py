"""What every page shares: settings, the engine, the vignette library, the signed-in user."""

import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

import streamlit as st
from sqlalchemy.engine import Engine
from sqlmodel import Session

from fma_bands.agreement.picture import Row, band_spec
from fma_bands.core.errors import FmaBandsError
from fma_bands.core.labels import describe_band, tool_names
from fma_bands.core.people import UserPublic
from fma_bands.core.settings import Settings, load_settings
from fma_bands.core.vignettes import Library, Proposal, Vignette, load_library
from fma_bands.store.db import make_engine, session_scope, upgrade
from fma_bands.study.ledger import head as ledger_head
from fma_bands.study.ledger import publish
from fma_bands.study.library import sync_vignettes
from fma_bands.study.signing import signed_revisions
from fma_bands.study.state import sees_proposals, study


def settings() -> Settings:
    return load_settings()


@st.cache_resource(show_spinner=False)
def _engine(url: str) -> Engine:
    engine = make_engine(url)
    # The app brings the database to the current schema, as `fma-bands init` does.
    upgrade(engine)
    return engine


# The (database, attestations folder) pairs this process has published to (fma_bands.study.ledger).
# Its own lock: library() holds _sync_lock while its session() reaches engine().
_recovered: set[tuple[str, str]] = set()
_recover_lock = threading.Lock()


def engine() -> Engine:
    found = _engine(settings().database_url)
    key = (settings().database_url, str(settings().attestations))
    if key not in _recovered:
        # Records the store holds and the folder lacks (a process killed after its commit, a
        # round closed since) are published first.
        with _recover_lock:
            if key not in _recovered:
                with session_scope(found) as s:
                    publish(s, settings().attestations)
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
    state: list[tuple[str, int | None, int | None]] = []
    for p in sorted(folder.glob("*.y*ml")):
        try:
            found = p.stat()
        except OSError:  # a dangling link: the load names it as a problem
            state.append((p.name, None, None))
        else:
            state.append((p.name, found.st_size, found.st_mtime_ns))
    return tuple(state)


# A resource, not data: one Library shared read-only by every session, not a copy unpickled on
# every rerun (docs/performance.md), and its digests computed once.
@st.cache_resource(show_spinner=False, max_entries=4)
def _load(folder: str, state: tuple) -> Library:
    return load_library([folder])


# The folder states this process has already brought the store in line with, per database.
_synced: set[tuple[str, str, tuple]] = set()
# library() holds it while it syncs; the recovery in engine() has a lock of its own.
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
                try:
                    with session() as s:
                        sync_vignettes(s, found, actor=None)
                except FmaBandsError as exc:
                    _not_synced(exc)
                _synced.add(key)
    return found


def _not_synced(exc: FmaBandsError) -> NoReturn:
    """The files were refused (no vignette loaded), the study left as it was: the page says so
    instead of drawing a study without its vignettes. Where the files are is the coordinator's
    business, as on the library page."""
    user = current_user()
    if user is not None and user.is_coordinator:
        st.error(
            f"{escaped(exc.message)}. The app reads the folder named by FMA_BANDS_VIGNETTES "
            "(default ./vignettes where it was started).",
            icon=":material/error:",
        )
        if exc.problems:
            st.code("\n".join(str(p) for p in exc.problems), language=None)
    else:
        st.error(
            "The study's vignettes cannot be loaded just now, so this page cannot be shown. "
            "Please tell the study coordinator.",
            icon=":material/error:",
        )
    st.stop()


# When the signed-in person last ran a page (time.monotonic()), and the note the sign-in page
# shows after an idle sign-out.
ACTIVE_AT, SIGNED_OUT_NOTE = "active_at", "signed_out_note"


def current_user() -> UserPublic | None:
    """The signed-in person, or None. A session left idle longer than the idle_minutes setting
    is signed out here (21 CFR 11.300(d)), before any page acts for it: the app runs again and
    shows the sign-in form with a short note. Any other run counts as activity."""
    data = st.session_state.get("user")
    if not data:
        return None
    now, idle = time.monotonic(), settings().idle_minutes
    last = st.session_state.get(ACTIVE_AT)
    if last is not None and now - last > idle * 60:
        sign_out(
            f"You were signed out after {idle} minute{'s' if idle != 1 else ''} without "
            "activity. Sign in again to go on."
        )
        st.rerun()
    st.session_state[ACTIVE_AT] = now
    return UserPublic(**data)


def sign_in_session(user: UserPublic) -> None:
    """This browser session now acts for `user`, active from now."""
    st.session_state.user = user.model_dump()
    st.session_state[ACTIVE_AT] = time.monotonic()
    st.session_state.pop(SIGNED_OUT_NOTE, None)


def sign_out(note: str | None = None) -> None:
    """Forget everything this browser session held (the person, their forms, their passphrase
    fields); `note` is shown once on the sign-in form."""
    st.session_state.clear()
    if note:
        st.session_state[SIGNED_OUT_NOTE] = note


def require_user(role: str | None = None) -> UserPublic:
    user = current_user()
    if user is None or (role and user.role != role):
        st.error("This page is not available to you.")
        st.stop()
    return user


def show_errors(errors: dict[str, str], field: str) -> None:
    """A validation message beside its field, in plain words."""
    if field in errors:
        st.error(escaped(errors[field]), icon=":material/error:")


def proposals_visible(user: UserPublic) -> bool:
    """Whether this person sees the proposed bands now (fma_bands.study.state.sees_proposals)."""
    with session() as s:
        return sees_proposals(study(s), user)


def show_proposal(proposal: Proposal, vignette: Vignette) -> None:
    """A proposed band as raters and coordinators read it: values, picture, source, clause and
    reasoning (text from files, shown as written). Never what the band does to the study's
    metrics: raters judge clinical defensibility only."""
    names = tool_names(vignette)
    plain(describe_band(proposal.acceptable, names), label="Acceptable")
    if proposal.disputed_span is not None:
        plain(describe_band(proposal.disputed_span, names), label="Disputed span")
        st.caption("The disputed span holds values the band's authors could not settle.")
    rows = [Row("proposal", proposal.acceptable, proposal.disputed_span)]
    chart(band_spec(proposal.sub_action, rows, orderables=vignette.orderables, names=names))
    for label, text in (
        ("Source", proposal.source),
        ("Clause", proposal.clause),
        ("Reasoning", proposal.reasoning),
        ("Notes", proposal.notes),
    ):
        if text:
            plain(text, label=label)
    st.caption(f"Provenance: {escaped(proposal.provenance)}.")


# Every character CommonMark, Streamlit's directives (:red[...]) or KaTeX ($) would read.
_MARKUP = re.compile(r"([\\`*_{}\[\]()#+\-.!|~<>$:&=])")
# Links and icons are made after the markdown is parsed, from the text itself (GFM's autolinks
# of "http://", "www." and e-mail addresses; Streamlit's ":material/...:" icons), so escaping
# cannot stop them: an invisible word joiner (U+2060) inside each trigger does.
_TRIGGERS = re.compile(r"(?<=:)(?=//)|(?<=:)(?=material/)|(?<=www)(?=\.)|(?=@)", re.IGNORECASE)
WORD_JOINER = "\u2060"


def escaped(text: object) -> str:
    """Text from files or people made literal inside the app's own markdown (messages, captions,
    labels): nothing in it can become a heading, link, image, colour, formula or icon, and its
    line breaks stay line breaks."""
    literal = _MARKUP.sub(r"\\\1", _TRIGGERS.sub(WORD_JOINER, str(text)))
    return literal.replace("\n", "  \n")


def plain(text: str, *, label: str | None = None) -> None:
    """Text from files or people exactly as written: never markdown, HTML, LaTeX or links
    (docs/design.md, Quality bar). `label` is the app's own words, shown in bold above it."""
    if label:
        st.markdown(f"**{label}**")
    st.text(text)


def chart(spec: dict) -> None:
    """A band picture (a Vega-Lite spec from fma_bands.agreement.picture), as wide as its column."""
    st.vega_lite_chart(spec, width="stretch")


def stack_below(width_px: int, key: str) -> None:
    """Lay the columns inside the container `key` one above the other on screens narrower
    than `width_px`: Streamlit itself stacks them only below 640 px, where two columns of a
    review (beside an open sidebar) are already too narrow to read."""
    outer = f".st-key-{key} div[data-testid='stHorizontalBlock']"
    # Columns nested inside those (two bounds, two buttons) stay side by side.
    inner = f".st-key-{key} div[data-testid='stColumn'] div[data-testid='stHorizontalBlock']"
    st.html(
        f"<style>@media (max-width: {width_px}px) {{"
        f" {outer} {{ flex-direction: column; }}"
        f" {outer} > div[data-testid='stColumn'] {{ width: 100% !important;"
        " flex: 1 1 auto !important; min-width: 100% !important; }"
        f" {inner} {{ flex-direction: row; }}"
        f" {inner} > div[data-testid='stColumn'] {{ width: auto !important;"
        " flex: 1 1 0 !important; min-width: 0 !important; } }</style>"
    )


@st.cache_data(show_spinner=False, max_entries=16)
def _signed(url: str, head: tuple | None, pseudonym: str) -> dict:
    with session() as s:
        return signed_revisions(s, pseudonym)


def signed_bands(pseudonym: str) -> dict:
    """The rater's signed review revisions (sealed ones too), read again only when the store's
    log has a new record: the review page asks on every rerun."""
    with session() as s:
        head = ledger_head(s)
    return _signed(settings().database_url, head, pseudonym)
