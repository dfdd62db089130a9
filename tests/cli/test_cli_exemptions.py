"""`fma-bands exemptions`: loaded from the real harness, reviewed by a rater, listed blind to the
verdicts for the coordinator (its JSON as docs/cli.md documents it), exported."""

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from fma_bands.cli import cli
from tests.cli import test_json_schemas
from tests.cli.test_json_schemas import check_outputs
from tests.conftest import SHARED

demo_study = test_json_schemas.demo_study
fma = test_json_schemas.fma

COORDINATOR = ("--as", "coordinator", "--passphrase-file", "c.pass")
RATER = ("--rater", "rater-01", "--passphrase-file", "r1.pass")
HARNESS = SHARED / "harness"


def test_load_review_list_and_export(fma):
    Path("r1.pass").write_text("rater-01-demo\n")
    loaded = fma(*COORDINATOR, "exemptions", "load", "--harness", str(HARNESS))
    assert "4 added" in loaded
    fma(
        "exemptions", "review", "sex/orders", "--verdict", "AMEND", "--direction", "fewer",
        "--reason", "Pelvic imaging is not always needed.", *RATER,
    )  # fmt: skip
    coordinator = fma(*COORDINATOR, "exemptions", "list", "--json")
    rater = fma("exemptions", "list", *RATER, "--json")
    check_outputs("exemptions list", [coordinator, rater])
    seen = {e["entry"]: e for e in json.loads(coordinator)["exemptions"]}
    assert seen["sex/orders"]["reviewed_by"] == 1
    assert seen["sex/orders"]["my_review"] is None  # the coordinator never sees the verdict
    assert "AMEND" not in coordinator and "fewer" not in coordinator
    mine = {e["entry"]: e for e in json.loads(rater)["exemptions"]}
    assert mine["sex/orders"]["my_review"]["direction"] == "fewer"
    assert mine["sex/orders"]["reviewed_by"] is None
    # a folder that does not exist is named, never taken for a file name
    fma(*COORDINATOR, "exemptions", "export", "out/", code=1)
    assert not Path("out").exists()
    written = fma(*COORDINATOR, "exemptions", "export", ".")
    assert "4 unadjudicated" in written
    document = yaml.safe_load(Path("exemptions.yaml").read_text())
    assert {e["status"] for e in document["exemptions"]} == {"unadjudicated"}


def test_bad_input_is_refused_in_one_line_naming_where(fma):
    Path("r1.pass").write_text("rater-01-demo\n")
    Path("bad.yaml").write_text(
        "exemptions:\n  - {attribute: sex, sub_action: orders, direction: More!}\n"
    )
    fma(*COORDINATOR, "exemptions", "load", code=2)  # neither --harness nor --file
    refused = CliRunner().invoke(cli, [*COORDINATOR, "exemptions", "load", "--file", "bad.yaml"])
    assert refused.exit_code == 1
    assert refused.stderr == (
        "fma-bands: error: bad.yaml: the exemptions file has problems\n"
        "  bad.yaml:2: exemptions[0].direction: a direction is a lower-case word, or words "
        "joined by _ (letters and digits), as the harness writes them (more, shorter, "
        "away_from_nsaid), not 'More!'\n"
    )
    fma(*COORDINATOR, "exemptions", "load", "--harness", str(HARNESS))
    # A wrong passphrase, and a coordinator acting as a rater: refused (exit 3).
    fma("exemptions", "review", "sex/orders", "--verdict", "CONFIRM", "--reason", "r",
        "--rater", "rater-01", "--passphrase-file", "c.pass", code=3)  # fmt: skip
    fma("exemptions", "review", "sex/orders", "--verdict", "CONFIRM", "--reason", "r",
        "--rater", "coordinator", "--passphrase-file", "c.pass", code=3)  # fmt: skip


def test_an_editor_with_the_folder_alone_exports_the_same_statuses(fma):
    """Decided from the attestations folder alone: with the harness's entries and no database,
    `exemptions export` needs no account and agrees with the coordinator's export."""
    from tests.cli.test_cli_attest import DECLARATIONS, IDENTITY, declares

    Path("r1.pass").write_text("rater-01-demo\n")
    Path("identity.yaml").write_text(yaml.safe_dump(IDENTITY))
    fma(*COORDINATOR, "identity", "set", "rater-01", "--from", "identity.yaml")
    fma(*COORDINATOR, "exemptions", "load", "--harness", str(HARNESS))
    fma(
        "exemptions", "review", "age/analgesia_tier", "--verdict", "REJECT",
        "--reason", "Less analgesia for an older patient is the documented harm.", *RATER,
    )  # fmt: skip
    fma("attest", *RATER, *declares(*DECLARATIONS))
    fma(*COORDINATOR, "round", "close")
    fma(*COORDINATOR, "exemptions", "export", "coordinator.yaml")
    study = yaml.safe_load(Path("coordinator.yaml").read_text())
    Path("fma-bands.db").rename("elsewhere.db")  # the editor has the folder, not the database
    written = fma("exemptions", "export", "editor.yaml", "--harness", str(HARNESS))
    assert "1 rejected, 3 unadjudicated" in written
    editor = yaml.safe_load(Path("editor.yaml").read_text())
    assert editor["exemptions"] == study["exemptions"]
    rejected = [e for e in editor["exemptions"] if e["status"] == "rejected"]
    assert [(e["attribute"], e["sub_action"]) for e in rejected] == [("age", "analgesia_tier")]
    assert not Path("fma-bands.db").exists()  # and it made no database either
    # Pinned to another study, the folder is refused: nothing is decided.
    fma("exemptions", "export", "x.yaml", "--harness", str(HARNESS), "--study", "fma-0", code=1)


def test_loading_once_no_round_is_open_says_raters_cannot_review_them(fma):
    Path("r1.pass").write_text("rater-01-demo\n")
    fma(*COORDINATOR, "round", "close")
    result = CliRunner(env=test_json_schemas._clean_env()).invoke(
        cli, [*COORDINATOR, "exemptions", "load", "--harness", str(HARNESS)]
    )
    assert result.exit_code == 0, result.output
    assert (
        "warning: round 1 is closed, and raters review exemptions only while a round is open"
        in (result.stderr)
    )
    refused = CliRunner(env=test_json_schemas._clean_env()).invoke(
        cli,
        ["exemptions", "review", "sex/orders", "--verdict", "CONFIRM", "--reason", "r", *RATER],
    )
    assert refused.exit_code == 3
    assert "nobody can review exemptions now" in refused.stderr
