"""Times the agreement layer on the synthetic study (every metric, the whole report, peak memory)
and the set-valued alpha against NLTK's AnnotationTask; prints markdown tables.

Run from the repository root: `python -m benchmarks.bench_agreement`.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import resource
import statistics
import subprocess
import time
import tracemalloc
from importlib.metadata import version

import numpy as np
from nltk.metrics.agreement import AnnotationTask
from nltk.metrics.distance import jaccard_distance

from benchmarks.generate_study import generate_free_followup, generate_study
from fma_bands.agreement import (
    DECLINE,
    METRICS,
    POOLED,
    agreement_report,
    band_alpha,
    endpoint_alpha,
    membership_alpha,
    tabulate,
    verdict_alpha,
)

TARGET_REPORT_SECONDS = 2.0
TARGET_REPORT_MB = 300.0
TARGET_SPEEDUP = 50.0


def timed(fn, repeat: int) -> tuple[list[float], object]:
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


def maxrss_mb() -> float:
    # ru_maxrss is in kilobytes on Linux.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def machine() -> list[str]:
    with open("/proc/cpuinfo") as f:
        models = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
    free = subprocess.run(["free", "-h"], capture_output=True, text=True).stdout.rstrip()
    cpu = models[0] if models else platform.processor()
    return [
        f"- CPU: {cpu}; nproc: {len(os.sched_getaffinity(0))}",
        f"- Python {platform.python_version()}, numpy {np.__version__}, "
        f"krippendorff {version('krippendorff')}, nltk {version('nltk')}",
        "- `free -h`:",
        "",
        "```",
        free,
        "```",
    ]


def nltk_triples(ratings) -> list[tuple]:
    """(coder, item, label) as NLTK takes them; each value is tagged with its sub-action, as
    the pooled band metric compares values within one sub-action only."""
    return [
        (r.rater, f"{r.vignette_id}|{r.sub_action}", frozenset((r.sub_action, x) for x in r.values))
        for r in ratings
        if r.verdict != DECLINE
    ]


def nltk_alpha(triples) -> float:
    return AnnotationTask(data=triples, distance=jaccard_distance).alpha()


def bench_metrics(ratings, domains, B: int, repeat: int) -> list[str]:
    functions = {
        "band": lambda b: band_alpha(ratings, bootstrap=b),
        "membership": lambda b: membership_alpha(ratings, domains, bootstrap=b),
        "endpoints": lambda b: endpoint_alpha(ratings, bootstrap=b),
        "verdict": lambda b: verdict_alpha(ratings, bootstrap=b),
    }
    rows = [
        "| metric (pooled) | alpha [95% CI] | units | pairable values | distinct values "
        f"| alpha only (min / median of {repeat}) | with B={B} bootstrap (min / median) |",
        "|---|---|---|---|---|---|---|",
    ]
    for metric in METRICS:
        plain, _ = timed(lambda m=metric: functions[m](0), repeat)
        boot, a = timed(lambda m=metric: functions[m](B), repeat)
        distinct = len(tabulate(metric, ratings, domains).labels)
        rows.append(
            f"| {metric} | {a.alpha:.3f} [{a.ci_low:.3f}, {a.ci_high:.3f}] | {a.n_units} "
            f"| {a.n_pairable} | {distinct} | {fmt(min(plain))} / {fmt(statistics.median(plain))} "
            f"| {fmt(min(boot))} / {fmt(statistics.median(boot))} |"
        )
    return rows


def bench_report(ratings, domains, B: int, repeat: int) -> tuple[list[str], dict]:
    rss_before = maxrss_mb()
    times, report = timed(lambda: agreement_report(ratings, domains, bootstrap=B), repeat)
    rss_after = maxrss_mb()
    gc.collect()
    tracemalloc.start()
    agreement_report(ratings, domains, bootstrap=B)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    n_alphas = sum(len(m) for m in report.metrics.values())
    result = {
        "min": min(times),
        "median": statistics.median(times),
        "traced_mb": peak / 2**20,
        "rss_before_mb": rss_before,
        "rss_after_mb": rss_after,
    }
    rows = [
        f"| whole report, B={B} ({n_alphas} alphas, {len(report.bands)} bands) | value |",
        "|---|---|",
        f"| wall time, min of {repeat} | {fmt(result['min'])} |",
        f"| wall time, median of {repeat} | {fmt(result['median'])} |",
        "| peak traced allocation during one report (tracemalloc) | "
        f"{result['traced_mb']:.1f} MB |",
        "| process peak RSS (ru_maxrss) before the report runs | "
        f"{result['rss_before_mb']:.1f} MB |",
        f"| process peak RSS (ru_maxrss) after the report runs | {result['rss_after_mb']:.1f} MB |",
    ]
    return rows, result


def bench_nltk(scopes: dict[str, list], repeat: int) -> tuple[list[str], dict[str, float]]:
    """NLTK's alpha from ready-made triples (building its AnnotationTask is timed, building the
    triples is not) against ours from the Rating objects (everything from the Ratings on)."""
    rows = [
        f"| band data | ratings | distinct sets | NLTK AnnotationTask (min / median of n) "
        f"| ours, alpha only (min / median of {repeat}) | speed-up, min / min "
        "| speed-up, median / median | abs. difference |",
        "|---|---|---|---|---|---|---|---|",
    ]
    speedups = {}
    for name, ratings in scopes.items():
        triples = nltk_triples(ratings)
        nltk_repeat = 1 if name.startswith("stress") else min(repeat, 3)
        nltk_times, theirs = timed(lambda t=triples: nltk_alpha(t), nltk_repeat)
        our_times, ours = timed(lambda r=ratings: band_alpha(r, bootstrap=0), repeat)
        speedups[name] = min(nltk_times) / min(our_times)
        median = statistics.median(nltk_times) / statistics.median(our_times)
        distinct = len(tabulate("band", ratings).labels)
        rows.append(
            f"| {name} | {len(ratings)} | {distinct} "
            f"| {fmt(min(nltk_times))} / {fmt(statistics.median(nltk_times))} (n={nltk_repeat}) "
            f"| {fmt(min(our_times))} / {fmt(statistics.median(our_times))} "
            f"| {speedups[name]:.1f}x | {median:.1f}x | {abs(theirs - ours.alpha):.1e} |"
        )
    return rows, speedups


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--vignettes", type=int, default=300)
    parser.add_argument("--raters", type=int, default=10)
    parser.add_argument("--B", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-stress", action="store_true", help="skip the free day-count case")
    args = parser.parse_args()

    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    start = time.perf_counter()
    ratings, domains = generate_study(args.vignettes, args.raters)
    print(
        f"study: {args.vignettes} vignettes x {args.raters} raters x 9 sub-actions = "
        f"{len(ratings)} ratings, generated in {fmt(time.perf_counter() - start)}\n"
    )
    print("\n".join(machine()), end="\n\n")

    report_rows, report = bench_report(ratings, domains, args.B, args.repeat)
    print("\n".join(report_rows), end="\n\n")
    print("\n".join(bench_metrics(ratings, domains, args.B, args.repeat)), end="\n\n")

    subs = sorted({r.sub_action for r in ratings})
    scopes = {s: [r for r in ratings if r.sub_action == s] for s in subs}
    scopes[POOLED] = ratings
    if not args.no_stress:
        scopes["stress: free day counts"] = generate_free_followup(args.vignettes, args.raters)
    nltk_rows, speedups = bench_nltk(scopes, args.repeat)
    print("\n".join(nltk_rows), end="\n\n")

    print(f"load average after the comparison: {os.getloadavg()[0]:.2f}\n")
    met = {
        f"whole report < {TARGET_REPORT_SECONDS:.0f} s (median)": report["median"]
        < TARGET_REPORT_SECONDS,
        f"whole report < {TARGET_REPORT_MB:.0f} MB (tracemalloc peak)": report["traced_mb"]
        < TARGET_REPORT_MB,
        f"whole report < {TARGET_REPORT_MB:.0f} MB (process peak RSS)": report["rss_after_mb"]
        < TARGET_REPORT_MB,
    }
    # The target is judged on the whole study's set-valued alpha (pooled); the other rows are
    # reported as they are.
    met[f"set-valued alpha >= {TARGET_SPEEDUP:.0f}x NLTK, pooled (min / min)"] = (
        speedups[POOLED] >= TARGET_SPEEDUP
    )
    for name, speedup in speedups.items():
        if name != POOLED:
            met[f"(not the target) {name}: >= {TARGET_SPEEDUP:.0f}x"] = speedup >= TARGET_SPEEDUP
    print("| target | met |", "|---|---|", sep="\n")
    for name, ok in met.items():
        print(f"| {name} | {'met' if ok else 'NOT met'} |")
    print(f"\nload average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
