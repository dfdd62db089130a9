"""Every widget callback of every page is guarded (app_pages.common.for_signed_in): Streamlit runs
a callback before the page's script, and so before the page signs an idle session out. Read
from the pages' source, so that a callback added later without the guard fails here."""

import ast
from pathlib import Path

from tests.conftest import ROOT

PAGES = sorted((ROOT / "app_pages").glob("*.py"))
CALLBACK_KEYWORDS = ("on_click", "on_change", "on_submit")


def guarded_functions(tree: ast.Module) -> set[str]:
    return {
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        and any(isinstance(d, ast.Name) and d.id == "for_signed_in" for d in node.decorator_list)
    }


def callbacks_named(value: ast.expr) -> list[ast.expr]:
    """The functions a callback keyword's value may call: both arms of `f if x else None`, and
    the function a lambda calls."""
    if isinstance(value, ast.IfExp):
        return [*callbacks_named(value.body), *callbacks_named(value.orelse)]
    if isinstance(value, ast.Lambda):
        return [value.body.func] if isinstance(value.body, ast.Call) else [value]
    return [value]


def unguarded(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    guarded = guarded_functions(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        for keyword in node.keywords:
            if keyword.arg not in CALLBACK_KEYWORDS:
                continue
            for callback in callbacks_named(keyword.value):
                if isinstance(callback, ast.Constant) and callback.value in ("ignore", None):
                    continue  # a download that reruns nothing, or no callback
                if isinstance(callback, ast.Name) and callback.id in guarded:
                    continue
                found.append(f"{path.name}:{keyword.value.lineno} {ast.unparse(callback)}")
    return found


def test_every_callback_of_every_page_checks_the_session_first():
    assert [problem for path in PAGES for problem in unguarded(path)] == []


def test_the_check_finds_a_callback_without_the_guard(tmp_path):
    page = tmp_path / "page.py"
    page.write_text(
        "import streamlit as st\n"
        "from app_pages.common import for_signed_in\n\n"
        "@for_signed_in\n"
        "def _kept():\n    pass\n\n"
        "def _bare():\n    pass\n\n"
        "st.button('a', on_click=_kept)\n"
        "st.button('b', on_click=_bare)\n"
        "st.button('c', on_click=lambda: _bare())\n"
        "st.button('d', on_click=_kept if True else None)\n"
        "st.download_button('e', data=b'', on_click='ignore')\n"
    )
    assert unguarded(page) == ["page.py:12 _bare", "page.py:13 _bare"]
