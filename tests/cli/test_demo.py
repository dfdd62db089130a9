"""`fma-bands demo` from any folder: the demo vignettes that ship with fma-bands fill a missing
vignette folder, and a folder with none in it is refused before any database is made (the
installed wheel, run twice: tests/test_packaging.py)."""

import os

import pytest
import yaml
from click.testing import CliRunner

from fma_bands.cli import cli
from tests.conftest import DEMO_VIGNETTES, ROOT


@pytest.fixture
def run(tmp_path, monkeypatch):
    """fma-bands in-process in an empty folder, with no FMA_BANDS_* setting of the developer's."""
    monkeypatch.chdir(tmp_path)
    for name in [n for n in os.environ if n.startswith("FMA_BANDS_")]:
        monkeypatch.delenv(name)

    def invoke(*args: str):
        return CliRunner().invoke(cli, list(args), prog_name="fma-bands", catch_exceptions=False)

    return invoke


def yaml_files(folder):
    return {p.name: p.read_bytes() for p in folder.glob("*.yaml")}


def test_the_demo_fills_a_missing_vignette_folder_with_the_demo_vignettes(run, tmp_path):
    made = run("--vignettes", "study/vignettes", "demo")
    assert made.exit_code == 0, made.output
    assert yaml_files(tmp_path / "study" / "vignettes") == yaml_files(DEMO_VIGNETTES)
    assert "The demo vignettes that ship with fma-bands are now in study/vignettes." in made.stdout
    assert "Demo study ready in sqlite:///fma-bands.db: 12 vignettes." in made.stdout
    assert "--vignettes study/vignettes serve`" in made.stdout


def test_a_folder_without_vignettes_is_refused_and_no_database_is_made(run, tmp_path):
    (tmp_path / "vignettes").mkdir()
    refused = run("demo")
    assert refused.exit_code == 1
    assert refused.stderr.startswith("fma-bands: error: no vignettes loaded from vignettes")
    assert not (tmp_path / "fma-bands.db").exists()
    assert not (tmp_path / "attestations").exists()


def test_an_attestations_folder_of_another_study_is_refused_before_anything_is_made(run, tmp_path):
    (tmp_path / "attestations").mkdir()
    (tmp_path / "attestations" / "000000-root-x.dsse.json").write_text("{}")
    refused = run("demo", "--reuse")
    assert refused.exit_code == 1
    assert "already holds another study's signed records" in refused.stderr
    assert not (tmp_path / "fma-bands.db").exists()
    assert not (tmp_path / "vignettes").exists()


def test_the_demo_writes_the_recommended_policy_beside_its_own_and_says_so(run, tmp_path):
    from fma_bands.evidence.log import read_evidence

    made = run("demo")
    assert made.exit_code == 0, made.output
    folder = tmp_path / "attestations"
    recommended = folder / "policy.recommended.yaml"
    said = "quorum 2, scope require, is in attestations/policy.recommended.yaml: not in force"
    assert said in made.stdout
    text = recommended.read_text()
    assert yaml.safe_load(text) == {"quorum": 2, "scope": "require"}
    assert "fma-bands policy set --quorum 2 --scope require" in text
    # The README recommends exactly this policy and says where the demo puts it.
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## A policy for a real study\n", 1)[1].split("\n## ", 1)[0]
    assert "`--quorum 2 --scope require`" in section
    assert "attestations/policy.recommended.yaml" in section
    # The demo itself runs under its own signed policy, and the folder still verifies.
    assert yaml.safe_load((folder / "policy.yaml").read_text()) == {"quorum": 1, "scope": "warn"}
    evidence = read_evidence(folder)
    assert evidence.valid and evidence.policy.as_dict() == {"quorum": 1, "scope": "warn"}
    assert not evidence.strays


def test_the_demo_records_each_raters_identity_as_the_identities_page_does(run, tmp_path):
    """A demo rater can sign at once: the demo records each rater's made-up identity, marked as
    a demo, sealed under the identity key and signed into the roster by the root key."""
    from fma_bands.evidence.log import read_evidence
    from fma_bands.store.db import make_engine, session_scope
    from fma_bands.study.identity import check_revealed, is_recorded, reveal_identity
    from fma_bands.study.users import require_user

    made = run("demo")
    assert made.exit_code == 0, made.output
    assert "Each demo rater's private identity is recorded" in made.stdout
    assert "sealed under fma-bands-identity.key" in made.stdout
    key = tmp_path / "fma-bands-identity.key"
    assert key.exists() and oct(key.stat().st_mode & 0o777) == "0o600"
    engine = make_engine(f"sqlite:///{tmp_path / 'fma-bands.db'}")
    try:
        with session_scope(engine) as s:
            assert is_recorded(s, ["rater-01", "rater-02"]) == {
                "rater-01": True,
                "rater-02": True,
            }
            coordinator = require_user(s, "coordinator")
            revealed = {
                name: reveal_identity(s, actor=coordinator, pseudonym=name, key_path=key)
                for name in ("rater-01", "rater-02")
            }
    finally:
        engine.dispose()
    for name, shown in revealed.items():
        # Every field says it is a demo's, never a real person's details.
        assert all("demo" in value.lower() for value in shown["record"].values()), shown
        assert shown["record"]["full_name"] == f"Demo {name} (not a real person)"
    # The roster the root key signed holds each commitment, and the folder still verifies.
    evidence = read_evidence(tmp_path / "attestations")
    assert evidence.valid and not evidence.strays
    for name, shown in revealed.items():
        assert check_revealed(shown, evidence.records()) == (
            True,
            f"matches the identity commitment published for {name}",
        )


def test_the_demo_says_how_a_coordinators_command_is_run_and_that_way_works(run, tmp_path):
    made = run("demo")
    assert made.exit_code == 0, made.output
    assert "`fma-bands --as coordinator agreement` asks for the passphrase" in made.stdout
    assert "FMA_BANDS_AS and FMA_BANDS_PASSPHRASE_FILE" in made.stdout
    (tmp_path / "passphrase").write_text("coordinator-demo\n")
    ran = run("--as", "coordinator", "--passphrase-file", "passphrase", "agreement", "--json")
    assert ran.exit_code == 0, ran.output
    # Without saying who runs it, the command says what it needs and exits 3.
    assert run("agreement", "--json").exit_code == 3
    # What decides from the files alone needs no one, as the demo says.
    assert "(verify, registry, export) need no one's passphrase" in made.stdout
    assert run("registry", "--json").exit_code == 0
    again = run("demo", "--reuse")
    assert "`fma-bands --as coordinator agreement`" in again.stdout
