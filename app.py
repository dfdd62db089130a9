"""fma-bands: clinician adjudication of acceptable-action bands (streamlit run app.py)."""

import streamlit as st

st.set_page_config(page_title="fma-bands", page_icon=":material/rule:", layout="wide")

pages = [
    st.Page(
        "app_pages/library.py", title="Vignette library", icon=":material/menu_book:", default=True
    ),
    st.Page("app_pages/vignette.py", title="Vignette", icon=":material/description:"),
]
st.navigation(pages).run()
