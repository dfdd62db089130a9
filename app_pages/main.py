"""The app's navigation: which screens a visitor, a rater and the coordinator see, and run().

`streamlit run app.py` lands here; the pages are named by absolute paths, so the app runs from
any folder and from an installed package alike.
"""

from pathlib import Path

import streamlit as st

HERE = Path(__file__).resolve().parent
# Every address a signed-in user can open; signed out, each shows the sign-in form instead and
# keeps its query, so a shared link to a band leads there once the rater has signed in.
ADDRESSES = (
    "queue",
    "review",
    "library",
    "vignette",
    "agreement",
    "attest",
    "admin",
    "registry_page",
    "identity",
    "audit_log",
    "raters",
    "handbacks",
    "passphrase",
    "progress",
    "exemptions",
    "queries",
    "chair",
)


def page(name: str, title: str, icon: str, **options) -> st.Page:
    return st.Page(HERE / f"{name}.py", title=title, icon=f":material/{icon}:", **options)


def first_run_pages() -> list[st.Page]:
    return [page("first_run", "Set up", "key")]


def signed_out_pages() -> list[st.Page]:
    # Activation is reached from the sign-in page, so signed out there is nothing to choose.
    return [
        page("sign_in", "Sign in", "login"),
        page("activate", "Activate your account", "how_to_reg", visibility="hidden"),
    ] + [
        page("sign_in", "Sign in", "login", url_path=path, visibility="hidden")
        for path in ADDRESSES
    ]


def _reading() -> list[st.Page]:
    """The pages raters and the coordinator both read, in the order both menus list them."""
    return [
        page("library", "Vignette library", "menu_book"),
        page("vignette", "Vignette", "description"),
        page("agreement", "Agreement", "insights"),
    ]


def _passphrase() -> st.Page:
    return page("passphrase", "Change passphrase", "password")


def rater_pages(chair: bool = False) -> list[st.Page]:
    """A rater's pages; the study's chair also has the chair's decision."""
    return [
        page("queue", "My queue", "checklist", default=True),
        page("review", "Review a band", "rate_review"),
        *_reading(),
        page("exemptions", "Review exemptions", "rule"),
        page("queries", "Queries", "forum"),
        *([page("chair", "Chair's decision", "gavel")] if chair else []),
        page("attest", "Sign attestation", "signature"),
        _passphrase(),
    ]


def steward_pages() -> list[st.Page]:
    return [page("approve", "Approve changes", "approval", default=True), _passphrase()]


def coordinator_pages() -> list[st.Page]:
    return [
        page("admin", "Study admin", "tune", default=True),
        page("raters", "Raters", "group"),
        page("handbacks", "Import a hand-back", "upload_file"),
        page("progress", "Raters' progress", "monitoring"),
        page("queries", "Queries", "forum"),
        *_reading(),
        page("chair", "Chair's decision", "gavel"),
        page("registry_page", "Band registry", "verified"),
        page("identity", "Rater identities", "badge"),
        page("audit_log", "Audit log", "receipt_long"),
        _passphrase(),
    ]


def run() -> None:
    from app_pages.common import (
        current_user,
        escaped,
        send_cookie_script,
        session,
        settings,
        study_chair,
    )
    from app_pages.page_script import click_guard
    from fma_bands.core.errors import FmaBandsError
    from fma_bands.study.users import has_users

    # An emoji icon is drawn in the browser; a Material one is fetched from fonts.gstatic.com,
    # and no page of the app may make a browser call outside it.
    st.set_page_config(page_title="fma-bands", page_icon="⚖️", layout="wide")
    try:
        settings()  # a setting the app cannot use is said once, by name, before any page
    except FmaBandsError as exc:
        st.error(f"The app's settings cannot be used: {escaped(exc)}")
        st.stop()
    user = current_user()
    send_cookie_script(signed_in=user is not None)
    try:
        with session() as s:
            first_run = not has_users(s)
            chairs = user is not None and user.role == "rater" and study_chair(s) == user.pseudonym
    except FmaBandsError as exc:
        # A database that cannot be opened or brought up to date, a folder it cannot publish
        # to: said once, by name, before any page.
        st.error(f"The study's store cannot be used: {escaped(exc)}")
        st.stop()
    if first_run:
        pages = first_run_pages()
    elif user is None:
        pages = signed_out_pages()
    elif user.role == "rater":
        pages = rater_pages(chair=chairs)
    elif user.role == "steward":
        pages = steward_pages()
    else:
        pages = coordinator_pages()
    if user is not None:
        with st.sidebar:
            st.caption(f"Signed in as {user.pseudonym} ({user.role})")
            sign_out_button()
        click_guard()
    # Every page in the menu: a collapsed one hides the last (Audit log) behind "View more".
    chosen = st.navigation(pages, expanded=True)
    note_page(chosen.url_path)
    chosen.run()


ASKING = "sign_out:asking"


def sign_out_button() -> None:
    """Sign out, asked first while a flag's note typed on Review a band is not sent: signing
    out forgets it (the browser asks before a reload would; signing out is no reload)."""
    from app_pages.common import sign_out
    from app_pages.review_screen import STATE_KEY

    held = st.session_state.get(STATE_KEY)
    unsent = held.unsent_flags() if held is not None else 0
    if st.button("Sign out", icon=":material/logout:", key="sign_out"):
        if not unsent or st.session_state.get(ASKING):
            sign_out()
            st.rerun()
        st.session_state[ASKING] = True
    if not st.session_state.get(ASKING):
        return
    if not unsent:  # sent or cleared since
        del st.session_state[ASKING]
        return
    said = (
        "The flag's note you typed on Review a band is not sent yet"
        if unsent == 1
        else f"The flags' notes you typed on {unsent} bands of Review a band are not sent yet"
    )
    st.warning(
        f"{said}: signing out loses {'it' if unsent == 1 else 'them'}. Send, or clear the box, "
        "or sign out anyway.",
        icon=":material/flag:",
    )
    if st.button("Sign out anyway", key="sign_out:anyway"):
        sign_out()
        st.rerun()
    if st.button("Stay signed in", key="sign_out:stay"):
        del st.session_state[ASKING]
        st.rerun()


SHOWN_KEY, OPENED_KEY = "page_shown", "page_opened"


def note_page(path: str) -> None:
    """Whether this run opens the page (the session's last run showed another, or none) or
    reruns it: a page may do on opening what its reruns then keep (opened)."""
    st.session_state[OPENED_KEY] = st.session_state.get(SHOWN_KEY) != path
    st.session_state[SHOWN_KEY] = path


def opened() -> bool:
    """This run opens its page (note_page); a page run without the navigation always does."""
    return bool(st.session_state.get(OPENED_KEY, True))


if __name__ == "__main__":
    run()
