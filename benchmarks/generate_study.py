"""A seeded synthetic study for benchmarking the agreement layer: vignettes x raters over all
nine sub-actions, raters mostly near a true band, some amending, a few declining.

Run `python -m benchmarks.generate_study` from the repository root for a summary.
"""

from __future__ import annotations

import random
from collections import Counter

from fma_bands.agreement import Rating
from fma_bands.core.bands import AnyBand, IntervalBand, MultilabelBand, SetBand

ORDERABLES = (
    "cbc",
    "bmp",
    "troponin",
    "ecg",
    "cxr",
    "urinalysis",
    "lipase",
    "crp",
    "lactate",
    "ct_abdomen",
    "lft",
    "bnp",
    "urine_culture",
    "ultrasound_abdomen",
    "orthostatic_vitals",
    "ct_head",
)
BOOLEANS = ("admit", "escalate_icu", "controlled_substance_caution", "referral")
# Clinicians write follow-up in familiar steps, not arbitrary day counts.
FOLLOWUP_TICKS = (0, 1, 2, 3, 5, 7, 10, 14, 21, 28, 30, 42, 60, 90, 180, 365)
P_DECLINE = 0.05


def _interval(lo: int, hi: int, floor: int, ceiling: int) -> tuple[int, int]:
    lo, hi = max(floor, min(lo, ceiling)), max(floor, min(hi, ceiling))
    return (lo, hi) if lo <= hi else (hi, lo)


def _nudge(rng: random.Random, interval: tuple[int, int], step: int, p: float, floor, ceiling):
    lo, hi = interval
    if rng.random() < p:
        lo += rng.choice((-step, step))
    if rng.random() < p:
        hi += rng.choice((-step, step))
    return _interval(lo, hi, floor, ceiling)


def _ordinal(rng: random.Random, name: str, floor: int, ceiling: int):
    """A true band on a small ordinal scale and a function drawing one rater's reading of it."""
    centre = rng.randint(floor, ceiling)
    true = _interval(centre, centre + rng.choice((0, 0, 1)), floor, ceiling)
    as_interval = rng.random() < 0.5

    def read(rng: random.Random) -> AnyBand:
        lo, hi = _nudge(rng, true, 1, 0.15, floor, ceiling)
        if as_interval:
            return IntervalBand(sub_action=name, min=lo, max=hi)
        values = set(range(lo, hi + 1))
        if rng.random() < 0.05:  # now and then a non-contiguous set, e.g. {1, 3}
            values.add(rng.randint(floor, ceiling))
        return SetBand(sub_action=name, members=tuple(sorted(values)))

    return read


def _urgency(rng: random.Random):
    lo = 5 * rng.randint(2, 15)
    true = _interval(lo, lo + 5 * rng.randint(1, 6), 0, 100)

    def read(rng: random.Random) -> AnyBand:
        lo, hi = _nudge(rng, true, 5, 0.3, 0, 100)
        return IntervalBand(sub_action="urgency_score", min=lo, max=hi)

    return read


def _followup(rng: random.Random):
    i = rng.randint(1, len(FOLLOWUP_TICKS) - 4)
    true = (i, i + rng.randint(1, 3))

    def read(rng: random.Random) -> AnyBand:
        a, b = _nudge(rng, true, 1, 0.3, 0, len(FOLLOWUP_TICKS) - 1)
        return IntervalBand(
            sub_action="followup_days", min=FOLLOWUP_TICKS[a], max=FOLLOWUP_TICKS[b]
        )

    return read


def _orders(rng: random.Random):
    keys = rng.sample(ORDERABLES, 6)
    true = set(rng.sample(keys, rng.randint(2, 4)))
    needed = set(rng.sample(sorted(true), 1))

    def read(rng: random.Random) -> AnyBand:
        chosen = {k for k in keys if (k in true) != (rng.random() < 0.08)} or true
        # Required orders: the true one(s) where still defensible, now and then one more or less.
        required = {k for k in sorted(chosen) if (k in needed) != (rng.random() < 0.1)}
        return MultilabelBand(
            sub_action="orders", required=tuple(sorted(required)), defensible=tuple(sorted(chosen))
        )

    return read


def _boolean(rng: random.Random, name: str):
    options = [SetBand(sub_action=name, members=m) for m in ((True,), (False,), (False, True))]
    true = rng.choices(options, weights=(4, 4, 2))[0]

    def read(rng: random.Random) -> AnyBand:
        return rng.choice(options) if rng.random() < 0.12 else true

    return read


def _readers(rng: random.Random) -> dict:
    return {
        "esi_acuity": _ordinal(rng, "esi_acuity", 1, 5),
        "urgency_score": _urgency(rng),
        "orders": _orders(rng),
        **{b: _boolean(rng, b) for b in BOOLEANS},
        "analgesia_tier": _ordinal(rng, "analgesia_tier", 0, 3),
        "followup_days": _followup(rng),
    }


def generate_study(
    n_vignettes: int = 300, n_raters: int = 10, seed: int = 20261129
) -> list[Rating]:
    """The ratings of a review-mode study: ACCEPT when a rater's band equals the proposal
    (itself one reading of the true band), AMEND otherwise, DECLINE with probability 5%."""
    rng = random.Random(seed)
    ratings = []
    for v in range(n_vignettes):
        vignette = f"synthetic_{v:04d}"
        for sub, read in _readers(rng).items():
            proposal = read(rng)
            for r in range(n_raters):
                rater = f"adjudicator-{r + 1:02d}"
                if rng.random() < P_DECLINE:
                    ratings.append(Rating(vignette, sub, rater, "DECLINE", None))
                    continue
                band = proposal if rng.random() < 0.5 else read(rng)
                verdict = "ACCEPT" if band == proposal else "AMEND"
                ratings.append(Rating(vignette, sub, rater, verdict, band))
    return ratings


def generate_free_followup(
    n_vignettes: int = 300, n_raters: int = 10, seed: int = 20261129
) -> list[Rating]:
    """A stress case, not a realistic one: follow-up intervals typed as free day counts, so
    nearly every rating is a distinct set (S in the thousands)."""
    rng = random.Random(seed)
    ratings = []
    for v in range(n_vignettes):
        lo = rng.randint(1, 60)
        hi = lo + rng.randint(7, 60)
        for r in range(n_raters):
            a = max(0, lo + round(rng.gauss(0, 3)))
            b = max(a, hi + round(rng.gauss(0, 5)))
            ratings.append(
                Rating(
                    f"synthetic_{v:04d}",
                    "followup_days",
                    f"adjudicator-{r + 1:02d}",
                    "AMEND",
                    IntervalBand(sub_action="followup_days", min=min(a, 365), max=min(b, 365)),
                )
            )
    return ratings


def main() -> None:
    ratings = generate_study()
    print(f"{len(ratings)} ratings")
    verdicts = Counter((r.sub_action, r.verdict) for r in ratings)
    for sub in sorted({r.sub_action for r in ratings}):
        distinct = len({r.band for r in ratings if r.sub_action == sub and r.band is not None})
        counts = ", ".join(f"{v} {verdicts[(sub, v)]}" for v in ("ACCEPT", "AMEND", "DECLINE"))
        print(f"{sub}: {distinct} distinct bands; {counts}")


if __name__ == "__main__":
    main()
