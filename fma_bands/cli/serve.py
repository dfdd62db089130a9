"""`fma-bands serve`: the app, run from the installed package with the options a study needs,
from any folder; and the command a person types to start it, for other commands' hints."""

import importlib.util
import os
import shlex
import shutil
import sys
from pathlib import Path

import click

from fma_bands.cli.base import cli, settings
from fma_bands.core.errors import FmaBandsError

# The script Streamlit runs: installed beside app_pages/ (pyproject.toml, [tool.setuptools]),
# found without importing it, since the command line never imports the pages.
APP_MODULE = "fma_bands_app"
# Streamlit's command line, once the pages' modules are imported (app_pages/server.py).
SERVER_MODULE = "app_pages.server"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8501

# Streamlit's options for a study, on its command line so that they hold whatever folder it is
# started from (a checkout's .streamlit/config.toml says the same for `streamlit run app.py`).
STUDY_OPTIONS = {
    "server.headless": "true",  # a server opens no browser, and asks for no e-mail address
    "server.fileWatcherType": "none",  # the script's folder is site-packages: watch nothing
    "server.maxUploadSize": "1",  # megabytes: a hand-back file is a few kilobytes
    "server.enableXsrfProtection": "true",
    "server.enableCORS": "true",
    "client.showErrorDetails": "none",  # details go to the process's output, not the browser
    "client.toolbarMode": "minimal",
    "browser.gatherUsageStats": "false",
    # No full garbage collection after every rerun: on a large study it costs each click a
    # third of a second, and Python still collects as it runs (docs/performance.md).
    "runner.postScriptGC": "false",
}


@cli.command()
@click.option(
    "--host",
    default=DEFAULT_HOST,
    show_default=True,
    metavar="H",
    help="Address to listen on; 0.0.0.0 listens on every interface (put a proxy with TLS in "
    "front: docs/deployment.md).",
)
@click.option(
    "--port",
    default=DEFAULT_PORT,
    show_default=True,
    metavar="P",
    type=click.IntRange(1, 65535),
    help="Port to listen on.",
)
def serve(host: str, port: int) -> None:
    """Start the app on this study (the settings of every other command) until Ctrl+C.

    The app runs headless, shows no error details in the browser (they go to this output),
    sends no usage statistics and takes uploads of at most 1 MB."""
    from fma_bands.store.db import shown_url

    found = settings()  # checked here, so a mistyped setting is one line, not a page
    if not found.vignettes.is_dir():
        click.echo(
            f"warning: there is no vignette folder {found.vignettes} here: run "
            f"`{start_command('demo')}` first, or give --vignettes DIR",
            err=True,
        )
    command = streamlit_command(app_script(), host=host, port=port)
    click.echo(
        f"fma-bands: the app is at {address(host, port)} (study database "
        f"{shown_url(found.database_url)}); Ctrl+C stops it."
    )
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        # The server replaces this process: a signal (Ctrl+C, systemd's stop) reaches it alone.
        os.execve(sys.executable, command, {**os.environ, **given_settings()})
    except OSError as exc:
        raise FmaBandsError(f"cannot start the app with {sys.executable}: {exc}") from None


def app_script() -> Path:
    """The installed app script (in a checkout installed with `pip install -e .`, the one there)."""
    spec = importlib.util.find_spec(APP_MODULE)
    if spec is None or spec.origin is None:
        raise FmaBandsError(
            f"the app's script {APP_MODULE}.py is not installed beside fma_bands: install "
            "fma-bands again (from a checkout, `pip install -e .`)"
        )
    return Path(spec.origin)


def streamlit_command(script: Path, *, host: str, port: int) -> list[str]:
    """The command line that runs `script` as the app on host:port with the study's options."""
    options = {**STUDY_OPTIONS, "server.address": host, "server.port": str(port)}
    return [
        sys.executable,
        "-m",
        SERVER_MODULE,
        "run",
        str(script),
        *(f"--{name}={value}" for name, value in options.items()),
    ]


def address(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def given_settings() -> dict[str, str]:
    """The settings given as options to this command, as the FMA_BANDS_* variables the app
    reads (those set in the environment reach it as they are)."""
    from fma_bands.core.settings import Settings

    options = click.get_current_context().find_root().obj or {}
    return {
        f"FMA_BANDS_{name.upper()}": str(value)
        for name, value in options.items()
        if value is not None and name in Settings.model_fields
    }


def program() -> str:
    """How this person runs fma-bands: `fma-bands` when that is the one on PATH; otherwise this
    environment's script, from the current folder when it is under it (`.venv/bin/fma-bands`);
    otherwise this Python with `-m fma_bands.cli`."""
    script = Path(sys.executable).parent / "fma-bands"
    if not script.is_file():
        return f"{shlex.quote(sys.executable)} -m fma_bands.cli"
    on_path = shutil.which("fma-bands")
    if on_path and Path(on_path).resolve() == script.resolve():
        return "fma-bands"
    try:
        relative = script.absolute().relative_to(Path.cwd())
    except ValueError:
        return shlex.quote(str(script))
    return shlex.quote(str(relative) if relative.parent != Path() else f"./{relative}")


def start_command(command: str = "serve") -> str:
    """The exact command for `command` on this study: this program with the study's options as
    they were given to this command (a database password shown as ***), for a hint to print."""
    from fma_bands.core.settings import Settings
    from fma_bands.store.db import shown_url

    options = click.get_current_context().find_root().obj or {}
    words = [program()]
    for param in cli.params:
        value = options.get(param.name) if param.name in Settings.model_fields else None
        if value is None:
            continue
        shown = shown_url(value) if param.name == "database_url" else str(value)
        words += [param.opts[0], shlex.quote(shown)]
    return " ".join([*words, command])
