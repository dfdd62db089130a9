"""Browser tests: the real app as a server, driven in Debian's chromium through Playwright.

`app_server(**env)` starts (or reuses, within a module) `streamlit run app.py` with the given
environment; `demo_server(vignettes)` does the same on a database `fma-bands demo` prepared
(a coordinator and two raters, so tests can sign in), prepared once per test process and copied
for each server; helpers.py signs in, waits for the app and takes screenshots.
"""

import contextlib
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import expect

from fma_bands.cli.serve import streamlit_command
from fma_bands.core.actions import SUB_ACTIONS
from tests.conftest import DEMO_VIGNETTES
from tests.servers import free_port

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
CHROMIUM = Path(os.environ.get("FMA_BANDS_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    # Without these chromium keeps calling out to the (closed) network.
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
]
START_TIMEOUT_S = 30
# Playwright's `expect` waits 5 s by default; on a loaded 2-core machine one rerun of a page
# (a band's picture, a fragment) can take longer, and a slow page is not a failing one.
expect.set_options(timeout=15_000)
# The accounts `fma-bands demo` creates (fma_bands/cli/study.py DEMO_USERS): demo only, not secret.
DEMO_ACCOUNTS = {
    "coordinator": "coordinator-demo",
    "rater-01": "rater-01-demo",
    "rater-02": "rater-02-demo",
}


# The servers started and not yet stopped: a failing browser test shows the end of their logs
# (a traceback the page drew is in the server's log too, with the line it came from).
RUNNING: list["AppServer"] = []
LOG_TAIL = 6_000


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.failed and Path(item.path).is_relative_to(HERE):
        for server in RUNNING:
            # A server that died is the one whose log matters most.
            code = server.process.poll()
            ended = "" if code is None else f" (exited with code {code})"
            report.sections.append((f"log of {server.url}{ended}", server.log_text()[-LOG_TAIL:]))
    return report


def pytest_collection_modifyitems(items):
    # This hook sees the whole session's items: mark only those under tests/browser.
    for item in items:
        if Path(item.path).is_relative_to(HERE):
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args, pytestconfig):
    """pytest-playwright's options on Debian's chromium: `playwright install` cannot work here."""
    if not CHROMIUM.exists():
        reason = (
            f"{CHROMIUM} does not exist (apt-get install -y chromium, or set FMA_BANDS_CHROMIUM)"
        )
        if os.environ.get("FMA_BANDS_REQUIRE_BROWSER"):
            pytest.fail(f"a browser is required here but {reason}")
        pytest.skip(f"no browser: {reason}")
    args = [a for a in CHROMIUM_ARGS if a != "--headless" or not pytestconfig.getoption("--headed")]
    return {**browser_type_launch_args, "executable_path": str(CHROMIUM), "args": args}


@dataclass
class AppServer:
    """One running `streamlit run app.py`: its address, the variables it was given, its log."""

    url: str
    env: dict[str, str]
    log_path: Path
    process: subprocess.Popen = field(repr=False)

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=10)
        # start_new_session made the server a group leader: take down anything it left behind.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)
        if self in RUNNING:
            RUNNING.remove(self)


def _clean_environment() -> dict[str, str]:
    # Servers and commands see only the FMA_BANDS_* settings a test chose, never the developer's.
    return {k: v for k, v in os.environ.items() if not k.startswith("FMA_BANDS_")}


def prepare_demo_database(folder: Path, vignettes: Path, url: str | None = None) -> str:
    """Run `fma-bands demo` on a new database (SQLite in `folder`, or `url`); return its URL."""
    url = url or f"sqlite:///{folder / 'fma-bands.db'}"
    command = [
        sys.executable,
        "-m",
        "fma_bands.cli",
        "--db",
        url,
        "--vignettes",
        str(vignettes),
        "--attestations",
        str(folder / "attestations"),
        "demo",
    ]
    result = subprocess.run(
        command,
        cwd=ROOT,
        env={**_clean_environment(), **identity_key_env(folder)},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if result.returncode != 0:
        output = result.stdout + result.stderr
        pytest.fail(f"`fma-bands demo` failed with code {result.returncode}:\n{output}")
    # The browser tests drive every band with both demo raters, whatever their specialty
    # covers: the coordinator assigns them all (assignment by scope has tests of its own).
    subs = [word for name in SUB_ACTIONS for word in ("--sub-action", name)]
    for rater in ("rater-01", "rater-02"):
        assigned = subprocess.run(
            [*command[:-1], "assign", "--rater", rater, *subs],
            cwd=ROOT,
            env=_clean_environment() | coordinator_env(folder),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if assigned.returncode != 0:
            pytest.fail(f"`fma-bands assign` failed:\n{assigned.stdout}{assigned.stderr}")
    return url


def identity_key_env(folder: Path) -> dict[str, str]:
    """The identity key the demo seals its raters' identities with, beside its database (the
    default would be the working directory: the checkout)."""
    return {"FMA_BANDS_IDENTITY_KEY": str(folder / "fma-bands-identity.key")}


def coordinator_env(folder: Path) -> dict[str, str]:
    """FMA_BANDS_AS and FMA_BANDS_PASSPHRASE_FILE for the demo coordinator, so that coordinator
    commands run on a demo server's database authenticate (the app itself ignores them)."""
    secret = folder / "coordinator.pass"
    secret.write_text(DEMO_ACCOUNTS["coordinator"] + "\n", encoding="utf-8")
    return {"FMA_BANDS_AS": "coordinator", "FMA_BANDS_PASSPHRASE_FILE": str(secret)}


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
            return response.read().decode().strip() == "ok"
    except (urllib.error.URLError, OSError):
        return False


def _start(folder: Path, given: dict[str, str]) -> AppServer:
    env = {
        "FMA_BANDS_DATABASE_URL": f"sqlite:///{folder / 'fma-bands.db'}",
        "FMA_BANDS_ATTESTATIONS": str(folder / "attestations"),
        **given,
    }
    base = _clean_environment()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log_path = folder / "server.log"
    # The checkout's app.py with `fma-bands serve`'s options: the app as a study serves it.
    command = streamlit_command(ROOT / "app.py", host="127.0.0.1", port=port)
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command,
            cwd=ROOT,
            env={**base, **env},
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    server = AppServer(url=url, env=env, log_path=log_path, process=process)
    RUNNING.append(server)
    deadline = time.monotonic() + START_TIMEOUT_S
    while not _healthy(url):
        if process.poll() is not None:
            RUNNING.remove(server)  # its log is in the failure's message
            pytest.fail(
                f"the app exited with code {process.returncode} before it was healthy:\n"
                f"{server.log_text()}"
            )
        if time.monotonic() > deadline:
            server.stop()
            pytest.fail(f"the app was not healthy after {START_TIMEOUT_S} s:\n{server.log_text()}")
        time.sleep(0.1)
    return server


@pytest.fixture(scope="module")
def app_server(tmp_path_factory):
    """Factory: `app_server(fresh=False, **env) -> AppServer`, the real app as a server.

    `env` adds variables such as FMA_BANDS_VIGNETTES=str(path); the server otherwise gets a fresh
    SQLite database and attestations folder of its own. Servers are shared within the module by
    `env`; `fresh=True` always starts a new one (an empty database). All stop at module end.
    """
    started: list[AppServer] = []
    cache: dict[frozenset, AppServer] = {}

    def start(*, fresh: bool = False, **env: object) -> AppServer:
        given = {key: str(value) for key, value in env.items()}
        key = frozenset(given.items())
        if not fresh and key in cache and cache[key].process.poll() is None:
            return cache[key]
        server = _start(tmp_path_factory.mktemp("app-server"), given)
        started.append(server)
        if not fresh:
            cache[key] = server
        return server

    yield start
    # Told to stop all at once: each takes about a second to shut down.
    for server in started:
        if server.process.poll() is None:
            server.process.terminate()
    for server in started:
        server.stop()


@pytest.fixture(scope="session")
def demo_copies(tmp_path_factory):
    """Factory: `demo_copies(folder, vignettes) -> URL`, a copy in `folder` of the demo study
    prepared from `vignettes` (its database, attestations and identity key): prepared once per
    test process for each folder's content, since preparing takes three commands and a copy
    none. A folder whose files changed is prepared again."""
    prepared: dict[tuple[str, str], Path] = {}

    def copy(folder: Path, vignettes: Path) -> str:
        key = (str(vignettes), _content_digest(vignettes))
        if key not in prepared:
            original = tmp_path_factory.mktemp("demo-prepared")
            prepare_demo_database(original, vignettes)
            prepared[key] = original
        shutil.copytree(prepared[key], folder, dirs_exist_ok=True)
        return f"sqlite:///{folder / 'fma-bands.db'}"

    return copy


def _content_digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(f"{path.relative_to(folder)}\0{path.stat().st_size}\0".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


@pytest.fixture(scope="module")
def demo_server(app_server, demo_copies, tmp_path_factory):
    """Factory: `demo_server(vignettes=DEMO_VIGNETTES, fresh=False) -> AppServer`.

    The app on a database `fma-bands demo` prepared from `vignettes`: accounts DEMO_ACCOUNTS,
    review phase open, review mode. Shared within the module by folder; `fresh=True` starts on
    a new copy of the prepared study (nobody has reviewed anything yet).
    """
    cache: dict[str, AppServer] = {}

    def start(vignettes: Path | str = DEMO_VIGNETTES, *, fresh: bool = False) -> AppServer:
        folder = str(Path(vignettes).resolve())
        if not fresh and folder in cache and cache[folder].process.poll() is None:
            return cache[folder]
        demo = tmp_path_factory.mktemp("demo-db")
        url = demo_copies(demo, Path(folder))
        # The folder `fma-bands demo` published the raters' public keys to, so the registry
        # and attestations see the enrolled adjudicators.
        server = app_server(
            FMA_BANDS_DATABASE_URL=url,
            FMA_BANDS_VIGNETTES=folder,
            FMA_BANDS_ATTESTATIONS=demo / "attestations",
            # Coordinator commands run with `run_cli(server.env, ...)` name the coordinator.
            **coordinator_env(demo),
            **identity_key_env(demo),
        )
        if not fresh:
            cache[folder] = server
        return server

    return start
