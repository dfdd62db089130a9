"""fma-bands: clinician adjudication of acceptable-action bands (streamlit run app.py)."""

import streamlit as st

from app_pages.common import current_user, session
from fma_bands.users import has_users

st.set_page_config(page_title="fma-bands", page_icon=":material/rule:", layout="wide")

with session() as s:
    first_run = not has_users(s)
user = current_user()

library = st.Page("app_pages/library.py", title="Vignette library", icon=":material/menu_book:")
vignette = st.Page("app_pages/vignette.py", title="Vignette", icon=":material/description:")
if first_run:
    pages = [st.Page("app_pages/first_run.py", title="Set up", icon=":material/key:")]
elif user is None:
    # Every address a signed-in user can open shows the sign-in form instead, keeping its
    # query, so a shared link to a band leads there once the rater has signed in.
    pages = [st.Page("app_pages/sign_in.py", title="Sign in", icon=":material/login:")] + [
        st.Page("app_pages/sign_in.py", title="Sign in", url_path=path, visibility="hidden")
        for path in (
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
        )
    ]
elif user.role == "rater":
    pages = [
        st.Page("app_pages/queue.py", title="My queue", icon=":material/checklist:", default=True),
        st.Page("app_pages/review.py", title="Review a band", icon=":material/rate_review:"),
        library,
        vignette,
        st.Page("app_pages/agreement.py", title="Agreement", icon=":material/insights:"),
        st.Page("app_pages/attest.py", title="Sign attestation", icon=":material/signature:"),
    ]
else:
    pages = [
        st.Page("app_pages/admin.py", title="Study admin", icon=":material/tune:", default=True),
        library,
        vignette,
        st.Page("app_pages/agreement.py", title="Agreement", icon=":material/insights:"),
        st.Page("app_pages/registry_page.py", title="Band registry", icon=":material/verified:"),
        st.Page("app_pages/identity.py", title="Rater identities", icon=":material/badge:"),
        st.Page("app_pages/audit_log.py", title="Audit log", icon=":material/receipt_long:"),
    ]

if user is not None:
    with st.sidebar:
        st.caption(f"Signed in as **{user.pseudonym}** ({user.role})")
        if st.button("Sign out", icon=":material/logout:"):
            st.session_state.clear()
            st.rerun()

st.navigation(pages).run()
