"""`fma-bands report --format md|csv|tex [--out FILE] [--round N]`, in-process on the three-rater
demo study: every figure is one `fma-bands agreement --json` shows for the same B and seed, the
facts are the study's, the file goes only where a command may write, and only the coordinator
may make it."""

import contextlib
import csv
import io
import json
import platform

import pytest
from click.testing import CliRunner
from sqlmodel import Session

from fma_bands.cli import cli
from fma_bands.cli.base import REFUSED_EXIT
from fma_bands.core.vignettes import load_library
from fma_bands.store.db import make_engine
from fma_bands.study.methods_facts import study_facts
from fma_bands.study.users import get_user
from tests.agreement.demo import THREE_RATERS, demo_study
from tests.agreement.test_methods import check_against_json, md_tables, unescape_md
from tests.conftest import DEMO_VIGNETTES

FIGURES = ("--bootstrap", "200", "--seed", "5")


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """The demo study with three raters' hand-backs: its md report while round 1 is open, then
    the round closed."""
    folder = tmp_path_factory.mktemp("report")
    with contextlib.chdir(folder):  # the command's log goes beside the study
        demo = demo_study(folder, THREE_RATERS, close=False)
        opened = demo.fma("report", *FIGURES)
        demo.fma("phase", "closed")
    return demo, opened


@pytest.fixture(autouse=True)
def in_study_folder(study, monkeypatch):
    monkeypatch.chdir(study[0].folder)


def run(demo, *args, who="coordinator", code=0):
    secret = demo.folder / f"{who}.passphrase"
    if who == "coordinator":
        secret.write_text("coordinator-demo\n", encoding="utf-8")
    base = ["--db", demo.url, "--vignettes", str(DEMO_VIGNETTES)]
    base += ["--attestations", str(demo.attestations), "--as", who]
    result = CliRunner().invoke(cli, [*base, "--passphrase-file", str(secret), *args])
    assert result.exit_code == code, (args, result.output)
    assert "Traceback" not in result.output
    return result.stdout if code == 0 else result.stderr


def facts_of(demo):
    engine = make_engine(demo.url)
    try:
        with Session(engine) as session:
            viewer = get_user(session, "coordinator")
            return study_facts(session, load_library([DEMO_VIGNETTES]), viewer=viewer)
    finally:
        engine.dispose()


def test_every_figure_is_one_the_agreement_command_shows(study):
    demo, _ = study
    text = run(demo, "report", "--format", "md", *FIGURES)
    data = json.loads(run(demo, "agreement", "--json", *FIGURES))
    check_against_json(text, data, facts_of(demo))
    assert len(md_tables(text)["band"]) >= 5
    # The same B and seed as the command's: a figure from another seed would differ.
    other = json.loads(run(demo, "agreement", "--json", "--bootstrap", "200", "--seed", "6"))
    with pytest.raises(AssertionError):
        check_against_json(text, other, facts_of(demo))


def test_the_facts_are_the_studys(study):
    demo, _ = study
    text = unescape_md(run(demo, "report", *FIGURES))
    library = load_library([DEMO_VIGNETTES])
    n_bands = sum(len(v.proposals) for v in library)
    for said in (
        "3 raters enrolled",
        "rater-03 (geriatrics)",
        "3 raters submitted reviews in round 1",
        f"{len(library)} vignettes from the study's vignette files",
        f"{n_bands} proposed bands",
        "1 round held: round 1 (closed) is the independent round",
        f"Python {platform.python_version()}",
        "krippendorff ",
    ):
        assert said in text, said
    assert "provisional" not in text


def test_an_open_round_says_its_figures_are_provisional(study):
    _, opened = study
    assert "Round 1 is still open: every figure here is provisional" in unescape_md(opened)


def test_csv_and_tex(study):
    demo, _ = study
    data = json.loads(run(demo, "agreement", "--json", *FIGURES))
    rows = list(csv.DictReader(io.StringIO(run(demo, "report", "--format", "csv", *FIGURES))))
    assert len(rows) == sum(1 for m in data["metrics"].values() for a in m.values() if a["level"])
    for row in rows:
        a = data["metrics"][row["scope"]][row["metric"]]
        assert (None if row["alpha"] == "" else float(row["alpha"])) == a["alpha"]
        assert (None if row["ci_low"] == "" else float(row["ci_low"])) == a["ci_low"]
        assert int(row["n_bands"]) == a["n_bands"]
    tex = run(demo, "report", "--format", "tex", *FIGURES)
    assert tex.count(r"\begin{tabular}") == 5 and r"\textit{Raters.}" in tex


def test_out_writes_the_file_and_never_into_the_attestations(study, tmp_path):
    demo, _ = study
    out = tmp_path / "methods.md"
    assert run(demo, "report", "--out", str(out), *FIGURES) == ""
    assert out.read_text(encoding="utf-8") == run(demo, "report", *FIGURES)
    inside = demo.attestations / "methods.md"
    refused = run(demo, "report", "--out", str(inside), *FIGURES, code=1)
    assert "inside the attestations folder" in refused
    assert not inside.exists()


def test_only_the_coordinator_and_only_a_held_round(study):
    demo, _ = study
    refused = run(demo, "report", who="rater-03", code=REFUSED_EXIT)
    assert "only the study coordinator can make the methods report" in refused
    assert "round 2 has not been held" in run(demo, "report", "--round", "2", code=1)
    assert "'pdf' is not one of" in run(demo, "report", "--format", "pdf", code=2)
