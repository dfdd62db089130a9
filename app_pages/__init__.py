"""The Streamlit screens of fma-bands: one file per screen, and beside a screen its view model
(`*_screen.py`, `band_form.py`: plain data, no Streamlit, so tests read it). With app.py these are
the only code that imports streamlit. Rules live in fma_bands; these files render and call.

May import: every fma_bands package except the command line (fma_bands.cli)."""
