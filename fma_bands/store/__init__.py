"""The store: SQLModel tables, the engine and its sessions, and the migrations between schemas.

May import: fma_bands.core. Never the study workflow, evidence or Streamlit."""
