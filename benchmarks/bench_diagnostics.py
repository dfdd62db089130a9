"""Times what `fma-bands agreement` adds to the report on the synthetic study: the per-rater
diagnostics, the pooled band alpha by ambiguity stratum, and the planning; prints a markdown
table of wall and CPU seconds beside the report's own.

Run from the repository root: `python -m benchmarks.bench_diagnostics`.
"""

import argparse
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

from benchmarks.generate_study import generate_study
from fma_bands.agreement import POOLED, agreement_report
from fma_bands.agreement.diagnostics import alphas_by_stratum, mode_bands, rater_diagnostics
from fma_bands.agreement.planning import vignettes_needed
from fma_bands.core.vignettes import AMBIGUITIES

TARGET_SECONDS = 0.5  # what the additions may cost beside the report, at 300 x 10


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, float, Any]:
    """Median wall and CPU seconds of `repeat` calls, and the last result."""
    wall, cpu, result = [], [], None
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        result = fn()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return statistics.median(wall), statistics.median(cpu), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--vignettes", type=int, default=300)
    parser.add_argument("--raters", type=int, default=10)
    parser.add_argument("--B", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    ratings = generate_study(args.vignettes, args.raters)
    vignettes = sorted({r.vignette_id for r in ratings})
    # The synthetic study states no ambiguity: give each stratum a third of the vignettes.
    thirds = {v: AMBIGUITIES[i % 3] for i, v in enumerate(vignettes)}
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    print(f"study: {len(vignettes)} vignettes x {args.raters} raters, {len(ratings)} ratings\n")

    report_wall, report_cpu, report = timed(
        lambda: agreement_report(ratings, bootstrap=args.B), args.repeat
    )
    pooled = {"review": report.metrics[POOLED]["band"]}
    bands_wall, bands_cpu, bands = timed(lambda: mode_bands(ratings), args.repeat)
    parts = {
        "band strata of each mode (mode_bands)": (bands_wall, bands_cpu),
        "per-rater diagnostics, from the report's alphas without each rater": timed(
            lambda: rater_diagnostics(bands, pooled), args.repeat
        )[:2],
        "pooled band alpha by stratum, three strata": timed(
            lambda: alphas_by_stratum(ratings, thirds, bootstrap=args.B), args.repeat
        )[:2],
        "pooled band alpha by stratum, none stated (one stratum: all)": timed(
            lambda: alphas_by_stratum(ratings, {}, bootstrap=args.B), args.repeat
        )[:2],
        "planning: 11 sizes x 500 simulated studies": timed(
            lambda: vignettes_needed(bands["review"].strata, mode="review"), args.repeat
        )[:2],
    }
    print(f"| part (median of {args.repeat}) | wall | CPU |", "|---|---|---|", sep="\n")
    print(f"| the report itself, B={args.B} | {report_wall:.3f} s | {report_cpu:.3f} s |")
    for name, (wall, cpu) in parts.items():
        print(f"| {name} | {wall:.3f} s | {cpu:.3f} s |")
    added = sum(cpu for name, (_, cpu) in parts.items() if "none stated" not in name)
    print(f"\nadded CPU with three strata: {added:.3f} s (target {TARGET_SECONDS} s)")
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
