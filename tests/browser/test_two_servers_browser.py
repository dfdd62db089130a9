"""Several app processes on one PostgreSQL (docs/deployment.md): a review a rater submits in a
browser on one server is what the coordinator sees on the other, with nothing shared between
the two processes but the database and the attestations folder."""

import uuid

import pytest
from playwright.sync_api import Browser, expect
from sqlalchemy import text

from fma_bands.store.db import make_engine
from tests.browser.conftest import DEMO_ACCOUNTS, coordinator_env, prepare_demo_database
from tests.browser.helpers import (
    dataframe_rows,
    eventually,
    open_app,
    open_from_sidebar,
    shoot,
    sign_in,
    submit_first_band,
)
from tests.conftest import DEMO_VIGNETTES

pytestmark = pytest.mark.postgres


@pytest.fixture
def database(postgres_server):
    admin = make_engine(postgres_server)
    name = f"two_{uuid.uuid4().hex[:12]}"
    with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    yield postgres_server.rsplit("/", 1)[0] + f"/{name}"
    with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f'DROP DATABASE "{name}" WITH (FORCE)'))
    admin.dispose()


def test_a_review_on_one_server_reaches_the_coordinator_on_the_other(
    browser: Browser, app_server, database, tmp_path
):
    url = prepare_demo_database(tmp_path, DEMO_VIGNETTES, url=database)
    shared = {
        "FMA_BANDS_DATABASE_URL": url,
        "FMA_BANDS_VIGNETTES": DEMO_VIGNETTES,
        "FMA_BANDS_ATTESTATIONS": tmp_path / "attestations",
        **coordinator_env(tmp_path),
    }
    first, second = (app_server(fresh=True, **shared) for _ in range(2))
    assert first.url != second.url

    # The coordinator watches on the second server before anything is submitted.
    desk = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
    open_app(desk, second.url)
    sign_in(desk, "coordinator", DEMO_ACCOUNTS["coordinator"])
    open_from_sidebar(desk, "Raters' progress")
    table = desk.get_by_test_id("stDataFrame").first
    eventually(desk, lambda: assert_submitted(table, "0 of 27"))

    rater = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
    open_app(rater, first.url)
    sign_in(rater, "rater-01", DEMO_ACCOUNTS["rater-01"])
    expect(rater.get_by_role("heading", name="My queue", level=1)).to_be_visible()
    submit_first_band(rater)

    # A fresh look on the second server (a new run of the page) shows the review.
    open_from_sidebar(desk, "Vignette library")
    open_from_sidebar(desk, "Raters' progress")
    table = desk.get_by_test_id("stDataFrame").first
    eventually(desk, lambda: assert_submitted(table, "1 of 27"), timeout=15_000)
    shoot(desk, "two-servers-coordinator")
    for server in (first, second):
        assert "Traceback" not in server.log_text()


def assert_submitted(table, expected: str) -> None:
    rows = dataframe_rows(table)
    assert rows.get("rater-01", {}).get("submitted") == expected, rows
