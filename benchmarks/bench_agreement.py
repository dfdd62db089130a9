"""Times the agreement layer on the synthetic study (the whole report, each metric, peak memory)
and compares the band alpha with NLTK's AnnotationTask; prints markdown tables.

Run from the repository root: `python -m benchmarks.bench_agreement`.
"""

import argparse
import gc
import os
import platform
import resource
import statistics
import subprocess
import time
import tracemalloc
from collections.abc import Callable
from functools import partial
from importlib.metadata import version
from typing import Any

import numpy as np
from nltk.metrics.agreement import AnnotationTask
from nltk.metrics.distance import jaccard_distance

from benchmarks.generate_study import generate_free_followup, generate_study
from fma_bands.agreement import METRICS, POOLED, agreement_report, metric_alpha
from fma_bands.agreement.metrics import POOLABLE, level

TARGET_REPORT_SECONDS = 2.0
TARGET_REPORT_MB = 300.0


def timed(fn: Callable[[], Any], repeat: int) -> tuple[list[float], Any]:
    """Wall-clock seconds of `repeat` calls, and the last result."""
    times, result = [], None
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return times, result


def fmt(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def spread(times: list[float]) -> str:
    return f"{fmt(min(times))} / {fmt(statistics.median(times))}"


def maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kilobytes on Linux


def machine() -> list[str]:
    with open("/proc/cpuinfo") as f:
        models = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
    free = subprocess.run(["free", "-h"], capture_output=True, text=True).stdout.rstrip()
    return [
        f"- CPU: {models[0] if models else platform.processor()}; "
        f"nproc: {len(os.sched_getaffinity(0))}",
        f"- Python {platform.python_version()}, numpy {np.__version__}, "
        f"krippendorff {version('krippendorff')}, nltk {version('nltk')}",
        "- `free -h`:",
        "",
        "```",
        free,
        "```",
    ]


def cpu_timed(fn: Callable[[], Any], repeat: int) -> list[float]:
    """CPU seconds of `repeat` calls: what other work on a shared machine disturbs least."""
    times = []
    for _ in range(repeat):
        gc.collect()
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return times


def bench_report(ratings, B: int, repeat: int) -> tuple[list[str], dict]:
    rss_before = maxrss_mb()
    times, report = timed(lambda: agreement_report(ratings, bootstrap=B), repeat)
    cpu = cpu_timed(lambda: agreement_report(ratings, bootstrap=B), repeat)
    rss_after = maxrss_mb()
    gc.collect()
    tracemalloc.start()
    agreement_report(ratings, bootstrap=B)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    n_alphas = sum(len(m) for m in report.metrics.values())
    result = {"min": min(times), "median": statistics.median(times), "traced_mb": peak / 2**20}
    result["rss_after_mb"] = rss_after
    rows = [
        f"| whole report, B={B} ({n_alphas} alphas, {len(report.bands)} bands) | value |",
        "|---|---|",
        f"| wall time, min of {repeat} | {fmt(result['min'])} |",
        f"| wall time, median of {repeat} | {fmt(result['median'])} |",
        f"| CPU time (process), min / median of {repeat} | {spread(cpu)} |",
        f"| peak traced allocation of one report (tracemalloc) | {result['traced_mb']:.1f} MB |",
        f"| process peak RSS (ru_maxrss) before the report runs | {rss_before:.1f} MB |",
        f"| process peak RSS (ru_maxrss) after the report runs | {rss_after:.1f} MB |",
    ]
    return rows, result


def bench_metrics(ratings, B: int, repeat: int) -> list[str]:
    """Each metric through its public function: pooled where it pools, else per sub-action."""
    rows = [
        f"| metric | scope | alpha [95% CI] | bands | pairable values | alpha only (min / median "
        f"of {repeat}) | with B={B} (min / median) |",
        "|---|---|---|---|---|---|---|",
    ]
    subs = sorted({r.sub_action for r in ratings})
    for metric in METRICS:
        applies = [s for s in subs if level(metric, s) is not None]
        scopes = [POOLED] if metric in POOLABLE else applies
        for scope in scopes:
            chosen = [
                r for r in ratings if r.sub_action in (applies if scope == POOLED else [scope])
            ]
            plain, _ = timed(partial(metric_alpha, metric, chosen, bootstrap=0), repeat)
            boot, a = timed(partial(metric_alpha, metric, chosen, bootstrap=B), repeat)
            rows.append(
                f"| {metric} | {scope} | {a.alpha:.3f} [{a.ci_low:.3f}, {a.ci_high:.3f}] "
                f"| {a.n_bands} | {a.n_pairable} | {spread(plain)} | {spread(boot)} |"
            )
    return rows


def design_distance(a, b) -> float:
    def jaccard(x, y):
        return 0.0 if not (x or y) else jaccard_distance(x, y)

    if isinstance(a, tuple):  # orders: (required, defensible)
        return (jaccard(a[0], b[0]) + jaccard(a[1], b[1])) / 2
    return jaccard(a, b)


def nltk_triples(ratings) -> list[tuple]:
    def label(band):
        if band.sub_action == "orders":
            return (frozenset(band.required), frozenset(band.defensible))
        return frozenset(band.values())

    return [(r.rater, r.vignette_id, label(r.band)) for r in ratings if r.band is not None]


def nltk_alpha(triples: list[tuple]) -> float:
    """NLTK's alpha under design_distance; building its AnnotationTask is part of the work."""
    return AnnotationTask(data=triples, distance=design_distance).alpha()


def bench_nltk(scopes: dict[str, list], repeat: int) -> list[str]:
    """NLTK's alpha with the distance of docs/design.md, Agreement, from ready-made triples
    (building its AnnotationTask is timed), against ours from the Ratings."""
    rows = [
        "| band data | ratings | NLTK AnnotationTask (min / median of n) "
        f"| ours, alpha only (min / median of {repeat}) | speed-up, min / min | abs. difference |",
        "|---|---|---|---|---|---|",
    ]
    for name, ratings in scopes.items():
        triples = nltk_triples(ratings)
        n = 1 if name.startswith("stress") else min(repeat, 3)
        nltk_times, theirs = timed(partial(nltk_alpha, triples), n)
        ours_times, ours = timed(partial(metric_alpha, "band", ratings, bootstrap=0), repeat)
        rows.append(
            f"| {name} | {len(ratings)} | {spread(nltk_times)} (n={n}) | {spread(ours_times)} "
            f"| {min(nltk_times) / min(ours_times):.1f}x | {abs(theirs - ours.alpha):.1e} |"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--vignettes", type=int, default=300)
    parser.add_argument("--raters", type=int, default=10)
    parser.add_argument("--B", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-nltk", action="store_true", help="skip the comparison with NLTK")
    args = parser.parse_args()

    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    start = time.perf_counter()
    ratings = generate_study(args.vignettes, args.raters)
    print(
        f"study: {args.vignettes} vignettes x {args.raters} raters x 9 sub-actions = "
        f"{len(ratings)} ratings, generated in {fmt(time.perf_counter() - start)}\n"
    )
    print("\n".join(machine()), end="\n\n")
    report_rows, report = bench_report(ratings, args.B, args.repeat)
    print("\n".join(report_rows), end="\n\n")
    print("\n".join(bench_metrics(ratings, args.B, args.repeat)), end="\n\n")
    if not args.no_nltk:
        subs = sorted({r.sub_action for r in ratings})
        scopes = {s: [r for r in ratings if r.sub_action == s] for s in subs}
        scopes["stress: free day counts"] = generate_free_followup(args.vignettes, args.raters)
        print("\n".join(bench_nltk(scopes, args.repeat)), end="\n\n")
    print(f"load average at end: {os.getloadavg()[0]:.2f}\n")
    met = {
        f"whole report < {TARGET_REPORT_SECONDS:.0f} s (median)": report["median"]
        < TARGET_REPORT_SECONDS,
        f"whole report < {TARGET_REPORT_MB:.0f} MB (tracemalloc peak)": report["traced_mb"]
        < TARGET_REPORT_MB,
        f"whole report < {TARGET_REPORT_MB:.0f} MB (process peak RSS)": report["rss_after_mb"]
        < TARGET_REPORT_MB,
    }
    print("| target | met |", "|---|---|", sep="\n")
    for name, ok in met.items():
        print(f"| {name} | {'met' if ok else 'NOT met'} |")


if __name__ == "__main__":
    main()
