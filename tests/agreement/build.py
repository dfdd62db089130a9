"""Ratings for the agreement tests: typed bands from the forms people write, and hypothesis
strategies for studies with missing data, declines and 2 to 10 raters."""

from hypothesis import strategies as st

from fma_bands.agreement import Rating
from fma_bands.core.bands import parse_band

ORDERS = ("cbc", "bmp", "ecg", "troponin", "cxr")


def rate(vignette, sub, rater, raw=None, verdict=None, mode="review", required=None) -> Rating:
    """A rating of `raw` (a list, {min, max}, or for orders {required, defensible}); no raw is a
    DECLINE."""
    if raw is None:
        return Rating(vignette, sub, rater, verdict or "DECLINE", None, mode)
    band = parse_band(sub, raw, required=required)
    return Rating(vignette, sub, rater, verdict or "AMEND", band, mode)


def table(sub, rows, form="set") -> list[Rating]:
    """Ratings from a raters x units table of single values (None: missing), as in Krippendorff's
    examples: each value written as a one-value set, or as {min: v, max: v}."""
    out = []
    for i, row in enumerate(rows):
        for j, value in enumerate(row):
            if value is not None:
                raw = [value] if form == "set" else {"min": value, "max": value}
                out.append(rate(f"u{j:03d}", sub, f"rater-{i}", raw))
    return out


@st.composite
def raw_band(draw, sub):
    """One band of `sub` in a form a rater may write."""
    if sub == "orders":
        defensible = draw(st.lists(st.sampled_from(ORDERS), min_size=1, max_size=4, unique=True))
        required = draw(st.lists(st.sampled_from(defensible), max_size=2, unique=True))
        return {"required": required, "defensible": defensible}
    if sub in ("admit", "referral", "escalate_icu", "controlled_substance_caution"):
        return draw(st.lists(st.booleans(), min_size=1, max_size=2, unique=True))
    if sub in ("urgency_score", "followup_days"):
        lo = draw(st.integers(0, 40))
        return {"min": lo, "max": lo + draw(st.integers(0, 12))}
    top = 5 if sub == "esi_acuity" else 3
    bottom = 1 if sub == "esi_acuity" else 0
    if draw(st.booleans()):
        lo = draw(st.integers(bottom, top))
        return {"min": lo, "max": draw(st.integers(lo, top))}
    return draw(st.lists(st.integers(bottom, top), min_size=1, max_size=3, unique=True))


@st.composite
def studies(draw, subs, *, min_raters=2, max_raters=10, max_vignettes=8, modes=("review",)):
    """Ratings of the sub-actions `subs`: some raters miss some bands, some DECLINE."""
    n_raters = draw(st.integers(min_raters, max_raters))
    ratings = []
    for v in range(draw(st.integers(2, max_vignettes))):
        for sub in draw(st.lists(st.sampled_from(subs), min_size=1, unique=True)):
            for r in range(n_raters):
                if draw(st.integers(0, 4)) == 0:
                    continue  # this rater never rated this band
                mode = draw(st.sampled_from(modes))
                if draw(st.integers(0, 9)) == 0:
                    ratings.append(rate(f"v{v}", sub, f"r{r}", mode=mode))
                    continue
                verdict = draw(st.sampled_from(("ACCEPT", "AMEND")))
                ratings.append(rate(f"v{v}", sub, f"r{r}", draw(raw_band(sub)), verdict, mode))
    return ratings
