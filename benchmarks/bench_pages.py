"""Server time of every page and whole-process time of the main commands, on a study built at
full scale in a temporary folder (benchmarks/study_files.py: real vignette files, a real SQLite
database, signed attestations).

    python -m benchmarks.bench_pages --vignettes 300 --raters 10 --json FILE [--repeat 3]

Pages run under streamlit's AppTest, in this process. For each page: `first_load_ms` is the run
that opens it from another page with the app's caches cleared (what a person waits for after
following a link), `rerun_ms` the run after that (what any click that reruns the whole page
costs), and each named interaction its own `<name>_ms` (a widget changed, then the run it
causes). Commands run as whole processes: `process_ms`. Each has its CPU time beside it
(`<name>_cpu_ms`, `process_cpu_ms`: this process's, or the command's), which a shared machine's
load moves much less than the wall time. Every figure is a median of `--repeat` runs, in
milliseconds. The targets are judged in docs/performance.md.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.study_files import PASSPHRASE, BenchStudy, build_study, unfinished_vignettes

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class PageCase:
    """One page as one role opens it, and what a person then does there."""

    name: str
    page: str
    role: str  # "rater" or "coordinator"
    params: dict[str, str] = field(default_factory=dict)
    # name -> (what a person does, then what must show afterwards: a timed run whose effect is
    # missing is a failed benchmark, never a figure)
    interactions: dict[str, tuple[Callable, Callable]] = field(default_factory=dict)
    # The fragment whose widgets the interactions change, where the page has several: a click
    # in a browser reruns that one alone, never the page's other fragments.
    fragment: str | None = None
    # What a first load must also forget to start from nothing, beyond the app's caches: the
    # agreement reports kept in the database. Timed as `first_load_computing_ms`.
    forget: Callable[[], None] | None = None


# Under AppTest every interaction reruns the whole page, while in a browser a click inside an
# st.fragment reruns only the widget callbacks and that fragment. Both are timed as they run,
# patched in before any page module is imported, so every @st.fragment of the app is wrapped.
FRAGMENT_MS: list[tuple[str, float]] = []  # (fragment, or 'callbacks'; ms)


def _time_fragments() -> None:
    import streamlit as st
    from streamlit.runtime.state.session_state import SessionState

    real = st.fragment
    callbacks = SessionState._call_callbacks

    def timed_callbacks(self, *args, **kwargs):
        start = time.perf_counter()
        try:
            return callbacks(self, *args, **kwargs)
        finally:
            FRAGMENT_MS.append(("callbacks", (time.perf_counter() - start) * 1000))

    SessionState._call_callbacks = timed_callbacks  # type: ignore[method-assign]

    def timed(func=None, **options):
        if func is None:
            return lambda f: timed(f, **options)

        @functools.wraps(func)
        def run(*args, **kwargs):
            start = time.perf_counter()
            try:
                return func(*args, **kwargs)
            finally:
                FRAGMENT_MS.append((func.__name__, (time.perf_counter() - start) * 1000))

        return real(run, **options)

    st.fragment = timed  # type: ignore[assignment]


def _unfinished(study: BenchStudy) -> list[tuple[str, str]]:
    """ESI bands (a list or a range) the timed rater (the first) has not reviewed: study_files
    leaves them the last tenth of the vignettes, so each repeat submits a band of its own."""
    return [(v.id, "esi_acuity") for v in unfinished_vignettes(study.library)]


class NoEffect(RuntimeError):
    """A timed interaction that did not do what it was timed for."""


def _expect(found, wanted, what: str) -> None:
    if found != wanted:
        raise NoEffect(f"{what}: expected {wanted!r}, found {found!r}")


def _widget(kind: str, label: str, value) -> tuple[Callable, Callable]:
    """Set the widget of this kind and label; afterwards it must hold the value."""

    def find(at):
        [widget] = [w for w in getattr(at, kind) if w.label == label]
        return widget

    def check(at, band):
        _expect(find(at).value, value, f"{kind} {label!r}")

    return (lambda at, band: find(at).set_value(value)), check


def _captions(at) -> list[str]:
    return [c.value for c in at.caption]


def _next_page(key: str, shown: Callable[[object], list[str]]) -> tuple[Callable, Callable]:
    """Turn the page picker `key` to page 2; afterwards the page shows other rows."""
    before: list[list[str]] = []

    def act(at, band):
        before[:] = [shown(at)]
        at.get("pagination")[0].set_value(2)

    def check(at, band):
        _expect(at.get("pagination")[0].value, 2, f"{key}'s page")
        if shown(at) == before[0]:
            raise NoEffect(f"{key}: page 2 shows what page 1 showed")

    return act, check


def _stored_review(study: BenchStudy, band: tuple[str, str]) -> tuple[str | None, dict]:
    """The status of the timed rater's review of the band and the entries of their kept draft,
    read through the domain."""
    from fma_bands.store.db import make_engine, session_scope
    from fma_bands.study import drafts
    from fma_bands.study.reviews import current_review

    engine = make_engine(os.environ["FMA_BANDS_DATABASE_URL"])
    try:
        with session_scope(engine) as session:
            review = current_review(session, study.library, study.raters[0], *band)
            kept = drafts.restore(session, study.raters[0], *band)
            status = getattr(review, "status", None)
            return status, dict(kept.entries) if kept is not None else {}
    finally:
        engine.dispose()


def _review_interactions(study: BenchStudy) -> dict[str, tuple[Callable, Callable]]:
    from app_pages.review_screen import screen_key

    def radio(part: str, value) -> tuple[Callable, Callable]:
        def check(at, band):
            _expect(at.radio(key=f"{screen_key(*band)}:{part}").value, value, part)

        return (
            lambda at, band: at.radio(key=f"{screen_key(*band)}:{part}").set_value(value)
        ), check

    def answered(at, band):
        radio("q1:choice", "no")[1](at, band)
        _expect(_stored_review(study, band)[1].get("q1:choice"), "no", "q1 in the kept draft")

    opened: list[dict] = []

    def submit(at, band):
        # The answers and a verdict first, each its own click; the timed run is the button's.
        key = screen_key(*band)
        for q, choice in (("q1", "yes"), ("q2", "yes"), ("q3", "no"), ("q4", "no"), ("q6", "yes")):
            at.radio(key=f"{key}:{q}:choice").set_value(choice).run()
        at.radio(key=f"{key}:verdict").set_value("ACCEPT").run()
        at.text_area(key=f"{key}:reason").input("benchmark").run()
        [button] = [b for b in at.button if b.label == "Submit and next"]
        opened[:] = [dict(at.query_params)]
        button.click()

    def submitted(at, band):
        _expect(_stored_review(study, band)[0], "submitted", f"the review of {band}")
        if dict(at.query_params) == opened[0]:
            raise NoEffect(f"Submit and next did not open another band ({opened[0]})")

    return {
        "answer_a_question": (radio("q1:choice", "no")[0], answered),
        "choose_a_verdict": radio("verdict", "AMEND"),
        "switch_list_and_range": radio("band:form", "a range"),
        "submit_and_next": (submit, submitted),
    }


def cases(study: BenchStudy) -> list[PageCase]:
    vid = _unfinished(study)[0][0]
    return [
        PageCase(
            "queue",
            "app_pages/queue.py",
            "rater",
            interactions={
                "filter_by_status": _widget("selectbox", "Show", "submitted"),
                "next_page": _next_page("queue_page", _links),
            },
        ),
        PageCase(
            "review", "app_pages/review.py", "rater", interactions=_review_interactions(study)
        ),
        PageCase(
            "library",
            "app_pages/library.py",
            "rater",
            interactions={"next_page": _next_page("library_page", _links)},
        ),
        PageCase(
            "vignette",
            "app_pages/vignette.py",
            "rater",
            study.address(vid),
            {"choose_a_case": _choose_a_case(list(study.library.vignettes)[1])},
        ),
        PageCase("attest", "app_pages/attest.py", "rater"),
        PageCase("admin", "app_pages/admin.py", "coordinator"),
        PageCase(
            "progress",
            "app_pages/progress.py",
            "coordinator",
            interactions={
                "tick_the_confirmation": (
                    lambda at, band: at.checkbox(key="close_sure").check(),
                    lambda at, band: _expect(
                        at.checkbox(key="close_sure").value, True, "the confirmation"
                    ),
                )
            },
            fragment="close_phase",
        ),
        PageCase("agreement", "app_pages/agreement.py", "coordinator", forget=_forget_reports),
        PageCase("registry", "app_pages/registry_page.py", "coordinator"),
        PageCase("identity", "app_pages/identity.py", "coordinator"),
        PageCase(
            "audit_log",
            "app_pages/audit_log.py",
            "coordinator",
            interactions={"filter_by_kind": _filter_by_kind(len(study.raters))},
        ),
    ]


def _filter_by_kind(raters: int) -> tuple[Callable, Callable]:
    """Show the audit log's identity records alone: one for each rater."""

    def act(at, band):
        [widget] = [w for w in at.multiselect if w.label == "What"]
        widget.set_value(["identity_recorded"])

    def check(at, band):
        wanted = f"of {raters} matching events"
        if not any(wanted in text for text in _captions(at)):
            raise NoEffect(f"the filtered audit log does not say '{wanted}': {_captions(at)}")

    return act, check


def _links(at) -> list[str]:
    return [link.label for link in at.get("page_link")]


def _titles(at) -> list[str]:
    return [e.value for kind in ("title", "subheader", "markdown") for e in getattr(at, kind)]


def _choose_a_case(vignette_id: str) -> tuple[Callable, Callable]:
    before: list[list[str]] = []

    def act(at, band):
        before[:] = [[t.value for t in at.title]]
        at.selectbox(key="vignette_id").set_value(vignette_id)

    def check(at, band):
        _expect(at.selectbox(key="vignette_id").value, vignette_id, "the case chosen")
        if [t.value for t in at.title] == before[0]:
            raise NoEffect(f"the page's title stayed {before[0]} once {vignette_id} was chosen")

    return act, check


def _forget_reports() -> None:
    from sqlalchemy import delete

    from fma_bands.store.db import make_engine, session_scope, upgrade
    from fma_bands.store.models import KeptReport

    engine = make_engine(os.environ["FMA_BANDS_DATABASE_URL"])
    upgrade(engine)  # a study built by an older revision has no table for them yet
    with session_scope(engine) as session:
        session.execute(delete(KeptReport))
    engine.dispose()


def _clear_caches() -> None:
    import streamlit as st

    from app_pages import common
    from fma_bands.evidence.envelope import clear_cache
    from fma_bands.study import ledger, store_state

    st.cache_data.clear()
    st.cache_resource.clear()
    clear_cache()  # envelopes parsed and verified, by digest: a first load verifies them all
    store_state.forget()  # what the pages read once per state of the store
    common._chairs.clear()  # the menu's chair, read from the signed log once per head
    with ledger._walked_lock:
        ledger._walked.clear()  # the store's signed log, walked once per head


def _timed(samples: dict[str, list[float]], key: str, run: Callable[[], object]) -> None:
    """Wall time under `key`, and this process's CPU time under `key` with `_cpu_ms`: on a
    shared machine the wall time follows the load, the CPU time much less."""
    start, cpu = time.perf_counter(), time.process_time()
    run()
    samples.setdefault(key, []).append((time.perf_counter() - start) * 1000)
    samples.setdefault(key.removesuffix("_ms") + "_cpu_ms", []).append(
        (time.process_time() - cpu) * 1000
    )


def _open(study: BenchStudy, case: PageCase, band: tuple[str, str] | None):
    from streamlit.testing.v1 import AppTest

    user = study.raters[0] if case.role == "rater" else study.coordinator
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
    at.session_state["user"] = user.model_dump()
    at.run()
    at.switch_page(case.page)
    params = case.params or (study.address(*band) if band else {})
    for name, value in params.items():
        at.query_params[name] = value
    return at


def _check(at, what: str) -> None:
    if at.exception:
        raise RuntimeError(f"{what} raised: {[e.value for e in at.exception][:1]}")


def time_page(study: BenchStudy, case: PageCase, repeat: int) -> dict[str, float]:
    """Medians for one page: first load, rerun, each interaction (a whole rerun, as AppTest
    runs it) and, where the interaction reruns a fragment in a browser, the fragment alone."""
    samples: dict[str, list[float]] = {"first_load_ms": [], "rerun_ms": []}
    bands = _unfinished(study)
    if case.name == "review" and repeat > len(bands):
        raise SystemExit(f"--repeat {repeat} needs {repeat} unreviewed bands: use more vignettes")
    for i in range(repeat):
        band = bands[i] if case.name == "review" else None
        if case.forget is not None:
            case.forget()
            _clear_caches()
            at = _open(study, case, band)
            _timed(samples, "first_load_computing_ms", at.run)
            _check(at, f"{case.name} first load, computing")
        _clear_caches()
        at = _open(study, case, band)
        _timed(samples, "first_load_ms", at.run)
        _check(at, f"{case.name} first load")
        _timed(samples, "rerun_ms", at.run)
        _check(at, f"{case.name} rerun")
        for name, (act, expect) in case.interactions.items():
            act(at, band)
            FRAGMENT_MS.clear()
            _timed(samples, f"{name}_ms", at.run)
            _check(at, f"{case.name}: {name}")
            expect(at, band)
            # Callbacks alone (FRAGMENT_MS holds one entry) mean no fragment ran.
            if len(FRAGMENT_MS) > 1 and name != "submit_and_next":  # that one opens a page
                ran = [
                    ms
                    for where, ms in FRAGMENT_MS
                    if where == "callbacks" or case.fragment in (None, where)
                ]
                samples.setdefault(f"{name}_fragment_ms", []).append(sum(ran))
    return {key: round(statistics.median(values), 1) for key, values in samples.items()}


COMMANDS = {
    "help": ["--help"],
    "vignettes_check": ["vignettes", "check"],
    # An editor's first run on a machine of their own: no record parsed before.
    "verify_nothing_kept": ["verify"],
    # Every later run: the records' parses kept by the run before (evidence/kept_parses.py).
    "verify": ["verify"],
    "audit_verify": ["audit", "verify"],
    "agreement_json": ["agreement", "--json"],
    # The same, computing the report again instead of reading the copy kept by the run before.
    "agreement_json_fresh": ["agreement", "--json", "--fresh"],
    # Deciding every band again, then (the first run keeps its answer) the answer kept.
    "registry_json_fresh": ["registry", "--json", "--fresh"],
    "registry_json": ["registry", "--json"],
    "export_fresh": ["export", "--out", "{tmp}/bands.yaml", "--fresh"],
    "export": ["export", "--out", "{tmp}/bands.yaml"],
}


# Commands that may exit 1 on findings; every other command must succeed.
FINDINGS = ("vignettes", "verify")
# Commands timed giving the answer kept by the --fresh run just before them, which they must
# say they did (or the benchmark would time a decision under the kept answer's name).
KEPT = {"registry_json": "registry_json_fresh", "export": "export_fresh"}
KEPT_NOTE = "the answer kept from the same files"
# Commands timed with nothing kept from any run before (a kept answers' folder of their own,
# empty at every run).
NOTHING_KEPT = ("verify_nothing_kept",)


# The command run as the `fma-bands` console script runs it (`run`, with the collector as it
# leaves it: a caller's `main` turns it back on, and the interpreter's last collection then
# rescans all the command built, seconds at 1,000 x 20), writing its peak resident set (VmHWM,
# kept for the process's own image since it started) to a file as it exits. The operating
# system's own count (wait4's ru_maxrss) would not do: it keeps the high-water mark of the
# image the child was forked from, this benchmark's, which holds a whole study.
PEAK_WRAPPER = """
import atexit, os
from fma_bands.cli import run
def peak():
    with open("/proc/self/status") as status, open(os.environ["FMA_BENCH_PEAK"], "w") as out:
        out.write(next(l for l in status if l.startswith("VmHWM:")).split()[1])
atexit.register(peak)
run()
"""


def time_command(
    study: BenchStudy,
    args: list[str],
    repeat: int,
    tmp: Path,
    *,
    kept: bool = False,
    nothing_kept: bool = False,
) -> dict[str, float]:
    """Medians of the whole process: wall time, its CPU time (user and system) and its peak
    memory (resident set). With `kept`, every run must say it gave a kept answer; with
    `nothing_kept`, every run starts with an empty folder of kept answers."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FMA_BANDS_")}
    # Coordinator commands (agreement) name and authenticate the coordinator, as a person would.
    secret = tmp / "coordinator.passphrase"
    secret.write_text(PASSPHRASE + "\n", encoding="utf-8")
    env |= study.env() | {"FMA_BANDS_AS": "coordinator", "FMA_BANDS_PASSPHRASE_FILE": str(secret)}
    # registry's and export's kept answers: the benchmark's own, never the user's cache.
    env["FMA_BANDS_KEPT_ANSWERS"] = str(tmp / "kept-answers")
    command = [sys.executable, "-c", PEAK_WRAPPER, *(a.format(tmp=tmp) for a in args)]
    env["FMA_BENCH_PEAK"] = str(tmp / "peak.kb")
    allowed = (0, 1) if args[0] in FINDINGS else (0,)
    timings, cpu, peak = [], [], []
    for _ in range(repeat):
        if nothing_kept:
            shutil.rmtree(tmp / "nothing-kept", ignore_errors=True)
            env["FMA_BANDS_KEPT_ANSWERS"] = str(tmp / "nothing-kept")
        with tempfile.TemporaryFile() as output, tempfile.TemporaryFile() as said_apart:
            start = time.perf_counter()
            child = subprocess.Popen(command, cwd=ROOT, env=env, stdout=output, stderr=said_apart)
            # wait4: this child's CPU time, never the sum of every child so far.
            _, status, usage = os.wait4(child.pid, 0)
            timings.append((time.perf_counter() - start) * 1000)
            child.returncode = os.waitstatus_to_exitcode(status)
            cpu.append((usage.ru_utime + usage.ru_stime) * 1000)
            peak.append(int((tmp / "peak.kb").read_text()) / 1024)
            said_apart.seek(0)
            errors = said_apart.read().decode(errors="replace")
            if child.returncode not in allowed:
                output.seek(0)
                said = output.read(100_000).decode(errors="replace") + errors
                raise RuntimeError(f"{' '.join(args)} failed:\n{said}")
            output.seek(max(0, output.seek(0, os.SEEK_END) - 4096))
            if kept and KEPT_NOTE not in errors + output.read().decode(errors="replace"):
                raise RuntimeError(f"{' '.join(args)} decided again, not from its kept answer")
    return {
        "process_ms": round(statistics.median(timings), 1),
        "process_cpu_ms": round(statistics.median(cpu), 1),
        "peak_mb": round(statistics.median(peak), 1),
    }


def run(
    *,
    vignettes: int,
    raters: int,
    repeat: int,
    folder: Path,
    pages: list[str] | None = None,
    commands_only: bool = False,
) -> dict:
    _time_fragments()
    started = time.perf_counter()
    study = build_study(folder, n_vignettes=vignettes, n_raters=raters, reuse=True)
    built_s = time.perf_counter() - started
    study = study.working_copy()
    os.environ.update(study.env())
    os.chdir(ROOT)
    results: dict = {
        "study": {
            "vignettes": vignettes,
            "raters": raters,
            "bands": sum(len(v.proposals) for v in study.library),
            "reviews": study.reviews,
            "built_in_s": round(built_s, 1),
        },
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "load_average": os.getloadavg()[0],
        },
        "repeat": repeat,
        "pages": {},
        "commands": {},
    }
    for case in cases(study):
        if commands_only or (pages and case.name not in pages):
            continue
        try:
            results["pages"][case.name] = time_page(study, case, repeat)
        except RuntimeError as exc:  # a page that fails is reported, and the others still run
            results["pages"][case.name] = {"error": str(exc)}
        print(case.name, results["pages"][case.name], file=sys.stderr)
    if not pages:
        for name, args in COMMANDS.items():
            results["commands"][name] = time_command(
                study, args, repeat, folder, kept=name in KEPT, nothing_kept=name in NOTHING_KEPT
            )
            print(name, results["commands"][name], file=sys.stderr)
    results["machine"]["load_average_after"] = os.getloadavg()[0]
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vignettes", type=int, default=300)
    parser.add_argument("--raters", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", dest="out", type=Path, help="write the results here")
    parser.add_argument("--page", action="append", help="only these pages (no commands)")
    parser.add_argument("--commands", action="store_true", help="only the commands (no pages)")
    parser.add_argument(
        "--keep", type=Path, help="build the study here and keep it (reused if already built)"
    )
    options = parser.parse_args(argv)
    folder = options.keep or Path(tempfile.mkdtemp(prefix="fma-bench-"))
    try:
        results = run(
            vignettes=options.vignettes,
            raters=options.raters,
            repeat=options.repeat,
            folder=folder,
            pages=options.page,
            commands_only=options.commands,
        )
    finally:
        if not options.keep:
            shutil.rmtree(folder, ignore_errors=True)
    text = json.dumps(results, indent=2)
    if options.out:
        options.out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
