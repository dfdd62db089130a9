"""fma-bands: clinician adjudication of acceptable-action bands, from a checkout
(`streamlit run app.py`); installed, `fma-bands serve` runs fma_bands_app.py, its twin."""

from app_pages.main import run

run()
