"""The chair's decision (docs/design.md, The registry): where a band's raters still share
no value once round 2 is closed, the rater the root-signed policy names chair may decide it. The
decision is a record of its own in the study's log, signed with the chair's own key, and says it
is the chair's decision, not a rater's review; the registry grants a band on it only from the
files (fma_bands.evidence.registry), and agreement never reads it (it reads reviews only).
"""

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlmodel import Session, col, select

from fma_bands.core.bands import AnyBand, parse_band, to_file
from fma_bands.core.errors import AccessDenied, FmaBandsError
from fma_bands.core.labels import tool_names
from fma_bands.core.people import UserPublic
from fma_bands.core.vignettes import Library
from fma_bands.evidence.envelope import envelope_from_bytes
from fma_bands.evidence.log import proposal_digest, subject_name
from fma_bands.evidence.provenance import Decision
from fma_bands.evidence.registry import ChairGrant, decide, in_dispute
from fma_bands.store.models import LogRecord, Review
from fma_bands.study import audit, ledger
from fma_bands.study.governance import policy_in_force
from fma_bands.study.ledger import Receipt
from fma_bands.study.round_panel import Panel, build, latest_of_round
from fma_bands.study.signing import identified_signer
from fma_bands.study.state import authorize, lock_study, study
from fma_bands.study.users import pseudonyms

SECOND_ROUND = 2
STATEMENT = (
    "I, {chair}, the study's chair, decide this band because its raters' bands shared no value "
    "after round 2. This is the chair's decision where the raters did not agree, not a rater's "
    "review, and it is not agreement between raters."
)
MAX_REASON = 4000


@dataclass(frozen=True)
class Dispute:
    """A band its raters still disagree on after round 2, as the registry decides it from the
    folder, with the chair's decision it was granted on (None while there is none)."""

    vignette_id: str
    sub_action: str
    decision: Decision
    chaired: ChairGrant | None


def chair_name(session: Session) -> str | None:
    """The chair the policy in force names, if any."""
    policy = policy_in_force(session)
    return policy.chair if policy is not None else None


def _require_viewer(session: Session, viewer: UserPublic) -> None:
    """The coordinator or the chair: nobody else decides, so nobody else needs the list."""
    if viewer.is_coordinator:
        return
    if viewer.role == "rater" and viewer.pseudonym == chair_name(session):
        return
    raise AccessDenied(
        "only the study coordinator or the study's chair can see the bands in dispute"
    )


def _require_after_round_two(session: Session) -> None:
    current = study(session)
    if current.round < SECOND_ROUND or current.phase != "closed":
        raise AccessDenied(
            "the chair decides only once round 2 is closed: "
            f"round {current.round} is {current.phase} now"
        )


def disputes(
    session: Session, library: Library, *, viewer: UserPublic, folder: Path
) -> list[Dispute]:
    """The bands the registry refuses on the folder only because their raters' bands share no
    value, and those granted on the chair's decision, once round 2 is closed."""
    _require_viewer(session, viewer)
    _require_after_round_two(session)
    registry = decide(library, folder, study=study(session).study_id)
    found = []
    for decision in registry.decisions:
        key = (decision.vignette_id, decision.sub_action)
        chaired = registry.chaired.get(key)
        if chaired is not None or in_dispute(decision):
            found.append(Dispute(*key, decision, chaired))
    return found


def on_record(session: Session) -> dict[tuple[str, str], str]:
    """Each band a chair's decision is signed for in the store's log, with the chair who signed
    the latest: what Study admin and `round show` say beside a band still in dispute. Whether
    the registry grants the band on it is decided from the folder alone (a replaced chair's or
    a stale decision settles nothing there)."""
    query = select(LogRecord).where(LogRecord.kind == "chair_decision")
    found: dict[tuple[str, str], str] = {}
    for row in session.exec(query.order_by(col(LogRecord.sequence))):
        record = envelope_from_bytes(Path(row.file_name), row.envelope.encode("utf-8"))
        claimed = record.claimed if isinstance(record.claimed, dict) else {}
        predicate = claimed.get("predicate")
        decision = predicate.get("decision") if isinstance(predicate, dict) else None
        if isinstance(decision, dict):
            found[(str(decision.get("vignette_id")), str(decision.get("sub_action")))] = row.signer
    return found


def panel(session: Session, library: Library, *, viewer: UserPublic, vid: str, name: str) -> Panel:
    """The anonymised panel of the band's last round (round 2 where it was re-reviewed, else
    round 1): the chair reads the raters' bands and reasons as Rater A, B, C."""
    _require_viewer(session, viewer)
    _require_after_round_two(session)
    latest = latest_of_round(session, library, vid, name, SECOND_ROUND)
    number = SECOND_ROUND if latest else 1
    vignette = library.vignettes.get(vid)
    names = tool_names(vignette) if vignette is not None else {}
    reviews = latest or latest_of_round(session, library, vid, name, 1)
    # A reason naming a rater ("as rater-01 said") would undo the letters.
    return build(vid, name, number, reviews, names, hide=pseudonyms(session).values())


def rated(session: Session, library: Library, *, viewer: UserPublic, vid: str, name: str) -> bool:
    """Whether the viewer submitted a review of the band in either round: a chair may be one of
    its raters, and is told so, as the registry tells an editor (chair_rated)."""
    _require_viewer(session, viewer)
    query = select(Review.id).where(
        Review.vignette_id == vid,
        Review.sub_action == name,
        Review.rater_id == viewer.id,
        Review.status == "submitted",
    )
    return session.exec(query.limit(1)).first() is not None


def read_band(library: Library, vid: str, name: str, raw: Any) -> AnyBand:
    """The chosen band, read as every band of the sub-action is (core.bands)."""
    found = library.band(vid, name)
    if found is None:
        raise FmaBandsError(f"no such band in the study: {vid} {name}", field="band")
    return parse_band(name, raw, orderables=found[0].orderables)


def decide_band(
    session: Session,
    library: Library,
    *,
    chair: UserPublic,
    passphrase: str,
    folder: Path | None,
    vid: str,
    name: str,
    band: Any,
    reason: str,
    now: datetime | None = None,
) -> Receipt:
    """Sign the chair's decision on one band still in dispute after round 2 (audited), with the
    chair's own key (their passphrase, asked now), and return their receipt."""
    authorize(session, chair, "sign")
    if chair.pseudonym != chair_name(session):
        raise AccessDenied(
            f"{chair.pseudonym} is not the study's chair: the registry policy names "
            f"{chair_name(session) or 'no chair'}"
        )
    reason = (reason or "").strip()
    if not reason:
        raise FmaBandsError("say why the chair chose this band", field="reason")
    if len(reason) > MAX_REASON:
        raise FmaBandsError(f"the reason is longer than {MAX_REASON} characters", field="reason")
    chosen = read_band(library, vid, name, band)
    current = lock_study(session)  # the append lock: the round cannot move under the checks
    _require_after_round_two(session)
    if folder is None:
        raise FmaBandsError("the chair decides on the attestations folder: none is set")
    _require_in_dispute(session, library, chair, folder, vid, name)
    signer, _ = identified_signer(session, chair, passphrase)
    vignette, proposal = library.band(vid, name)  # type: ignore[misc]
    band_digest = "sha256:" + proposal.band_digest.removeprefix("sha256:")
    row = ledger.append(
        session,
        "chair_decision",
        signer=signer,
        subject=[
            {
                "name": subject_name(vid, name),
                "digest": {"sha256": band_digest.removeprefix("sha256:")},
            }
        ],
        body={
            "decision": {
                "vignette_id": vid,
                "sub_action": name,
                "band_digest": band_digest,
                "context_digest": vignette.context_digest_for(name),
                "proposal_digest": proposal_digest(proposal),
                "band": to_file(chosen),
                "reason": reason,
                "round": current.round,
                "statement": STATEMENT.format(chair=signer.pseudonym),
            }
        },
        folder=folder,
        now=now,
    )
    audit.record(
        session,
        kind="chair_decision_signed",
        actor=signer.pseudonym,
        payload={
            "record": row.file_name,
            "band": subject_name(vid, name),
            "chosen": to_file(chosen),
        },
    )
    return ledger.receipt([row], signer)


def _require_in_dispute(
    session: Session, library: Library, chair: UserPublic, folder: Path, vid: str, name: str
) -> None:
    """Refuse a band the registry does not refuse for no consensus alone (nor granted on the
    chair's decision already, which a new one replaces)."""
    for dispute in disputes(session, library, viewer=chair, folder=folder):
        if (dispute.vignette_id, dispute.sub_action) == (vid, name):
            return
    raise FmaBandsError(
        f"{vid} {name} is not in dispute after round 2: the chair decides only a band whose "
        "raters' signed bands share no value and that nothing else keeps from being granted",
        field="band",
    )


def as_data(dispute: Dispute) -> dict[str, Any]:
    """One band in dispute as `chair list --json` states it."""
    chaired = dispute.chaired
    return {
        "vignette_id": dispute.vignette_id,
        "sub_action": dispute.sub_action,
        "decided_by": "chair" if chaired else None,
        "reasons": [r.code for r in dispute.decision.reasons],
        "warnings": [w.code for w in dispute.decision.warnings],
        "chair_decision": (
            {
                "chair": chaired.chair,
                "band": to_file(dispute.decision.band),
                "reason": chaired.reason,
                "file": chaired.file,
                "round": chaired.round,
            }
            if chaired
            else None
        ),
    }
