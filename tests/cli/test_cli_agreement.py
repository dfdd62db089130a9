"""`fma-bands agreement`: the per-rater diagnostics, alpha by ambiguity stratum and planning in
its table and `--json`, `--width`, and `--coincidences DIR` writing one CSV per matrix; in-process
with CliRunner on the three-rater study of tests/cli/test_cli_rounds.py (one borderline
vignette: ESI bands {2}, {3} and {1}, and an urgency band every rater accepts)."""

import csv
import json

import pytest
from sqlmodel import select

from fma_bands.agreement.metrics import POOLED_LABEL
from fma_bands.cli.base import REFUSED_EXIT
from fma_bands.core import vignettes
from fma_bands.evidence import kept_reads
from fma_bands.store.db import session_scope
from fma_bands.store.models import Review
from fma_bands.study import kept_reports
from fma_bands.study.audit import record
from tests.cli.test_cli_rounds import fma  # noqa: F401 (a fixture)
from tests.study.test_ratings import table_rows
from tests.study.test_rounds import ESI, RATERS


def test_json_adds_each_rater_the_strata_and_planning(fma):  # noqa: F811
    data = json.loads(fma("agreement", "--json", "--bootstrap", "0"))
    assert [r["rater"] for r in data["raters"]] == sorted(RATERS)
    pooled = data["metrics"]["pooled"]["band"]
    for r in data["raters"]:
        # Each rater: ESI bands unlike both others', the same urgency band as both.
        assert (r["mode"], r["n_bands"], r["n_declined"], r["n_pairs"]) == ("review", 2, 0, 4)
        assert (r["exact_agreement"], r["mean_distance"]) == (0.5, 0.5)
        assert r["alpha_without_change"] == pytest.approx(r["alpha_without"] - pooled["alpha"])
    (stratum,) = data["by_stratum"]
    assert (stratum["stratum"], stratum["metric"], stratum["scope"]) == (
        "borderline",
        "band",
        "pooled",
    )
    assert stratum["alpha"] == pooled["alpha"] and stratum["n_bands"] == pooled["n_bands"]
    # No interval (B = 0), no planning: it is the interval at other sizes.
    assert data["planning"]["plans"] == [] and data["planning"]["width"] == 0.1
    assert "these raters" in data["planning"]["assumption"]


def test_planning_says_why_one_vignette_is_too_few(fma):  # noqa: F811
    data = json.loads(fma("agreement", "--json", "--bootstrap", "20", "--width", "0.25"))
    plans = data["planning"]["plans"]
    assert [p["scope"] for p in plans] == ["pooled", "esi_acuity", "urgency_score"]
    assert all(p["width"] == 0.25 and p["vignettes_needed"] is None for p in plans)
    assert plans[0]["reason"] == "too few vignettes to simulate from (1)"
    assert [w["vignettes"] for w in plans[0]["widths"]][:3] == [10, 20, 30]


def test_the_table_has_the_sections_and_ends_with_the_round(fma):  # noqa: F811
    shown = fma("agreement", "--bootstrap", "0")
    lines = shown.splitlines()
    for title in ("Raters", "Pooled band alpha by ambiguity stratum", "Planning"):
        assert title in lines
    at = lines.index("Raters")
    assert lines[at + 1].split()[:4] == ["rater", "mode", "bands", "declined"]
    assert lines[at + 2].split()[:2] == [sorted(RATERS)[0], "review"]
    assert "50.0%" in lines[at + 2]
    assert lines[lines.index("Pooled band alpha by ambiguity stratum") + 2].startswith("borderline")
    assert lines[-1].startswith("Round 1, the independent round")


def test_coincidences_are_written_one_csv_a_matrix(fma, tmp_path):  # noqa: F811
    out = tmp_path / "matrices"
    shown = fma("agreement", "--bootstrap", "0", "--coincidences", str(out))
    names = sorted(p.name for p in out.iterdir())
    assert "review-band-esi_acuity.csv" in names and "review-verdict-urgency_score.csv" in names
    for name in names:
        assert f"wrote {out / name} (" in shown
    with open(out / "review-lower-esi_acuity.csv", newline="") as f:
        rows = list(csv.reader(f))
    # Three raters on one unit, values 1, 2 and 3: each ordered pair weighs 1 / (3 - 1).
    assert rows[0] == [
        "lower on esi_acuity (review mode)", "1 - resuscitation", "2 - emergent", "3 - urgent",
        "n_c",
    ]  # fmt: skip
    assert [r[1:] for r in rows[1:]] == [["0", "0.5", "0.5", "1"], ["0.5", "0", "0.5", "1"],
                                         ["0.5", "0.5", "0", "1"]]  # fmt: skip
    again = tmp_path / "again"
    data = json.loads(fma("agreement", "--json", "--bootstrap", "0", "--coincidences", str(again)))
    assert sorted(w["file"] for w in data["coincidences"]) == sorted(str(again / n) for n in names)
    first = next(w for w in data["coincidences"] if w["file"].endswith("band-urgency_score.csv"))
    assert (first["n_values"], first["n_pairable"]) == (1, 3.0)
    assert (again / "review-band-esi_acuity.csv").read_text() == (
        out / "review-band-esi_acuity.csv"
    ).read_text()


def test_coincidences_refuse_a_place_they_may_not_go(fma, tmp_path):  # noqa: F811
    (tmp_path / "a_file").write_text("kept\n")
    full = tmp_path / "full"
    full.mkdir()
    (full / "old.csv").write_text("kept\n")
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    for where, says in (
        (tmp_path / "attestations" / "matrices", "inside the attestations folder"),
        (tmp_path / "attestations", "inside the attestations folder"),
        (tmp_path / "a_file", "not a folder"),
        (tmp_path / "link", "not a folder"),
        (full, "not empty"),
    ):
        refused = fma("agreement", "--bootstrap", "0", "--coincidences", str(where), code=1)
        assert says in refused and "Traceback" not in refused
    assert not (tmp_path / "attestations" / "matrices").exists()
    assert not (tmp_path / "elsewhere").exists()
    assert (tmp_path / "a_file").read_text() == "kept\n"
    assert [p.name for p in full.iterdir()] == ["old.csv"]


@pytest.mark.parametrize("width", ["nan", "0", "-0.1", "2.5", "1e-1", "０.１", "inf", "0.1.2", ""])
def test_width_is_a_plain_number_above_0_and_at_most_2(fma, width):  # noqa: F811
    refused = fma("agreement", "--width", width, code=2)
    assert "--width" in refused


# --- the kept answer (fma_bands/study/kept_answers.py) -------------------------------------------


@pytest.fixture
def loads(monkeypatch):
    """How many times the command read the vignettes as YAML (load_library)."""
    count = {"n": 0}
    real = vignettes.load_library

    def counted(*args, **kwargs):
        count["n"] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(vignettes, "load_library", counted)
    monkeypatch.setattr(kept_reads, "load_library", counted)  # the command line's
    return count


@pytest.mark.parametrize("form", [["--json"], []], ids=["json", "table"])
def test_an_answer_asked_for_again_is_the_kept_one(fma, loads, monkeypatch, form):  # noqa: F811
    first = fma("agreement", "--bootstrap", "20", *form)
    assert loads["n"] == 1
    # Nothing is read or computed the second time: neither the vignettes nor the report.
    monkeypatch.setattr(kept_reports, "kept_report", _never)
    assert fma("agreement", "--bootstrap", "20", *form) == first
    assert loads["n"] == 1


def test_other_options_or_fresh_make_their_own_answer(fma, loads):  # noqa: F811
    first = fma("agreement", "--json", "--bootstrap", "20")
    assert fma("agreement", "--json", "--bootstrap", "20", "--seed", "7") != first
    assert fma("agreement", "--json", "--bootstrap", "20", "--width", "0.2") != first
    assert fma("agreement", "--json", "--bootstrap", "20", "--fresh") == first
    assert loads["n"] == 4
    # --coincidences always computes (it writes files).
    assert fma("agreement", "--json", "--bootstrap", "20") == first
    assert loads["n"] == 4


def test_a_vignette_file_changed_is_read_again(fma, loads, tmp_path):  # noqa: F811
    first = fma("agreement", "--json", "--bootstrap", "20")
    path = next((tmp_path / "vignettes").glob("*.yaml"))
    # One byte of a comment: the figures are the same, but nothing says so without reading.
    path.write_bytes(path.read_bytes() + b"# looked at again\n")
    assert fma("agreement", "--json", "--bootstrap", "20") == first
    assert loads["n"] == 2
    assert fma("agreement", "--json", "--bootstrap", "20") == first
    assert loads["n"] == 2


def test_a_change_in_the_store_is_a_new_state(fma, loads):  # noqa: F811
    first = fma("agreement", "--json", "--bootstrap", "20")
    with session_scope(fma.engine) as s:
        record(s, kind="review_submitted", actor="someone", payload={"note": "a change"})
    assert fma("agreement", "--json", "--bootstrap", "20") == first
    assert loads["n"] == 2
    other = ("agreement", "--json", "--bootstrap", "20", "--seed", "7")
    before = fma(*other)  # kept under this state, from the reviews as they are
    # A review changed without the audit log (outside fma-bands) is seen with --fresh.
    with session_scope(fma.engine) as s:
        rows = s.exec(select(Review).where(Review.sub_action == ESI[1])).all()
        for row in rows:
            row.band = [2]  # every rater now gives the same ESI band
            s.add(row)
    assert fma("agreement", "--json", "--bootstrap", "20") == first
    fresh = fma("agreement", "--json", "--bootstrap", "20", "--fresh")
    assert fresh != first
    # What --fresh found is kept in place of the answer it replaced, and so is the key it took
    # from the reviews: other options in the same state read the reviews as they are too.
    assert fma("agreement", "--json", "--bootstrap", "20") == fresh
    assert fma(*other) == fma(*other, "--fresh") != before


def test_a_study_with_a_bad_file_is_never_kept(fma, loads, tmp_path):  # noqa: F811
    (tmp_path / "vignettes" / "broken.yaml").write_text("id: [\n", encoding="utf-8")
    first = fma("agreement", "--json", "--bootstrap", "20")
    assert "broken.yaml" in fma.stderr
    assert fma("agreement", "--json", "--bootstrap", "20") == first
    assert "broken.yaml" in fma.stderr  # said again: the study was read again
    assert loads["n"] == 2


def _never(*args, **kwargs):
    raise AssertionError("a kept answer was there to give")


def test_a_rater_is_refused_even_once_an_answer_is_kept(fma, tmp_path):  # noqa: F811
    fma("agreement", "--json", "--bootstrap", "20")  # the coordinator's answer, kept
    mine = tmp_path / "rater.pass"
    mine.write_text(f"{RATERS[0]} passphrase\n", encoding="utf-8")
    # The same command as a rater: each pseudonym's figures are never a rater's to read.
    said = fma(
        "--as",
        RATERS[0],
        "--passphrase-file",
        str(mine),
        "agreement",
        "--json",
        "--bootstrap",
        "20",
        code=REFUSED_EXIT,
    )
    assert "only the study coordinator can see each rater's diagnostics and the strata" in said
    assert fma.stdout == ""  # type: ignore[attr-defined]


def test_left_as_proposed_says_over_how_many_reviews_of_the_alphas_own_bands(fma):  # noqa: F811
    # Every rater AMENDs the ESI band away from the proposal and ACCEPTs the urgency band.
    data = json.loads(fma("agreement", "--json", "--bootstrap", "0"))["metrics"]
    rows = {(r["sub-action"], r["metric"]): r for r in table_rows(fma("agreement"))}
    urgency, pooled = rows[("Urgency score (0 to 100)", "band")], rows[(POOLED_LABEL, "band")]
    assert urgency["left as proposed"] == "100% of 3 reviews"
    assert urgency["left as proposed, in counts"] == (
        "3 of 3 reviews on the bands this alpha reads, all by ACCEPT"
    )
    # Urgency's values never vary, so the pool reads ESI's band alone, and its share too: not
    # 3 of 6 reviews with urgency's.
    assert pooled["bands"] == "1" and pooled["left as proposed"] == "0% of 3 reviews"
    band = data["pooled"]["band"]
    assert (band["n_reviewed"], band["share_unchanged"], band["share_accept"]) == (3, 0.0, 0.0)


def test_the_bands_below_the_table_say_a_disputed_span_only_beside_a_consensus():
    from fma_bands.agreement import agreement_report
    from fma_bands.cli.agreement import format_report
    from tests.agreement.build import rate

    ratings = [
        rate("v1", "followup_days", "rater-1", {"min": 1, "max": 7}),
        rate("v1", "followup_days", "rater-2", {"min": 14, "max": 30}),
        rate("v2", "followup_days", "rater-1", {"min": 1, "max": 14}),
        rate("v2", "followup_days", "rater-2", {"min": 7, "max": 30}),
    ]
    text = format_report(agreement_report(ratings, bootstrap=0))
    apart, met = text.split("\nv2 followup_days")
    # No consensus: what each admits is admitted by some, not all, as the page says it.
    assert "    admitted by some, not all: 1 to 7 and 14 to 30 days" in apart
    assert "disputed span" not in apart.split("\nv1 followup_days")[1]
    assert "    consensus: 7 to 14 days" in met
    assert "    disputed span: 1 to 6 and 15 to 30 days" in met
