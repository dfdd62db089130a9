"""What every page shares (app_pages/common.py): the helpers themselves, outside any page."""

import hashlib
import os
import re
import threading
import time

import pytest

from app_pages import common
from app_pages.common import WORD_JOINER, escaped, label_words
from fma_bands.evidence import kept_parses
from tests.conftest import DEMO_VIGNETTES


@pytest.fixture
def fresh_process(monkeypatch, tmp_path):
    """As in a new server process: nothing recovered or synced yet, caches empty."""
    monkeypatch.setenv("FMA_BANDS_DATABASE_URL", f"sqlite:///{tmp_path / 'fma-bands.db'}")
    monkeypatch.setenv("FMA_BANDS_VIGNETTES", str(DEMO_VIGNETTES))
    monkeypatch.setenv("FMA_BANDS_ATTESTATIONS", str(tmp_path / "attestations"))
    monkeypatch.setattr(common, "_recovered", set())
    monkeypatch.setattr(common, "_synced", set())
    common.st.cache_data.clear()
    common.st.cache_resource.clear()
    yield
    common.st.cache_data.clear()
    common.st.cache_resource.clear()


def test_settings_are_read_again_when_a_variable_or_the_folder_changes(monkeypatch, tmp_path):
    monkeypatch.setenv("FMA_BANDS_VIGNETTES", str(tmp_path / "a"))
    first = common.settings()
    assert first.vignettes == tmp_path / "a"
    assert common.settings() is first  # a page run asks dozens of times: read once
    monkeypatch.setenv("FMA_BANDS_VIGNETTES", str(tmp_path / "b"))
    assert common.settings().vignettes == tmp_path / "b"
    monkeypatch.chdir(tmp_path)
    assert common.settings() is not first
    # A setting the app cannot use is refused every time, never kept.
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("FMA_BANDS_VIGNETTES", str(tmp_path / "a-file"))
    for _ in range(2):
        with pytest.raises(common.FmaBandsError, match="is not a folder"):
            common.settings()


def test_the_server_keeps_envelope_parses_in_the_kept_answers_folder(monkeypatch, tmp_path):
    """Records read before, by this server or a command, are not parsed again
    (evidence/kept_parses.py): the folder follows the settings."""
    for name in ("one", "two"):
        monkeypatch.setenv("FMA_BANDS_KEPT_ANSWERS", str(tmp_path / name))
        common.settings()
        assert kept_parses._kept.folder == tmp_path / name


def test_the_first_page_of_a_process_does_not_wait_for_itself(fresh_process):
    # library() syncs the store under its lock and, through session(), the engine recovers
    # interrupted signatures under its own: one lock for both hung the first page for ever.
    found = []
    first = threading.Thread(target=lambda: found.append(common.library()), daemon=True)
    first.start()
    first.join(timeout=60)
    assert not first.is_alive(), "the first library() of a process never returned"
    assert len(found[0]) == 12


@pytest.mark.parametrize(
    "text",
    [
        "# a heading",
        "> 100 bpm",
        "![x](http://example.org/x.png)",
        ":red[red] $x^2$ ~~struck~~ **bold** _it_ `code`",
        "1. one\n===",
        "<img src=x>",
    ],
)
def test_escaped_text_has_every_markup_character_escaped(text):
    out = escaped(text)
    # Each character Markdown reads is preceded by a backslash; letters and spaces are not.
    unescaped = [c for i, c in enumerate(out) if c in "#>![]()*_`$~:=<" and out[i - 1] != "\\"]
    assert not unescaped, out


def test_escaped_text_defeats_the_links_and_icons_made_after_parsing():
    out = escaped("see http://example.org, www.example.org, a@b.org and :material/warning:")
    assert "http:" + WORD_JOINER not in out  # the joiner sits after the escaped colon
    assert "\\:" + WORD_JOINER + "//" in out
    assert "www" + WORD_JOINER + "\\." in out
    assert "a" + WORD_JOINER + "@" in out
    assert "\\:" + WORD_JOINER + "material/" in out
    # Nothing else changes: take the joiners and backslashes away and the text is back.
    assert out.replace(WORD_JOINER, "").replace("\\", "") == (
        "see http://example.org, www.example.org, a@b.org and :material/warning:"
    )


def test_escaped_text_keeps_its_line_breaks():
    assert escaped("one\ntwo") == "one  \ntwo"


def test_escaped_text_shows_controls_and_reordering_characters_as_escapes():
    """A signed reason holding an escape sequence or a right-to-left override would turn the
    rest of its line around on the page: each is shown as its escape, as on a terminal."""
    out = escaped("a\x1b[31m\u202eb\udcff\tc")
    assert not {"\x1b", "\u202e", "\udcff"} & set(out)
    assert out.replace("\\\\", "\\").replace("\\[", "[") == "a\\u001b[31m\\u202eb\\udcff\tc"


@pytest.mark.parametrize(
    "text", ["X-ray ankle", "D-dimer", "CT pulmonary angiography (CTPA)", "Lipase, serum"]
)
def test_a_plain_label_is_given_as_written_for_screen_readers(text):
    assert label_words(text) == text


@pytest.mark.parametrize(
    "text", ["1. one", "- listed", "# heading", "**bold**", "www.example.org", "see [a](b)", "x\ny"]
)
def test_a_label_that_could_mark_something_up_is_escaped(text):
    assert label_words(text) == escaped(text)


# Signed in across a reload (current_user, sign_in_session, sign_out) ------------------------


def reloadable_page() -> None:
    """A page that signs rater-01 in or out when the test says so, and names who it acts for."""
    import streamlit as st

    from app_pages import common
    from fma_bands.study.users import get_user

    action = st.session_state.pop("action", None)
    if action == "sign in":
        with common.session() as s:
            found = get_user(s, "rater-01")
        assert found is not None
        common.sign_in_session(found)
        st.rerun()
    if action == "sign out":
        common.sign_out()
        st.rerun()
    user = common.current_user()
    if not st.session_state.get("hold script"):  # as the app's menu sends it, on every run
        common.send_cookie_script(signed_in=user is not None)
    st.text(f"acting for {user.pseudonym if user else 'nobody'}")
    st.text(f"note: {st.session_state.get(common.SIGNED_OUT_NOTE)}")


@pytest.fixture
def store_with_rater(fresh_process, monkeypatch):
    """A store with rater-01 in it, and the cookie a reload would send (AppTest has none)."""
    from sqlmodel import select

    from fma_bands.store.models import User, utcnow

    with common.session() as s:
        s.add(User(pseudonym="rater-01", role="rater", passphrase_hash="x", activated_at=utcnow()))
    jar: dict[str, str] = {}
    monkeypatch.setattr(common, "_cookie_token", lambda: jar.get(common.COOKIE))

    def rows() -> list:
        from fma_bands.store.models import BrowserSession

        with common.session() as s:
            found = list(s.exec(select(BrowserSession)))
            for row in found:
                s.expunge(row)
            return found

    return jar, rows


def load(at=None):
    """A new Streamlit session on the page (a reload), or the next run of `at`."""
    from streamlit.testing.v1 import AppTest

    at = at or AppTest.from_function(reloadable_page, default_timeout=30)
    at.run()
    assert not at.exception, at.exception
    return at


def acting_for(at) -> str:
    return at.text[0].value.removeprefix("acting for ")


def cookie_scripts(at) -> list[str]:
    return [e.proto.body for e in at.get("html") if "data-fma-bands-cookie" in e.proto.body]


def given_token(script: str) -> str:
    found = re.search(rf'"{common.COOKIE}=" \+ "([A-Za-z0-9_-]+)"', script)
    assert found, script
    return found.group(1)


def test_a_reload_finds_the_person_through_the_cookie_and_only_the_hash_is_kept(store_with_rater):
    jar, rows = store_with_rater
    at = load()
    assert acting_for(at) == "nobody" and not cookie_scripts(at)
    at.session_state["action"] = "sign in"
    at = load(at)
    assert acting_for(at) == "rater-01"
    # The run after signing in sets the cookie, from the sidebar.
    [script] = cookie_scripts(at)
    assert at.sidebar.get("html") and "SameSite=Strict" in script and "Max-Age=1860" in script
    token = given_token(script)
    [row] = rows()
    assert row.token_hash == hashlib.sha256(token.encode()).hexdigest()
    assert token not in str(row.model_dump()) and row.ended_at is None
    # Every run sets it again, with the same token: a script the browser never ran (the person
    # moved on before it had loaded) is made good by the next.
    at = load(at)
    [again] = cookie_scripts(at)
    assert given_token(again) == token and again != script
    # A reload: a new Streamlit session, the cookie sent with it, signs rater-01 in again.
    jar[common.COOKIE] = token
    again = load()
    assert acting_for(again) == "rater-01"
    # Without the cookie (another browser), or with a made-up one, nobody.
    jar[common.COOKIE] = "x" * 43
    assert acting_for(load()) == "nobody"
    jar.clear()
    assert acting_for(load()) == "nobody"


def test_signing_out_ends_the_session_and_clears_the_cookie(store_with_rater):
    jar, rows = store_with_rater
    at = load()
    at.session_state["action"] = "sign in"
    at = load(at)
    jar[common.COOKIE] = given_token(cookie_scripts(at)[0])
    at.session_state["action"] = "sign out"
    at = load(at)
    assert acting_for(at) == "nobody"
    [script] = cookie_scripts(at)
    assert "Max-Age=0" in script and 'fma_bands_session=" + ""' in script
    [row] = rows()
    assert row.ended_at is not None
    # Cleared once; nothing in the Streamlit session keeps the token any more.
    token = jar[common.COOKIE]
    at = load(at)
    assert not cookie_scripts(at)
    assert token not in str({k: at.session_state[k] for k in at.session_state})
    # The cookie the browser may still send names an ended session: a reload asks to sign in.
    assert acting_for(load()) == "nobody"


def test_an_idle_session_is_ended_on_reload_and_the_form_says_why(store_with_rater):
    from datetime import timedelta

    from fma_bands.store.models import BrowserSession

    jar, rows = store_with_rater
    at = load()
    at.session_state["action"] = "sign in"
    at = load(at)
    jar[common.COOKIE] = given_token(cookie_scripts(at)[0])
    [row] = rows()
    with common.session() as s:
        stored = s.get(BrowserSession, row.token_hash)
        assert stored is not None
        stored.last_seen_at -= timedelta(minutes=31)
    reloaded = load()
    assert acting_for(reloaded) == "nobody"
    assert "signed out after 30 minutes without activity" in reloaded.text[1].value
    assert rows()[0].ended_at is not None
    assert "Max-Age=0" in cookie_scripts(reloaded)[0]


def test_activity_is_written_about_once_a_minute_not_on_every_run(store_with_rater):
    from datetime import timedelta

    from fma_bands.store.models import BrowserSession

    _, rows = store_with_rater
    at = load()
    at.session_state["action"] = "sign in"
    at = load(at)
    key = rows()[0].token_hash

    def seen():
        return rows()[0].last_seen_at

    def move_back(minutes: int) -> None:
        with common.session() as s:
            stored = s.get(BrowserSession, key)
            assert stored is not None
            stored.last_seen_at -= timedelta(minutes=minutes)

    move_back(5)
    before = seen()
    at = load(at)  # a rerun within the minute: nothing written
    assert seen() == before
    at.session_state[common.TOUCHED_AT] -= common.TOUCH_EVERY_S + 1
    at = load(at)  # a minute on: the activity is recorded
    assert seen() > before + timedelta(minutes=4)
    # Asking who is signed in draws nothing (a form's callback asks it; an element a fragment's
    # callback draws takes the place of the page's sidebar): the script waits for the run.
    at.session_state["hold script"] = True
    at.session_state[common.TOUCHED_AT] -= common.TOUCH_EVERY_S + 1
    at = load(at)
    assert not cookie_scripts(at)
    at.session_state["hold script"] = False
    at = load(at)
    [script] = cookie_scripts(at)
    assert "Max-Age=1860" in script
    assert [e for e in at.sidebar.get("html") if "data-fma-bands-cookie" in e.proto.body]
    # Ended elsewhere (signed out in another tab): the next touch signs this one out too.
    with common.session() as s:
        stored = s.get(BrowserSession, key)
        assert stored is not None
        stored.ended_at = stored.last_seen_at
    at.session_state[common.TOUCHED_AT] -= common.TOUCH_EVERY_S + 1
    at = load(at)
    assert acting_for(at) == "nobody"
    assert "signed out" in at.text[1].value


def fragment_page(in_fragment: bool) -> None:
    """Renews the cookie as a fragment's own body does, in a run of the fragment alone (its
    run's fragment ids) or in a run of the page, after activity was recorded."""
    import types

    import streamlit as st

    from app_pages import common

    st.session_state[common.COOKIE_TOKEN] = "t" * 43
    st.session_state[common.COOKIE_RENEW] = True
    real = common.get_script_run_ctx
    ids = ["the review form"] if in_fragment else []
    common.get_script_run_ctx = lambda: types.SimpleNamespace(  # type: ignore[assignment,misc]
        fragment_ids_this_run=ids
    )
    try:
        common.renew_cookie_in_fragment()
    finally:
        common.get_script_run_ctx = real


@pytest.mark.parametrize("in_fragment", [True, False])
def test_a_fragments_own_run_renews_the_cookie_in_the_fragment_and_a_page_run_leaves_it(
    in_fragment,
):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(fragment_page, args=(in_fragment,), default_timeout=30).run()
    assert not at.exception
    assert not at.sidebar.get("html")
    if in_fragment:  # drawn where the fragment draws (AppTest runs the page whole)
        [script] = cookie_scripts(at)
        assert given_token(script) == "t" * 43
    else:  # the page's own run sets it from the sidebar
        assert not cookie_scripts(at)


def test_a_cache_key_is_short_and_changes_with_any_part():
    digests = tuple((f"v{i}", "sha256:" + "a" * 64) for i in range(300))
    key = common.cache_key(digests, (12, "sha256:b"))
    assert len(key) == 64 and key == common.cache_key(digests, (12, "sha256:b"))
    assert key != common.cache_key(digests, (13, "sha256:b"))
    assert key != common.cache_key(digests[:-1], (12, "sha256:b"))


def test_the_vignette_folder_state_changes_with_any_vignette_file(tmp_path):
    # What library() reloads by: a file's bytes, a new file, a removed one; other files and a
    # folder that is not there say nothing.
    folder = tmp_path / "vignettes"
    folder.mkdir()
    assert common._folder_state(tmp_path / "missing") == ""
    (folder / "a.yaml").write_text("id: a\n")
    (folder / "b.yml").write_text("id: b\n")
    first = common._folder_state(folder)
    (folder / "notes.txt").write_text("not a vignette")
    assert common._folder_state(folder) == first
    (folder / "a.yaml").write_text("id: a2\n")  # another size
    edited = common._folder_state(folder)
    assert edited != first
    (folder / "c.yaml").write_text("id: c\n")
    added = common._folder_state(folder)
    assert added not in (first, edited)
    (folder / "b.yml").unlink()
    assert common._folder_state(folder) not in (first, edited, added)
    (folder / "d.yaml").symlink_to(folder / "gone.yaml")  # dangling: named, not a crash
    assert common._folder_state(folder)


def test_the_vignette_folder_state_changes_with_an_edit_that_hides_its_time(tmp_path):
    """The same size and the modification time set back, or another file renamed over it: the
    state still changes (the app would otherwise keep the vignette as it was)."""
    folder = tmp_path / "vignettes"
    folder.mkdir()
    path = folder / "a.yaml"
    path.write_text("canary: FMA-CANARY-1\n")
    before = path.stat()
    first = common._folder_state(folder)
    time.sleep(0.01)
    path.write_text("canary: FMA-CANARY_1\n")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    edited = common._folder_state(folder)
    assert edited != first
    other = tmp_path / "other.yaml"
    other.write_text("canary: FMA-CANARY-2\n")
    os.utime(other, ns=(before.st_atime_ns, before.st_mtime_ns))
    other.replace(path)
    assert common._folder_state(folder) not in (first, edited)
