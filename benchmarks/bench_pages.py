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
import resource
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
    interactions: dict[str, Callable] = field(default_factory=dict)
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


def _widget(kind: str, label: str, value) -> Callable:
    def act(at, band):
        [widget] = [w for w in getattr(at, kind) if w.label == label]
        widget.set_value(value)

    return act


def _review_interactions() -> dict[str, Callable]:
    from app_pages.review_screen import screen_key

    def radio(part: str, value) -> Callable:
        return lambda at, band: at.radio(key=f"{screen_key(*band)}:{part}").set_value(value)

    def submit(at, band):
        # The answers first, each its own click; the timed run is the one the button causes.
        key = screen_key(*band)
        for q, choice in (("q1", "yes"), ("q2", "yes"), ("q3", "no"), ("q4", "no"), ("q6", "yes")):
            at.radio(key=f"{key}:{q}:choice").set_value(choice).run()
        at.text_area(key=f"{key}:reason").input("benchmark").run()
        [button] = [b for b in at.button if b.label == "Submit and next"]
        button.click()

    return {
        "answer_a_question": radio("q1:choice", "no"),
        "choose_a_verdict": radio("verdict", "AMEND"),
        "switch_list_and_range": radio("band:form", "a range"),
        "submit_and_next": submit,
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
                "next_page": lambda at, band: at.get("pagination")[0].set_value(2),
            },
        ),
        PageCase("review", "app_pages/review.py", "rater", interactions=_review_interactions()),
        PageCase(
            "library",
            "app_pages/library.py",
            "rater",
            interactions={"next_page": lambda at, band: at.get("pagination")[0].set_value(2)},
        ),
        PageCase(
            "vignette",
            "app_pages/vignette.py",
            "rater",
            {"id": vid},
            {
                "choose_a_case": lambda at, band: at.selectbox(key="vignette_id").set_value(
                    list(study.library.vignettes)[1]
                )
            },
        ),
        PageCase("attest", "app_pages/attest.py", "rater"),
        PageCase("admin", "app_pages/admin.py", "coordinator"),
        PageCase(
            "progress",
            "app_pages/progress.py",
            "coordinator",
            interactions={
                "tick_the_confirmation": lambda at, band: at.checkbox(key="close_sure").check()
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
            interactions={"filter_by_kind": _widget("multiselect", "What", ["flag_resolved"])},
        ),
    ]


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

    from fma_bands.evidence.envelope import clear_cache

    st.cache_data.clear()
    st.cache_resource.clear()
    clear_cache()  # envelopes parsed and verified, by digest: a first load verifies them all


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
    params = case.params or ({"vignette": band[0], "sub_action": band[1]} if band else {})
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
        for name, act in case.interactions.items():
            act(at, band)
            FRAGMENT_MS.clear()
            _timed(samples, f"{name}_ms", at.run)
            _check(at, f"{case.name}: {name}")
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
    "verify": ["verify"],
    "audit_verify": ["audit", "verify"],
    "agreement_json": ["agreement", "--json"],
    # The same, computing the report again instead of reading the copy kept by the run before.
    "agreement_json_fresh": ["agreement", "--json", "--fresh"],
    "registry_json": ["registry", "--json"],
    "export": ["export", "--out", "{tmp}/bands.yaml"],
}


# Commands that may exit 1 on findings; every other command must succeed.
FINDINGS = ("vignettes", "verify")


def time_command(study: BenchStudy, args: list[str], repeat: int, tmp: Path) -> dict[str, float]:
    """Medians of the whole process: wall time, and its CPU time (user and system)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FMA_BANDS_")}
    # Coordinator commands (agreement) name and authenticate the coordinator, as a person would.
    secret = tmp / "coordinator.passphrase"
    secret.write_text(PASSPHRASE + "\n", encoding="utf-8")
    env |= study.env() | {"FMA_BANDS_AS": "coordinator", "FMA_BANDS_PASSPHRASE_FILE": str(secret)}
    command = [sys.executable, "-m", "fma_bands.cli", *(a.format(tmp=tmp) for a in args)]
    allowed = (0, 1) if args[0] in FINDINGS else (0,)
    timings, cpu = [], []
    for _ in range(repeat):
        start, used = time.perf_counter(), _children_cpu()
        result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
        timings.append((time.perf_counter() - start) * 1000)
        cpu.append((_children_cpu() - used) * 1000)
        if result.returncode not in allowed:
            raise RuntimeError(f"{' '.join(args)} failed:\n{result.stdout}{result.stderr}")
    return {
        "process_ms": round(statistics.median(timings), 1),
        "process_cpu_ms": round(statistics.median(cpu), 1),
    }


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(
    *, vignettes: int, raters: int, repeat: int, folder: Path, pages: list[str] | None = None
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
        if pages and case.name not in pages:
            continue
        try:
            results["pages"][case.name] = time_page(study, case, repeat)
        except RuntimeError as exc:  # a page that fails is reported, and the others still run
            results["pages"][case.name] = {"error": str(exc)}
        print(case.name, results["pages"][case.name], file=sys.stderr)
    if not pages:
        for name, args in COMMANDS.items():
            results["commands"][name] = time_command(study, args, repeat, folder)
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
