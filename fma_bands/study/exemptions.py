"""The exemption registry in the store (docs/design.md, Exemptions): the entries the coordinator
loads, the raters' reviews of them (blind to each other while the round is open, like bands),
what a rater's signature covers of them, and the export of exemptions.yaml, decided from the
attestations folder alone (fma_bands.evidence.exemptions).
"""

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlmodel import Session, col, select

from fma_bands.core.errors import AccessDenied, FmaBandsError
from fma_bands.core.people import UserPublic
from fma_bands.evidence.exemptions import (
    VERDICTS,
    Exemption,
    check_direction,
    exemption_from_fields,
    exemptions_document,
    latest_signed_exemption_reviews,
    subject_name,
)
from fma_bands.store.models import ExemptionEntry, ExemptionReview, utcnow
from fma_bands.study import audit, ledger
from fma_bands.study.state import authorize, study

REASON_LIMIT = 4000


@dataclass
class LoadReport:
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)  # their earlier reviews count no more
    retired: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)

    def describe(self) -> str:
        parts = [
            f"{len(names)} {what}" + (f" ({', '.join(names)})" if names else "")
            for what, names in (
                ("added", self.added),
                ("changed", self.changed),
                ("retired", self.retired),
                ("unchanged", self.unchanged),
            )
        ]
        return "exemptions: " + ", ".join(parts)


@dataclass(frozen=True)
class ExemptionRow:
    """One entry as a viewer may see it: the coordinator, how many raters reviewed it in the
    current round (never what they said while it is open); a rater, their own latest review."""

    entry: Exemption
    n_reviewed: int | None = None  # coordinator only
    my_verdict: str | None = None  # the rater's own
    my_direction: str | None = None
    my_reason: str | None = None
    my_round: int | None = None


def _require_coordinator(actor: UserPublic, what: str) -> None:
    if actor.role != "coordinator":
        raise AccessDenied(f"only the study coordinator can {what}")


def _entry(row: ExemptionEntry) -> Exemption:
    return exemption_from_fields(
        {
            "attribute": row.attribute,
            "sub_action": row.sub_action,
            "direction": row.direction,
            "requires_adjudication": row.requires_adjudication,
            "age_gate": row.age_gate,
            "rationale": row.rationale,
        }
    )


def load_exemptions(
    session: Session, entries: list[Exemption], *, actor: UserPublic, source: str
) -> LoadReport:
    """Make the store's registry exactly `entries` (audited). A changed entry is another entry:
    the reviews of its earlier version count no more; an entry left out is retired."""
    _require_coordinator(actor, "load the exemption registry")
    if not entries:
        raise FmaBandsError("no exemption to load: the registry would be empty", file=source)
    rows = {(r.attribute, r.sub_action): r for r in session.exec(select(ExemptionEntry))}
    report = LoadReport()
    now = utcnow()
    for entry in entries:
        fields = entry.as_fields()
        row = rows.pop(entry.key, None)
        if row is None:
            row = ExemptionEntry(**fields, digest=entry.digest, source=source, loaded_at=now)
            report.added.append(entry.name)
        elif row.digest == entry.digest and row.present:
            report.unchanged.append(entry.name)
            continue
        else:
            (report.changed if row.digest != entry.digest else report.added).append(entry.name)
            for name, value in fields.items():
                setattr(row, name, value)
            row.digest, row.source, row.present, row.loaded_at = entry.digest, source, True, now
        session.add(row)
    for row in rows.values():
        if row.present:
            row.present = False
            session.add(row)
            report.retired.append(f"{row.attribute}/{row.sub_action}")
    audit.record(
        session,
        kind="exemptions_loaded",
        actor=actor.pseudonym,
        payload={
            "source": source,
            "added": report.added,
            "changed": report.changed,
            "retired": report.retired,
        },
    )
    return report


def current_exemptions(session: Session) -> list[Exemption]:
    """The entries in force, in the order of their attribute and sub-action."""
    query = select(ExemptionEntry).where(col(ExemptionEntry.present))
    rows = session.exec(
        query.order_by(col(ExemptionEntry.attribute), col(ExemptionEntry.sub_action))
    )
    return [_entry(r) for r in rows]


def _find(session: Session, name: str) -> ExemptionEntry:
    attribute, _, sub_action = name.partition("/")
    row = session.exec(
        select(ExemptionEntry).where(
            ExemptionEntry.attribute == attribute,
            ExemptionEntry.sub_action == sub_action,
            col(ExemptionEntry.present),
        )
    ).first()
    if row is None:
        raise FmaBandsError(
            f"no exemption {name!r} is loaded: name one as ATTRIBUTE/SUB_ACTION, e.g. "
            "sex/orders (fma-bands exemptions list)",
            field="entry",
        )
    return row


def review_exemption(
    session: Session,
    *,
    rater: UserPublic,
    name: str,
    verdict: str,
    reason: str,
    direction: str | None = None,
) -> ExemptionReview:
    """Record the rater's review of one entry in the open round (audited): CONFIRM (the
    registered direction stands), REJECT (no exemption) or AMEND (with the defensible
    direction), each with a reason. A later review supersedes it; none is ever changed."""
    authorize(session, rater, "review_exemption")
    if verdict not in VERDICTS:
        raise FmaBandsError(f"a verdict is one of {', '.join(VERDICTS)}", field="verdict")
    if not reason.strip() or len(reason) > REASON_LIMIT:
        raise FmaBandsError(
            f"say why, in at most {REASON_LIMIT} characters: every exemption review needs a reason",
            field="reason",
        )
    entry = _find(session, name)
    if verdict == "AMEND":
        if direction is None:
            raise FmaBandsError("an AMEND gives the defensible direction", field="direction")
        check_direction(direction)
        if direction == entry.direction:
            raise FmaBandsError(
                f"{direction} is the registered direction: that is a CONFIRM", field="direction"
            )
    elif direction is not None:
        raise FmaBandsError("only an AMEND gives a direction", field="direction")
    current = study(session)
    before = session.exec(
        select(ExemptionReview)
        .where(
            ExemptionReview.rater_id == rater.id,
            ExemptionReview.attribute == entry.attribute,
            ExemptionReview.sub_action == entry.sub_action,
        )
        .order_by(col(ExemptionReview.id).desc())
    ).first()
    row = ExemptionReview(
        attribute=entry.attribute,
        sub_action=entry.sub_action,
        rater_id=rater.id,
        round=current.round,
        revision=1 if before is None else before.revision + 1,
        verdict=verdict,
        direction=direction,
        reason=reason.strip(),
        entry_digest=entry.digest,
    )
    session.add(row)
    # The verdict stays out of the audit log's payload: the log is the coordinator's to read,
    # and during the round the coordinator sees that a rater reviewed, never what they said.
    audit.record(
        session,
        kind="exemption_reviewed",
        actor=rater.pseudonym,
        payload={"entry": name, "round": current.round, "revision": row.revision},
    )
    session.flush()
    return row


def _latest_reviews(
    session: Session, rater_id: int | None = None
) -> dict[tuple[int, str, str], ExemptionReview]:
    """Each rater's latest review of each entry (by rater id, attribute, sub-action)."""
    query = select(ExemptionReview).order_by(col(ExemptionReview.id))
    if rater_id is not None:
        query = query.where(ExemptionReview.rater_id == rater_id)
    return {(r.rater_id, r.attribute, r.sub_action): r for r in session.exec(query)}


def exemption_rows(session: Session, *, viewer: UserPublic) -> list[ExemptionRow]:
    """The entries in force as `viewer` may see them (ExemptionRow)."""
    entries = session.exec(
        select(ExemptionEntry)
        .where(col(ExemptionEntry.present))
        .order_by(col(ExemptionEntry.attribute), col(ExemptionEntry.sub_action))
    ).all()
    if viewer.role == "coordinator":
        current = study(session)
        latest = _latest_reviews(session)
        counts: dict[tuple[str, str], int] = {}
        digests = {(e.attribute, e.sub_action): e.digest for e in entries}
        for (_, attribute, sub_action), review in latest.items():
            if review.round == current.round and review.entry_digest == digests.get(
                (attribute, sub_action)
            ):
                counts[(attribute, sub_action)] = counts.get((attribute, sub_action), 0) + 1
        return [
            ExemptionRow(_entry(e), n_reviewed=counts.get((e.attribute, e.sub_action), 0))
            for e in entries
        ]
    authorize(session, viewer, "sign")  # a rater: their own reviews only
    mine = _latest_reviews(session, viewer.id)
    rows = []
    for e in entries:
        own = mine.get((viewer.id, e.attribute, e.sub_action))
        if own is None or own.entry_digest != e.digest:
            # None, or a review of an earlier version of the entry: it counts nowhere.
            rows.append(ExemptionRow(_entry(e)))
            continue
        rows.append(
            ExemptionRow(
                _entry(e),
                my_verdict=own.verdict,
                my_direction=own.direction,
                my_reason=own.reason,
                my_round=own.round,
            )
        )
    return rows


@dataclass
class ExemptionSigning:
    """The exemption reviews a signature by the rater would hold: each current entry's latest
    review of theirs, as signed (`fresh` lists the names of those not signed before exactly so)."""

    reviews: list[dict[str, Any]] = field(default_factory=list)
    fresh: list[str] = field(default_factory=list)

    def subjects(self) -> list[dict[str, Any]]:
        return [
            {
                "name": subject_name(f"{r['attribute']}/{r['sub_action']}"),
                "digest": {"sha256": r["entry_digest"].removeprefix("sha256:")},
            }
            for r in self.reviews
        ]


def exemption_signing(session: Session, rater: UserPublic) -> ExemptionSigning:
    """What the rater's next attestation holds of their exemption reviews."""
    entries = {
        (e.attribute, e.sub_action): e
        for e in session.exec(select(ExemptionEntry).where(col(ExemptionEntry.present)))
    }
    before = latest_signed_exemption_reviews(ledger.store_evidence(session), rater.pseudonym)
    signing = ExemptionSigning()
    for (_, attribute, sub_action), review in sorted(_latest_reviews(session, rater.id).items()):
        row = entries.get((attribute, sub_action))
        if row is None or review.entry_digest != row.digest:
            continue  # retired, or made on an earlier version: it counts nowhere
        signed = {
            "attribute": attribute,
            "sub_action": sub_action,
            "round": review.round,
            "revision": review.revision,
            "verdict": review.verdict,
            "direction": review.direction,
            "reason": review.reason,
            "entry_digest": review.entry_digest,
            "entry": _entry(row).as_fields(),
        }
        signing.reviews.append(signed)
        name = f"{attribute}/{sub_action}"
        if before.get(name) != signed:
            signing.fresh.append(name)
    return signing


def export_exemptions(
    session: Session,
    *,
    actor: UserPublic,
    folder: Path,
    entries: list[Exemption] | None = None,
    since: tuple[int, str] | None = None,
    generated_at: datetime | None = None,
) -> dict[str, Any]:
    """exemptions.yaml as data, decided from the attestations folder alone; the entries are
    the store's unless given (read from the harness or a file)."""
    _require_coordinator(actor, "export the exemption registry")
    return exemptions_document(
        current_exemptions(session) if entries is None else entries,
        folder,
        study=study(session).study_id,
        since=since,
        generated_at=generated_at,
    )
