"""How often the agreement report's 95% interval covers the true alpha (a simulation, not a unit
test): studies of n vignettes drawn from one model with one fixed panel of raters, each study's
report computed as the app computes it, the interval checked against the alpha of the same model
on a very large number of vignettes. Prints markdown tables; docs/statistics.md has the results.

Run from the repository root: `python -m benchmarks.bench_coverage` (--replicates, --sizes).
"""

import argparse
import math
import os
import random
import statistics
import time
from collections.abc import Callable

from fma_bands.agreement import POOLED, Rating, agreement_report
from fma_bands.core.bands import AnyBand, IntervalBand, MultilabelBand, SetBand

RATERS = ("rater-a", "rater-b", "rater-c")
# Each rater's habits, held fixed across studies: how often they move a bound, and which way.
WIDENS = {"rater-a": 0.0, "rater-b": 0.25, "rater-c": 0.1}
NOISE = {"rater-a": 0.2, "rater-b": 0.3, "rater-c": 0.4}
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


def _clip(value: int, lo: int, hi: int) -> int:
    return max(lo, min(hi, value))


def _step(rng: random.Random, rater: str) -> int:
    """A bound as one rater reads it: most often as it is, else one step off."""
    if rng.random() < WIDENS[rater]:
        return 1
    return rng.choice((-1, 1)) if rng.random() < NOISE[rater] else 0


def _vignette(rng: random.Random, vid: str) -> list[Rating]:
    """One vignette's truth, the proposal (the truth as written) and each rater's reading."""
    centre = rng.randint(1, 4)
    esi = (centre, centre + rng.choice((0, 1)))
    days = rng.randint(1, 8)
    follow = (days, days + rng.randint(1, 3))
    defensible = set(rng.sample(KEYS, rng.randint(2, 4)))
    required = set(rng.sample(sorted(defensible), 1))
    admit = rng.choice(((True,), (False,), (False, True)))

    def readings(rater: str) -> dict[str, AnyBand]:
        lo = _clip(esi[0] - _step(rng, rater), 1, 5)
        hi = _clip(esi[1] + _step(rng, rater), lo, 5)
        esi_band: AnyBand = IntervalBand(sub_action="esi_acuity", min=lo, max=hi)
        if rng.random() < 0.5:  # as many raters write ESI as a set
            esi_band = SetBand(sub_action="esi_acuity", members=tuple(range(lo, hi + 1)))
        a = _clip(follow[0] - _step(rng, rater), 0, len(TICKS) - 1)
        b = _clip(follow[1] + _step(rng, rater), a, len(TICKS) - 1)
        chosen = {k for k in KEYS if (k in defensible) != (rng.random() < NOISE[rater] / 3)}
        chosen = chosen or set(defensible)
        needed = {k for k in chosen if (k in required) != (rng.random() < NOISE[rater] / 3)}
        flip = rng.random() < NOISE[rater] / 2
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

    proposal = {
        "esi_acuity": IntervalBand(sub_action="esi_acuity", min=esi[0], max=esi[1]),
        "followup_days": IntervalBand(
            sub_action="followup_days", min=TICKS[follow[0]], max=TICKS[follow[1]]
        ),
        "admit": SetBand(sub_action="admit", members=admit),
    }
    out = []
    for rater in RATERS:
        for name, band in readings(rater).items():
            if rng.random() < P_DECLINE:
                out.append(Rating(vid, name, rater, "DECLINE", None))
                continue
            accepted = proposal.get(name) is not None and proposal[name].values() == band.values()
            out.append(Rating(vid, name, rater, "ACCEPT" if accepted else "AMEND", band))
    return out


def study(n_vignettes: int, seed: int) -> list[Rating]:
    rng = random.Random(seed)
    return [r for v in range(n_vignettes) for r in _vignette(rng, f"v{seed}-{v:05d}")]


def truth(n_vignettes: int, seed: int) -> dict[tuple[str, str], float]:
    report = agreement_report(study(n_vignettes, seed), bootstrap=0)
    true: dict[tuple[str, str], float] = {}
    for scope, metric in FOLLOWED:
        alpha = report.metrics[scope][metric].alpha
        if alpha is None:
            raise SystemExit(f"the model gives no {metric} alpha for {scope}: nothing to cover")
        true[(scope, metric)] = alpha
    return true


def wilson(covered: int, n: int) -> str:
    """The 95% Wilson interval of a proportion, for the Monte Carlo error of a coverage."""
    if n == 0:
        return "-"
    p, z = covered / n, 1.96
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return f"{100 * (centre - half):.1f} to {100 * (centre + half):.1f}"


def simulate(
    size: int,
    replicates: int,
    B: int,
    true: dict[tuple[str, str], float],
    progress: Callable[[int], None],
) -> list[str]:
    hits: dict[tuple[str, str], list[bool]] = {key: [] for key in FOLLOWED}
    widths: dict[tuple[str, str], list[float]] = {key: [] for key in FOLLOWED}
    missing = dict.fromkeys(FOLLOWED, 0)
    for k in range(replicates):
        report = agreement_report(study(size, 10_000 * size + k), bootstrap=B, seed=k)
        for key in FOLLOWED:
            a = report.metrics[key[0]][key[1]]
            if a.ci_low is None or a.ci_high is None:
                missing[key] += 1
                continue
            hits[key].append(a.ci_low <= true[key] <= a.ci_high)
            widths[key].append(a.ci_high - a.ci_low)
        progress(k)
    rows = []
    for key in FOLLOWED:
        n = len(hits[key])
        covered = sum(hits[key])
        rows.append(
            f"| {key[1]} | {key[0]} | {size} | {true[key]:.3f} | "
            f"{100 * covered / n:.1f}% | {wilson(covered, n)} | "
            f"{statistics.mean(widths[key]):.3f} | {missing[key]} |"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--replicates", type=int, default=400)
    parser.add_argument("--sizes", default="10,20,30,50,100,300")
    parser.add_argument("--population", type=int, default=20_000)
    parser.add_argument("--B", type=int, default=1000)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]

    started = time.perf_counter()
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    true = truth(args.population, seed=1)
    print(f"true alphas from {args.population} vignettes in {time.perf_counter() - started:.0f} s")
    print(
        "\n| metric | scope | vignettes | true alpha | coverage of the 95% interval "
        "| its 95% Monte Carlo interval | mean width | studies without an interval |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for size in sizes:
        rows = simulate(size, args.replicates, args.B, true, lambda k: None)
        print("\n".join(rows), flush=True)
    print(
        f"\n{args.replicates} studies per size, B={args.B}; "
        f"{time.perf_counter() - started:.0f} s in all; "
        f"load average at end: {os.getloadavg()[0]:.2f}"
    )


if __name__ == "__main__":
    main()
