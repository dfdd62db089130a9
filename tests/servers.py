"""Real servers for tests: a throwaway PostgreSQL 15 cluster (started here, stopped at exit)."""

import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

PG_BIN = Path(os.environ.get("FMA_BANDS_PG_BIN", "/usr/lib/postgresql/15/bin"))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _as_postgres(args: list[str]) -> list[str]:
    # initdb refuses to run as root, and CI runs as root: run the cluster as `postgres`.
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--", *args]
    return args


def _missing(reason: str):
    if os.environ.get("FMA_BANDS_REQUIRE_POSTGRES"):
        pytest.fail(f"PostgreSQL is required here but {reason}")
    pytest.skip(f"PostgreSQL not available: {reason}")


@pytest.fixture(scope="session")
def postgres_server():
    """URL of a PostgreSQL server: $FMA_BANDS_TEST_POSTGRES_URL, or a fresh local cluster."""
    given = os.environ.get("FMA_BANDS_TEST_POSTGRES_URL")
    if given:
        yield given
        return
    if not (PG_BIN / "initdb").exists():
        _missing(f"{PG_BIN / 'initdb'} does not exist (apt-get install -y postgresql)")
    folder = Path(tempfile.mkdtemp(prefix="fma-bands-pg-"))
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
    data, log, port = folder / "data", folder / "log", free_port()
    run = dict(check=True, capture_output=True, text=True, timeout=120)
    try:
        subprocess.run(
            _as_postgres(
                [str(PG_BIN / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres"]
            ),
            **run,
        )
        subprocess.run(
            _as_postgres(
                [
                    str(PG_BIN / "pg_ctl"),
                    "-D",
                    str(data),
                    "-o",
                    f"-p {port} -c listen_addresses=127.0.0.1 -k {folder} -c fsync=off",
                    "-l",
                    str(log),
                    "-w",
                    "start",
                ]
            ),
            **run,
        )
    except subprocess.CalledProcessError as exc:
        detail = exc.stderr + (log.read_text() if log.exists() else "")
        shutil.rmtree(folder, ignore_errors=True)
        pytest.fail(f"could not start PostgreSQL: {detail}")
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            _as_postgres([str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "fast", "stop"]),
            check=False,
            capture_output=True,
            timeout=60,
        )
        shutil.rmtree(folder, ignore_errors=True)
