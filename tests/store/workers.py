"""What one process does in the concurrency tests: a rater working through bands or signing, or
a writer racing another for one thing. Run as `python -m tests.store.workers NAME ARGS-AS-JSON`; it
prints the function's result as JSON."""

import json
import sys
from pathlib import Path
from traceback import extract_tb

from fma_bands.core.errors import ConflictError, FmaBandsError
from fma_bands.core.protocol import DECLARATIONS
from fma_bands.core.vignettes import load_library
from fma_bands.store.db import make_engine, session_scope
from fma_bands.study.reviews import ReviewForm, current_review, save
from fma_bands.study.signing import attest
from fma_bands.study.state import study
from fma_bands.study.users import get_user

ANSWERS = {
    "q1": {"choice": "yes"},
    "q2": {"choice": "yes"},
    "q3": {"choice": "no"},
    "q4": {"choice": "no"},
    "q5": {"choice": "band", "note": "The band's reading is right for this patient."},
    "q6": {"choice": "yes"},
}


def outcome(error: BaseException | None) -> str:
    if error is None:
        return "ok"
    if isinstance(error, ConflictError):
        return "conflict"
    if isinstance(error, FmaBandsError):
        return f"refused: {error.message}"
    # What must never happen, with where it happened and what it happened during.
    frames = extract_tb(error.__traceback__)
    where = "; ".join(f"{Path(f.filename).name}:{f.lineno}" for f in frames)
    during = f" during {error.__context__!r}" if error.__context__ is not None else ""
    return f"RAW {type(error).__name__}: {error} (at {where}){during}"


def rater_day(url: str, vignettes: str, rater: str, bands: list[tuple[str, str]]) -> list[str]:
    """Draft then submit each band, as the review screen does; every result, in order."""
    engine = make_engine(url)
    library = load_library([vignettes])
    results = []
    for vid, name in bands:
        for submit in (False, True):
            error = None
            try:
                with session_scope(engine) as s:
                    who = get_user(s, rater)
                    assert who is not None
                    current = current_review(s, library, who, vid, name)
                    form = ReviewForm(verdict="ACCEPT", answers=ANSWERS, reason=f"{rater} {vid}")
                    save(
                        s, library, who, vid, name, form,
                        expected_version=current.version if current else 0, submit=submit,
                    )  # fmt: skip
            except BaseException as exc:
                error = exc
            results.append(outcome(error))
    engine.dispose()
    return results


def stale_save(url: str, vignettes: str, rater: str, band: tuple[str, str], version: int) -> str:
    """One tab saving what it last saw (version): of two tabs, one wins and one must reload."""
    engine = make_engine(url)
    library = load_library([vignettes])
    try:
        with session_scope(engine) as s:
            who = get_user(s, rater)
            assert who is not None
            form = ReviewForm(verdict="ACCEPT", answers=ANSWERS, reason=f"tab {version}")
            save(s, library, who, *band, form, expected_version=version, submit=True)
        error = None
    except BaseException as exc:
        error = exc
    engine.dispose()
    return outcome(error)


def first_call(url: str) -> str:
    """The study's settings asked for by a process that may be the first ever to ask."""
    engine = make_engine(url)
    try:
        with session_scope(engine) as s:
            study(s)
        error = None
    except BaseException as exc:
        error = exc
    engine.dispose()
    return outcome(error)


def sign(url: str, vignettes: str, rater: str, passphrase: str, folder: str) -> list:
    """The rater signs their submitted reviews: the outcome, and the places their records took
    in the study's log."""
    engine = make_engine(url)
    library = load_library([vignettes])
    places: list[int] = []
    try:
        with session_scope(engine) as s:
            who = get_user(s, rater)
            assert who is not None
            receipt = attest(
                s, library, rater=who, passphrase=passphrase, meaning="adjudication",
                declarations=list(DECLARATIONS), folder=Path(folder),
            )  # fmt: skip
        places = [sequence for sequence, _, _ in receipt.records]
        error = None
    except BaseException as exc:
        error = exc
    engine.dispose()
    return [outcome(error), places]


if __name__ == "__main__":
    WORKERS = {f.__name__: f for f in (rater_day, stale_save, first_call, sign)}
    print(json.dumps(WORKERS[sys.argv[1]](*json.loads(sys.argv[2]))))
