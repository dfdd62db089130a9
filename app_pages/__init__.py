"""The Streamlit screens of fma-bands: one short file per screen, with app.py the only code that
imports streamlit. Domain logic lives in fma_bands; these files render and call."""
