"""What keeps a reading honest (issue 21): a pool is never better than inconclusive over a
sub-action at chance; rubber-stamping the proposals is cautioned, by the share left as proposed
of the reviews the alpha itself reads, with their number; declines that select the hard
bands are cautioned, by the alpha with each DECLINE counted as maximal disagreement (checked
against a plain pairwise computation); blind-mode and review-mode ratings are never pooled."""

import random

import pytest
from hypothesis import HealthCheck, assume, given, settings

from fma_bands.agreement import POOLED, Rating, agreement_report, metric_alpha, report_to_json
from fma_bands.agreement.views import alpha_rows
from fma_bands.core.actions import sub_action
from fma_bands.core.bands import parse_band
from fma_bands.core.errors import FmaBandsError
from tests.agreement.build import rate, studies
from tests.agreement.test_against_nltk import design_distance, label

SLOW = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NO_DISAGREEMENT = "no reading: no disagreement seen, which bounds nothing (no interval)"
AGREED = ["esi_acuity", "analgesia_tier", "admit", "referral", "escalate_icu", "urgency_score"]


# --- a pool over a sub-action at chance ----------------------------------------------------------


def chance_beside_agreement(n: int = 40, seed: int = 4) -> list[Rating]:
    """Three raters agree on six sub-actions, but for rater c's slips on the ordinal ones (a
    level off on two vignettes in twenty: agreement seen perfect gives no interval), and
    choose follow-up days at random."""
    rng = random.Random(seed)
    out = []
    for v in range(n):
        slip = {
            "esi_acuity": [v % 5 + 2] if v % 20 == 3 else None,
            "analgesia_tier": [(v + 1) % 4] if v % 20 == 7 else None,
        }
        truth = {
            "esi_acuity": [1 + v % 5],
            "analgesia_tier": [v % 4],
            "admit": [v % 2 == 0],
            "referral": [v % 3 == 0],
            "escalate_icu": [v % 4 == 0],
            "urgency_score": {"min": v % 7, "max": v % 7 + 2},
        }
        for r in "abc":
            for sub, raw in truth.items():
                if r == "c" and slip.get(sub):
                    raw = slip[sub]
                out.append(rate(f"v{v:03d}", sub, r, raw))
            lo = rng.randint(1, 20)
            out.append(rate(f"v{v:03d}", "followup_days", r, {"min": lo, "max": lo + 6}))
    return out


def test_a_pool_is_never_reliable_over_a_sub_action_that_reads_unreliable():
    # The audit's case: pooled 0.850 "reliable" while follow-up days read -0.007.
    report = agreement_report(chance_beside_agreement(), bootstrap=300, seed=1)
    followup, pooled = report.metrics["followup_days"]["band"], report.metrics[POOLED]["band"]
    assert followup.reading == "unreliable"
    assert pooled.plain_reading in ("reliable", "tentative"), pooled  # its own interval
    assert pooled.reading == f"inconclusive: {sub_action('followup_days').label} reads unreliable"
    assert (pooled.weakest, pooled.weakest_alpha) == ("followup_days", followup.alpha)
    data = report_to_json(report)["metrics"][POOLED]["band"]
    assert (data["reading"], data["weakest"], data["weakest_reading"]) == (
        pooled.reading,
        "followup_days",
        "unreliable",
    )
    [row] = [r for r in alpha_rows(report, "band") if r["sub-action"].startswith("pooled")]
    assert (
        row["weakest sub-action"] == f"{sub_action('followup_days').label} ({followup.alpha:.3f})"
    )


def test_a_pool_names_its_weakest_sub_action_without_capping_when_none_is_unreliable():
    ratings = [r for r in chance_beside_agreement() if r.sub_action != "followup_days"]
    pooled = agreement_report(ratings, bootstrap=200, seed=1).metrics[POOLED]["band"]
    assert pooled.reading == pooled.plain_reading == "reliable"
    assert pooled.weakest in AGREED and pooled.weakest_reading == "tentative"


# --- rubber-stamping -----------------------------------------------------------------------------


def stamped(n: int = 20, amend_to_proposal: bool = False) -> list[Rating]:
    """Three raters keep every proposal: ACCEPT, or AMEND to the proposal's own band."""
    out = []
    for v in range(n):
        proposal = parse_band("esi_acuity", [1 + v % 5])
        for r in "abc":
            verdict = "AMEND" if amend_to_proposal and r == "c" else "ACCEPT"
            band = parse_band("esi_acuity", {"min": 1 + v % 5, "max": 1 + v % 5})
            out.append(Rating(f"v{v:03d}", "esi_acuity", r, verdict, band, proposal=proposal))
    return out


@pytest.mark.parametrize("amend_to_proposal", [False, True])
def test_rubber_stamping_is_cautioned_beside_a_perfect_alpha(amend_to_proposal):
    a = metric_alpha("band", stamped(amend_to_proposal=amend_to_proposal), bootstrap=200)
    # No disagreement seen on 20 vignettes is no proof of none: no interval, so no reading.
    assert (a.alpha, a.ci_low, a.ci_high) == (1.0, None, None)
    assert a.reading == NO_DISAGREEMENT
    assert a.share_unchanged == 1.0
    assert a.share_accept == pytest.approx(2 / 3 if amend_to_proposal else 1.0)
    assert a.n_reviewed == 60  # 20 bands, three raters each
    [caution] = [w for w in a.warnings if "proposal unchanged" in w]
    # Reviews, counted, and said to be those of the alpha's own bands: not "bands".
    assert caution.startswith(
        "100% of the 60 reviews on the bands this alpha reads leave the proposal unchanged"
    )


def test_a_share_just_above_the_line_is_said_above_it():
    # 123 of 153 bands left as proposed is 80.4%: "80% ... above 80%" would contradict itself.
    ratings = [
        Rating(r.vignette_id, r.sub_action, "c", "AMEND", r.band)
        if r.rater == "c" and int(r.vignette_id[1:]) >= 21
        else r
        for r in stamped(n=51)
    ]
    a = metric_alpha("band", ratings, bootstrap=50)
    assert a.share_unchanged == pytest.approx(123 / 153)
    [caution] = [w for w in a.warnings if "proposal unchanged" in w]
    assert caution.startswith("80.4% of the 153 reviews") and "above 80%" in caution


def test_the_caution_never_says_all_when_one_review_changed_the_proposal():
    # 199 of 200 reviews keep the proposal: 99.5%, which is not 100%.
    ratings = [
        Rating(r.vignette_id, r.sub_action, r.rater, "AMEND", r.band)
        if (r.vignette_id, r.rater) == ("v000", "b")
        else r
        for r in stamped(n=100)
        if r.rater != "c"
    ]
    a = metric_alpha("band", ratings, bootstrap=0)
    assert (a.n_reviewed, a.share_unchanged) == (200, 199 / 200)
    [caution] = [w for w in a.warnings if "proposal unchanged" in w]
    assert caution.startswith("over 99% of the 200 reviews") and "(over 99% ACCEPT)" in caution
    assert alpha_rows(agreement_report(ratings, bootstrap=0))[0]["left as proposed"] == (
        "over 99% of 200 reviews"
    )


def test_independent_amendments_are_not_cautioned():
    ratings = [
        Rating(r.vignette_id, r.sub_action, r.rater, "AMEND", r.band, proposal=None)
        for r in stamped()
    ]
    a = metric_alpha("band", ratings, bootstrap=200)
    assert (a.share_accept, a.share_unchanged) == (0.0, 0.0)
    assert not [w for w in a.warnings if "proposal unchanged" in w]


def test_blind_mode_has_no_share_left_as_proposed():
    blind = [
        rate(f"v{v}", "esi_acuity", r, [1 + v % 5], mode="blind") for v in range(12) for r in "ab"
    ]
    a = metric_alpha("band", blind, bootstrap=100)
    assert (a.mode, a.share_unchanged, a.share_accept, a.n_reviewed) == ("blind", None, None, None)


def kept(v: str, sub: str, rater: str, verdict: str, raw, proposal) -> Rating:
    """A review-mode rating of `raw` (None: DECLINE) shown the proposal `proposal`."""
    band = None if raw is None else parse_band(sub, raw)
    return Rating(v, sub, rater, verdict, band, proposal=parse_band(sub, proposal))


def beside_single_reviews() -> list[Rating]:
    """Admission: two bands with two raters (three of their four reviews keep the proposal) and
    one band only rater a reviewed (kept); ESI: bands each only one rater reviewed, and one
    a rater ACCEPTs and another DECLINEs; referral: one band both raters ACCEPT."""
    return [
        kept("v1", "admit", "a", "ACCEPT", [True], [True]),
        kept("v1", "admit", "b", "ACCEPT", [True], [True]),
        kept("v2", "admit", "a", "ACCEPT", [True], [True]),
        kept("v2", "admit", "b", "AMEND", [False], [True]),
        kept("v3", "admit", "a", "ACCEPT", [False], [False]),
        kept("v1", "esi_acuity", "a", "ACCEPT", [2], [2]),
        kept("v2", "esi_acuity", "b", "ACCEPT", [3], [3]),
        kept("v3", "esi_acuity", "a", "ACCEPT", [3], [3]),
        kept("v3", "esi_acuity", "b", "DECLINE", None, [3]),
        kept("v1", "referral", "a", "ACCEPT", [True], [True]),
        kept("v1", "referral", "b", "ACCEPT", [True], [True]),
    ]


def test_the_share_left_as_proposed_is_over_the_reviews_the_alpha_reads():
    data = report_to_json(agreement_report(beside_single_reviews(), bootstrap=0))["metrics"]

    def share(scope, metric="band"):
        a = data[scope][metric]
        return a["n_bands"], a["n_reviewed"], a["share_unchanged"], a["share_accept"]

    # Over the 2 bands the alpha reads: 3 of 4 reviews, not 4 of 5 with v3's lone review.
    assert share("admit") == (2, 4, 0.75, 0.75)
    # No band has two raters: no alpha, and no share beside it (not "100%, all by ACCEPT").
    assert data["esi_acuity"]["band"]["alpha"] is None
    assert share("esi_acuity") == (0, 0, None, None)
    assert share("referral") == (1, 2, 1.0, 1.0)
    # The pool reads the sub-actions whose values vary: admission's bands, not referral's.
    assert share("pooled") == (2, 4, 0.75, 0.75)
    # Verdicts pair an ACCEPT with a DECLINE: one review with a band on the one band read.
    assert share("esi_acuity", "verdict") == (1, 1, 1.0, 1.0)


@SLOW
@given(studies(["esi_acuity", "admit", "orders"], max_raters=5))
def test_the_share_counts_exactly_the_reviews_on_the_bands_counted(ratings: list[Rating]) -> None:
    groups: dict[tuple[str, str], list[Rating]] = {}
    for r in ratings:
        groups.setdefault((r.vignette_id, r.sub_action), []).append(r)
    metrics = agreement_report(ratings, bootstrap=0).metrics
    for name in {r.sub_action for r in ratings}:
        read = [
            g for (_, s), g in groups.items() if s == name and sum(bool(r.values) for r in g) > 1
        ]
        reviews = [r for g in read for r in g if r.values]
        a = metrics[name]["band"]
        assert (a.n_bands, a.n_reviewed) == (len(read), len(reviews))
        accepted = sum(r.verdict == "ACCEPT" for r in reviews)
        assert a.share_accept == (accepted / len(reviews) if reviews else None)


# --- declines ------------------------------------------------------------------------------------


def hard_bands_declined(declined: bool) -> list[Rating]:
    """Easy bands on which three raters agree, and hard ones on which they do not; with
    `declined`, raters b and c DECLINE exactly the hard ones."""
    out = []
    for v in range(30):
        vid, hard = f"v{v:03d}", v % 3 == 0
        for i, r in enumerate("abc"):
            if hard and declined and r != "a":
                out.append(rate(vid, "esi_acuity", r))
                continue
            level = 1 + (v + (i if hard else 0)) % 5
            out.append(rate(vid, "esi_acuity", r, [level]))
    return out


def test_declines_on_exactly_the_hard_bands_are_cautioned():
    before = metric_alpha("band", hard_bands_declined(False), bootstrap=300)
    after = metric_alpha("band", hard_bands_declined(True), bootstrap=300)
    assert before.reading != "reliable"
    # As missing data the declines leave only the easy bands: perfect agreement.
    assert (after.alpha, after.reading, after.n_declined) == (1.0, NO_DISAGREEMENT, 20)
    assert after.alpha_declines_as_disagreement < 0.667
    assert after.reading_declines_as_disagreement != "reliable"
    [caution] = [w for w in after.warnings if "maximal disagreement" in w]
    assert "20 DECLINEs" in caution and f"not {NO_DISAGREEMENT!r}" in caution
    row = alpha_rows(agreement_report(hard_bands_declined(True), bootstrap=300), "band")[0]
    assert row["declines as disagreement"].startswith(
        f"{after.reading_declines_as_disagreement} (alpha "
        f"{after.alpha_declines_as_disagreement:.3f}, "
    )


def test_without_declines_the_two_alphas_are_one():
    a = metric_alpha("band", hard_bands_declined(False), bootstrap=200)
    assert (a.alpha_declines_as_disagreement, a.ci_low_declines_as_disagreement) == (
        a.alpha,
        a.ci_low,
    )
    assert not [w for w in a.warnings if "maximal disagreement" in w]
    verdict = metric_alpha("verdict", hard_bands_declined(True), bootstrap=0)
    assert verdict.alpha_declines_as_disagreement is None  # DECLINE is a verdict category


DECLINED = object()


def ordinal_distance(values):
    """Krippendorff's ordinal distance over the pairable values `values` (DECLINE left out)."""
    counts = {c: values.count(c) for c in set(values)}
    order = sorted(counts)

    def d(c, k):
        lo, hi = sorted((c, k))
        between = sum(counts[g] for g in order if lo <= g <= hi)
        return (between - (counts[lo] + counts[hi]) / 2) ** 2

    return d


def pairwise_alpha(units, metric_distance, bounded):
    """1 - D_o / D_e written out pair by pair (Krippendorff 2011), each DECLINE at the largest
    distance (1 on a `bounded` scale, else the largest between the values given) from every
    value and every other DECLINE."""
    units = [u for u in units if len(u) >= 2]
    every = [x for u in units for x in u]
    given_values = [x for x in every if x is not DECLINED]
    d = metric_distance(given_values)
    largest = max((d(a, b) for a in given_values for b in given_values), default=0.0)
    if bounded or largest == 0:
        largest = 1.0

    def distance(a, b):
        return largest if a is DECLINED or b is DECLINED else d(a, b)

    observed = sum(
        sum(distance(a, b) for i, a in enumerate(u) for j, b in enumerate(u) if i != j)
        / (len(u) - 1)
        for u in units
    )
    n = len(every)
    expected = sum(
        distance(a, b) for i, a in enumerate(every) for j, b in enumerate(every) if i != j
    )
    return None if expected == 0 else 1 - observed / (expected / (n - 1))


def declined_units(metric, ratings):
    bands = {}
    for r in ratings:
        bands.setdefault(r.vignette_id, []).append(r)
    units = []
    domain = {"esi_acuity": range(1, 6), "admit": (False, True)}
    for group in bands.values():
        rated = [r for r in group if r.verdict != "DECLINE"]
        declines = [DECLINED] * (len(group) - len(rated))
        if metric == "band":
            units.append([label(r) for r in rated] + declines)
        elif metric == "membership":
            for value in domain[group[0].sub_action]:
                units.append([value in r.band.values() for r in rated] + declines)
        else:
            pick = min if metric == "lower" else max
            units.append([pick(r.band.values()) for r in rated] + declines)
    return units


def distances(metric, sub):
    if metric == "band":
        return lambda values: design_distance
    if metric == "membership":
        return lambda values: lambda a, b: float(a != b)
    if sub == "esi_acuity":
        return ordinal_distance
    return lambda values: lambda a, b: float(a - b) ** 2


@SLOW
@given(
    studies(["esi_acuity"], max_vignettes=6)
    | studies(["followup_days"], max_vignettes=6)
    | studies(["orders"], max_vignettes=6)
    | studies(["admit"], max_vignettes=6)
)
def test_declines_as_maximal_disagreement_equal_a_pairwise_computation(ratings):
    assume(ratings)
    sub = ratings[0].sub_action
    metrics = {"orders": ["band"], "admit": ["band", "membership"]}.get(
        sub,
        ["band", "membership", "lower", "upper"]
        if sub == "esi_acuity"
        else ["band", "lower", "upper"],
    )
    for metric in metrics:
        a = metric_alpha(metric, ratings, bootstrap=0)
        bounded = metric in ("band", "membership")  # Jaccard and nominal: at most 1
        want = pairwise_alpha(declined_units(metric, ratings), distances(metric, sub), bounded)
        got = a.alpha_declines_as_disagreement
        if a.alpha is None:
            continue  # computed only beside a defined alpha
        assume(want is not None)
        assert got == pytest.approx(want, abs=1e-9), (metric, a.n_declined)


# --- modes ---------------------------------------------------------------------------------------


def test_blind_and_review_ratings_are_never_pooled():
    review = [rate(f"v{v}", "esi_acuity", r, [1 + v % 5]) for v in range(12) for r in "ab"]
    blind = [
        rate(f"v{v}", "esi_acuity", r, [1 + (v + i) % 5], mode="blind")
        for v in range(12)
        for i, r in enumerate("cd")
    ]
    with pytest.raises(FmaBandsError, match="never pooled"):
        metric_alpha("band", review + blind)
    report = agreement_report(review + blind, bootstrap=100)
    assert report.modes == ("review", "blind")
    apart = report.metrics["review:esi_acuity"]["band"], report.metrics["blind:esi_acuity"]["band"]
    assert [(a.mode, a.n_raters) for a in apart] == [("review", 2), ("blind", 2)]
    assert apart[0].alpha == metric_alpha("band", review, bootstrap=0).alpha == 1.0
    assert apart[1].alpha == metric_alpha("band", blind, bootstrap=0).alpha
    assert "esi_acuity" not in report.metrics and POOLED not in report.metrics
    labels = {r["sub-action"] for r in alpha_rows(report, "band")}
    assert "ESI acuity level, blind mode" in labels and "ESI acuity level, review mode" in labels


# --- panels of different sizes -------------------------------------------------------------------


def panels(esi_raters: str, admit_raters: str, n: int = 30) -> list[Rating]:
    """Raters who slip now and then on ESI and on admission, each sub-action rated by its own
    panel."""
    out = []
    for v in range(n):
        for i, r in enumerate(esi_raters):
            out.append(rate(f"v{v:03d}", "esi_acuity", r, [1 + (v + (v % 5 == i)) % 5]))
        for i, r in enumerate(admit_raters):
            out.append(rate(f"v{v:03d}", "admit", r, [(v % 2 == 0) != (v % 7 == i)]))
    return out


def test_a_pool_over_panels_of_different_sizes_says_it_leans_to_the_larger():
    uneven = agreement_report(panels("ab", "cdefgh"), bootstrap=100).metrics[POOLED]["band"]
    [caution] = [w for w in uneven.warnings if "panels differ in size" in w]
    assert "2.0 raters a band for ESI acuity level" in caution
    assert f"6.0 for {sub_action('admit').label}" in caution
    even = agreement_report(panels("ab", "cd"), bootstrap=100).metrics[POOLED]["band"]
    assert not [w for w in even.warnings if "panels differ in size" in w]
