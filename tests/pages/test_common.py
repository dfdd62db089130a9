"""What every page shares (app_pages/common.py): the helpers themselves, outside any page."""

import threading

import pytest

from app_pages import common
from app_pages.common import WORD_JOINER, escaped
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
