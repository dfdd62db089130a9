"""The study's vocabulary, used by every other layer and importing none of them: the one error,
settings, the action catalogue, typed bands and their notation, canonical JSON, bounded file
reading and atomic writes, vignette files, the protocol, what raters read (labels), and people.

May import: the standard library and third-party packages only; never the store, Streamlit or
another fma_bands package."""
