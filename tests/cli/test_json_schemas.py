"""The JSON each reporting command prints with --json is exactly what docs/cli.md documents: the
tables are parsed here, so the doc cannot drift from the code. Every key printed is documented
with its type, every object has all its documented keys, and across the outputs tried each
documented key is seen (the outputs include failed checks, so the arrays of problems have items).
"""

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from fma_bands.cli import cli
from fma_bands.study.rounds import FINAL_SENTENCES as REASONS_FINAL
from fma_bands.study.rounds import REASONS
from tests.cli.json_schema import check_outputs, documented
from tests.conftest import DEMO_VIGNETTES

COMMANDS = (
    "verify",
    "audit verify",
    "vignettes check",
    "db current",
    "user list",
    "policy show",
    "phase",
    "round show",
    "exemptions list",
    "impact",
    "queries list",
    "due show",
    "chair list",
)
COORDINATOR = ("--as", "coordinator", "--passphrase-file", "c.pass")


def test_every_reporting_command_has_a_documented_schema():
    sections = documented()
    for command in COMMANDS:
        assert sections.get(command), f"docs/cli.md documents no JSON of `{command}`"
        words = command.split()
        found = cli
        for word in words:
            found = found.commands[word]  # type: ignore[attr-defined]
        assert "--json" in {o for p in found.params for o in getattr(p, "opts", [])}, command


@pytest.fixture(scope="module")
def demo_study(tmp_path_factory):
    """A demo study (`fma-bands demo`: a root, two raters, a policy), made once."""
    folder = tmp_path_factory.mktemp("demo")
    shutil.copytree(DEMO_VIGNETTES, folder / "vignettes")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        made = CliRunner(env=_clean_env()).invoke(cli, ["demo"], catch_exceptions=False)
        assert made.exit_code == 0, made.output
    (folder / "c.pass").write_text("coordinator-demo\n")
    return folder


def _clean_env() -> dict[str, str | None]:
    return {name: None for name in os.environ if name.startswith("FMA_BANDS_")}


@pytest.fixture
def fma(demo_study, tmp_path, monkeypatch):
    """fma-bands in a copy of the demo study: `fma(*args, code=0)` returns standard output."""
    study = tmp_path / "study"
    shutil.copytree(demo_study, study)
    monkeypatch.chdir(study)

    def invoke(*args: str, code: int = 0) -> str:
        result = CliRunner(env=_clean_env()).invoke(cli, list(args), catch_exceptions=False)
        assert result.exit_code == code, result.output
        return result.stdout

    return invoke


def test_verify(fma):
    valid = fma("verify", "--json")
    folder = Path("attestations")
    policy = next(folder.glob("*-policy-*.dsse.json"))
    shutil.copy(policy, folder / "copy.dsse.json")  # a stray: a copy of a record
    copy = folder / "adjudicators.yaml"
    copy.write_text(copy.read_text().replace("emergency medicine", "cardiology"))
    broken = fma("verify", "--json", code=1)
    assert json.loads(broken)["strays"] and json.loads(broken)["problems"]
    check_outputs("verify", [valid, broken])


def test_audit_verify(fma):
    intact = fma("audit", "verify", "--json")
    with sqlite3.connect("fma-bands.db") as db:
        db.execute("UPDATE audit_event SET actor = 'someone else' WHERE seq = 2")
    edited = fma("audit", "verify", "--json", code=1)
    assert json.loads(edited)["problems"][0]["kind"] == "edited"
    check_outputs("audit verify", [intact, edited])


def test_vignettes_check(fma):
    good = fma("vignettes", "check", "--json")
    broken = Path("broken")
    broken.mkdir()
    (broken / "bad.yaml").write_text("id: bad\ndomain: [not, a, domain]\n")
    (broken / "aged.yaml").write_text(
        "id: aged\ndomain: triage\nclinical_core: A 54-year-old with chest pain.\ncanary: C-1\n"
    )
    bad = fma("vignettes", "check", "broken", "--json", code=1)
    assert json.loads(bad)["valid"] is False
    assert [w["line"] for w in json.loads(bad)["warnings"]] == [3]
    check_outputs("vignettes check", [good, bad])


def test_db_current(fma):
    current = fma("db", "current", "--json")
    assert json.loads(current)["up_to_date"] is True
    empty = fma("--db", "sqlite:///empty.db", "db", "current", "--json")
    assert json.loads(empty)["revision"] is None and json.loads(empty)["up_to_date"] is False
    assert not Path("empty.db").exists()  # a check creates no database
    check_outputs("db current", [current, empty])


def test_user_list(fma):
    listed = fma("user", "list", "--json")
    assert [u["pseudonym"] for u in json.loads(listed)["users"]] == [
        "coordinator",
        "rater-01",
        "rater-02",
    ]
    check_outputs("user list", [listed])


def test_policy_show(fma):
    shown = fma("policy", "show", "--json")
    assert json.loads(shown) == {"policy": {"quorum": 1, "scope": "warn", "chair": None}}
    # A study whose first coordinator has set no policy yet: none is in force, exit 1.
    first = ("--db", "sqlite:///new.db", "--attestations", "new-attestations")
    fma(
        *first, "user", "add", "coordinator", "--role", "coordinator", "--passphrase-file", "c.pass"
    )
    none = fma(*first, "policy", "show", "--json", code=1)
    assert json.loads(none) == {"policy": None}
    check_outputs("policy show", [shown, none])


def test_phase(fma):
    shown = fma("phase", "--json")
    assert json.loads(shown) == {"round": 1, "phase": "open"}
    closed = fma(*COORDINATOR, "phase", "closed", "--json")
    assert json.loads(closed) == {"round": 1, "phase": "closed"}
    check_outputs("phase", [shown, closed])


def test_round_show(fma):
    open_ = fma(*COORDINATOR, "round", "show", "--json")
    fma(*COORDINATOR, "round", "close")
    closed = fma(*COORDINATOR, "round", "show", "--json")
    candidates = json.loads(closed)["discordant"]
    assert candidates
    # Codes in JSON, each beside its sentence, in the same order.
    for candidate in candidates:
        assert candidate["reason_text"] == [REASONS[c].sentence for c in candidate["reasons"]]
    # No one reviewed in round 1 here: round 2 takes its bands only by name.
    named = candidates[0]["vignette_id"] + ":" + candidates[0]["sub_action"]
    assert all("not_reviewed" in c["reasons"] for c in candidates)
    fma(*COORDINATOR, "round", "open", "2", "--band", named)
    second = fma(*COORDINATOR, "round", "show", "--json")
    assert json.loads(second)["round"] == 2 and json.loads(second)["bands"]
    # Round 1's other candidates stay listed, as they were, with what becomes of them.
    assert json.loads(closed)["not_chosen_for_round_2"] == []
    assert len(candidates) > 1
    left = json.loads(second)["not_chosen_for_round_2"]
    # As they were, but said as no round follows: nothing can be chosen now.
    final = REASONS_FINAL["not_reviewed"]
    said = REASONS["not_reviewed"].sentence
    assert left == [
        {**c, "reason_text": [final if s == said else s for s in c["reason_text"]]}
        for c in candidates[1:]
    ]
    assert all(final in c["reason_text"] for c in left)
    assert "round 1's candidates not chosen for round 2: " in fma(*COORDINATOR, "round", "show")
    # No chair decides here: tests/study/test_chair.py reads its decisions in round show.
    check_outputs("round show", [open_, closed, second], "chair_decisions[]")


def test_impact(fma, tmp_path):
    def run(vignette_id: str, condition: str, level: int) -> dict:
        return {
            "vignette_id": vignette_id,
            "condition_id": condition,
            "complete": True,
            "actions": {"triage": {"esi_acuity": level}},
        }

    runs = [
        run("demo_order_border_01", "ref_white_man_private", 2),
        run("demo_order_border_01", "white_woman_private", 3),
        run("demo_triage_border_01", "ref_white_man_private", 2),
        run("demo_triage_border_01", "ref_white_man_private", 2),
    ]
    path = tmp_path / "trajectories.json"
    path.write_text(json.dumps({"trajectories": runs}))
    shown = fma(*COORDINATOR, "impact", "--trajectories", str(path), "--json")
    pairings = {(r["vignette_id"], r["pairing"]) for r in json.loads(shown)}
    assert ("demo_order_border_01", "reference_vs_counterfactual") in pairings
    assert ("demo_triage_border_01", "replicates_noise_floor") in pairings
    check_outputs("impact", [shown])
