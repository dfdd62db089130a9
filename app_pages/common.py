"""What every page shares: settings, the engine, the vignette library, the signed-in user."""

import functools
import hashlib
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn, ParamSpec

import streamlit as st
from sqlalchemy.engine import Engine
from sqlmodel import Session
from streamlit.delta_generator import DeltaGenerator
from streamlit.runtime.scriptrunner import get_script_run_ctx

from fma_bands.agreement.picture import Row, band_spec
from fma_bands.core.errors import FmaBandsError
from fma_bands.core.labels import Knowledge, describe_band, tool_names
from fma_bands.core.markup import terminal_text
from fma_bands.core.people import UserPublic
from fma_bands.core.settings import PREFIX, Settings, load_settings
from fma_bands.core.vignettes import Library, Proposal, Vignette
from fma_bands.evidence.kept_parses import keep_parses_for_life
from fma_bands.evidence.kept_reads import load_library_kept
from fma_bands.store.db import make_engine, session_scope, upgrade
from fma_bands.study.browser_sessions import (
    end_session,
    find_session,
    open_session,
    token_hash,
    touch_session,
)
from fma_bands.study.chair import chair_name
from fma_bands.study.ledger import head as ledger_head
from fma_bands.study.ledger import publish
from fma_bands.study.library import sync_vignettes
from fma_bands.study.signing import signed_revisions
from fma_bands.study.state import sees_proposals, study

# The settings last read, by the working folder and FMA_BANDS_* variables they were read from: a
# page run asks for them dozens of times, and they change only with those (tests set them per
# test). A path that turns into something else later is met where it is used.
_settings: dict[tuple, Settings] = {}


def settings() -> Settings:
    variables = sorted((k, v) for k, v in os.environ.items() if k.upper().startswith(PREFIX))
    key = (os.getcwd(), tuple(variables))
    found = _settings.get(key)
    if found is None:
        found = load_settings()  # refused by name, and so never kept, when it cannot be used
        _settings.clear()
        _settings[key] = found
        # Records read before, by this server or a command, are not parsed again.
        keep_parses_for_life(found.kept_answers)
    return found


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


def cache_key(*parts: object) -> str:
    """The SHA-256 of `parts` (digests, counts, heads): what a page passes to a cached function
    for them, since Streamlit hashes a cached function's arguments on every call, slowly (the
    digests of 300 vignettes took it a fifth of a page's rerun)."""
    return hashlib.sha256(repr(parts).encode()).hexdigest()


def _folder_state(folder: Path) -> str:
    """Reload only when a vignette file changes: a digest of the names, sizes and modification
    times (a short key: Streamlit's cache hashes a long one slowly, on every call). Read with
    os.scandir: this runs several times a run of every page, over every file."""
    try:
        entries = [e for e in os.scandir(folder) if e.name.endswith((".yaml", ".yml"))]
    except OSError:  # not a folder, or not one this process can read: the load says why
        return ""
    state: list[tuple[str | int | None, ...]] = []
    for entry in sorted(entries, key=lambda e: e.name):
        try:
            found = entry.stat()
        except OSError:  # a dangling link: the load names it as a problem
            state.append((entry.name, None))
        else:
            # The inode and the change time as well: an edit of the same size with its
            # modification time set back, or another file renamed over it, changes them, and
            # no one can set a change time back.
            state.append(
                (entry.name, found.st_size, found.st_mtime_ns, found.st_ino, found.st_ctime_ns)
            )
    return hashlib.sha256(repr(state).encode()).hexdigest()


# A resource, not data: one Library shared read-only by every session, not a copy unpickled on
# every rerun (docs/performance.md), and its digests computed once.
# A file changed is the only one parsed again (evidence/kept_reads.py).
@st.cache_resource(show_spinner=False, max_entries=4)
def _load(folder: str, state: str) -> Library:
    return load_library_kept([folder], settings().kept_answers)


# The folder states this process has already brought the store in line with, per database.
_synced: set[tuple[str, str, str]] = set()
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


# The chair the policy in force names, per database and head of the store's log: the menu asks
# on every rerun, verifying the whole log costs a large study a sixth of a second, and the log
# changes only by appending. Only the menu reads it; the chair's page checks the log itself.
_chairs: dict[tuple[str, tuple[int, str] | None], str | None] = {}


def study_chair(s: Session) -> str | None:
    key = (settings().database_url, ledger_head(s))
    if key not in _chairs:
        if len(_chairs) > 64:
            _chairs.clear()
        _chairs[key] = chair_name(s)
    return _chairs[key]


def warm_study() -> Library:
    """What the first page of a fresh server process does before drawing anything: the database
    brought to the schema and the folder published (engine), the vignettes loaded and synced
    (library), the store's log read and checked (study_chair: its statements are then held
    parsed). The server does it as it starts (app_pages/server.py), so that the first person to
    open a page does not wait for it."""
    found = library()
    with session() as s:
        study_chair(s)
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


P = ParamSpec("P")

# When the signed-in person last ran a page (time.monotonic()), and the note the sign-in page
# shows after an idle sign-out.
ACTIVE_AT, SIGNED_OUT_NOTE = "active_at", "signed_out_note"
# The browser's cookie naming its server-side session (fma_bands.study.browser_sessions).
COOKIE = "fma_bands_session"
# What this Streamlit session keeps of it: the session's key (the token's hash), when it last
# recorded activity there, whether the cookie was already looked at, the token itself while
# someone is signed in (in this process's memory only: every run of the page sets the cookie
# again, see send_cookie_script), whether activity was recorded since the cookie was last set,
# and a clearing of the cookie the next run sends once.
BROWSER_SESSION, TOUCHED_AT = "browser_session", "browser_session_touched_at"
COOKIE_READ, COOKIE_TOKEN = "browser_cookie_read", "browser_cookie_token"
COOKIE_RENEW, COOKIE_CLEAR = "browser_cookie_renew", "browser_cookie_clear"
# Activity is written to the store at most this often, not on every rerun.
TOUCH_EVERY_S = 60


def _idle_note(idle: int) -> str:
    return (
        f"You were signed out after {idle} minute{'s' if idle != 1 else ''} without "
        "activity. Sign in again to go on."
    )


def current_user() -> UserPublic | None:
    """The signed-in person, or None. A new browser session (a reload) with nobody signed in
    finds its person again through the cookie of a live server-side session. A session left
    idle longer than the idle_minutes setting is signed out here (21 CFR 11.300(d)), before any
    page acts for it: the app runs again and shows the sign-in form with a short note. Any
    other run counts as activity."""
    data = st.session_state.get("user")
    if not data:
        user = _resume()
    else:
        if _signed_out_for_idling():
            st.rerun()
        now = time.monotonic()
        st.session_state[ACTIVE_AT] = now
        user = UserPublic(**data)
        _keep_alive(user, now)
    return user


def _signed_out_for_idling() -> bool:
    """Sign a session left idle longer than the idle_minutes setting out, with the note the
    sign-in form shows; whether it was."""
    idle = settings().idle_minutes
    last = st.session_state.get(ACTIVE_AT)
    if last is None or time.monotonic() - last <= idle * 60:
        return False
    sign_out(_idle_note(idle))
    return True


def for_signed_in(action: Callable[P, None]) -> Callable[P, None]:
    """A widget's callback that acts for the signed-in person. Streamlit runs a callback before
    the page's script, and so before current_user() would sign an idle session out: the same
    check comes first here, and a session idle too long, or signed out, acts on nothing (the
    run that follows shows the sign-in form and its note). Every callback of every page is one
    of these (tests/pages/test_callbacks.py)."""

    @functools.wraps(action)
    def checked(*args: P.args, **kwargs: P.kwargs) -> None:
        if st.session_state.get("user") and not _signed_out_for_idling():
            action(*args, **kwargs)

    return checked


def _cookie_token() -> str | None:
    """The session cookie the browser sent when this Streamlit session began; None without
    one, and under AppTest, whose stand-in for the browser's request answers with no string."""
    found = st.context.cookies.get(COOKIE)
    return found if isinstance(found, str) else None


def _resume() -> UserPublic | None:
    """The person whose live server-side session the browser's cookie names, signed in again
    without their passphrase; looked at once per Streamlit session. An idle one is ended and
    the sign-in form says why."""
    if st.session_state.get(COOKIE_READ):
        return None
    st.session_state[COOKIE_READ] = True
    token = _cookie_token()
    if not token:
        return None
    idle = settings().idle_minutes
    with session() as s:
        found = find_session(s, token, idle_minutes=idle)
    if found.user is None or found.token_hash is None:
        if found.idle:
            st.session_state[SIGNED_OUT_NOTE] = _idle_note(idle)
        st.session_state[COOKIE_CLEAR] = True
        return None
    _act_for(found.user, found.token_hash, token)
    return found.user


def _keep_alive(user: UserPublic, now: float) -> None:
    """Record the activity on the server-side session about once a minute, and keep the
    cookie alive as long; a session ended meanwhile (signed out in another tab, the account
    reset or changed) signs this one out too."""
    key = st.session_state.get(BROWSER_SESSION)
    if not key or now - st.session_state.get(TOUCHED_AT, now - TOUCH_EVERY_S) < TOUCH_EVERY_S:
        return
    with session() as s:
        live = touch_session(s, key, role=user.role)
    if not live:
        sign_out("You were signed out (in another tab, or your account changed). Sign in again.")
        st.rerun()
    st.session_state[TOUCHED_AT] = now
    st.session_state[COOKIE_RENEW] = True


def _act_for(user: UserPublic, key: str, token: str) -> None:
    now = time.monotonic()
    st.session_state.user = user.model_dump()
    st.session_state[ACTIVE_AT] = now
    st.session_state[COOKIE_READ] = True
    st.session_state[BROWSER_SESSION] = key
    st.session_state[TOUCHED_AT] = now
    st.session_state[COOKIE_TOKEN] = token
    st.session_state.pop(SIGNED_OUT_NOTE, None)


def sign_in_session(user: UserPublic) -> None:
    """This browser session now acts for `user`, active from now, and the browser keeps a
    cookie so that a reload within the idle time finds the person again. Whatever session the
    browser held before is ended."""
    if old := st.session_state.get(BROWSER_SESSION):
        with session() as s:
            end_session(s, old)
    with session() as s:
        token = open_session(s, user.id)
    _act_for(user, token_hash(token), token)


def sign_out(note: str | None = None) -> None:
    """Forget everything this browser session held (the person, their forms, their passphrase
    fields), end its server-side session and clear the browser's cookie; `note` is shown once
    on the sign-in form."""
    if key := st.session_state.get(BROWSER_SESSION):
        with session() as s:
            end_session(s, key)
    st.session_state.clear()
    # The cookie this Streamlit session began with names an ended session now: not read again.
    st.session_state[COOKIE_READ] = True
    st.session_state[COOKIE_CLEAR] = True
    if note:
        st.session_state[SIGNED_OUT_NOTE] = note


def _cookie_statement(value: str, max_age: int) -> str:
    """The JavaScript statement that sets the cookie: `value` is a JS expression."""
    # Strict: no other site's page sends it; Secure whenever the app is served over https.
    secure = '(location.protocol === "https:" ? "; Secure" : "")'
    return (
        f'document.cookie = "{COOKIE}=" + {value} + '
        f'"; Path=/; Max-Age={max_age}; SameSite=Strict" + {secure};'
    )


def _cookie_max_age() -> int:
    # The idle time and the minute by which recorded activity may lag behind it: the server
    # decides when a session is idle, the cookie only has to outlive that.
    return settings().idle_minutes * 60 + TOUCH_EVERY_S


def _set_cookie_script(token: str) -> str:
    # token_urlsafe's letters, digits, - and _ need no quoting in a cookie or a JS string; a
    # token read back from a cookie is one of ours (its SHA-256 found a stored session).
    return _cookie_statement(f'"{token}"', _cookie_max_age())


def _clear_cookie_script() -> str:
    return _cookie_statement('""', 0)


def send_cookie_script(*, signed_in: bool) -> None:
    """Set the cookie again, for a signed-in person, from a hidden element in the sidebar (it
    shifts no element of the page); or clear it once, after a sign-out, from the page. Called
    by every run of the page, never from a callback (an element a fragment's callback draws
    replaces the page's sidebar, "Signed in as" with it).

    Every run sets it, not only the run after signing in: the browser loads the code that runs
    such an element only when the first one arrives, and a person who follows a link before
    it has loaded replaces the element unrun; the next run's sets the cookie then. Each run
    renews its lifetime too."""
    st.session_state.pop(COOKIE_RENEW, None)
    token = st.session_state.get(COOKIE_TOKEN)
    if signed_in and token:
        _draw_cookie_script(st.sidebar, _set_cookie_script(token))
    elif st.session_state.pop(COOKIE_CLEAR, None):
        _draw_cookie_script(st.container(), _clear_cookie_script())


def renew_cookie_in_fragment() -> None:
    """From a fragment's own body: in a run of the fragment alone, in which activity was
    recorded (a save asked who is signed in), set the cookie again from the fragment, so that
    a person who works long inside it without a run of the page keeps a live cookie. In a
    run of the page it does nothing: the page's run sets it."""
    ctx = get_script_run_ctx()
    if not (ctx and ctx.fragment_ids_this_run):
        return
    token = st.session_state.get(COOKIE_TOKEN)
    if st.session_state.pop(COOKIE_RENEW, None) and token:
        _draw_cookie_script(st.container(), _set_cookie_script(token))


def _draw_cookie_script(where: DeltaGenerator, script: str) -> None:
    # The element is hidden; a different body each time, so that the browser runs it again.
    where.html(
        f"<style>div[data-testid='stElementContainer']:has(script[data-fma-bands-cookie])"
        f" {{ display: none; }}</style><script data-fma-bands-cookie>{script}"
        f" /* {time.monotonic_ns()} */</script>",
        unsafe_allow_javascript=True,
    )


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


def show_knowledge(vignette: Vignette, knows: Knowledge) -> None:
    """What the agent knows at a step, as raters read it: the clinical core and the results
    the step shows (texts from the file, shown as written)."""
    st.caption(knows.summary)
    with st.container(border=True):
        plain(vignette.clinical_core, label="Clinical core (frozen, verbatim)")
        if knows.results:
            st.markdown("**Results**")
            for line in knows.result_lines():
                plain(line)
    if knows.earlier:
        st.info(knows.earlier, icon=":material/history:")


def show_proposal(proposal: Proposal, vignette: Vignette) -> None:
    """A proposed band as raters and coordinators read it: values, picture, source, clause and
    reasoning (text from files, shown as written). Never what the band does to the study's
    metrics: raters judge clinical defensibility only."""
    names = tool_names(vignette)
    # "Acceptable: no" would read as a verdict on the proposal: say whose values these are.
    plain(describe_band(proposal.acceptable, names), label="The proposed band: what it accepts")
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
    labels): nothing in it can become a heading, link, image, colour, formula or icon, its
    line breaks stay line breaks, and a control or reordering character (which could turn the
    rest of a line around) is written as its escape, as on a terminal."""
    literal = _MARKUP.sub(r"\\\1", _TRIGGERS.sub(WORD_JOINER, terminal_text(str(text))))
    return literal.replace("\n", "  \n")


# A widget's label reads inline markdown only (no lists or headings), and a screen reader reads
# the label as given, escapes included ("X\\-ray"). Text that starts with a letter and holds only
# letters, digits, spaces and . , - ( ) / ' can mark nothing up, save a "www." link.
_PLAIN_LABEL = re.compile(r"[A-Za-z][A-Za-z0-9 .,()/'-]*")


def label_words(text: str) -> str:
    """Text from files or people as a widget's label: as written where it can mark nothing up
    (a test's name, "X-ray ankle"), else escaped."""
    if _PLAIN_LABEL.fullmatch(text) and "www." not in text.lower():
        return text
    return escaped(text)


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
