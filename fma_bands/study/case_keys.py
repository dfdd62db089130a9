"""The study's secret key for case tokens (fma_bands.core.labels.case_token): random, made on
first use and kept in the store with the study's other server-side secrets, so a token in a
rater's address bar cannot be computed from a vignette id (ids carry their stratum)."""

from sqlmodel import Session

from fma_bands.store.models import AppSecret
from fma_bands.study.throttle import _secret as stored_secret

NAME = "case-tokens"


def case_key(session: Session) -> bytes:
    """The study's key for case tokens; read, and written only the first time."""
    row = session.get(AppSecret, NAME)
    return bytes.fromhex(row.value) if row is not None else stored_secret(session, NAME)
