"""Submitted reviews as the plain ratings the agreement statistics take, and the study's report.

Blinding is checked where the reviews are read (reviews.submitted_reviews); this module only
turns them into numbers.
"""

from sqlalchemy import func
from sqlmodel import Session, select

from fma_bands.actions import SUB_ACTIONS
from fma_bands.agreement import (
    DEFAULT_B,
    DEFAULT_SEED,
    POOLED,
    Alpha,
    Rating,
    Report,
    agreement_report,
    verdict_alpha,
)
from fma_bands.bands import IntervalBand, band_from_values, to_harness
from fma_bands.reviews import ReviewData, attested_band, submitted_reviews
from fma_bands.store.models import Review
from fma_bands.users import UserPublic
from fma_bands.vignettes import Library

BLIND_VERDICTS = "not defined: verdicts are compared in review mode only"
# Membership is defined for the sub-actions whose whole domain is a short list of values.
MEMBERSHIP_DOMAINS = {
    name: action.domain()
    for name, action in SUB_ACTIONS.items()
    if action.kind in ("ordinal", "boolean")
}


def rating(review: ReviewData, library: Library) -> Rating:
    band = attested_band(review, library)
    interval = (band.min, band.max) if isinstance(band, IntervalBand) else None
    return Rating(
        vignette_id=review.vignette_id,
        sub_action=review.sub_action,
        rater=review.rater,
        verdict=review.verdict,
        values=band.values() if band is not None else None,
        interval=interval,
    )


def study_ratings(session: Session, library: Library, *, viewer: UserPublic) -> list[Rating]:
    """Every rater's current, non-stale submitted review of every band (blinding enforced)."""
    return [rating(r, library) for r in submitted_reviews(session, library, viewer=viewer)]


def study_report(
    session: Session,
    library: Library,
    *,
    viewer: UserPublic,
    bootstrap: int = DEFAULT_B,
    seed: int = DEFAULT_SEED,
) -> Report:
    reviews = submitted_reviews(session, library, viewer=viewer)
    ratings = [rating(r, library) for r in reviews]
    report = agreement_report(ratings, MEMBERSHIP_DOMAINS, bootstrap=bootstrap, seed=seed)
    if all(r.mode == "review" for r in reviews):
        return report
    # A blind review has no proposal to accept, so verdicts are compared in review mode only.
    compared = [r for r, review in zip(ratings, reviews, strict=True) if review.mode == "review"]
    for scope, metrics in report.metrics.items():
        subset = [r for r in compared if scope == POOLED or r.sub_action == scope]
        metrics["verdict"] = (
            verdict_alpha(subset, bootstrap=bootstrap, seed=seed)
            if subset
            else Alpha("verdict", None, BLIND_VERDICTS, 0, 0, 0)
        )
    return report


def harness_span(name: str, values: frozenset) -> list | dict:
    """A consensus or disputed span in harness form: an interval when contiguous, else a list."""
    band = band_from_values(name, values)
    return to_harness(band)


def reviews_fingerprint(session: Session) -> tuple:
    """Changes whenever any review is saved: the key under which pages cache the report."""
    count, last, top = session.exec(
        select(func.count(Review.id), func.max(Review.updated_at), func.max(Review.id))
    ).one()
    return count, str(last), top


def reading(alpha: float | None, reason: str | None) -> str:
    """Krippendorff's own guide: rely on alpha >= 0.800, tentative conclusions from 0.667."""
    if alpha is None:
        return f"undefined ({reason})"
    if alpha >= 0.800:
        return "reliable (>= 0.800)"
    if alpha >= 0.667:
        return "tentative only (0.667 to 0.800)"
    return "unreliable (< 0.667)"
