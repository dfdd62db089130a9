"""What a demo server's raters read for a case: its number and its address are keyed with the
study's secret (fma_bands.study.case_keys), so a test reads that secret from the server's own
database, as the server's pages do, and names cases and bands the way the pages name them."""

from pathlib import Path
from urllib.parse import urlencode

from app_pages.queue_screen import rater_queue
from fma_bands.core.actions import sub_action
from fma_bands.core.labels import address, case_label, case_numbers
from fma_bands.core.vignettes import Library, load_library
from fma_bands.store.db import make_engine, session_scope
from fma_bands.study.case_keys import case_key
from fma_bands.study.users import require_user
from tests.browser.conftest import AppServer


def study_key(server: AppServer) -> bytes:
    """The server's key for case numbers and tokens (made here if no page has made it yet)."""
    engine = make_engine(server.env["FMA_BANDS_DATABASE_URL"])
    try:
        with session_scope(engine) as s:
            return case_key(s)
    finally:
        engine.dispose()


def study_library(server: AppServer) -> Library:
    return load_library([Path(server.env["FMA_BANDS_VIGNETTES"])])


def study_numbers(server: AppServer) -> dict[str, int]:
    return case_numbers(study_library(server), study_key(server))


def case_of(server: AppServer, vid: str) -> str:
    """'Case 7 of 12': what a rater reads for the vignette `vid` on this server."""
    return case_label(study_numbers(server), vid)


def in_queue(server: AppServer, vid: str, name: str) -> str:
    """How a rater's queue (and Agreement page) names band (vid, name)."""
    return f"{case_of(server, vid)} · {sub_action(name).label}"


def band_url(server: AppServer, vid: str, name: str) -> str:
    """The address of band (vid, name) on the review page, naming the case by its token."""
    return f"{server.url}/review?{urlencode(address(vid, name, key=study_key(server)))}"


def queue_of(server: AppServer, rater: str) -> list[tuple[str, str]]:
    """The bands of a rater's queue, in the order the queue lists them."""
    library = study_library(server)
    engine = make_engine(server.env["FMA_BANDS_DATABASE_URL"])
    try:
        with session_scope(engine) as s:
            return [row.band for row in rater_queue(s, library, require_user(s, rater))]
    finally:
        engine.dispose()


def status_of(server: AppServer, rater: str, band: tuple[str, str]) -> str:
    """The band's status in the rater's queue, as the server's store holds it."""
    library = study_library(server)
    engine = make_engine(server.env["FMA_BANDS_DATABASE_URL"])
    try:
        with session_scope(engine) as s:
            rows = rater_queue(s, library, require_user(s, rater))
    finally:
        engine.dispose()
    return next(row.status for row in rows if row.band == band)
