"""Everything that reads attestations/ from the files alone: DSSE envelopes and keys, one
envelope read (envelope), the study's signed log walked from its root (log), the adjudicators as
the root-signed roster establishes them (roster), signed heads (head), the registry's policy and
vocabulary, the registry's decisions and the bands.yaml export.

May import: fma_bands.core. Never the store, the study workflow or Streamlit: an editor's
offline check must decide from the files alone."""
