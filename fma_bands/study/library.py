"""The study's vignettes in the store, kept in line with the files: added, changed (their
reviews kept and marked stale by digest) and retired, never deleted."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlmodel import Session, select

from fma_bands.core.errors import FmaBandsError
from fma_bands.core.vignettes import Library, Vignette
from fma_bands.store.models import Review, VignetteRecord, utcnow
from fma_bands.study import audit


def is_current(library: Library, row: Review) -> bool:
    """Was this review made of the band as the files hold it now: the same context, the same
    proposed band and, in review mode, the same whole proposal (text, span, threshold)?"""
    return library.is_current(
        row.vignette_id,
        row.sub_action,
        context_digest=row.context_digest,
        band_digest=row.band_digest,
        proposal_digest=row.proposal_digest,
        mode=row.mode,
    )


@dataclass
class SyncReport:
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    retired: list[str] = field(default_factory=list)
    stale_reviews: int = 0

    def __str__(self) -> str:
        return (
            f"{len(self.added)} added, {len(self.changed)} changed, {len(self.retired)} retired; "
            f"{self.stale_reviews} submitted review(s) now stale"
        )


def sync_vignettes(session: Session, library: Library, *, actor: str | None) -> SyncReport:
    """Bring the store in line with the files. Reviews are never deleted: a changed vignette's
    reviews stay, marked stale by their digests; a removed vignette is retired.

    A library with no vignette is refused, the store left as it was: an empty, missing or
    mistyped folder would otherwise retire every vignette of the study."""
    if not len(library):
        where = ", ".join(library.folders) or "the vignette folder"
        raise FmaBandsError(
            f"no vignettes loaded from {where}, so nothing was synced (an empty library would "
            "retire every vignette of the study); check the vignette folder",
            problems=library.problems,
        )
    report = SyncReport()
    rows = {row.id: row for row in session.exec(select(VignetteRecord))}
    for vignette in library:
        data = _record_data(vignette)
        row = rows.get(vignette.id)
        if row is None:
            session.add(VignetteRecord(**data))
            report.added.append(vignette.id)
            continue
        current = {key: getattr(row, key) for key in data}
        if current != data:
            # A moved file is not a changed vignette; only its content counts.
            moved_only = {k for k in data if current[k] != data[k]} <= {"source_path"}
            for key, value in data.items():
                setattr(row, key, value)
            row.synced_at = utcnow()
            if not moved_only:
                report.changed.append(vignette.id)
    for vid, row in rows.items():
        if vid not in library.vignettes and row.present:
            row.present = False
            report.retired.append(vid)
    session.flush()
    if report.changed:
        report.stale_reviews = _stale_count(session, library, report.changed)
    if report.added or report.changed or report.retired:
        audit.record(
            session,
            kind="vignettes_synced",
            actor=actor,
            payload={
                "added": report.added,
                "changed": report.changed,
                "retired": report.retired,
                "stale_reviews": report.stale_reviews,
            },
        )
    return report


def _stale_count(session: Session, library: Library, vignette_ids: list[str]) -> int:
    """Raters' latest submitted reviews of these vignettes that no longer match the files."""
    query = select(Review).where(
        Review.status == "submitted",
        Review.vignette_id.in_(vignette_ids),  # type: ignore[attr-defined]
    )
    latest: dict[tuple[str, str, int], Review] = {}
    for row in session.exec(query):
        key = (row.vignette_id, row.sub_action, row.rater_id)
        if key not in latest or row.revision > latest[key].revision:
            latest[key] = row
    return sum(not is_current(library, r) for r in latest.values())


def _record_data(vignette: Vignette) -> dict[str, Any]:
    return {
        "id": vignette.id,
        "domain": vignette.domain,
        "ambiguity": vignette.ambiguity,
        "clinical_core": vignette.clinical_core,
        "tool_results": dict(vignette.tool_results),
        "canary": vignette.canary,
        "proposals": [p.as_data() for p in vignette.proposals],
        "source_path": vignette.path or "",
        "present": True,
    }
