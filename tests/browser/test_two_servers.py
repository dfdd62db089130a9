"""The deployment of docs/deployment.md, section 3: two `fma-bands serve` processes with the same
settings on one real PostgreSQL, each started from a folder of its own as a service unit starts
it. A rater signed in on one and the coordinator signed in on the other see the same study."""

import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect
from sqlalchemy import text

from fma_bands.store.db import make_engine
from tests.browser.conftest import DEMO_ACCOUNTS, prepare_demo_database
from tests.browser.helpers import (
    assert_no_exception,
    dataframe_rows,
    eventually,
    open_app,
    open_from_sidebar,
    settle,
    sign_in,
    submit_first_band,
)
from tests.conftest import DEMO_VIGNETTES
from tests.servers import free_port

pytestmark = pytest.mark.postgres

# The `fma-bands` of the environment running the tests: the command a service unit runs.
FMA_BANDS = Path(sys.executable).parent / "fma-bands"
START_TIMEOUT_S = 60


@dataclass
class Served:
    """One running `fma-bands serve`: its address and its output."""

    url: str
    log: Path
    process: subprocess.Popen

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


def health(url: str) -> str | None:
    """What /_stcore/health answers (`ok` when the server is up), or None when it does not."""
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as answer:
            return answer.read().decode().strip()
    except OSError:
        return None


def stop(served: Served) -> None:
    # systemd's way: SIGTERM to the server (serve replaced itself with it), then SIGKILL.
    if served.process.poll() is None:
        served.process.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            served.process.wait(timeout=15)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(served.process.pid, signal.SIGKILL)
    served.process.wait(timeout=10)


@pytest.fixture
def database(postgres_server) -> Iterator[str]:
    """A new, empty database on the throwaway PostgreSQL server, dropped afterwards."""
    admin = make_engine(postgres_server)
    name = f"serve_{uuid.uuid4().hex[:12]}"
    with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield postgres_server.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text(f'DROP DATABASE "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture
def serve(tmp_path):
    """Factory: `serve(settings) -> Served`, `fma-bands serve --port P` with `settings` as its
    FMA_BANDS_* environment, healthy. Every process started is stopped, whatever the test did."""
    started: list[Served] = []
    base = {k: v for k, v in os.environ.items() if not k.startswith("FMA_BANDS_")}

    def start(settings: dict[str, str]) -> Served:
        port = free_port()
        folder = tmp_path / f"serve-{port}"
        folder.mkdir()
        log = folder / "serve.log"
        with log.open("wb") as output:
            process = subprocess.Popen(
                [str(FMA_BANDS), "serve", "--port", str(port)],
                cwd=folder,
                env={**base, **settings},
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        served = Served(url=f"http://127.0.0.1:{port}", log=log, process=process)
        started.append(served)
        deadline = time.monotonic() + START_TIMEOUT_S
        while health(served.url) != "ok":
            assert process.poll() is None, f"serve exited early:\n{served.output()}"
            assert time.monotonic() < deadline, f"serve not healthy:\n{served.output()}"
            time.sleep(0.2)
        return served

    yield start
    for served in started:
        stop(served)


def test_two_serve_processes_on_one_postgresql_serve_one_study(
    browser: Browser, database, serve, tmp_path
):
    if not FMA_BANDS.exists():
        pytest.fail(f"{FMA_BANDS} does not exist: install fma-bands (pip install -e .)")
    url = prepare_demo_database(tmp_path, DEMO_VIGNETTES, url=database)
    # The same settings for both, as one EnvironmentFile gives both units.
    settings = {
        "FMA_BANDS_DATABASE_URL": url,
        "FMA_BANDS_VIGNETTES": str(DEMO_VIGNETTES),
        "FMA_BANDS_ATTESTATIONS": str(tmp_path / "attestations"),
        "FMA_BANDS_IDENTITY_KEY": str(tmp_path / "fma-bands-identity.key"),
        "FMA_BANDS_EXPORT_DIR": str(tmp_path / "exports"),
    }
    first, second = serve(settings), serve(settings)
    for served in (first, second):
        assert f"the app is at {served.url}" in served.output()

    desk = new_page(browser)
    open_app(desk, second.url)
    sign_in(desk, "coordinator", DEMO_ACCOUNTS["coordinator"])
    open_from_sidebar(desk, "Raters' progress")
    eventually(desk, lambda: assert_submitted(desk, "0 of 27"))

    rater = new_page(browser)
    open_app(rater, first.url)
    sign_in(rater, "rater-01", DEMO_ACCOUNTS["rater-01"])
    expect(rater.get_by_role("heading", name="My queue", level=1)).to_be_visible()
    submit_first_band(rater)

    # Reloaded (still signed in: the session cookie names a session both processes read), the
    # coordinator's page on the other process shows the review from the shared database.
    desk.reload()
    settle(desk)
    open_from_sidebar(desk, "Raters' progress")
    eventually(desk, lambda: assert_submitted(desk, "1 of 27"))

    stopped = [s for s in (first, second) if s.process.poll() is not None]
    assert not stopped, "a serve process stopped during the test"
    for page in (desk, rater):
        assert_no_exception(page)
    for served in (first, second):
        assert health(served.url) == "ok"
        assert "Traceback" not in served.output(), served.output()


def new_page(browser: Browser) -> Page:
    return browser.new_context(viewport={"width": 1400, "height": 900}).new_page()


def assert_submitted(page: Page, expected: str) -> None:
    rows = dataframe_rows(page.get_by_test_id("stDataFrame").first)
    assert rows.get("rater-01", {}).get("submitted") == expected, rows
