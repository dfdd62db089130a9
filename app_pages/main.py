"""The app's navigation: which screens a visitor, a rater and the coordinator see.

`streamlit run app.py` lands here; page paths are absolute, so the app runs whatever the
working folder (app_pages.menu_parts).
"""

import streamlit as st

from app_pages.menu_parts import coordinator_pages, first_run_pages, rater_pages, signed_out_pages


def run() -> None:
    from app_pages.common import current_user, session
    from fma_bands.study.users import has_users

    # An emoji icon is drawn in the browser; a Material one is fetched from fonts.gstatic.com,
    # and no page of the app may make a browser call outside it.
    st.set_page_config(page_title="fma-bands", page_icon="⚖️", layout="wide")
    with session() as s:
        first_run = not has_users(s)
    user = current_user()
    if first_run:
        pages = first_run_pages()
    elif user is None:
        pages = signed_out_pages()
    elif user.role == "rater":
        pages = rater_pages()
    else:
        pages = coordinator_pages()
    if user is not None:
        with st.sidebar:
            st.caption(f"Signed in as {user.pseudonym} ({user.role})")
            if st.button("Sign out", icon=":material/logout:"):
                st.session_state.clear()
                st.rerun()
    st.navigation(pages).run()


if __name__ == "__main__":
    run()
