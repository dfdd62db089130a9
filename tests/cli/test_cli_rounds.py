"""`fma-bands round show | open 2 [--band VID:SUB ...] | close`, `phase` that never reopens,
`handback import` into the open round and `agreement --round`, in-process with CliRunner on a
three-rater study whose ESI band has an empty intersection after round 1 (or, once, a consensus
with a disputed span)."""

import json

import pytest
from click.testing import CliRunner
from sqlmodel import select

from fma_bands.cli import cli
from fma_bands.cli.base import REFUSED_EXIT
from fma_bands.store.db import make_engine, session_scope, upgrade
from fma_bands.store.models import Review
from fma_bands.study.rounds import REASONS, close_round, round_two_candidates
from fma_bands.study.users import list_users
from tests.study.test_rounds import (
    ESI,
    RATERS,
    ROUND_ONE,
    URGENCY,
    VID,
    enrol,
    make_library,
    review,
)


@pytest.fixture
def fma(tmp_path, monkeypatch):
    """A closed round 1 in a SQLite file, and fma-bands run on it as the coordinator."""
    run = study_cli(tmp_path, monkeypatch, {n: values for n, (_, values, _) in ROUND_ONE.items()})
    yield run
    run.engine.dispose()  # type: ignore[attr-defined]


def study_cli(tmp_path, monkeypatch, esi: dict[str, list[int]]):
    """Round 1 closed in a SQLite file, each rater with their ESI band (`esi`, an AMEND) and
    urgency accepted; returns fma-bands run on it as the coordinator."""
    library = make_library(tmp_path)
    for name in ("FMA_BANDS_DATABASE_URL", "FMA_BANDS_ATTESTATIONS", "FMA_BANDS_VIGNETTES"):
        monkeypatch.delenv(name, raising=False)
    url = f"sqlite:///{tmp_path / 'study.db'}"
    engine = make_engine(url)
    upgrade(engine)
    folder = tmp_path / "attestations"
    coordinator, raters = enrol(engine, library, folder)
    for name, values in esi.items():
        reason = ROUND_ONE[name][2]
        review(engine, library, raters[name], ESI, "AMEND", values, reason)
        review(engine, library, raters[name], URGENCY, "ACCEPT")
    with session_scope(engine) as s:
        close_round(s, actor=coordinator)
    passphrase = tmp_path / "coordinator.pass"
    passphrase.write_text("coordinator pass\n", encoding="utf-8")
    common = ["--db", url, "--vignettes", str(tmp_path / "vignettes"), "--attestations"]
    common += [str(folder), "--as", "coordinator", "--passphrase-file", str(passphrase)]

    def run(*args: str, code: int = 0) -> str:
        result = CliRunner().invoke(cli, [*common, *args], prog_name="fma-bands")
        assert result.exit_code == code, result.output
        assert "Traceback" not in result.output
        run.stderr = result.stderr  # type: ignore[attr-defined]
        run.stdout = result.stdout  # type: ignore[attr-defined]
        return result.stdout if code == 0 else result.stderr

    run.engine = engine  # type: ignore[attr-defined]
    run.library = library  # type: ignore[attr-defined]
    return run


def test_round_show_lists_the_candidates_as_the_domain_does_and_phase_never_reopens(fma):
    shown = fma("round", "show")
    lines = shown.splitlines()
    assert lines[0] == "round 1 closed: every band, every rater (independent)"
    assert lines[1] == "candidates for round 2: 1 band"
    assert lines[2].startswith(f"  {VID}:esi_acuity  Case 1 of 1 · {VID} · ESI acuity level")
    assert lines[2].endswith("; 3 raters with a band")
    assert (
        lines[3] == f"    - no consensus: {REASONS['no_consensus'].sentence} (code: no_consensus)"
    )
    assert lines[4] == "    what some but not all raters admit: 1 - resuscitation to 3 - urgent"
    assert len(lines) == 5  # no chair decides before round 2: nothing said of one
    assert "urgency_score" not in shown
    data = json.loads(fma("round", "show", "--json"))
    # The same candidates, with the same reasons, as the domain gives Study admin.
    with session_scope(fma.engine) as s:  # type: ignore[attr-defined]
        [actor] = [u for u in list_users(s) if u.pseudonym == "coordinator"]
        found = round_two_candidates(s, fma.library, viewer=actor)  # type: ignore[attr-defined]
    assert data["discordant"] == [c.as_json() for c in found]
    assert [(d["vignette_id"], d["sub_action"], d["reasons"]) for d in data["discordant"]] == [
        (VID, "esi_acuity", ["no_consensus"])
    ]
    assert "a closed round is never reopened" in fma("phase", "open", code=REFUSED_EXIT)
    assert fma("phase").strip() == "review phase closed"


def test_round_show_gives_a_disputed_span_its_own_reason(tmp_path, monkeypatch):
    """Raters who meet in a consensus but differ: round show lists the band, for its disputed
    span, and `round open 2` opens for it by default."""
    run = study_cli(tmp_path, monkeypatch, {"rater-a1": [2], "rater-b2": [2], "rater-c3": [2, 3]})
    shown = run("round", "show")
    assert "candidates for round 2: 1 band" in shown
    assert (
        f"    - disputed span: {REASONS['disputed_span'].sentence} (code: disputed_span)" in shown
    )
    assert "    what some but not all raters admit: 3 - urgent" in shown
    [band] = json.loads(run("round", "show", "--json"))["discordant"]
    assert (band["reasons"], band["disputed_text"]) == (["disputed_span"], "3 - urgent")
    assert run("round", "open", "2").splitlines()[0].startswith("round 2 open: 1 band re-")
    run.engine.dispose()  # type: ignore[attr-defined]


def test_round_two_opens_takes_its_hand_backs_and_closes_for_good(fma, tmp_path):
    before = json.loads(fma("agreement", "--json", "--bootstrap", "0"))
    assert (before["round"], before["purpose"]) == (1, "reliability")
    assert "not a band" in fma("round", "open", "2", "--band", "esi_acuity", code=1)
    assert "is not in the range 1<=x<=2" in fma("round", "open", "3", code=2)
    opened = fma("round", "open", "2")
    assert opened.splitlines() == [
        "round 2 open: 1 band re-reviewed after the anonymised panel of round 1 "
        "(consensus-building)",
        f"  {VID}:esi_acuity  raters: {', '.join(RATERS)}",
    ]
    data = json.loads(fma("round", "show", "--json"))
    assert (data["round"], data["phase"]) == (2, "open")
    assert data["bands"] == [
        {"vignette_id": VID, "sub_action": "esi_acuity", "raters": list(RATERS)}
    ]
    # An assignment changed while round 2 is open says that round 2's raters stay as chosen.
    fma("assign", "--rater", RATERS[0], "--remove", "--band", f"{VID}:esi_acuity")
    assert "changes no one's round-2 queue" in fma.stderr  # type: ignore[attr-defined]
    assert json.loads(fma("round", "show", "--json"))["bands"] == data["bands"]

    paper = tmp_path / "paper.txt"
    paper.write_text(f"{VID} | urgency_score | ACCEPT | still right\n", encoding="utf-8")
    refused = fma("handback", "import", str(paper), "--rater", "rater-b2", code=1)
    assert "nothing was imported" in refused and "not one of this rater's" in refused
    paper.write_text(f"{VID} | esi_acuity | AMEND {{2, 3}} | after the panel\n", encoding="utf-8")
    fma("handback", "import", str(paper), "--rater", "rater-b2")
    with session_scope(fma.engine) as s:
        rows = s.exec(select(Review).where(Review.origin == "handback")).all()
        assert [(r.sub_action, r.round) for r in rows] == [("esi_acuity", 2)]

    after = json.loads(fma("agreement", "--json", "--bootstrap", "0", "--round", "1"))
    assert after == before
    second = json.loads(fma("agreement", "--json", "--bootstrap", "0", "--round", "2"))
    assert (second["round"], second["purpose"]) == (2, "consensus-building")
    assert [(b["sub_action"], b["n_raters"]) for b in second["bands"]] == [("esi_acuity", 1)]
    table = fma("agreement", "--bootstrap", "0", "--round", "2")
    assert table.startswith("sub-action")
    assert table.rstrip().splitlines()[-1].startswith("Round 2, consensus-building")

    assert fma("round", "close").strip().startswith("round 2 closed")
    # Every attempt on a closed round is refused alike (docs/cli.md, exit status 3).
    assert "closed already" in fma("round", "close", code=REFUSED_EXIT)
    said = fma("round", "open", "2", code=REFUSED_EXIT)
    assert "round 2 has been held and is closed" in said and "no round follows round 2" in said
    assert "never reopened" in fma("phase", "open", code=REFUSED_EXIT)
    assert "round 2 is closed already" in fma("phase", "closed", code=REFUSED_EXIT)
    closed = fma("handback", "import", str(paper), "--rater", "rater-a1", code=REFUSED_EXIT)
    assert "is closed" in closed
