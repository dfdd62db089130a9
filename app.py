"""fma-bands: clinician adjudication of acceptable-action bands (streamlit run app.py)."""

from app_pages.main import run

run()
