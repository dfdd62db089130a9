"""The app's navigation: which screens a visitor, a rater and the coordinator see.

`streamlit run app.py` from a checkout and `fma-bands serve` from an installed package both
land here; page paths are absolute so either works from any folder.
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
)


def page(name: str, title: str, icon: str, **options) -> st.Page:
    return st.Page(HERE / f"{name}.py", title=title, icon=f":material/{icon}:", **options)


def run() -> None:
    from app_pages.common import current_user, session
    from fma_bands.users import has_users

    # An emoji icon is drawn in the browser; a Material one is fetched from fonts.gstatic.com,
    # and no page of the app may make a browser call outside it.
    st.set_page_config(page_title="fma-bands", page_icon="⚖️", layout="wide")
    with session() as s:
        first_run = not has_users(s)
    user = current_user()
    library = page("library", "Vignette library", "menu_book")
    vignette = page("vignette", "Vignette", "description")
    agreement = page("agreement", "Agreement", "insights")
    passphrase = page("passphrase", "Change passphrase", "password")
    if first_run:
        pages = [page("first_run", "Set up", "key")]
    elif user is None:
        # Activation is reached from the sign-in page, so signed out there is nothing to choose.
        pages = [
            page("sign_in", "Sign in", "login"),
            page("activate", "Activate your account", "how_to_reg", visibility="hidden"),
        ] + [
            page("sign_in", "Sign in", "login", url_path=path, visibility="hidden")
            for path in ADDRESSES
        ]
    elif user.role == "rater":
        pages = [
            page("queue", "My queue", "checklist", default=True),
            page("review", "Review a band", "rate_review"),
            library,
            vignette,
            agreement,
            page("attest", "Sign attestation", "signature"),
            passphrase,
        ]
    else:
        pages = [
            page("admin", "Study admin", "tune", default=True),
            page("raters", "Raters", "group"),
            page("handbacks", "Import a hand-back", "upload_file"),
            page("progress", "Raters' progress", "monitoring"),
            library,
            vignette,
            agreement,
            page("registry_page", "Band registry", "verified"),
            page("identity", "Rater identities", "badge"),
            page("audit_log", "Audit log", "receipt_long"),
            passphrase,
        ]
    if user is not None:
        with st.sidebar:
            st.caption(f"Signed in as {user.pseudonym} ({user.role})")
            if st.button("Sign out", icon=":material/logout:"):
                st.session_state.clear()
                st.rerun()
    st.navigation(pages).run()


if __name__ == "__main__":
    run()
