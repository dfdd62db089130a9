"""How often each candidate 95% interval of alpha covers the true alpha (a simulation, not a unit
test), and so which interval the report prints (docs/statistics.md, The interval).

Studies of n vignettes are drawn from one band model. Each rater has habits (how often they widen
a bound, how often they move one) drawn from a population of raters.

- Fixed panel (the question the report's interval answers): one panel of R raters is drawn and
  held for every study; the truth is the alpha of that panel on a very large number of
  vignettes. Candidates: percentile, basic, BCa and jackknife-normal, all from the same
  resamples.
- Redrawn panels (the population question): every study draws a new panel of R raters; the
  truth is the mean alpha of many panels of R raters, each on a large number of vignettes.
  Candidates: the report's one-way interval, and the two-way interval (vignettes and raters).

Prints markdown tables; docs/statistics.md has the results, and fma_bands/agreement/coverage.json
the table the report quotes (written with --write).

Run from the repository root: `python -m benchmarks.bench_coverage` (--replicates, --raters,
--sizes, --B, --write).
"""

import argparse
import json
import math
import multiprocessing
import os
import random
import statistics
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from fma_bands.agreement import POOLED, Rating
from fma_bands.agreement.bootstrap import (
    INTERVALS,
    Samples,
    jackknife_se,
    leave_one_out_weights,
    resample_weights,
    two_way,
)
from fma_bands.agreement.engine import Stratum, alphas, point_alpha
from fma_bands.agreement.metrics import metric_strata
from fma_bands.core.bands import AnyBand, IntervalBand, MultilabelBand, SetBand

TICKS = (1, 2, 3, 5, 7, 10, 14, 21, 28, 30, 42, 60, 90)
KEYS = ("cbc", "bmp", "ecg", "troponin", "cxr", "lipase")
P_DECLINE = 0.05
# The alphas followed: (scope, metric).
FOLLOWED = (
    ("esi_acuity", "band"),
    ("esi_acuity", "membership"),
    ("esi_acuity", "lower"),
    ("esi_acuity", "upper"),
    ("followup_days", "lower"),
    ("followup_days", "upper"),
    ("orders", "band"),
    ("admit", "band"),
    (POOLED, "band"),
    (POOLED, "verdict"),
)
COVERAGE_FILE = Path(__file__).resolve().parents[1] / "fma_bands" / "agreement" / "coverage.json"

Habits = dict[str, tuple[float, float]]  # rater -> (widens, noise)


def panel(raters: int, rng: random.Random) -> Habits:
    """R raters drawn from the population: each widens a bound with probability U(0, 0.3) and
    otherwise moves it one step with probability U(0.15, 0.45)."""
    return {
        f"rater-{i:02d}": (rng.uniform(0.0, 0.3), rng.uniform(0.15, 0.45)) for i in range(raters)
    }


def _clip(value: int, lo: int, hi: int) -> int:
    return max(lo, min(hi, value))


def _vignette(rng: random.Random, vid: str, habits: Habits) -> list[Rating]:
    """One vignette's truth, the proposal (the truth as written) and each rater's reading."""
    centre = rng.randint(1, 4)
    esi = (centre, centre + rng.choice((0, 1)))
    days = rng.randint(1, 8)
    follow = (days, days + rng.randint(1, 3))
    defensible = set(rng.sample(KEYS, rng.randint(2, 4)))
    required = set(rng.sample(sorted(defensible), 1))
    admit = rng.choice(((True,), (False,), (False, True)))

    def step(widens: float, noise: float) -> int:
        if rng.random() < widens:
            return 1
        return rng.choice((-1, 1)) if rng.random() < noise else 0

    def readings(widens: float, noise: float) -> dict[str, AnyBand]:
        lo = _clip(esi[0] - step(widens, noise), 1, 5)
        hi = _clip(esi[1] + step(widens, noise), lo, 5)
        esi_band: AnyBand = IntervalBand(sub_action="esi_acuity", min=lo, max=hi)
        if rng.random() < 0.5:  # as many raters write ESI as a set
            esi_band = SetBand(sub_action="esi_acuity", members=tuple(range(lo, hi + 1)))
        a = _clip(follow[0] - step(widens, noise), 0, len(TICKS) - 1)
        b = _clip(follow[1] + step(widens, noise), a, len(TICKS) - 1)
        chosen = {k for k in KEYS if (k in defensible) != (rng.random() < noise / 3)}
        chosen = chosen or set(defensible)
        needed = {k for k in chosen if (k in required) != (rng.random() < noise / 3)}
        flip = rng.random() < noise / 2
        return {
            "esi_acuity": esi_band,
            "followup_days": IntervalBand(sub_action="followup_days", min=TICKS[a], max=TICKS[b]),
            "orders": MultilabelBand(
                sub_action="orders",
                required=tuple(sorted(needed)),
                defensible=tuple(sorted(chosen)),
            ),
            "admit": SetBand(
                sub_action="admit", members=rng.choice(((True,), (False,))) if flip else admit
            ),
        }

    proposal: dict[str, AnyBand] = {
        "esi_acuity": IntervalBand(sub_action="esi_acuity", min=esi[0], max=esi[1]),
        "followup_days": IntervalBand(
            sub_action="followup_days", min=TICKS[follow[0]], max=TICKS[follow[1]]
        ),
        "admit": SetBand(sub_action="admit", members=admit),
    }
    out = []
    for rater, (widens, noise) in habits.items():
        for name, band in readings(widens, noise).items():
            if rng.random() < P_DECLINE:
                out.append(Rating(vid, name, rater, "DECLINE", None))
                continue
            accepted = proposal.get(name) is not None and proposal[name].values() == band.values()
            out.append(
                Rating(
                    vid,
                    name,
                    rater,
                    "ACCEPT" if accepted else "AMEND",
                    band,
                    proposal=proposal.get(name),
                )
            )
    return out


def study(n_vignettes: int, seed: int, habits: Habits) -> list[Rating]:
    rng = random.Random(seed)
    return [r for v in range(n_vignettes) for r in _vignette(rng, f"v{seed}-{v:05d}", habits)]


def followed_strata(ratings: Sequence[Rating]) -> dict[tuple[str, str], list[Stratum]]:
    """What each followed alpha is computed over, as the report computes it."""
    out = {}
    for scope, metric in FOLLOWED:
        chosen = ratings if scope == POOLED else [r for r in ratings if r.sub_action == scope]
        out[(scope, metric)] = metric_strata(metric, chosen)
    return out


def true_alphas(ratings: Sequence[Rating]) -> dict[tuple[str, str], float]:
    found = {}
    for key, strata in followed_strata(ratings).items():
        alpha = point_alpha(strata)
        if alpha is None:
            raise SystemExit(f"the model gives no {key[1]} alpha for {key[0]}: nothing to cover")
        found[key] = alpha
    return found


def samples(strata: list[Stratum], B: int, seed: int) -> Samples | None:
    vignettes = sorted({v for s in strata for v in s.vignettes})
    point = point_alpha(strata)
    if point is None or len(vignettes) < 2:
        return None
    n = len(vignettes)
    return Samples(
        point=point,
        resampled=alphas(strata, resample_weights(n, B, seed), vignettes),
        left_out=alphas(strata, leave_one_out_weights(n), vignettes),
    )


def one_study(task: tuple) -> dict[tuple[str, str], dict[str, tuple[float, float] | None]]:
    """Every candidate's bounds for every followed alpha of one study."""
    size, seed, habits, B, redrawn = task
    if redrawn:
        habits = panel(len(habits), random.Random(seed))
    ratings = study(size, seed, habits)
    out: dict[tuple[str, str], dict[str, tuple[float, float] | None]] = {}
    for key, strata in followed_strata(ratings).items():
        found = samples(strata, B, seed)
        if found is None:
            out[key] = dict.fromkeys([*INTERVALS, "two-way"])
            continue
        bounds = {name: interval(found) for name, interval in INTERVALS.items()}
        left = [point_alpha([s.without(r) for s in strata]) for r in sorted(habits)]
        bounds["two-way"] = two_way(found.point, jackknife_se(found), left)
        out[key] = bounds
    return out


def wilson(covered: int, n: int) -> str:
    """The 95% Wilson interval of a proportion, for the Monte Carlo error of a coverage."""
    if n == 0:
        return "-"
    p, z = covered / n, 1.96
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return f"{100 * (centre - half):.1f} to {100 * (centre + half):.1f}"


def coverage(
    results: list[dict], truth: dict[tuple[str, str], float], method: str
) -> dict[tuple[str, str], tuple[int, int, float | None]]:
    """Per followed alpha: studies covered, studies with an interval, mean width."""
    out = {}
    for key in FOLLOWED:
        bounds = [r[key][method] for r in results if r[key][method] is not None]
        covered = sum(low <= truth[key] <= high for low, high in bounds)
        width = statistics.mean(high - low for low, high in bounds) if bounds else None
        out[key] = (covered, len(bounds), width)
    return out


def population_truth(raters: int, panels: int, size: int) -> dict[tuple[str, str], float]:
    """The mean alpha of `panels` panels of R raters drawn from the population, each on `size`
    vignettes: the population alpha the two-way interval is about."""
    each = [
        true_alphas(study(size, 7_000 + k, panel(raters, random.Random(7_000 + k))))
        for k in range(panels)
    ]
    return {key: statistics.mean(t[key] for t in each) for key in FOLLOWED}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--replicates", type=int, default=400)
    parser.add_argument("--redrawn-replicates", type=int, default=200)
    parser.add_argument("--raters", default="3,5,10")
    parser.add_argument("--sizes", default="12,30,100")
    parser.add_argument("--population", type=int, default=6_000, help="vignettes of the truth")
    parser.add_argument("--panels", type=int, default=12, help="panels of the population truth")
    parser.add_argument("--B", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--write", action="store_true", help=f"write {COVERAGE_FILE.name}")
    parser.add_argument("--fixed-only", action="store_true", help="no redrawn panels")
    args = parser.parse_args()
    panels = [int(r) for r in args.raters.split(",")]
    sizes = [int(s) for s in args.sizes.split(",")]
    started = time.perf_counter()
    print(f"load average at start: {os.getloadavg()[0]:.2f}", flush=True)
    table: list[dict] = []
    with multiprocessing.Pool(args.jobs) as pool:
        for raters in panels:
            habits = panel(raters, random.Random(raters))
            fixed_truth = true_alphas(study(args.population, 1, habits))
            kinds: list[tuple[bool, dict[tuple[str, str], float]]] = [(False, fixed_truth)]
            if not args.fixed_only:
                kinds.append((True, population_truth(raters, args.panels, args.population // 2)))
            for size in sizes:
                for redrawn, truth in kinds:
                    tasks = [
                        (size, 100_000 * size + 1_000 * raters + k, habits, args.B, redrawn)
                        for k in range(args.redrawn_replicates if redrawn else args.replicates)
                    ]
                    results = pool.map(one_study, tasks, chunksize=4)
                    methods = ("jackknife", "two-way") if redrawn else tuple(INTERVALS)
                    for method in methods:
                        for key, (covered, n, width) in coverage(results, truth, method).items():
                            table.append(
                                {
                                    "panel": "redrawn" if redrawn else "fixed",
                                    "method": method,
                                    "raters": raters,
                                    "vignettes": size,
                                    "metric": key[1],
                                    "scope": key[0],
                                    "truth": round(truth[key], 4),
                                    "covered": covered,
                                    "studies": n,
                                    "mean_width": None if width is None else round(width, 4),
                                }
                            )
                    print(
                        f"{raters} raters, {size} vignettes, panel "
                        f"{'redrawn' if redrawn else 'fixed'}: "
                        f"{time.perf_counter() - started:.0f} s",
                        flush=True,
                    )
    print(summary(table, args.replicates, args.redrawn_replicates, args.B))
    print(f"\n{time.perf_counter() - started:.0f} s in all; load at end {os.getloadavg()[0]:.2f}")
    if args.write:
        kept, redrawn = [], args.redrawn_replicates
        if args.fixed_only:  # the redrawn panels' rows of the last run stay, said so
            before = json.loads(COVERAGE_FILE.read_text())
            kept = [r for r in before["rows"] if r["panel"] != "fixed"]
            redrawn = before["redrawn_replicates"]
        COVERAGE_FILE.write_text(
            json.dumps(
                {
                    "run": datetime.now(UTC).strftime("%Y-%m-%d"),
                    "replicates": args.replicates,
                    "redrawn_replicates": redrawn,
                    "redrawn_rows": "kept from the run before" if kept else "this run",
                    "B": args.B,
                    "rows": table + kept,
                },
                indent=1,
            )
            + "\n"
        )


def summary(table: list[dict], replicates: int, redrawn: int, B: int) -> str:
    """Markdown: coverage of each method by panel, raters and vignettes (range over the followed
    alphas, and the worst alpha), then every row."""
    lines = [
        "| panel | method | raters | vignettes | coverage, lowest to highest | median "
        "| lowest at |",
        "|---|---|---|---|---|---|---|",
    ]
    groups: dict[tuple, list[dict]] = {}
    for row in table:
        groups.setdefault(
            (row["panel"], row["method"], row["raters"], row["vignettes"]), []
        ).append(row)
    for (panel_kind, method, raters, size), rows in groups.items():
        shares = [(100 * r["covered"] / r["studies"], r) for r in rows if r["studies"]]
        low, worst = min(shares, key=lambda s: s[0])
        lines.append(
            f"| {panel_kind} | {method} | {raters} | {size} | {low:.1f}% to "
            f"{max(s for s, _ in shares):.1f}% | {statistics.median(s for s, _ in shares):.1f}% "
            f"| {worst['metric']} {worst['scope']} |"
        )
    lines += [
        "",
        f"{replicates} studies per row with a fixed panel, {redrawn} with panels redrawn; B={B}.",
        "",
        "| panel | method | raters | vignettes | metric | scope | truth | coverage "
        "| Monte Carlo 95% | mean width |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in table:
        share = f"{100 * r['covered'] / r['studies']:.1f}%" if r["studies"] else "-"
        lines.append(
            f"| {r['panel']} | {r['method']} | {r['raters']} | {r['vignettes']} | {r['metric']} "
            f"| {r['scope']} | {r['truth']:.3f} | {share} | {wilson(r['covered'], r['studies'])} "
            f"| {r['mean_width']} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
