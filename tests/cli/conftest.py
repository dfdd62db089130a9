"""The store the assign and impact commands are tried on: a study's vignettes, a coordinator, a
geriatrician and an emergency physician, made once a module, and `fma` to run fma-bands
in-process (with click's CliRunner) on a copy of it. A module says which study with
`cli_vignettes` (the bundled demo study unless it says otherwise)."""

import shutil

import pytest
from click.testing import CliRunner

from fma_bands.cli import cli
from fma_bands.core.vignettes import load_library
from fma_bands.store.db import make_engine, session_scope, upgrade
from fma_bands.study.enrolment import create_first_coordinator, create_user
from fma_bands.study.library import sync_vignettes
from tests.conftest import DEMO_VIGNETTES, RATER_DETAILS

PASS = "coordinator passphrase"
RATERS = (("geri-01", "geriatrics"), ("emerg-01", "emergency medicine"))


@pytest.fixture(scope="module")
def cli_vignettes():
    return DEMO_VIGNETTES


@pytest.fixture(scope="module")
def template(tmp_path_factory, cli_vignettes):
    """The store, made once a module (its Argon2 hashes and keys are what is slow), and its
    attestations folder: the root, and each rater's enrolment and activation."""
    path = tmp_path_factory.mktemp("cli") / "x.db"
    folder = path.with_name("att")  # the study's log, published as the store signs it
    engine = make_engine(f"sqlite:///{path}")
    upgrade(engine)
    with session_scope(engine) as s:
        sync_vignettes(s, load_library([cli_vignettes]), actor="test")
        create_first_coordinator(s, pseudonym="coordinator", passphrase=PASS, folder=folder)
        for name, specialty in RATERS:
            create_user(
                s,
                actor="test",
                pseudonym=name,
                passphrase=f"{name} passphrase",
                root_passphrase=PASS,
                folder=folder,
                specialty=specialty,
                **RATER_DETAILS,
            )
    engine.dispose()
    return path


@pytest.fixture
def fma(tmp_path, monkeypatch, template, cli_vignettes):
    """fma-bands in-process on a copy of that store: `fma(*args, who=NAME or None)`."""
    monkeypatch.chdir(tmp_path)
    for name in ("FMA_BANDS_AS", "FMA_BANDS_PASSPHRASE_FILE", "FMA_BANDS_DATABASE_URL"):
        monkeypatch.delenv(name, raising=False)
    for suffix in ("", "-wal"):
        if template.with_name(template.name + suffix).exists():
            shutil.copy(template.with_name(template.name + suffix), tmp_path / f"x.db{suffix}")
    shutil.copytree(template.with_name("att"), tmp_path / "att")
    (tmp_path / "c.pass").write_text(PASS + "\n")
    (tmp_path / "g.pass").write_text("geri-01 passphrase\n")
    url = f"sqlite:///{tmp_path / 'x.db'}"
    base = ["--db", url, "--vignettes", str(cli_vignettes), "--attestations", "att"]

    def invoke(*args, who="coordinator"):
        people = {"coordinator": "c.pass", "geri-01": "g.pass"}
        acting = ["--as", who, "--passphrase-file", people[who]] if who else []
        return CliRunner().invoke(cli, [*base, *acting, *args], catch_exceptions=False)

    return invoke
