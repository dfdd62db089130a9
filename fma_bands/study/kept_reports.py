"""Agreement reports kept in the database (table kept_report) under the SHA-256 of everything
they were computed from: the ratings, the bootstrap's B and seed, and the code and numerical
libraries that compute them. The Agreement page (in each server process) and `fma-bands
agreement` ask for the same report again and again once a round has closed, and find it here
instead of bootstrapping every alpha again (docs/performance.md, "Agreement reports"). This is
the one copy of a report shared between processes; the Agreement page keeps only the screen it
draws from one, per process, until a review changes.

A kept report is only ever a copy. Its key covers every input, so a changed review, vignette,
B, seed or line of the agreement code is a new key and a fresh computation; a row that cannot be
read back is computed again. The key is taken from the reviews as stored and the vignettes'
digests (source_key), before any review is turned into a rating: the ratings are only made when
the report is computed.

Nor are the reviews read while the store has not changed: the source_key taken in a state of
the store is kept under that state (state_key): the audit log's newest change (audit.
state_head: a sign-in is none), which every save of a review, hand-back, enrolment, mode and
round appends to in its own transaction, with the vignettes' digests. A change made to the
database outside fma-bands, which the audit log does not record, is seen once a change is next
recorded, or at once with `fresh`.
"""

import hashlib
import json
from collections.abc import Callable, Sequence
from functools import lru_cache
from importlib.metadata import version
from pathlib import Path
from typing import Any

from sqlalchemy import RowMapping, delete
from sqlmodel import Session, col, select

from fma_bands.agreement import Alpha, BandAgreement, Rating, Report, agreement_report
from fma_bands.core.bands import BandReader, Consensus, to_file
from fma_bands.core.canonical import canonical_text_float_free, sha256_of_canonical
from fma_bands.core.vignettes import Library
from fma_bands.store.kept_rows import keep_apart, put
from fma_bands.store.models import KeptReport
from fma_bands.study.kept_answers import ANSWER

FORMAT = 3  # of the kept body and its key; a new format is a new key
KEEP = 8  # reports kept: each round's, for a few states of the reviews; as many states
STATE = "state:"  # the key's prefix of a state's source_key, kept beside the reports
# The code a report depends on: a change to any of these files changes every key.
_SOURCES = (
    "agreement",
    "core/bands.py",
    "core/actions.py",
    "study/kept_reports.py",
    "study/kept_diagnostics.py",
)


def kept_report(
    session: Session,
    source: str,
    ratings: Callable[[], list[Rating]],
    library: Library,
    *,
    bootstrap: int,
    seed: int,
    fresh: bool = False,
) -> Report:
    """agreement_report of the ratings read from `source` (source_key), from the kept copy when
    there is one, else computed from `ratings()` and kept; `fresh` computes it again whatever
    is kept, and keeps that instead."""
    key = report_key(source, bootstrap=bootstrap, seed=seed)
    found = session.get(KeptReport, key)
    if found is not None and not fresh:
        try:
            return report_from_json(json.loads(found.body), library)
        except (KeyError, TypeError, ValueError):
            pass  # unreadable: computed again below, and kept afresh
    # The kept copy, if any, is replaced once the new one is made (kept_rows: nothing is
    # written while this computes).
    report = agreement_report(ratings(), bootstrap=bootstrap, seed=seed)
    _keep(session, key, report)
    return report


def source_key(rows: Sequence[RowMapping], names: dict[int, str], library: Library) -> str:
    """The SHA-256 of what one round's ratings are made from: the latest submitted reviews as
    stored (every column a rating or its staleness reads, in the order the read gives them),
    their raters' pseudonyms, and the vignettes' digests (which reviews are current, and the
    proposal an ACCEPT vouches for)."""
    digest = hashlib.sha256(f"fma-bands ratings source {FORMAT}\n".encode())
    digest.update(f"{library.digests!r}\n".encode())
    # repr, one review a line: the columns hold text, numbers, None and the band's JSON (lists,
    # dicts, booleans), whose repr differs whenever their values do, and holds no newline.
    for row in rows:
        digest.update(f"{tuple(row.values())!r} {names[row['rater_id']]!r}\n".encode())
    return digest.hexdigest()


def state_key(head: tuple[int, str] | None, library: Library, round: int | None) -> str | None:
    """The SHA-256 of a state of the store and the files: the audit log's newest change
    (audit.state_head; None when none was ever recorded: no state to keep), the vignettes'
    digests and the round."""
    if head is None:
        return None
    digest = hashlib.sha256(f"fma-bands store state {FORMAT}\n{head!r} {round!r}\n".encode())
    digest.update(f"{library.digests!r}\n".encode())
    return digest.hexdigest()


def known_source(session: Session, state: str) -> str | None:
    """The source_key taken in `state`, if one was kept."""
    found = session.get(KeptReport, STATE + state)
    return None if found is None else found.body


def keep_source(session: Session, state: str, source: str, *, replace: bool = False) -> None:
    """Keep the source_key taken in `state` (only the newest KEEP states), in place of one kept
    before: `fresh` takes the key again from the reviews, which may differ where the store was
    changed outside fma-bands. Written apart (kept_rows)."""

    def write(own: Session) -> None:
        put(own, STATE + state, source)
        prune(own, states=True)

    # Replacing a kept source (`fresh`) must not be lost: a later answer would stand on it.
    keep_apart(session, write, required=replace)


def prune(session: Session, *, states: bool) -> None:
    """Only the newest KEEP of the kept states, or of the kept reports and diagnostics: a new
    state never pushes out a report, which costs a bootstrap to make again."""
    kind = col(KeptReport.key).startswith(STATE)
    # A command's kept answers (kept_answers.py) are pruned among themselves.
    chosen = kind if states else ~kind & ~col(KeptReport.key).startswith(ANSWER)
    newest = select(KeptReport.key).where(chosen).order_by(col(KeptReport.made_at).desc())
    session.execute(
        delete(KeptReport).where(chosen, col(KeptReport.key).not_in(newest.limit(KEEP)))
    )


def report_key(source: str, *, bootstrap: int, seed: int) -> str:
    """The SHA-256 of what a report is computed from: its ratings' source_key, B, seed and the
    agreement code."""
    inputs = {
        "format": FORMAT,
        "code": code_digest(),
        "bootstrap": bootstrap,
        "seed": seed,
        "source": source,
    }
    text = canonical_text_float_free(inputs)
    return sha256_of_canonical(text.encode()).removeprefix("sha256:")


@lru_cache(maxsize=1)
def code_digest() -> str:
    """The agreement code's own bytes, and the versions of the libraries doing the arithmetic."""
    here = Path(__file__).parents[1]  # the fma_bands package
    files = sorted(
        path
        for source in _SOURCES
        for path in ((here / source).glob("*.py") if (here / source).is_dir() else [here / source])
    )
    digest = hashlib.sha256()
    for path in files:
        digest.update(f"{path.relative_to(here)}\n".encode() + path.read_bytes())
    for package in ("numpy", "krippendorff"):
        digest.update(f"{package}=={version(package)}\n".encode())
    return digest.hexdigest()


def _keep(session: Session, key: str, report: Report) -> None:
    """Keep the report in place of a copy kept before, and only the newest KEEP; written apart
    (kept_rows), so that nothing is written while a report is computed."""
    body = json.dumps(report_json(report), separators=(",", ":"))

    def write(own: Session) -> None:
        put(own, key, body)
        prune(own, states=False)

    keep_apart(session, write)


# --- the kept form: everything a Report holds, bands in the file form ---------------------------


def report_json(report: Report) -> dict[str, Any]:
    return {
        "bootstrap": report.bootstrap,
        "seed": report.seed,
        "modes": list(report.modes),
        "metrics": {
            scope: {metric: _alpha_json(a) for metric, a in by_metric.items()}
            for scope, by_metric in report.metrics.items()
        },
        "bands": [_agreement_json(b) for b in report.bands],
    }


def report_from_json(data: dict[str, Any], library: Library) -> Report:
    read = BandReader()
    return Report(
        metrics={
            scope: {metric: _alpha(a) for metric, a in by_metric.items()}
            for scope, by_metric in data["metrics"].items()
        },
        bands=tuple(_agreement(b, library, read) for b in data["bands"]),
        bootstrap=data["bootstrap"],
        seed=data["seed"],
        modes=tuple(data["modes"]),
    )


def _alpha_json(a: Alpha) -> dict[str, Any]:
    return {name: getattr(a, name) for name in Alpha.__dataclass_fields__}


def _alpha(data: dict[str, Any]) -> Alpha:
    return Alpha(**{**data, "warnings": tuple(data["warnings"])})


def _agreement_json(b: BandAgreement) -> dict[str, Any]:
    c = b.consensus
    return {
        "vignette_id": b.vignette_id,
        "sub_action": b.sub_action,
        "bands": [[rater, to_file(band)] for rater, band in b.bands],
        "n_declined": b.n_declined,
        "rule": c.rule,
        "consensus": None if c.band is None else to_file(c.band),
        "disputed": sorted(c.disputed),
        "n_raters": c.n_raters,
        "disagreement": b.disagreement,
    }


def _agreement(data: dict[str, Any], library: Library, read: BandReader) -> BandAgreement:
    name = data["sub_action"]
    orderables = library.vignettes[data["vignette_id"]].orderables
    consensus = data["consensus"]
    return BandAgreement(
        vignette_id=data["vignette_id"],
        sub_action=name,
        bands=tuple((rater, read(name, band, orderables)) for rater, band in data["bands"]),
        n_declined=data["n_declined"],
        consensus=Consensus(
            data["rule"],
            None if consensus is None else read(name, consensus, orderables),
            frozenset(data["disputed"]),
            data["n_raters"],
        ),
        disagreement=data["disagreement"],
    )
