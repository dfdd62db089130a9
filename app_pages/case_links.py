"""The study's key for case tokens, for the pages that link to a band or a vignette by its
token (fma_bands.core.labels.address)."""

from app_pages.common import session
from fma_bands.study.case_keys import case_key as stored_key


def case_key() -> bytes:
    with session() as s:
        return stored_key(s)
