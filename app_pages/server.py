"""The process `fma-bands serve` starts: Streamlit's own command line, run once the modules the
pages use are imported, and with the study read as soon as the server runs. Streamlit runs a
page's script only when someone opens it, so without this the first person to open the address
after a start would wait, on top of their page, for Python to import the app and the libraries
Streamlit draws tables and charts with, then for the vignettes and the signed log to be read
(docs/performance.md, "Cold pages")."""

import ast
import importlib
import logging
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
# Said on the server's output once the study is read; benchmarks wait for it.
READY = "fma-bands: the study is read: the first page opens without reading it"
NOT_READ = "fma-bands: the study could not be read ahead; the first page reads it and says why"
# Streamlit imports these itself the first time a page draws a table or a chart.
LIBRARIES = ("pandas", "pyarrow", "altair")


def page_modules() -> list[str]:
    """Every module the pages and their helpers import at their top level, first named first."""
    found: dict[str, None] = {}
    for path in sorted(HERE.glob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Import):
                found.update(dict.fromkeys(alias.name for alias in node.names))
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found[node.module] = None
    return list(found)


def warm() -> None:
    """Import what the pages will: each module is then in memory when the first page runs."""
    # Decorated before the server runs, Streamlit's caches log that they found no runtime yet:
    # true and harmless (each cache is made at its first use, in the server), so not logged.
    from streamlit.runtime.caching import cache_data_api, cache_resource_api

    # Streamlit sets each of its loggers' level itself, so the two are quietened by name.
    loggers = [logging.getLogger(m.__name__) for m in (cache_data_api, cache_resource_api)]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        for name in (*page_modules(), *LIBRARIES):
            importlib.import_module(name)
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def read_study_once_running(timeout: float = 60.0) -> None:
    """Once Streamlit's runtime exists (its options read), read the study as a first page would
    (common.warm_study); a page opened meanwhile waits for the same work, not twice for it."""
    from streamlit import runtime

    from app_pages.common import warm_study
    from fma_bands.core.errors import FmaBandsError

    deadline = time.monotonic() + timeout
    while not runtime.exists():
        if time.monotonic() > deadline:
            return
        time.sleep(0.05)
    # Streamlit warns of each of its calls made outside a page's run: this is one, on purpose.
    outside = logging.getLogger("streamlit.runtime.scriptrunner_utils.script_run_context")
    level = outside.level
    outside.setLevel(logging.ERROR)
    try:
        found = warm_study()
    except FmaBandsError as exc:
        print(f"{NOT_READ}: {exc}", file=sys.stderr, flush=True)
    except Exception as exc:  # the page that meets it says it, in words
        print(f"{NOT_READ} ({type(exc).__name__})", file=sys.stderr, flush=True)
    else:
        print(f"{READY} ({len(found)} vignettes)", file=sys.stderr, flush=True)
    finally:
        outside.setLevel(level)


def main() -> None:
    warm()
    threading.Thread(target=read_study_once_running, name="read the study", daemon=True).start()
    from streamlit.web.cli import main as streamlit

    streamlit(prog_name="streamlit")


if __name__ == "__main__":
    main()
