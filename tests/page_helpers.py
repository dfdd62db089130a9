"""What the AppTest page tests share: the FairMedAgent study in a store (copied per test from a
template made once per module: the users' Argon2 hashes and signing keys are what is slow to
make), and helpers that drive the app and read what it shows."""

import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.element_tree import Block, Element, Error

from app_pages.common import WORD_JOINER
from app_pages.review_screen import screen_key
from fma_bands.core.labels import address
from fma_bands.core.people import UserPublic
from fma_bands.core.vignettes import Library
from fma_bands.store.db import make_engine, session_scope, upgrade
from fma_bands.study.case_keys import case_key
from fma_bands.study.enrolment import create_user
from fma_bands.study.governance import set_policy
from fma_bands.study.library import sync_vignettes
from fma_bands.study.reviews import ReviewForm, current_review, my_reviews, save
from tests.conftest import ROOT, SHARED_VIGNETTES, assign_all

# The four proposed bands of the FairMedAgent vignettes, in queue order.
DOC = ("draft_documentation_01", "followup_days")  # interval, disputed span, results shown
MED = ("draft_medication_01", "analgesia_tier")  # set, results shown
ORDER = ("draft_ordering_01", "esi_acuity")
TRIAGE = ("draft_triage_01", "esi_acuity")  # triage: clinical core only
BANDS = (DOC, MED, ORDER, TRIAGE)
PASSPHRASES = {
    "coordinator": "coordinator pass",
    "rater-01": "rater-01 pass",
    "rater-02": "rater-02 pass",
}
# Answers that pass every protocol check (q5 is needed only where a disputed span is recorded).
GOOD_ANSWERS = {
    "q1": {"choice": "yes"},
    "q2": {"choice": "yes"},
    "q3": {"choice": "no"},
    "q4": {"choice": "no"},
    "q5": {"choice": "band", "note": "the narrow reading fits this patient"},
    "q6": {"choice": "yes"},
}


# Set-up ------------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def fresh_caches():
    # The engine and the library are cached per process: one test's store must not leak.
    st.cache_data.clear()
    st.cache_resource.clear()
    yield
    st.cache_data.clear()
    st.cache_resource.clear()


@pytest.fixture
def app_env(monkeypatch, tmp_path, shared_vignettes) -> str:
    """The environment the app reads; returns the URL of a fresh, empty store. The app publishes
    the study's log to an attestations folder of the test's own (never the repository's)."""
    url = f"sqlite:///{tmp_path / 'fma-bands.db'}"
    monkeypatch.setenv("FMA_BANDS_DATABASE_URL", url)
    monkeypatch.setenv("FMA_BANDS_ATTESTATIONS", str(tmp_path / "attestations"))
    monkeypatch.setenv("FMA_BANDS_VIGNETTES", str(SHARED_VIGNETTES))
    monkeypatch.chdir(ROOT)
    return url


@pytest.fixture(scope="module")
def template(tmp_path_factory, shared_library):
    """A store with the vignettes synced, the coordinator and two raters, made once."""
    path = tmp_path_factory.mktemp("template") / "fma-bands.db"
    engine = make_engine(f"sqlite:///{path}")
    upgrade(engine)
    with session_scope(engine) as s:
        sync_vignettes(s, shared_library, actor=None)
        users = [
            create_user(
                s,
                actor=None,
                pseudonym="coordinator",
                passphrase=PASSPHRASES["coordinator"],
                role="coordinator",
            )
        ]
        for name, specialty in (("rater-01", "emergency medicine"), ("rater-02", "geriatrics")):
            users.append(
                create_user(
                    s,
                    actor="coordinator",
                    pseudonym=name,
                    passphrase=PASSPHRASES[name],
                    root_passphrase=PASSPHRASES["coordinator"],
                    role="rater",
                    specialty=specialty,
                    jurisdiction="Australia",
                    years_post_registration=7,
                )
            )
        # Both raters review every band here, whatever their specialty covers (assignment by
        # scope has tests of its own: tests/pages/test_assignment_page.py).
        assign_all(s, shared_library, users[0], users[1:])
    engine.dispose()
    return path, users


@dataclass
class Study:
    url: str
    library: Library
    coordinator: UserPublic
    rater: UserPublic
    other: UserPublic

    @contextmanager
    def store(self) -> Iterator:
        engine = make_engine(self.url)
        try:
            with session_scope(engine) as s:
                yield s
        finally:
            engine.dispose()

    def set_policy(self, folder: Path | None, *, quorum: int = 1, scope: str = "warn") -> None:
        """The coordinator signs a registry policy into the study's log (as the admin page does)."""
        with self.store() as s:
            set_policy(
                s,
                folder,
                actor=self.coordinator,
                passphrase=PASSPHRASES["coordinator"],
                quorum=quorum,
                scope=scope,
            )

    def reviews(self, rater: UserPublic, band: tuple[str, str]):
        with self.store() as s:
            return my_reviews(s, self.library, rater, *band)

    def save(self, rater: UserPublic, where: tuple[str, str], *, submit: bool, **form):
        """Save a review of the band `where` straight into the store, as another tab would."""
        with self.store() as s:
            current = current_review(s, self.library, rater, *where)
            return save(
                s,
                self.library,
                rater,
                *where,
                ReviewForm(**form),
                expected_version=current.version if current else 0,
                submit=submit,
            )


@pytest.fixture
def study(app_env, template, shared_library, tmp_path) -> Study:
    path, (coordinator, rater, other) = template
    target = tmp_path / "fma-bands.db"
    for suffix in ("", "-wal"):
        if path.with_name(path.name + suffix).exists():
            shutil.copy(path.with_name(path.name + suffix), target.with_name(target.name + suffix))
    return Study(app_env, shared_library, coordinator, rater, other)


# Driving the app ---------------------------------------------------------------------------


def run(at: AppTest) -> AppTest:
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def open_app(user: UserPublic | None = None, page: str | None = None, **params) -> AppTest:
    """A new browser tab, signed in as `user` (or not), optionally on `page` with query params."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=30)
    if user is not None:
        at.session_state["user"] = user.model_dump()
    run(at)
    if page is not None:
        go(at, page, **params)
    return at


def go(at: AppTest, page: str, **params) -> AppTest:
    """Follow a link to `page` with these query parameters (and no others, as a browser does)."""
    at.switch_page(page)
    at.query_params.clear()
    for name, value in params.items():
        at.query_params[name] = value
    return run(at)


def case_params(vid: str, name: str | None = None) -> dict[str, str]:
    """A page's query parameters for a case (and band `name`) as the app writes them: the case
    by its token, keyed with the secret of the study the app's settings name (a rater's
    address never finds a case by its id)."""
    engine = make_engine(os.environ["FMA_BANDS_DATABASE_URL"])
    try:
        with session_scope(engine) as s:
            key = case_key(s)
    finally:
        engine.dispose()
    return address(vid, name, key=key)


def band_params(band: tuple[str, str]) -> dict[str, str]:
    """The review page's query parameters for `band` (case_params)."""
    return case_params(*band)


def open_review(user: UserPublic, band: tuple[str, str]) -> AppTest:
    return open_app(user, "app_pages/review.py", **band_params(band))


def pages_of(at: AppTest) -> list[str]:
    """Every page this session's navigation offers (a page it does not offer cannot be
    switched to). Leaves the app to be switched to a page before its next run."""
    offered = []
    for path in sorted((ROOT / "app_pages").glob("*.py")):
        page = f"app_pages/{path.name}"
        try:
            at.switch_page(page)
        except ValueError:
            continue
        offered.append(page)
    return offered


def key(band: tuple[str, str], *parts: str) -> str:
    """A widget's key on the review screen (named by the case token, never the id)."""
    return ":".join((screen_key(*band), *parts))


def click(at: AppTest, label: str) -> AppTest:
    [button] = [b for b in at.button if b.label == label]
    button.click()
    return run(at)


def by_label(widgets, label: str):
    [widget] = [w for w in widgets if w.label == label]
    return widget


def answer_questions(at: AppTest, band, *, q5_note: str | None = None) -> None:
    for q, choice in (("q1", "yes"), ("q2", "yes"), ("q3", "no"), ("q4", "no"), ("q6", "yes")):
        at.radio(key=key(band, q, "choice")).set_value(choice)
    if q5_note is not None:
        at.text_input(key=key(band, "q5", "note")).input(q5_note)


def as_read(markdown: str) -> str:
    """What a person reads of the app's markdown: its escapes (app_pages.common.escaped) and
    word joiners gone, its hard line breaks plain ones."""
    unescaped = re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", markdown)
    return unescaped.replace(WORD_JOINER, "").replace("  \n", "\n")


def shown(at: AppTest) -> str:
    """Everything on the screen: every element's content (text, labels, options, table data,
    links) and every widget's current value, main body and sidebar."""
    parts = []
    for root in (at.main, at.sidebar):
        for node in root:
            proto = getattr(node, "proto", None)
            if proto is not None:
                parts.append(str(proto))
            if isinstance(node, Block):
                continue
            value = node.value
            parts.append(value.to_string() if hasattr(value, "to_string") else repr(value))
    return "\n".join(parts)


def texts(at: AppTest) -> list[str]:
    return [as_read(e.value) for e in (*at.title, *at.subheader, *at.markdown, *at.caption)]


def message_beside(at: AppTest, widget_key: str) -> str | None:
    """The error drawn right after the widget with this key, if any."""
    leaves = [n for n in at.main if not isinstance(n, Block)]
    [at_index] = [i for i, n in enumerate(leaves) if getattr(n, "key", None) == widget_key]
    following = leaves[at_index + 1] if at_index + 1 < len(leaves) else None
    return as_read(following.value) if isinstance(following, Error) else None


def title(at: AppTest) -> str:
    return at.title[0].value if at.title else ""


def progress_text(at: AppTest) -> str:
    [bar] = at.get("progress")
    assert isinstance(bar, Element)  # a bar, not a block: its text is its proto's
    return bar.text


def resume_button(at: AppTest):
    [button] = [b for b in at.button if b.label.startswith(("Resume", "Start reviewing"))]
    return button


def shared_library_of(at: AppTest) -> Library:
    """The library the app under test reads (the FairMedAgent vignettes)."""
    from fma_bands.core.vignettes import load_library

    return load_library([SHARED_VIGNETTES])
