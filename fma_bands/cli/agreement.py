"""`fma-bands agreement [--round N]`: Krippendorff's alpha of one round's submitted reviews,
with consensus bands, each rater's diagnostics, alpha by ambiguity stratum, sample-size
planning, and on request the coincidence matrices as CSV files."""

import json
import os
import re
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from fma_bands.cli.base import cli, coordinator, settings, store, synced
from fma_bands.cli.numbers import Whole
from fma_bands.cli.paths import check_output
from fma_bands.core.errors import FmaBandsError

if TYPE_CHECKING:
    from sqlmodel import Session

    from fma_bands.agreement import Rating, Report
    from fma_bands.agreement.diagnostics import Diagnostics
    from fma_bands.core.people import UserPublic
    from fma_bands.core.vignettes import Library

# The table's columns, in order, under short headings; each row's interval method and cautions
# follow it on indented lines of their own.
SHORT = {
    "pairable values": "pairable",
    "undefined resamples": "undefined",
    "P(alpha < 0.800)": "P(<0.800)",
    "P(alpha < 0.667)": "P(<0.667)",
}
BELOW = (
    "left as proposed, in counts",
    "weakest sub-action",
    "declines as disagreement",
    "two-way interval (other raters too)",
    "interval method",
    "measured coverage",
    "cautions",
)
GAP = "  "  # between columns; no cell holds two spaces running
# More resamples than this change no reported digit and would run for hours; a seed is 32 bits.
MAX_BOOTSTRAP = 100_000
MAX_SEED = 2**32 - 1
# An interval of alpha is at most 2 wide in any study that reads at all (alpha from -1 to 1).
MAX_WIDTH = 2.0
_DECIMAL = re.compile(r"\s*(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*")
MATRICES = "coincidence matrices"


class Width(click.ParamType):
    """A width of interval above 0 and at most MAX_WIDTH, written with the digits 0 to 9 and a
    decimal point (no exponent, no nan, no full-width digits)."""

    name = "width"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, float):
            return value
        if not isinstance(value, str) or not _DECIMAL.fullmatch(value):
            self.fail(f"{value!r} is not a number such as 0.1, written with the digits 0 to 9")
        width = float(value)
        if not 0 < width <= MAX_WIDTH:
            self.fail(f"{value.strip()} is not in the range 0 < width <= {MAX_WIDTH:g}")
        return width


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option(
    "--bootstrap",
    type=Whole(0, MAX_BOOTSTRAP),
    default=1000,
    show_default=True,
    metavar="B",
    help=f"Bootstrap resamples, 0 to {MAX_BOOTSTRAP:,} (0: no interval).",
)
@click.option(
    "--seed",
    type=Whole(0, MAX_SEED),
    default=20261129,
    show_default=True,
    help=f"Bootstrap seed, 0 to {MAX_SEED:,}.",
)
@click.option(
    "--round",
    "number",
    type=Whole(1, 2),
    default=1,
    show_default=True,
    help="1: the independent round (the reliability figure); 2: consensus-building.",
)
@click.option(
    "--fresh",
    is_flag=True,
    help="Compute the report again instead of reading the copy kept when it was last computed "
    "from the same ratings (the figures are the same; this checks it).",
)
@click.option(
    "--width",
    type=Width(),
    default=0.1,
    show_default=True,
    help="Planning: the interval width to find the number of vignettes for (above 0, at most 2).",
)
@click.option(
    "--coincidences",
    "folder",
    metavar="DIR",
    help="Also write each coincidence matrix (one per mode, metric and sub-action) as a CSV file "
    "into DIR, a new or empty folder.",
)
def agreement(
    as_json: bool,
    bootstrap: int,
    seed: int,
    number: int,
    fresh: bool,
    width: float,
    folder: str | None,
) -> None:
    """Krippendorff's alpha of one round's submitted reviews, with consensus bands, each rater's
    diagnostics, alpha by ambiguity stratum and sample-size planning."""
    from fma_bands.core.vignettes import files_digest
    from fma_bands.study.audit import state_head
    from fma_bands.study.kept_answers import answer_key, forget_answers, keep_answer, kept_answer
    from fma_bands.study.state import authorize

    out = None if folder is None else matrices_folder(folder)
    options = {
        "json": as_json,
        "bootstrap": bootstrap,
        "seed": seed,
        "round": number,
        "width": width,
    }
    with store() as session:
        viewer = coordinator(session)
        # Before any answer is looked up: a kept one is the coordinator's figures.
        authorize(session, viewer, "see_diagnostics")
        # Once a round has closed the same figures are asked for again and again: the whole
        # answer is kept (study/kept_answers.py). --coincidences always computes (it writes
        # files); --fresh computes and keeps what it found in place of what was kept.
        if out is None and not fresh:
            files = files_digest([settings().vignettes])
            key = answer_key("agreement", head=state_head(session), files=files, options=options)
            answer = kept_answer(session, key)
            if answer is not None:
                click.echo(answer, nl=False)
                return
        if fresh:
            forget_answers(session)  # each kept in this state may be as stale as this one
        found, _ = synced(session)
        session.commit()  # what the sync recorded; nothing is written while the answer is made
        # The state the answer is made from: after the sync, before the reviews are read.
        files = found.files_digest if found.ok else None
        key = answer_key("agreement", head=state_head(session), files=files, options=options)
        answer = _answer(
            session,
            found,
            viewer,
            out,
            as_json=as_json,
            bootstrap=bootstrap,
            seed=seed,
            number=number,
            fresh=fresh,
            width=width,
        )
        if out is None:
            keep_answer(session, key, answer)
    click.echo(answer, nl=False)


def _answer(
    session: "Session",
    found: "Library",
    viewer: "UserPublic",
    out: Path | None,
    *,
    as_json: bool,
    bootstrap: int,
    seed: int,
    number: int,
    fresh: bool,
    width: float,
) -> str:
    """What `agreement` prints, the coincidence matrices written into `out` first."""
    from fma_bands.agreement import report_to_json
    from fma_bands.agreement.diagnostics import diagnostics_json
    from fma_bands.study.ratings import PURPOSES, ROUND_NOTES, study_findings, study_ratings

    findings = study_findings(
        session,
        found,
        viewer=viewer,
        bootstrap=bootstrap,
        seed=seed,
        round=number,
        fresh=fresh,
        width=width,
    )
    ratings = (
        () if out is None else tuple(study_ratings(session, found, viewer=viewer, round=number))
    )
    written = [] if out is None else write_matrices(out, ratings)
    if as_json:
        data = {
            "round": number,
            "purpose": PURPOSES[number],
            **report_to_json(findings.report),
            **diagnostics_json(findings.diagnostics),
        }
        if out is not None:
            data["coincidences"] = written
        return json.dumps(data) + "\n"
    lines = [format_report(findings.report), "", format_diagnostics(findings.diagnostics)]
    lines += [
        f"wrote {w['file']} ({w['n_values']} values, {w['n_pairable']:g} pairable)" for w in written
    ]
    if out is not None and not written:
        lines.append(f"no coincidence matrix written to {out}: no band has two raters")
    return "\n".join([*lines, "", ROUND_NOTES[number], ""])


def matrices_folder(folder: str) -> Path:
    """The folder the coincidence matrices go into: a new one, or an existing empty one (so no
    matrix of an earlier run lies beside them), never inside the attestations folder."""
    out = Path(folder)
    try:
        found = os.lstat(out)
    except FileNotFoundError:
        return check_output(out, MATRICES)
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the name
        raise FmaBandsError(
            f"cannot write the {MATRICES} there: {getattr(exc, 'strerror', None) or exc}",
            file=folder,
        ) from None
    if not stat.S_ISDIR(found.st_mode):
        raise FmaBandsError(
            f"not a folder (a file, a link or a device): the {MATRICES} are written into a new "
            "folder or an empty one",
            file=folder,
        )
    # The attestations rule, for a folder that exists: as for any file written into it.
    check_output(out / "matrix.csv", MATRICES)
    if any(out.iterdir()):
        raise FmaBandsError(
            f"the folder is not empty: the {MATRICES} are written into a new folder or an empty "
            "one, so that none from an earlier run lies beside them",
            file=folder,
        )
    return out


def write_matrices(out: Path, ratings: "tuple[Rating, ...]") -> list[dict[str, Any]]:
    """Each coincidence matrix as CSV in `out` (created if new); what was written. Every path is
    checked before the first is written."""
    from fma_bands.agreement.coincidences import coincidence_csv, coincidence_tables, file_name
    from fma_bands.core.files import write_atomically

    tables = coincidence_tables(ratings)
    paths = [check_output(out / file_name(c), MATRICES) for c in tables]
    written = []
    for c, path in zip(tables, paths, strict=True):
        # For colleagues, as an export is: readable as the umask allows.
        write_atomically(path, coincidence_csv(c), shared=True)
        written.append(
            {
                "mode": c.mode,
                "metric": c.metric,
                "sub_action": c.sub_action,
                "file": str(path),
                "n_values": len(c.labels),
                "n_pairable": c.n_pairable,
            }
        )
    return written


def table(rows: list[list[str]]) -> list[str]:
    """Rows of cells as aligned columns (each as wide as its widest cell)."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [GAP.join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows]


def format_report(report: "Report") -> str:
    """The alpha table (every field of the JSON, one alpha to a row), then the bands."""
    from fma_bands.agreement.panel import consensus_text, disputed_text
    from fma_bands.agreement.views import HEADINGS, alpha_rows, rule_text

    columns = [h for h in HEADINGS if h not in BELOW]
    rows = alpha_rows(report)
    aligned = table([[SHORT.get(h, h) for h in columns], *([r[h] for h in columns] for r in rows)])
    lines = [aligned[0]]
    for row, line in zip(rows, aligned[1:], strict=True):
        lines.append(line)
        lines += [f"    {name}: {row[name]}" for name in BELOW if row[name] not in ("-", "none")]
    bands = [
        [f"{b.vignette_id} {b.sub_action}", str(b.n_raters), str(b.n_declined), rule_text(b)]
        for b in report.bands
    ]
    aligned = table([["band", "raters", "declined", "rule"], *bands])
    lines += ["", aligned[0]]
    for b, line in zip(report.bands, aligned[1:], strict=True):
        lines.append(line)
        # As the page says it: a disputed span is beyond a consensus; with none, what some
        # raters admit is admitted by none of them all.
        apart = "disputed span" if b.consensus.band is not None else "admitted by some, not all"
        for name, text in (
            ("consensus", consensus_text(b.consensus)),
            (apart, disputed_text(b.sub_action, b.consensus)),
        ):
            lines += [f"    {name}: {text}"] if text else []
    return "\n".join(lines)


def format_diagnostics(d: "Diagnostics") -> str:
    """Each rater's diagnostics, the pooled band alpha by ambiguity stratum, and the planning,
    each a table with its note."""
    from fma_bands.agreement.diagnostics import (
        RATER_NOTE,
        STRATUM_NOTE,
        planning_note,
        planning_rows,
        rater_rows,
        stratum_rows,
    )

    lines = []
    for title, rows, note in (
        ("Raters", rater_rows(d.raters), RATER_NOTE),
        ("Pooled band alpha by ambiguity stratum", stratum_rows(d.by_stratum), STRATUM_NOTE),
        ("Planning", planning_rows(d.planning), planning_note(d.width)),
    ):
        lines += ["", title]
        if rows:
            lines += table([list(rows[0]), *(list(r.values()) for r in rows)])
        else:
            lines.append("none")
        lines.append(note)
    return "\n".join(lines[1:])
