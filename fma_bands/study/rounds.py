"""Rounds (docs/design.md, Blinding and rounds; Who reviews what): round 1 is the independent round;
a closed round is frozen and never reopened; round 2 re-reviews the bands the coordinator chooses
(by default the discordant ones) by their raters, who see round 1's anonymised panel
(fma_bands.study.round_panel).

Which bands a rater may review in the open round is enforced in fma_bands.study.state.round_for.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from sqlalchemy import update
from sqlmodel import Session, col, select

from fma_bands.core.actions import sub_action
from fma_bands.core.bands import consensus
from fma_bands.core.errors import AccessDenied, ConflictError, FmaBandsError
from fma_bands.core.people import UserPublic
from fma_bands.core.vignettes import Library
from fma_bands.evidence.policy import Policy
from fma_bands.store.models import RoundBand, StudySettings, utcnow
from fma_bands.study import audit, ledger
from fma_bands.study.governance import policy_in_force
from fma_bands.study.state import StudyPublic, authorize, lock_study, study
from fma_bands.study.submissions import attested_band, submitted_reviews
from fma_bands.study.users import list_users, pseudonyms

Band = tuple[str, str]
SECOND = 2
# Why a band is discordant after a round: the registry's own codes for what it would refuse.
DISCORD = {
    "no_consensus": "the raters' bands share no value",
    "quorum_not_met": "fewer raters with a band than the policy's quorum",
    "out_of_scope": "no rater with a band has a specialty in this sub-action's scope",
}


@dataclass(frozen=True)
class Discord:
    vignette_id: str
    sub_action: str
    reasons: tuple[str, ...]  # codes of DISCORD
    n_raters: int  # raters with a band (not DECLINE) in the round

    @property
    def band(self) -> Band:
        return (self.vignette_id, self.sub_action)

    def describe(self) -> str:
        return "; ".join(f"{code}: {DISCORD[code]}" for code in self.reasons)


@dataclass(frozen=True)
class RoundBandRaters:
    vignette_id: str
    sub_action: str
    raters: tuple[str, ...]


@dataclass(frozen=True)
class RoundState:
    number: int
    phase: str
    bands: tuple[RoundBandRaters, ...]  # the bands of the current round, when it is not round 1

    def describe(self) -> str:
        if self.number == 1:
            return f"round 1 {self.phase}: every band, every rater (independent)"
        return (
            f"round {self.number} {self.phase}: {len(self.bands)} band(s) re-reviewed after "
            "the anonymised panel of round 1 (consensus-building)"
        )


def state(session: Session, *, viewer: UserPublic) -> RoundState:
    """The current round, its phase and (from round 2) its bands with their raters."""
    authorize(session, viewer, "see_progress")
    current = study(session)
    names = pseudonyms(session)
    by_band: dict[Band, list[str]] = {}
    query = select(RoundBand).where(RoundBand.round == current.round)
    for row in session.exec(query.order_by(col(RoundBand.vignette_id), col(RoundBand.sub_action))):
        by_band.setdefault((row.vignette_id, row.sub_action), []).append(names[row.rater_id])
    bands = tuple(
        RoundBandRaters(vid, name, tuple(sorted(raters))) for (vid, name), raters in by_band.items()
    )
    return RoundState(current.round, current.phase, bands)


def round_two_raters(
    session: Session, library: Library, bands: Iterable[Band]
) -> dict[Band, list[UserPublic]]:
    """Who reviews each band in round 2: the raters it is assigned to when round 2 opens
    (by signed specialty, with the coordinator's additions, so a rater the
    coordinator adds for round 2 is assigned first). One read of the assignment for all."""
    from fma_bands.study.assignment import assignment_table

    table = assignment_table(session, library)
    raters = list_users(session, role="rater")
    return {
        band: [u for u in raters if u.pseudonym in table.get(band, ())]
        for band in bands
        if library.band(*band) is not None
    }


def discordant_bands(
    session: Session, library: Library, *, viewer: UserPublic, folder: Path, round: int = 1
) -> list[Discord]:
    """The bands the registry would not grant on this round's submitted reviews if every one
    were signed: no consensus (an empty intersection), quorum not met, or no rater in scope.

    Read from the store, since raters sign after the round; the quorum is policy.yaml's (the
    default quorum of 1 when there is none yet)."""
    authorize(session, viewer, "see_progress")
    policy = policy_in_force(session) or Policy()
    reviews: dict[Band, list] = {}
    for review in submitted_reviews(session, library, viewer=viewer, round=round):
        reviews.setdefault((review.vignette_id, review.sub_action), []).append(review)
    specialties = {u.pseudonym: u.specialty or "" for u in list_users(session, role="rater")}
    found = []
    for vignette in library:
        for proposal in vignette.proposals:
            band = (vignette.id, proposal.sub_action)
            judged = [r for r in reviews.get(band, []) if r.verdict != "DECLINE"]
            action = sub_action(proposal.sub_action)
            reasons = []
            if len(judged) < policy.quorum:
                reasons.append("quorum_not_met")
            bands = [b for r in judged if (b := attested_band(r, library)) is not None]
            if len(bands) > 1 and consensus(bands).band is None:
                reasons.append("no_consensus")
            scoped = [action.in_scope(specialties.get(r.rater, "")) for r in judged]
            if judged and action.scope and not any(scoped):
                reasons.append("out_of_scope")
            if reasons:
                found.append(Discord(vignette.id, proposal.sub_action, tuple(reasons), len(judged)))
    return found


def open_round(
    session: Session,
    library: Library,
    *,
    actor: UserPublic,
    number: int,
    folder: Path,
    bands: Iterable[Band] | None = None,
) -> RoundState:
    """Open round `number` (2, once round 1 is closed) for `bands`, by default the discordant
    ones, each for its round-2 raters (audited)."""
    authorize(session, actor, "open_round")
    current = lock_study(session)
    _check_can_follow(current, number)
    chosen = _chosen(session, library, actor, folder, bands)
    raters = round_two_raters(session, library, chosen)
    empty = [f"{vid} {name}" for (vid, name), people in raters.items() if not people]
    if empty:
        raise FmaBandsError(f"no rater can review {', '.join(empty)} in round {number}")
    now = utcnow()
    _move_to(session, current, number, now)
    _assign(session, raters, actor=actor, number=number, now=now)
    session.flush()
    return state(session, viewer=actor)


def _check_can_follow(current: StudyPublic, number: int) -> None:
    """Refuse to open round `number` unless it is round 2 and round 1 is closed."""
    if current.phase == "open":
        raise AccessDenied(
            f"round {current.round} is still open: close it (confirmed) before opening another"
        )
    if number != current.round + 1 or number != SECOND:
        raise FmaBandsError(
            f"round {current.round} is closed and a closed round is never reopened; the only "
            f"round that can follow it is round {SECOND}"
            + (" (round 2 has been held already)" if current.round >= SECOND else ""),
            field="round",
        )


def _move_to(session: Session, current: StudyPublic, number: int, now: datetime) -> None:
    """The study's round becomes `number`, open, unless another coordinator moved it first."""
    # Compare-and-set: of two coordinators opening the round at once, the second is refused.
    moved = session.execute(
        update(StudySettings)
        .where(
            col(StudySettings.id) == 1,
            col(StudySettings.round) == current.round,
            col(StudySettings.phase) == "closed",
        )
        .values(round=number, phase="open", updated_at=now)
    )
    if moved.rowcount != 1:  # type: ignore[attr-defined]
        raise ConflictError(f"round {number} was opened meanwhile: reload to see it")
    session.expire_all()  # the settings row the caller loaded is stale now


def _assign(
    session: Session,
    raters: dict[Band, list[UserPublic]],
    *,
    actor: UserPublic,
    number: int,
    now: datetime,
) -> None:
    """Each band of round `number` to its raters (audited)."""
    for (vid, name), people in raters.items():
        for rater in people:
            session.add(
                RoundBand(
                    round=number,
                    vignette_id=vid,
                    sub_action=name,
                    rater_id=rater.id,
                    opened_by=actor.pseudonym,
                    opened_at=now,
                )
            )
    audit.record(
        session,
        kind="round_opened",
        actor=actor.pseudonym,
        payload={
            "round": number,
            "bands": [
                {"vignette_id": vid, "sub_action": name, "raters": [r.pseudonym for r in people]}
                for (vid, name), people in raters.items()
            ],
        },
    )


def close_round(session: Session, *, actor: UserPublic, folder: Path | None = None) -> RoundState:
    """Close the open round (audited): its reviews are frozen for good, and it is never reopened.
    The one way a round closes, for every page and command; a closed round is refused. The
    attestations signed during it, sealed in the store until now, reach `folder` once this
    commits."""
    authorize(session, actor, "close_round")
    # Under the study's lock: a review checked against the open round is written before this
    # close, or checked after it and refused.
    current = lock_study(session)
    # Compare-and-set: of two coordinators closing at once, the second is told it is closed.
    closed = session.execute(
        update(StudySettings)
        .where(
            col(StudySettings.id) == 1,
            col(StudySettings.round) == current.round,
            col(StudySettings.phase) == "open",
        )
        .values(phase="closed", updated_at=utcnow())
    )
    if closed.rowcount != 1:  # type: ignore[attr-defined]
        raise FmaBandsError(
            f"round {current.round} is closed already: its reviews are frozen, and a closed "
            "round is never reopened"
        )
    session.expire_all()  # the settings row the caller loaded is stale now
    audit.record(
        session,
        kind="phase_changed",
        actor=actor.pseudonym,
        payload={"from": "open", "to": "closed", "round": current.round},
    )
    session.flush()
    if folder is not None:
        ledger.publish_on_commit(session, folder)
    return state(session, viewer=actor)


def _chosen(
    session: Session,
    library: Library,
    actor: UserPublic,
    folder: Path,
    bands: Iterable[Band] | None,
) -> list[Band]:
    if bands is None:
        chosen = [d.band for d in discordant_bands(session, library, viewer=actor, folder=folder)]
        if not chosen:
            raise FmaBandsError(
                "no band is discordant after round 1 (every band has a consensus, its quorum "
                "and a rater in scope): name the bands to re-review, if any"
            )
        return chosen
    chosen = list(dict.fromkeys(bands))
    unknown = [f"{vid}:{name}" for vid, name in chosen if library.band(vid, name) is None]
    if unknown:
        raise FmaBandsError(
            f"no such band in the study: {', '.join(unknown)} (give VIGNETTE_ID:SUB_ACTION)",
            field="band",
        )
    if not chosen:
        raise FmaBandsError("choose at least one band for the new round", field="band")
    return chosen


def parse_band_names(names: Sequence[str]) -> list[Band]:
    """`VID:SUB` names (from the command line) as bands."""
    bands = []
    for text in names:
        vid, sep, name = text.rpartition(":")
        if not sep or not vid or not name:
            raise FmaBandsError(
                f"{text!r} is not a band: give VIGNETTE_ID:SUB_ACTION", field="band"
            )
        bands.append((vid, name))
    return bands
