"""The database-backed workflow of a study: its state and who may do what (state), the vignette
library in the store (library), users, enrolment and identities, assignment and coverage,
reviews with drafts, marks and blinding (reviews, submissions), hand-backs, rounds and the
round-2 panel, raters' keys and signing, the audit log, agreement over the stored ratings, and
impact.

May import: fma_bands.core, fma_bands.evidence, fma_bands.agreement, fma_bands.store. Never
the command line or Streamlit."""
