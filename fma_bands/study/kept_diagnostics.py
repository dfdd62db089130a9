"""The coordinator's diagnostics of a round (agreement.diagnostics: each rater, alpha by ambiguity
stratum, planning) kept beside the reports in table kept_report, under the SHA-256 of everything
they are computed from: the report's own key (the reviews the ratings are made from, B, seed and
the agreement code, this package's modules among them), the vignettes' ambiguity and the width
planned for. Asked for again by the Agreement page and `fma-bands agreement`, they are read back
instead of simulated again. Only ever a copy, as a kept report is (kept_reports.py).
"""

import json
from collections.abc import Callable, Mapping
from dataclasses import asdict
from typing import Any

from sqlmodel import Session

from fma_bands.agreement import Alpha, Rating
from fma_bands.agreement.diagnostics import (
    Diagnostics,
    RaterDiagnostics,
    StratumAlpha,
    diagnostics,
)
from fma_bands.agreement.planning import Plan
from fma_bands.core.canonical import canonical_text_float_free, sha256_of_canonical
from fma_bands.store.kept_rows import keep_apart, put
from fma_bands.store.models import KeptReport
from fma_bands.study.kept_reports import prune, report_key

FORMAT = 2  # of the kept body and its key; a new format is a new key


def kept_diagnostics(
    session: Session,
    source: str,
    ratings: Callable[[], list[Rating]],
    ambiguity: Mapping[str, str | None],
    *,
    pooled: Mapping[str, Alpha],
    width: float,
    bootstrap: int,
    seed: int,
    fresh: bool = False,
) -> Diagnostics:
    """diagnostics(ratings(), ...) of the ratings read from `source` (kept_reports.source_key),
    from the kept copy when there is one, else computed and kept; `fresh` computes them again
    whatever is kept, and keeps that instead. `pooled` is each mode's pooled band alpha of the
    report of the same ratings, B and seed."""
    key = diagnostics_key(source, ambiguity, width=width, bootstrap=bootstrap, seed=seed)
    found = session.get(KeptReport, key)
    if found is not None and not fresh:
        try:
            return diagnostics_from_json(json.loads(found.body))
        except (KeyError, TypeError, ValueError):
            pass  # unreadable: computed again below, and kept afresh
    # The kept copy, if any, is replaced once the new one is made (kept_rows: nothing is
    # written while they are computed).
    computed = diagnostics(
        ratings(), ambiguity, pooled=pooled, width=width, bootstrap=bootstrap, seed=seed
    )
    _keep(session, key, computed)
    return computed


def diagnostics_key(
    source: str,
    ambiguity: Mapping[str, str | None],
    *,
    width: float,
    bootstrap: int,
    seed: int,
) -> str:
    """The SHA-256 of what the diagnostics are computed from (no float is hashed: the width is
    its shortest exact text)."""
    inputs = {
        "kept": "diagnostics",
        "format": FORMAT,
        "report": report_key(source, bootstrap=bootstrap, seed=seed),
        "width": repr(width),
        "ambiguity": sorted([vid, stratum] for vid, stratum in ambiguity.items()),
    }
    return sha256_of_canonical(canonical_text_float_free(inputs).encode()).removeprefix("sha256:")


def _keep(session: Session, key: str, found: Diagnostics) -> None:
    """Keep them in place of a copy kept before, and only the newest KEEP rows of the table;
    written apart (kept_rows), so that nothing is written while they are computed."""
    body = json.dumps(diagnostics_to_json(found), separators=(",", ":"))

    def write(own: Session) -> None:
        put(own, key, body)
        prune(own, states=False)

    keep_apart(session, write)


# --- the kept form: every field, read back to the same objects ----------------------------------


def diagnostics_to_json(d: Diagnostics) -> dict[str, Any]:
    return {
        "width": d.width,
        "raters": [asdict(r) for r in d.raters],
        "by_stratum": [{"stratum": s.stratum, "alpha": asdict(s.alpha)} for s in d.by_stratum],
        "planning": [asdict(p) for p in d.planning],
    }


def diagnostics_from_json(data: dict[str, Any]) -> Diagnostics:
    return Diagnostics(
        raters=tuple(RaterDiagnostics(**r) for r in data["raters"]),
        by_stratum=tuple(
            StratumAlpha(
                s["stratum"], Alpha(**{**s["alpha"], "warnings": tuple(s["alpha"]["warnings"])})
            )
            for s in data["by_stratum"]
        ),
        planning=tuple(
            Plan(**{**p, "widths": tuple((m, w) for m, w in p["widths"])}) for p in data["planning"]
        ),
        width=data["width"],
    )
