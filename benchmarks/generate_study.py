"""A seeded synthetic study for benchmarking the agreement layer: vignettes x raters over all
nine sub-actions, raters mostly near a true band, some amending, a few declining.

Run `python -m benchmarks.generate_study` from the repository root for a summary.
"""

from __future__ import annotations

import random
from collections import Counter

from fma_bands.agreement import Rating

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
DOMAINS = {
    "esi_acuity": tuple(range(1, 6)),
    "analgesia_tier": tuple(range(4)),
    **{b: (False, True) for b in BOOLEANS},
}
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


def _ordinal(rng: random.Random, floor: int, ceiling: int):
    """A true band on a small ordinal scale and a function drawing one rater's reading of it."""
    centre = rng.randint(floor, ceiling)
    true = _interval(centre, centre + rng.choice((0, 0, 1)), floor, ceiling)
    as_interval = rng.random() < 0.5

    def read(rng: random.Random):
        lo, hi = _nudge(rng, true, 1, 0.15, floor, ceiling)
        if as_interval:
            return frozenset(range(lo, hi + 1)), (lo, hi)
        values = set(range(lo, hi + 1))
        if rng.random() < 0.05:  # now and then a non-contiguous set, e.g. {1, 3}
            values.add(rng.randint(floor, ceiling))
        return frozenset(values), None

    return read


def _urgency(rng: random.Random):
    lo = 5 * rng.randint(2, 15)
    true = _interval(lo, lo + 5 * rng.randint(1, 6), 0, 100)

    def read(rng: random.Random):
        lo, hi = _nudge(rng, true, 5, 0.3, 0, 100)
        return frozenset(range(lo, hi + 1)), (lo, hi)

    return read


def _followup(rng: random.Random):
    i = rng.randint(1, len(FOLLOWUP_TICKS) - 4)
    true = (i, i + rng.randint(1, 3))

    def read(rng: random.Random):
        a, b = _nudge(rng, true, 1, 0.3, 0, len(FOLLOWUP_TICKS) - 1)
        lo, hi = FOLLOWUP_TICKS[a], FOLLOWUP_TICKS[b]
        return frozenset(range(lo, hi + 1)), (lo, hi)

    return read


def _orders(rng: random.Random):
    keys = rng.sample(ORDERABLES, 6)
    true = set(rng.sample(keys, rng.randint(2, 4)))

    def read(rng: random.Random):
        chosen = {k for k in keys if (k in true) != (rng.random() < 0.08)}
        return frozenset(chosen or true), None

    return read


def _boolean(rng: random.Random):
    options = (frozenset({True}), frozenset({False}), frozenset({False, True}))
    true = rng.choices(options, weights=(4, 4, 2))[0]

    def read(rng: random.Random):
        return (rng.choice(options) if rng.random() < 0.12 else true), None

    return read


def _readers(rng: random.Random) -> dict:
    return {
        "esi_acuity": _ordinal(rng, 1, 5),
        "urgency_score": _urgency(rng),
        "orders": _orders(rng),
        **{b: _boolean(rng) for b in BOOLEANS},
        "analgesia_tier": _ordinal(rng, 0, 3),
        "followup_days": _followup(rng),
    }


def generate_study(
    n_vignettes: int = 300, n_raters: int = 10, seed: int = 20261129
) -> tuple[list[Rating], dict[str, tuple]]:
    """(ratings, domains) for a review-mode study: ACCEPT when a rater's band equals the proposal
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
                values, interval = proposal if rng.random() < 0.5 else read(rng)
                verdict = "ACCEPT" if (values, interval) == proposal else "AMEND"
                ratings.append(Rating(vignette, sub, rater, verdict, values, interval))
    return ratings, dict(DOMAINS)


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
                    frozenset(range(a, b + 1)),
                    (a, b),
                )
            )
    return ratings


def main() -> None:
    ratings, _ = generate_study()
    print(f"{len(ratings)} ratings")
    verdicts = Counter((r.sub_action, r.verdict) for r in ratings)
    for sub in sorted({r.sub_action for r in ratings}):
        distinct = len({r.values for r in ratings if r.sub_action == sub and r.values is not None})
        counts = ", ".join(f"{v} {verdicts[(sub, v)]}" for v in ("ACCEPT", "AMEND", "DECLINE"))
        print(f"{sub}: {distinct} distinct bands; {counts}")


if __name__ == "__main__":
    main()
