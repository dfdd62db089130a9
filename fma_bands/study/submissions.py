"""Submitted reviews read back (docs/design.md, Blinding and rounds): one rater's own latest, and
everyone's behind the blinding (the coordinator at any time, raters only once the phase is closed),
as whole reviews, as the bands agreement reads, as the band each vouches for, and as each rater's
progress.
"""

import json
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Dialect, RowMapping, Text, TypeDecorator, cast, type_coerce
from sqlalchemy import select as core_select
from sqlmodel import Session

from fma_bands.core.bands import AnyBand, BandReader, parse_band
from fma_bands.core.people import UserPublic
from fma_bands.core.vignettes import Library
from fma_bands.store.models import Review
from fma_bands.study.reviews import ReviewData, as_data, is_current_row
from fma_bands.study.state import authorize
from fma_bands.study.users import pseudonyms


def my_latest_submitted(
    session: Session, library: Library, rater: UserPublic
) -> dict[tuple[str, str], ReviewData]:
    """The rater's latest submitted revision of each band they submitted, in one query."""
    assert rater.id is not None
    names = {rater.id: rater.pseudonym}
    return {
        (row["vignette_id"], row["sub_action"]): as_data(row, library, names)
        for row in _latest_submitted(session, rater_id=rater.id)
    }


# Everyone's reviews: the coordinator at any time, raters only once the phase is closed ------


def _may_see_others(session: Session, viewer: UserPublic) -> None:
    authorize(session, viewer, "see_reviews")


def submitted_reviews(
    session: Session,
    library: Library,
    *,
    viewer: UserPublic,
    include_stale: bool = False,
    round: int | None = None,
) -> list[ReviewData]:
    """The latest submitted revision of every rater's review of every band; with `round`, the
    latest of that round only (so a later round never changes an earlier one's figures)."""
    _may_see_others(session, viewer)
    names = pseudonyms(session)
    rows = [as_data(r, library, names) for r in _latest_submitted(session, round=round)]
    return [r for r in rows if include_stale or not r.stale]


@dataclass(frozen=True)
class SubmittedBand:
    """What one current submitted review says about its band: all agreement needs of it."""

    vignette_id: str
    sub_action: str
    rater: str
    verdict: str | None
    band: Any  # file form, as submitted
    mode: str


# The columns SubmittedBand is read from, with those that say whether the review is current;
# the band as its JSON text (BAND_TEXT), read only where a rating is made.
_BAND_COLUMNS = (
    "vignette_id",
    "sub_action",
    "rater_id",
    "revision",
    "verdict",
    "band",
    "mode",
    "context_digest",
    "band_digest",
    "proposal_digest",
)


@dataclass(frozen=True)
class Submitted:
    """Everyone's latest submitted reviews (of one round, with `round`) as stored, with the
    columns agreement reads (the band as its JSON text), before their staleness is judged; and
    the raters' pseudonyms."""

    rows: list[RowMapping]
    names: dict[int, str]


# Columns whose few values every review repeats (a study's vignettes, sub-actions, verdicts,
# modes, and the digests every rater of a band reviewed it under): read as one shared string
# each, not one per row. At 1,000 x 20 the names were a third of the memory the reviews took
# while agreement read them, and the three digests of 64 characters a row much of the rest.
_REPEATED = (
    "vignette_id",
    "sub_action",
    "verdict",
    "mode",
    "context_digest",
    "band_digest",
    "proposal_digest",
)


class _Repeated(TypeDecorator[str]):
    impl = Text
    cache_ok = True

    def process_result_value(self, value: str | None, dialect: Dialect) -> str | None:
        return None if value is None else sys.intern(value)


def submitted_rows(session: Session, *, viewer: UserPublic, round: int | None = None) -> Submitted:
    """Every rater's latest submitted review of every band, stale ones too (blinding enforced),
    read in one query without their answers."""
    _may_see_others(session, viewer)
    table = Review.__table__  # type: ignore[attr-defined]
    # As text: decoding every band would cost more than the read, and a kept report needs none.
    # Shared as the names are: raters mostly give the same few bands of a band's vignette.
    columns = [
        type_coerce(cast(table.c.band, Text), _Repeated).label(n)
        if n == "band"
        else type_coerce(table.c[n], _Repeated).label(n)
        if n in _REPEATED
        else n
        for n in _BAND_COLUMNS
    ]
    return Submitted(_latest_submitted(session, columns=columns, round=round), pseudonyms(session))


def submitted_bands(found: Submitted, library: Library) -> Iterator[SubmittedBand]:
    """Of submitted_rows, the current (not stale) reviews, as the bands agreement reads, one at
    a time (a reader that keeps what it makes of each need not keep them all)."""
    names = found.names
    return (
        SubmittedBand(
            r["vignette_id"],
            r["sub_action"],
            names[r["rater_id"]],
            r["verdict"],
            None if r["band"] is None else json.loads(r["band"]),
            r["mode"],
        )
        for r in found.rows
        if is_current_row(r, library)
    )


def band_reviews(
    session: Session, library: Library, *, viewer: UserPublic, vid: str, name: str
) -> list[ReviewData]:
    _may_see_others(session, viewer)
    return [
        r
        for r in submitted_reviews(session, library, viewer=viewer, include_stale=True)
        if (r.vignette_id, r.sub_action) == (vid, name)
    ]


def _latest_submitted(
    session: Session,
    vignette_ids: list[str] | None = None,
    columns: Sequence[str | ColumnElement[Any]] | None = None,
    *,
    rater_id: int | None = None,
    status: str | None = "submitted",
    round: int | None = None,
) -> list[RowMapping]:
    """Each rater's (or one rater's) latest revision, submitted unless `status` says otherwise
    (None: of any status), of each band, as Core rows of `columns` (all by default); with
    `round`, the latest of that round only (a later round never changes an earlier one's
    figures). Core rows: building an ORM object per review would cost more than the pages."""
    table = Review.__table__  # type: ignore[attr-defined]
    chosen = [table.c[n] if isinstance(n, str) else n for n in columns or ()]
    query = core_select(*chosen) if chosen else core_select(table)
    if status is not None:
        query = query.where(table.c.status == status)
    if rater_id is not None:
        query = query.where(table.c.rater_id == rater_id)
    if round is not None:
        query = query.where(table.c.round == round)
    if vignette_ids is not None:
        query = query.where(table.c.vignette_id.in_(vignette_ids))
    latest: dict[tuple[str, str, int], RowMapping] = {}
    for row in session.connection().execute(query).mappings():
        key = (row["vignette_id"], row["sub_action"], row["rater_id"])
        if key not in latest or row["revision"] > latest[key]["revision"]:
            latest[key] = row
    return [latest[key] for key in sorted(latest)]


def attested_band(
    review: "ReviewData | SubmittedBand", library: Library, read: BandReader | None = None
) -> AnyBand | None:
    """The band a review vouches for: the proposal if ACCEPT, the rater's own if AMEND (read
    by `read` when many are read in a row)."""
    if review.verdict == "DECLINE":
        return None
    vignette = library.vignettes[review.vignette_id]
    if review.verdict == "ACCEPT":
        proposal = vignette.proposal(review.sub_action)
        assert proposal is not None, "a review is of a proposed band"
        return proposal.acceptable
    if read is not None:
        return read(review.sub_action, review.band, vignette.orderables)
    return parse_band(review.sub_action, review.band, orderables=vignette.orderables)
