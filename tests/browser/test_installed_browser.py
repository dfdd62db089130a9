"""The app as a user installs it: the wheel in a fresh environment outside the repository,
`fma-bands demo` and `fma-bands serve` run from a folder of their own, and the app they serve
driven in chromium, page links included (they resolve beside the installed script)."""

import contextlib
import os
import signal
import subprocess
import time
import urllib.request

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import DEMO_ACCOUNTS
from tests.browser.helpers import follow_link, open_app, sign_in
from tests.servers import free_port
from tests.wheel_helpers import clean_environment, install, run


@pytest.fixture(scope="module")
def installed_server(tmp_path_factory):
    """`fma-bands serve` of a fresh installation, on the study its `fma-bands demo` made."""
    home = tmp_path_factory.mktemp("installed-app")
    fma_bands = install(home)
    made = run([str(fma_bands), "demo"], home)
    assert made.returncode == 0, made.stdout + made.stderr
    port = free_port()
    log = home / "serve.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [str(fma_bands), "serve", "--port", str(port)],
            cwd=home,
            env=clean_environment(),
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as answer:
                    assert answer.read().decode().strip() == "ok"
                break
            except OSError:
                assert process.poll() is None, log.read_text()
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.2)
        yield url, log
    finally:
        process.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=20)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


def test_the_installed_app_signs_in_and_follows_its_page_links(installed_server, page: Page):
    url, log = installed_server
    open_app(page, url)
    expect(page.get_by_role("heading", name="Sign in", level=1)).to_be_visible()
    follow_link(page, "First time here, or given a new enrolment code? Activate your account")
    expect(page.get_by_role("heading", name="Activate your account", level=1)).to_be_visible()
    open_app(page, url)
    sign_in(page, "rater-01", DEMO_ACCOUNTS["rater-01"])
    expect(page.get_by_role("heading", name="My queue", level=1)).to_be_visible()
    text = log.read_text()
    assert "Traceback" not in text and "StreamlitPageNotFoundError" not in text, text
