"""Times `fma-bands impact`'s counting on many runs of one vignette: reading the trajectories
files, tallying the runs, and counting every band of the demo study against them; with
--pairwise N, also the plain count over every pair of N runs, for comparison. Prints a markdown
table; docs/performance.md has the results.

Run from the repository root: `python -m benchmarks.bench_impact` (--runs, --repeat, --pairwise).
"""

import argparse
import gc
import json
import os
import random
import resource
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fma_bands.core.vignettes import load_library
from fma_bands.study.impact import REFERENCE, count_runs, read_runs, study_impact

VIGNETTES = Path(__file__).resolve().parent.parent / "vignettes"
VIGNETTE = "demo_order_border_01"  # ESI acuity with its threshold, and orders
# Trajectories per file, so each file stays under the reader's 64 MB limit.
PER_FILE = 50_000
# The reference, six counterfactual conditions and a control arm, taken in turn.
CONDITIONS = (REFERENCE, *(f"counterfactual_{i}" for i in range(6)), "rerender_control")


def trajectory(rng: random.Random, i: int) -> dict[str, Any]:
    """One complete run as the harness writes it: the actions by step."""
    return {
        "vignette_id": VIGNETTE,
        "condition_id": CONDITIONS[i % len(CONDITIONS)],
        "complete": True,
        "actions": {
            "triage": {"esi_acuity": rng.randint(1, 5)},
            "order": {"orders": rng.sample(["cbc", "bmp", "ecg", "troponin"], 2)},
        },
    }


def write_files(folder: Path, runs: int, seed: int) -> list[Path]:
    rng = random.Random(seed)
    paths = []
    for start in range(0, runs, PER_FILE):
        items = [trajectory(rng, i) for i in range(start, min(runs, start + PER_FILE))]
        path = folder / f"runs-{start // PER_FILE:03d}.json"
        path.write_text(json.dumps({"trajectories": items}))
        paths.append(path)
    return paths


def timed(fn: Callable[[], Any], repeat: int) -> tuple[list[float], list[float], Any]:
    """Wall and CPU seconds of `repeat` calls, and the last result."""
    wall, cpu, result = [], [], None
    for _ in range(repeat):
        gc.collect()
        w, c = time.perf_counter(), time.process_time()
        result = fn()
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)
    return wall, cpu, result


def fmt(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def row(what: str, wall: list[float], cpu: list[float]) -> str:
    return (
        f"| {what} | {fmt(min(wall))} / {fmt(statistics.median(wall))} "
        f"| {fmt(min(cpu))} / {fmt(statistics.median(cpu))} |"
    )


def pairwise(runs: list[tuple[str | None, int]]) -> tuple[int, int]:
    """The plain count: every reference run paired with every counterfactual run, the pairs
    with both actions in the band listed and compared."""
    inside = [(c, a) for c, a in runs if 1 <= a <= 3 and c != "rerender_control"]
    pairs = [(a, b) for c, a in inside if c == REFERENCE for d, b in inside if d != REFERENCE]
    return len(pairs), sum((a <= 2) != (b <= 2) for a, b in pairs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--pairwise", type=int, default=0, metavar="N")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    library = load_library([VIGNETTES])
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as scratch:
        files = write_files(Path(scratch), args.runs, args.seed)
        size = sum(p.stat().st_size for p in files) / 2**20
        read_wall, read_cpu, runs = timed(lambda: read_runs(files), args.repeat)
    count_wall, count_cpu, counts = timed(lambda: count_runs(runs), args.repeat)
    bands_wall, bands_cpu, rows = timed(lambda: study_impact(library, counts), args.repeat)
    whole_wall, whole_cpu, _ = timed(lambda: study_impact(library, runs), args.repeat)
    mine = next(r for r in rows if (r.vignette_id, r.sub_action) == (VIGNETTE, "esi_acuity"))
    print(
        f"\n{len(runs):,} complete runs of {VIGNETTE} in {len(files)} file(s), {size:.0f} MB; "
        f"{len(rows)} bands counted; ESI acuity: {mine.runs_in_band:,} runs in band, "
        f"{mine.pairs_in_band:,} pairs, {mine.pairs_across_threshold:,} across the threshold"
    )
    print(f"\n| step | wall, min / median of {args.repeat} | CPU, min / median |")
    print("|---|---|---|")
    print(row("reading the files (`read_runs`)", read_wall, read_cpu))
    print(row("tallying the runs (`count_runs`)", count_wall, count_cpu))
    print(row("counting every band from the tally", bands_wall, bands_cpu))
    print(row("tally and count (`study_impact` on the runs)", whole_wall, whole_cpu))
    if args.pairwise:
        actions = [(r.condition_id, r.actions["esi_acuity"]) for r in runs[: args.pairwise]]
        wall, cpu, _ = timed(lambda: pairwise(actions), 1)
        print(row(f"the plain pairwise count, {args.pairwise:,} runs, one band", wall, cpu))
    print(
        f"\nprocess peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB; "
        f"load average at end: {os.getloadavg()[0]:.2f}"
    )


if __name__ == "__main__":
    main()
