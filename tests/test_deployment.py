"""What docs/deployment.md says a hospital can rely on, tried for real: the database password in
a password file that libpq reads (with the URL naming no password) on a PostgreSQL server that
asks for one; and its systemd unit and nginx configuration, checked by the tools that run them
when they are installed here."""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests.conftest import ROOT
from tests.servers import PG_BIN, free_port

DOC = ROOT / "docs" / "deployment.md"
FMA_BANDS = Path(sys.executable).parent / "fma-bands"
SUPERUSER_PASSWORD = "super-secret"
# A password with the two characters a password file escapes.
PASSWORD = r"s3cret:pass\word"
NO_PASSWORD = "fe_sendauth: no password supplied"


def doc_block(language: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    [block] = re.findall(rf"^```{language}\n(.*?)^```", text, re.M | re.S)
    return block


def _as_postgres(args: list[str]) -> list[str]:
    # initdb refuses to run as root, and CI runs as root.
    return ["runuser", "-u", "postgres", "--", *args] if os.geteuid() == 0 else args


@pytest.fixture(scope="module")
def password_server() -> Iterator[tuple[str, int]]:
    """A PostgreSQL cluster of its own that asks every TCP client for a password
    (scram-sha-256), holding a database `fma_bands` owned by the user `fma_bands`."""
    if not (PG_BIN / "initdb").exists():
        reason = f"{PG_BIN / 'initdb'} does not exist (apt-get install -y postgresql)"
        if os.environ.get("FMA_BANDS_REQUIRE_POSTGRES"):
            pytest.fail(f"PostgreSQL is required here but {reason}")
        pytest.skip(f"PostgreSQL not available: {reason}")
    folder = Path(tempfile.mkdtemp(prefix="fma-bands-pgpass-"))
    secret = folder / "superuser"
    secret.write_text(SUPERUSER_PASSWORD + "\n")
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
        shutil.chown(secret, "postgres", "postgres")
    data, port = folder / "data", free_port()
    pg_ctl = [str(PG_BIN / "pg_ctl"), "-D", str(data)]
    try:
        subprocess.run(
            _as_postgres(
                [
                    str(PG_BIN / "initdb"),
                    "-D",
                    str(data),
                    "-U",
                    "postgres",
                    "--auth-host=scram-sha-256",
                    "--auth-local=scram-sha-256",
                    f"--pwfile={secret}",
                ]
            ),
            check=True,
            capture_output=True,
            text=True,
            timeout=120,
        )
        options = f"-p {port} -c listen_addresses=127.0.0.1 -k {folder} -c fsync=off"
        subprocess.run(
            _as_postgres([*pg_ctl, "-o", options, "-l", str(folder / "log"), "-w", "start"]),
            check=True,
            capture_output=True,
            text=True,
            timeout=120,
        )
    except subprocess.CalledProcessError as exc:
        shutil.rmtree(folder, ignore_errors=True)
        pytest.fail(f"could not start PostgreSQL: {exc.stderr}")
    try:
        admin = f"postgresql://postgres:{SUPERUSER_PASSWORD}@127.0.0.1:{port}/postgres"
        with psycopg.connect(admin, autocommit=True) as conn:
            quoted = PASSWORD.replace("'", "''")
            conn.execute(f"CREATE ROLE fma_bands LOGIN PASSWORD '{quoted}'")
            conn.execute("CREATE DATABASE fma_bands OWNER fma_bands")
        yield "127.0.0.1", port
    finally:
        subprocess.run(
            _as_postgres([*pg_ctl, "-m", "fast", "stop"]),
            check=False,
            capture_output=True,
            timeout=60,
        )
        shutil.rmtree(folder, ignore_errors=True)


def password_file(path: Path, host: str, port: int, mode: int = 0o600) -> Path:
    """The line docs/deployment.md shows, with `:` and `\\` in the password escaped."""
    escaped = PASSWORD.replace("\\", "\\\\").replace(":", "\\:")
    path.write_text(f"{host}:{port}:fma_bands:fma_bands:{escaped}\n")
    path.chmod(mode)
    return path


def command(args: list[str], folder: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """Run `args` in `folder` with only the given libpq and fma-bands settings, and a HOME with
    no password file of the developer's."""
    base = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("FMA_BANDS_", "PG")) and key != "HOME"
    }
    return subprocess.run(
        args,
        cwd=folder,
        env={**base, "HOME": str(folder), **env},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.postgres
def test_without_a_password_file_the_url_without_a_password_is_refused(password_server, tmp_path):
    host, port = password_server
    url = f"postgresql://fma_bands@{host}:{port}/fma_bands"
    done = command([str(FMA_BANDS), "--db", url, "db", "current"], tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert NO_PASSWORD in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.postgres
def test_a_password_file_others_can_read_is_ignored(password_server, tmp_path):
    host, port = password_server
    loose = password_file(tmp_path / "pgpass", host, port, mode=0o640)
    url = f"postgresql://fma_bands@{host}:{port}/fma_bands"
    done = command([str(FMA_BANDS), "--db", url, "db", "current"], tmp_path, PGPASSFILE=str(loose))
    assert done.returncode == 1
    assert "has group or world access" in done.stderr and NO_PASSWORD in done.stderr


@pytest.mark.postgres
@pytest.mark.parametrize("scheme", ["postgresql", "postgresql+psycopg"])
def test_pgpassfile_gives_fma_bands_the_password(password_server, tmp_path, scheme):
    host, port = password_server
    secret = password_file(tmp_path / "pgpass", host, port)
    url = f"{scheme}://fma_bands@{host}:{port}/fma_bands"
    # The URL in the environment, as the units' EnvironmentFile gives it.
    settings = {"PGPASSFILE": str(secret), "FMA_BANDS_DATABASE_URL": url}
    upgraded = command([str(FMA_BANDS), "db", "upgrade"], tmp_path, **settings)
    assert upgraded.returncode == 0, upgraded.stderr
    current = command([str(FMA_BANDS), "db", "current", "--json"], tmp_path, **settings)
    assert current.returncode == 0, current.stderr
    assert json.loads(current.stdout)["up_to_date"] is True, current.stdout
    for done in (upgraded, current):
        assert "s3cret" not in done.stdout + done.stderr


@pytest.mark.postgres
def test_home_pgpass_gives_fma_bands_the_password(password_server, tmp_path):
    host, port = password_server
    password_file(tmp_path / ".pgpass", host, port)
    url = f"postgresql://fma_bands@{host}:{port}/fma_bands"
    done = command([str(FMA_BANDS), "--db", url, "db", "upgrade"], tmp_path)
    assert done.returncode == 0, done.stderr


@pytest.mark.postgres
def test_the_password_file_must_name_the_host_as_the_url_does(password_server, tmp_path):
    host, port = password_server
    secret = password_file(tmp_path / "pgpass", host, port)
    url = f"postgresql://fma_bands@localhost:{port}/fma_bands"
    done = command([str(FMA_BANDS), "--db", url, "db", "current"], tmp_path, PGPASSFILE=str(secret))
    assert done.returncode == 1 and NO_PASSWORD in done.stderr


@pytest.mark.postgres
def test_pg_dump_and_pg_restore_take_the_same_url_and_password_file(password_server, tmp_path):
    host, port = password_server
    secret = password_file(tmp_path / "pgpass", host, port)
    url = f"postgresql://fma_bands@{host}:{port}/fma_bands"
    libpq = {"PGPASSFILE": str(secret)}
    upgraded = command([str(FMA_BANDS), "--db", url, "db", "upgrade"], tmp_path, **libpq)
    assert upgraded.returncode == 0, upgraded.stderr
    dump = tmp_path / "db.dump"
    dumped = command(
        [str(PG_BIN / "pg_dump"), "--format=custom", f"--dbname={url}", f"--file={dump}"],
        tmp_path,
        **libpq,
    )
    assert dumped.returncode == 0, dumped.stderr
    listed = command([str(PG_BIN / "pg_restore"), "--list", str(dump)], tmp_path)
    assert "alembic_version" in listed.stdout, listed.stdout
    restored = command(
        [str(PG_BIN / "pg_restore"), "--clean", "--if-exists", f"--dbname={url}", str(dump)],
        tmp_path,
        **libpq,
    )
    assert restored.returncode == 0, restored.stderr
    current = command([str(FMA_BANDS), "--db", url, "db", "current"], tmp_path, **libpq)
    assert current.returncode == 0 and "up to date" in current.stdout, current.stdout


def test_the_systemd_unit_of_the_doc_verifies(tmp_path):
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed here")
    unit = doc_block("ini")
    assert "ExecStart=/opt/fma-bands/bin/fma-bands serve --port %i" in unit
    # The program as installed here, so that systemd finds the ExecStart it checks.
    here = unit.replace("/opt/fma-bands/bin/fma-bands", str(FMA_BANDS))
    (tmp_path / "fma-bands@.service").write_text(here)
    (tmp_path / "fma-bands@8501.service").symlink_to("fma-bands@.service")
    done = subprocess.run(
        [analyze, "verify", "--man=no", str(tmp_path / "fma-bands@8501.service")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and not done.stderr.strip(), done.stderr


def test_the_nginx_configuration_of_the_doc_is_accepted_by_nginx(tmp_path):
    # Debian installs it in /usr/sbin, which is not on every user's PATH.
    nginx = shutil.which("nginx", path=os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin"]))
    if nginx is None:
        pytest.skip("nginx is not installed here (apt-get install -y nginx)")
    openssl = shutil.which("openssl")
    assert openssl, "openssl is needed to make a certificate for the check"
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    made = subprocess.run(
        [
            *(openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-subj", "/CN=bands.example.internal", "-keyout", str(key), "-out", str(cert)),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert made.returncode == 0, made.stderr
    site = doc_block("nginx")
    site = site.replace("/etc/ssl/certs/bands.pem", str(cert))
    site = site.replace("/etc/ssl/private/bands.key", str(key))
    # Unprivileged ports, so that the check runs as any user.
    site = site.replace("listen 80;", f"listen 127.0.0.1:{free_port()};")
    site = site.replace("listen 443 ssl;", f"listen 127.0.0.1:{free_port()} ssl;")
    (tmp_path / "site.conf").write_text(site)
    run = tmp_path / "run"
    run.mkdir()
    temp = " ".join(
        f"{kind}_temp_path {run / kind};" for kind in ("client_body", "proxy", "fastcgi", "uwsgi")
    )
    (tmp_path / "nginx.conf").write_text(
        f"pid {run / 'nginx.pid'};\nerror_log {run / 'error.log'};\nevents {{}}\n"
        f"http {{ access_log off; {temp} scgi_temp_path {run / 'scgi'};\n"
        f"include {tmp_path / 'site.conf'}; }}\n"
    )
    done = subprocess.run(
        [nginx, "-t", "-p", str(run), "-c", str(tmp_path / "nginx.conf"), "-e", "stderr"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and "test is successful" in done.stderr, done.stderr
