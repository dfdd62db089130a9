"""Studies on the bundled demo vignettes, made with the fma-bands command in-process: two raters
with an analgesia band of {1} beside a boolean band of {true} (1 and true are equal in Python) and a
three-rater study that mixes booleans, ordinals, intervals and orders, with declines."""

from pathlib import Path

from click.testing import CliRunner

from fma_bands.cli import cli
from tests.conftest import DEMO_VIGNETTES

# Both raters: an analgesia consensus of {1} and a controlled-substance consensus of {true}.
CRASH = {
    "rater-01": """\
demo_med_border_01 | analgesia_tier | AMEND {1} | An NSAID alone is enough here.
demo_med_border_01 | controlled_substance_caution | ACCEPT | Either reading is defensible.
demo_med_inter_01 | analgesia_tier | ACCEPT | Weak or strong opioid.
demo_med_inter_01 | controlled_substance_caution | ACCEPT | Caution is due.
""",
    "rater-02": """\
demo_med_border_01 | analgesia_tier | ACCEPT | NSAID or weak opioid.
demo_med_border_01 | controlled_substance_caution | AMEND {true} | Caution is due.
demo_med_inter_01 | analgesia_tier | AMEND {1, 2, 3} | Any of the three tiers.
demo_med_inter_01 | controlled_substance_caution | ACCEPT | Caution is due.
""",
}
ORDERS_BORDER = (
    'demo_order_border_01 | orders | AMEND {"required": ["ecg", "troponin"], '
    '"defensible": ["ecg", "troponin", "cxr"]} | Troponin is needed.\n'
)
ORDERS_CLEAR = (
    'demo_triage_clear_01 | orders | AMEND {"required": ["ct_head", "ecg"], '
    '"defensible": ["ct_head", "ecg"]} | ECG first.\n'
)
THREE_RATERS = {
    "rater-01": CRASH["rater-01"]
    + """\
demo_med_clear_01 | analgesia_tier | ACCEPT | A strong opioid.
demo_doc_inter_01 | followup_days | ACCEPT | Two weeks at most.
demo_doc_inter_01 | referral | ACCEPT | Refer.
demo_doc_inter_01 | admit | AMEND {false} | Home is safe.
demo_order_border_01 | orders | ACCEPT | As proposed.
demo_order_border_01 | esi_acuity | ACCEPT | As proposed.
demo_triage_border_01 | esi_acuity | ACCEPT | As proposed.
demo_triage_border_01 | urgency_score | ACCEPT | As proposed.
demo_triage_inter_01 | esi_acuity | ACCEPT | As proposed.
demo_triage_clear_01 | orders | ACCEPT | As proposed.
""",
    "rater-02": CRASH["rater-02"]
    + """\
demo_med_clear_01 | analgesia_tier | AMEND {2, 3} | A weak opioid is defensible too.
demo_doc_inter_01 | followup_days | AMEND {"min": 1, "max": 30} | Within the month.
demo_doc_inter_01 | referral | ACCEPT | Refer.
demo_doc_inter_01 | admit | ACCEPT | Either.
"""
    + ORDERS_BORDER
    + """\
demo_order_border_01 | esi_acuity | AMEND {2} | Emergent.
demo_triage_border_01 | esi_acuity | AMEND {"min": 2, "max": 4} | Wider.
demo_triage_border_01 | urgency_score | AMEND {"min": 60, "max": 90} | Shifted.
demo_triage_inter_01 | esi_acuity | DECLINE | Out of my scope.
"""
    + ORDERS_CLEAR,
    "rater-03": """\
demo_med_border_01 | analgesia_tier | AMEND {1, 2} | As proposed, in other words.
demo_med_inter_01 | controlled_substance_caution | DECLINE | Cannot say.
demo_doc_inter_01 | followup_days | AMEND {"min": 3, "max": 6} | Within the week.
demo_doc_inter_01 | admit | ACCEPT | Either.
demo_order_border_01 | orders | AMEND {"required": [], "defensible": ["ecg"]} | ECG only.
demo_order_border_01 | esi_acuity | ACCEPT | As proposed.
demo_triage_border_01 | urgency_score | DECLINE | Out of my scope.
demo_triage_inter_01 | esi_acuity | AMEND {3} | Urgent.
""",
}


class Demo:
    """One demo database in `folder`, and the command line on it."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.url = f"sqlite:///{folder / 'fma-bands.db'}"
        self.attestations = folder / "attestations"

    def fma(self, *args: str) -> str:
        # Coordinator commands name and authenticate the coordinator (the demo's account).
        secret = self.folder / "coordinator.passphrase"
        secret.write_text("coordinator-demo\n", encoding="utf-8")
        base = ["--db", self.url, "--vignettes", str(DEMO_VIGNETTES)]
        base += ["--as", "coordinator", "--passphrase-file", str(secret)]
        result = CliRunner().invoke(cli, [*base, "--attestations", str(self.attestations), *args])
        assert result.exit_code == 0, (args, result.output, result.exception)
        return result.output

    def review(self, handbacks: dict[str, str]) -> None:
        for rater, text in handbacks.items():
            path = self.folder / f"{rater}.txt"
            path.write_text(text, encoding="utf-8")
            # A hand-back line counts only for a band assigned to its rater: assigned first.
            lines = [line for line in text.splitlines() if line.strip() and line[0] != "#"]
            bands = [":".join(p.strip() for p in line.split("|")[:2]) for line in lines]
            self.fma("assign", "--rater", rater, *(f"--band={b}" for b in bands))
            self.fma("handback", "import", str(path), "--rater", rater)


def demo_study(folder: Path, handbacks: dict[str, str], *, close: bool = True) -> Demo:
    """`fma-bands demo`, a third rater when the hand-backs need one, the hand-backs imported,
    and the review phase closed."""
    demo = Demo(folder)
    demo.fma("demo")
    if "rater-03" in handbacks:
        code, secret = folder / "rater-03.code", folder / "rater-03.passphrase"
        secret.write_text("rater-03-passphrase\n", encoding="utf-8")
        demo.fma(
            "user", "add", "rater-03", "--role", "rater", "--specialty", "geriatrics",
            "--jurisdiction", "Australia", "--years", "11", "--code-file", str(code),
        )  # fmt: skip
        demo.fma(
            "user",
            "activate",
            "rater-03",
            "--code-file",
            str(code),
            "--passphrase-file",
            str(secret),
        )
    demo.review(handbacks)
    if close:
        demo.fma("phase", "closed")
    return demo
