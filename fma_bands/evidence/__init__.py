"""Everything that reads or writes attestations/ from the files alone: DSSE envelopes and keys,
one envelope checked (envelope), the adjudicators' self-signed records (roster), the folder as
evidence (log), the registry's policy and vocabulary, the registry's decisions and the
bands.yaml export.

May import: fma_bands.core. Never the store, the study workflow or Streamlit: an editor's
offline check must decide from the files alone."""
