"""Every metric estimates a property of the raters' behaviour, not of the panel's size: raters
drawn independently from one band model give the same expected alpha whether there are 2, 3, 5
or 10 of them. Membership over the values some rater admits did not (the audit of issue 21:
-0.27 with 2 raters, 0.41 with 10); over the sub-action's fixed domain it does."""

import random
from typing import Any

import numpy as np
import pytest

from fma_bands.agreement import POOLED, Rating, agreement_report
from fma_bands.core.bands import parse_band

PANELS = (2, 3, 5, 10)
# Studies per panel size, of VIGNETTES each: more for small panels, whose alphas vary more, so
# that every mean is within a few hundredths of the population value.
STUDIES = {2: 24, 3: 18, 5: 12, 10: 10}
VIGNETTES = 100
TOLERANCE = 0.08  # seeds 1, 2 and this one: 0.054 at most; the old membership moved by 0.6


def rater_band(rng: random.Random, truth: tuple[int, int], bottom: int, top: int) -> dict:
    """One rater's reading of a true interval: each end widened one step with probability 0.3,
    then the whole shifted one step either way with probability 0.2 each, within the domain."""
    lo, hi = truth
    lo -= rng.random() < 0.3
    hi += rng.random() < 0.3
    shift = rng.choice((-1, 0, 0, 0, 1))
    lo, hi = (min(max(bottom, end + shift), top) for end in (lo, hi))
    return {"min": lo, "max": hi}


def study(rng: random.Random, n_raters: int) -> list[Rating]:
    """ESI, analgesia and admit bands of VIGNETTES vignettes, by n_raters raters drawn from one
    model; a rater whose band is the true one ACCEPTs it (the proposal), else AMENDs."""
    out = []
    for v in range(VIGNETTES):
        level, tier = rng.randint(1, 5), rng.randint(0, 3)
        esi = (level, min(5, level + rng.randint(0, 1)))
        admit = rng.random() < 0.5
        proposed: dict[str, Any] = {
            "esi_acuity": {"min": esi[0], "max": esi[1]},
            "analgesia_tier": {"min": tier, "max": tier},
            "admit": [admit],
        }
        for r in range(n_raters):
            said = admit if rng.random() < 0.8 else not admit
            raws: dict[str, Any] = {
                "esi_acuity": rater_band(rng, esi, 1, 5),
                "analgesia_tier": rater_band(rng, (tier, tier), 0, 3),
                "admit": [said] if rng.random() < 0.85 else [False, True],
            }
            for name, raw in raws.items():
                verdict = "ACCEPT" if raw == proposed[name] else "AMEND"
                out.append(Rating(f"v{v:03d}", name, f"r{r}", verdict, parse_band(name, raw)))
    return out


@pytest.fixture(scope="module")
def means() -> dict[int, dict[tuple[str, str], float]]:
    """Per panel size, each (scope, metric)'s alpha averaged over STUDIES studies."""
    rng = random.Random(20261202)
    out = {}
    for n_raters in PANELS:
        found: dict[tuple[str, str], list[float]] = {}
        for _ in range(STUDIES[n_raters]):
            report = agreement_report(study(rng, n_raters), bootstrap=0)
            for scope, by_metric in report.metrics.items():
                for metric, a in by_metric.items():
                    if a.alpha is not None:
                        found.setdefault((scope, metric), []).append(a.alpha)
        out[n_raters] = {key: float(np.mean(alphas)) for key, alphas in found.items()}
    return out


EXPECTED = [
    (scope, metric)
    for scope in ("esi_acuity", "analgesia_tier", "admit", POOLED)
    for metric in ("band", "membership", "lower", "upper", "verdict")
    if not (metric in ("lower", "upper") and scope in ("admit", POOLED))
]


@pytest.mark.parametrize(("scope", "metric"), EXPECTED)
def test_expected_alpha_does_not_move_with_the_number_of_raters(means, scope, metric):
    by_panel = [means[n][(scope, metric)] for n in PANELS]
    assert max(by_panel) - min(by_panel) < TOLERANCE, dict(zip(PANELS, by_panel, strict=True))
    if metric != "verdict":  # verdicts barely follow the vignette in this model
        assert all(0.1 < a < 0.95 for a in by_panel), by_panel  # something to measure


def test_membership_has_one_unit_per_value_of_the_domain_whatever_the_panel():
    rng = random.Random(1)
    for n_raters in (2, 10):
        report = agreement_report(study(rng, n_raters), bootstrap=0)
        assert report.metrics["esi_acuity"]["membership"].n_units == VIGNETTES * 5
        assert report.metrics["analgesia_tier"]["membership"].n_units == VIGNETTES * 4
        assert report.metrics["admit"]["membership"].n_units == VIGNETTES * 2
