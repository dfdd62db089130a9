"""The study: its phase and mode, who may run it, and its vignettes kept in line with the files.

Every coordinator-only action goes through `require_coordinator`, so the rule lives here and
not in the pages or the command line.
"""

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from sqlmodel import Session, select

from fma_bands import audit
from fma_bands.errors import AccessDenied, FmaBandsError
from fma_bands.policy import Policy, check_policy, read_policy, write_policy_file
from fma_bands.store.models import Review, StudySettings, VignetteRecord, utcnow
from fma_bands.users import UserPublic
from fma_bands.vignettes import Library, Vignette

PHASES = ("open", "closed")
MODES = ("review", "blind")


class StudyPublic(BaseModel):
    model_config = ConfigDict(frozen=True)

    mode: Literal["review", "blind"]
    phase: Literal["open", "closed"]
    updated_at: datetime


def require_coordinator(actor: UserPublic | None, what: str = "do this") -> UserPublic:
    """The one check behind every coordinator-only action, in every page and command."""
    if actor is None or not actor.is_coordinator:
        raise AccessDenied(f"only the study coordinator can {what}")
    return actor


def study(session: Session) -> StudyPublic:
    row = session.get(StudySettings, 1)
    if row is None:
        row = StudySettings()
        session.add(row)
        session.flush()
    return StudyPublic.model_validate(row, from_attributes=True)


def set_phase(session: Session, *, actor: UserPublic, phase: str) -> StudyPublic:
    return _set(session, actor=actor, name="phase", value=phase, allowed=PHASES)


def set_mode(session: Session, *, actor: UserPublic, mode: str) -> StudyPublic:
    return _set(session, actor=actor, name="mode", value=mode, allowed=MODES)


def _set(
    session: Session, *, actor: UserPublic, name: str, value: str, allowed: tuple[str, ...]
) -> StudyPublic:
    require_coordinator(actor, f"change the review {name}")
    if value not in allowed:
        message = f"{name} must be one of {', '.join(allowed)}"
        raise FmaBandsError(message, field=name, fields={name: message})
    study(session)
    row = session.get(StudySettings, 1)
    assert row is not None  # made by study() just above
    before = getattr(row, name)
    if before != value:
        setattr(row, name, value)
        row.updated_at = utcnow()
        audit.record(
            session,
            kind=f"{name}_changed",
            actor=actor.pseudonym,
            payload={"from": before, "to": value},
        )
    session.flush()
    return study(session)


def set_policy(
    session: Session, folder: Path, *, actor: UserPublic, quorum: Any, scope: Any
) -> Policy:
    """Write attestations/policy.yaml (audited): the registry reads it from the folder alone."""
    require_coordinator(actor, "set the registry policy")
    policy = check_policy(quorum, scope)
    try:
        before: dict[str, Any] | None = read_policy(folder).as_dict()
    except FmaBandsError:
        before = None
    write_policy_file(folder, policy)
    audit.record(
        session,
        kind="policy_set",
        actor=actor.pseudonym,
        payload={"from": before, "to": policy.as_dict()},
    )
    return policy


# The study's vignettes in the store -------------------------------------------------------------


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
    reviews stay, marked stale by their digests; a removed vignette is retired."""
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
    return sum(
        not library.is_current(r.vignette_id, r.sub_action, r.context_digest, r.proposal_digest)
        for r in latest.values()
    )


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
