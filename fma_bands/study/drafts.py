"""Automatic drafts: what a rater has on the review screen for a band, kept as they work, so a
reload, a closed tab or a lost connection loses nothing they entered.

These are scratch, not reviews: not audited, never signed, read by nobody but the rater
themself (there is no function here that reads another rater's), and discarded once the
review is submitted. The review itself is only ever written by `reviews.save`.
"""

import json
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlmodel import Session, col, delete, select

from fma_bands.core.errors import AccessDenied, FmaBandsError
from fma_bands.core.people import UserPublic
from fma_bands.store.models import ScreenDraft, utcnow
from fma_bands.study.reviews import MAX_CORRECTION, MAX_NOTE, MAX_REASON
from fma_bands.study.state import lock_study, round_bands

# A screen holds a reason, six notes, three corrections and a band, each bounded
# (study/reviews.py): json writes each character of text in at most 12 bytes (an escaped pair of
# surrogates), so a screen filled to every bound is kept, and a flood refused at once.
MAX_BYTES = 12 * (MAX_REASON + 6 * MAX_NOTE + 3 * MAX_CORRECTION) + 64 * 1024
_SCALARS = (str, int, bool, type(None))


@dataclass(frozen=True)
class Kept:
    entries: dict[str, Any]
    base_version: int
    updated_at: datetime


def _own(rater: UserPublic) -> None:
    if rater.role != "rater":
        raise AccessDenied("only raters keep drafts of their reviews")


def _check(entries: dict[str, Any]) -> dict[str, Any]:
    for name, value in entries.items():
        items = value if isinstance(value, list) else [value]
        if not isinstance(name, str) or not all(isinstance(v, _SCALARS) for v in items):
            raise FmaBandsError(f"a draft holds text, numbers and lists only (field {name!r})")
    if len(json.dumps(entries)) > MAX_BYTES:
        raise FmaBandsError("this draft is too large to keep: shorten the notes")
    return entries


def keep(
    session: Session,
    rater: UserPublic,
    vid: str,
    name: str,
    entries: dict[str, Any],
    *,
    base_version: int,
    changed: Collection[str] | None = None,
) -> bool:
    """Keep the screen's entries for one band (replacing what was kept before); whether they
    were kept (nothing is from a closed phase or a band frozen in an earlier round). With
    `changed`, only those entries are written over what is kept from the same version: a second
    tab on the band, whose screen has not seen the first's answers, keeps its own change
    without blanking them."""
    _own(rater)
    current = lock_study(session)  # so the round cannot close before this is kept
    if current.phase != "open":
        return False  # nothing can be saved from a closed phase, so nothing is worth keeping
    if current.round > 1 and (vid, name) not in round_bands(session, rater.id, current.round):
        return False  # nor from a band frozen in an earlier round
    entries = _check(dict(entries))
    row = _row(session, rater, vid, name)
    if row is None:
        row = ScreenDraft(rater_id=rater.id, vignette_id=vid, sub_action=name)
    elif changed is not None and row.base_version == base_version:
        merged = dict(row.entries)
        for field in changed:
            if field in entries:
                merged[field] = entries[field]
            else:
                merged.pop(field, None)
        entries = merged
    row.entries, row.base_version, row.updated_at = entries, base_version, utcnow()
    session.add(row)
    session.flush()
    return True


def restore(session: Session, rater: UserPublic, vid: str, name: str) -> Kept | None:
    _own(rater)
    row = _row(session, rater, vid, name)
    if row is None:
        return None
    return Kept(dict(row.entries), row.base_version, row.updated_at)


def discard(session: Session, rater: UserPublic, vid: str, name: str) -> None:
    _own(rater)
    session.exec(
        delete(ScreenDraft).where(
            col(ScreenDraft.rater_id) == rater.id,
            col(ScreenDraft.vignette_id) == vid,
            col(ScreenDraft.sub_action) == name,
        )
    )


def in_progress(session: Session, rater: UserPublic) -> set[tuple[str, str]]:
    """The bands this rater has entries kept for."""
    query = select(ScreenDraft.vignette_id, ScreenDraft.sub_action).where(
        ScreenDraft.rater_id == rater.id
    )
    return {(vid, name) for vid, name in session.exec(query)}


def _row(session: Session, rater: UserPublic, vid: str, name: str) -> ScreenDraft | None:
    query = select(ScreenDraft).where(
        ScreenDraft.rater_id == rater.id,
        ScreenDraft.vignette_id == vid,
        ScreenDraft.sub_action == name,
    )
    return session.exec(query).first()
