"""`fma-bands assign`: the coordinator adds and removes raters per band, sub-action and vignette,
and `--show [--json]` lists each band's raters and the bands that cannot be adjudicated as
assigned; every mistake is one line (in-process, with click's CliRunner)."""

import json
import re

import pytest

from fma_bands.cli.base import REFUSED_EXIT
from fma_bands.core.vignettes import load_library
from tests.conftest import DEMO_VIGNETTES

# The store and `fma` are tests/cli/conftest.py's, on the demo study.
ESI = ("demo_triage_border_01", "esi_acuity")


def shown(fma) -> dict:
    result = fma("assign", "--show", "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def raters_of(data: dict) -> dict[tuple[str, str], list[str]]:
    return {(b["vignette_id"], b["sub_action"]): b["raters"] for b in data["bands"]}


def one_line(result, fragment: str, code: int = 1) -> None:
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("fma-bands: error: "), result.stderr
    assert fragment in lines[0], lines[0]


def test_show_lists_every_band_by_scope(fma):
    data = shown(fma)
    assert data["quorum"] is None  # no policy.yaml yet
    bands = raters_of(data)
    library = load_library([DEMO_VIGNETTES])
    assert len(bands) == sum(len(v.proposals) for v in library)
    for (_, name), raters in bands.items():
        if name in ("esi_acuity", "analgesia_tier"):
            assert raters == ["emerg-01"]
        elif name == "followup_days":
            assert raters == ["geri-01"]
        else:  # referral is both specialties'; the others have no scope rule
            assert raters == ["emerg-01", "geri-01"]
    assert data["changes"] == []
    text = fma("assign", "--show")
    assert text.exit_code == 0
    assert re.search(rf"^{ESI[0]}:{ESI[1]} +emerg-01$", text.stdout, re.MULTILINE)
    assert "no policy.yaml yet: quorum unknown" in text.stdout


def test_add_and_remove_per_band_sub_action_and_vignette(fma):
    added = fma("assign", "--rater", "geri-01", "--band", f"{ESI[0]}:{ESI[1]}")
    assert added.exit_code == 0, added.output
    assert added.stdout.splitlines()[0] == f"geri-01 added to band {ESI[0]} · ESI acuity level"
    assert raters_of(shown(fma))[ESI] == ["emerg-01", "geri-01"]
    removed = fma(
        "assign", "--rater", "emerg-01", "--sub-action", "esi_acuity", "--vignette", ESI[0],
        "--remove",
    )  # fmt: skip
    assert removed.exit_code == 0, removed.output
    assert removed.stdout.splitlines()[:2] == [
        f"emerg-01 removed from every band of vignette {ESI[0]}",
        "emerg-01 removed from every ESI acuity level band",
    ]
    data = shown(fma)
    bands = raters_of(data)
    assert bands[ESI] == ["geri-01"]
    assert all(r == [] for (v, n), r in bands.items() if n == "esi_acuity" and v != ESI[0])
    flagged = {(b["vignette_id"], b["sub_action"]): b["problems"] for b in data["bands"]}
    # Nobody left on the other ESI bands; the geriatrician alone is outside ESI's scope.
    assert flagged[ESI] == ["scope not covered"]
    assert flagged[("demo_triage_clear_01", "esi_acuity")] == [
        "cannot reach quorum",
        "scope not covered",
    ]
    changes = data["changes"]
    assert [(c["rater"], c["change"], c["vignette_id"], c["sub_action"]) for c in changes] == [
        ("geri-01", "added", *ESI),
        ("emerg-01", "removed", ESI[0], None),
        ("emerg-01", "removed", None, "esi_acuity"),
    ]  # fmt: skip
    text = fma("assign", "--show").stdout
    assert f"{ESI[0]}:esi_acuity: no activated assigned rater's specialty covers" in text
    assert "coordinator removed emerg-01: every ESI acuity level band" in text


def test_only_the_coordinator_assigns(fma):
    one_line(
        fma("assign", "--rater", "geri-01", "--sub-action", "esi_acuity", who="geri-01"),
        "only the study coordinator can assign raters to bands",
        code=REFUSED_EXIT,
    )
    one_line(fma("assign", "--show", who="geri-01"), "only the study coordinator", REFUSED_EXIT)
    one_line(fma("assign", "--show", who=None), "this is a coordinator action", REFUSED_EXIT)
    assert shown(fma)["changes"] == []


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("--rater", "ghost", "--sub-action", "esi_acuity"), "no rater named 'ghost' is enrolled"),
        (("--rater", "coordinator", "--sub-action", "esi_acuity"), "not a rater"),
        (("--rater", "geri-01", "--band", "demo_triage_border_01"), "VIGNETTE:SUB_ACTION"),
        (("--rater", "geri-01", "--band", "a:b:c"), "VIGNETTE:SUB_ACTION"),
        (("--rater", "geri-01", "--band", "nowhere_01:esi_acuity"), "no vignette 'nowhere_01'"),
        (("--rater", "geri-01", "--band", f"{ESI[0]}:esi"), "unknown sub_action 'esi'"),
        (("--rater", "geri-01", "--band", f"{ESI[0]}:referral"), "proposes no referral band"),
        (("--rater", "geri-01", "--vignette", "nowhere_01"), "no vignette 'nowhere_01'"),
        (("--rater", "geri-01", "--sub-action", "triage"), "unknown sub_action 'triage'"),
        (("--rater", "geri-01"), "say which bands"),
        (("--band", f"{ESI[0]}:{ESI[1]}"), "--rater NAME"),
        ((), "either --show, or --rater NAME"),
        (("--show", "--rater", "geri-01"), "either --show, or --rater NAME"),
        (("--json", "--rater", "geri-01", "--sub-action", "admit"), "--json goes with --show"),
    ],
)
def test_mistakes_are_one_line_and_change_nothing(fma, args, fragment):
    one_line(fma("assign", *args), fragment)
    assert shown(fma)["changes"] == []


def test_with_a_policy_the_quorum_is_checked(fma, tmp_path):
    assert fma("policy", "set", "--quorum", "2", "--scope", "warn").exit_code == 0
    data = shown(fma)
    assert data["quorum"] == 2
    followup = next(b for b in data["bands"] if b["sub_action"] == "followup_days")
    assert followup["raters"] == ["geri-01"] and followup["problems"] == ["cannot reach quorum"]
    referral = next(b for b in data["bands"] if b["sub_action"] == "referral")
    assert referral["problems"] == [] and referral["in_scope"] == 2
