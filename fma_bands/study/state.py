"""The study: its round, phase and mode, who may do what in it, and its vignettes kept in line
with the files.

Every coordinator-only action, the frozen closed round, the blinding between raters, which bands
a rater may review in the current round and the verdicts each mode allows go through
`authorize`, `reviewing_round` and `verdicts_for`, so each rule lives here once and the pages
and commands only call it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from fma_bands.core.errors import AccessDenied, FmaBandsError
from fma_bands.core.protocol import VERDICTS
from fma_bands.store.models import RoundBand, StudySettings, utcnow
from fma_bands.study import audit

if TYPE_CHECKING:
    from fma_bands.core.people import UserPublic

MODES = ("review", "blind")


class StudyPublic(BaseModel):
    model_config = ConfigDict(frozen=True)

    mode: Literal["review", "blind"]
    phase: Literal["open", "closed"]  # of the current round
    round: int = 1
    updated_at: datetime
    study_id: str | None = None  # named by every signed record; set with the root record


# Who may do what ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    """Who may take an action: the roles, and the conditions that hold whoever asks."""

    what: str
    roles: tuple[str, ...] = ("coordinator",)
    # Refused once the review phase is closed: a closed round's reviews are frozen. The check
    # holds the study locked to the end of the transaction (lock_study), so the round cannot
    # close between it and the writes it allows.
    open_phase: bool = False
    # A rater may also do it about themselves (their own identity, their own account).
    oneself: bool = False
    # Raters may too once the phase is closed (seeing others' work breaks the blinding before).
    raters_once_closed: bool = False


RULES: dict[str, Rule] = {
    "enrol": Rule("enrol people in the study"),
    "reset": Rule("issue a new enrolment code"),
    "close_round": Rule("close the review round"),
    "open_round": Rule("open a new review round"),
    "set_mode": Rule("change the review mode"),
    "set_policy": Rule("set the registry policy"),
    "approve": Rule(
        "approve changes to the roster and the policy", roles=("coordinator", "steward")
    ),
    "assign": Rule("assign raters to bands"),
    "see_impact": Rule("see which bands decide the harness's run pairs"),
    "import_handback": Rule("import a hand-back", open_phase=True),
    "see_progress": Rule("see every rater's progress"),
    "see_flags": Rule("see and deal with the raters' flags"),
    "read_audit": Rule("read the audit log"),
    "export_reviews": Rule("export every rater's reviews"),
    # The study's root signs the commitment into the roster: a rater holds no root key.
    "record_identity": Rule("record a rater's identity"),
    "reveal_identity": Rule("see a rater's identity", oneself=True),
    "see_reviews": Rule("see other raters' reviews", raters_once_closed=True),
    # Each pseudonym's figures and the strata: never a rater's, even once a round has closed.
    "see_diagnostics": Rule("see each rater's diagnostics and the strata"),
    "review": Rule("review bands", roles=("rater",), open_phase=True),
    "review_exemption": Rule("review exemptions", roles=("rater",), open_phase=True),
    "sign": Rule("sign attestations", roles=("rater",)),
    # A rater's queries are with the coordinator alone, about their own bands
    # (fma_bands/study/queries.py); the coordinator's reach every rater and every band.
    "ask_coordinator": Rule("ask the coordinator about a band", roles=("rater",)),
    "answer_queries": Rule("query any rater about a band and close queries"),
    # A due date belongs to the open round: a closed round's reviews are frozen anyway.
    "set_due_date": Rule("set the round's due date", open_phase=True),
    "export_bands": Rule("export the bands for the harness"),
}


def authorize(
    session: Session, actor: UserPublic | None, action: str, *, about: str | None = None
) -> UserPublic:
    """The actor, if they may take `action` (about the person named `about`); else AccessDenied
    saying why. The one check behind every page and command."""
    rule = RULES[action]
    if actor is None:
        raise AccessDenied(f"sign in first to {rule.what}")
    allowed = actor.role in rule.roles or (rule.oneself and about == actor.pseudonym)
    if not allowed and rule.raters_once_closed and actor.role == "rater":
        if study(session).phase == "open":
            raise AccessDenied(
                "other raters' reviews stay hidden until the coordinator closes the round"
            )
        allowed = True
    if not allowed:
        who = " or ".join(
            {"coordinator": "the study coordinator", "rater": "a rater", "steward": "a steward"}[r]
            for r in rule.roles
        )
        raise AccessDenied(f"only {who} can {rule.what}")
    if rule.open_phase and lock_study(session).phase != "open":
        raise AccessDenied(
            f"the review phase is closed: its reviews are frozen, so nobody can {rule.what} now"
        )
    return actor


def round_bands(session: Session, rater_id: int, number: int) -> set[tuple[str, str]]:
    """The bands this rater reviews in round `number` (2 or later): chosen when it opened."""
    query = select(RoundBand.vignette_id, RoundBand.sub_action).where(
        RoundBand.round == number, RoundBand.rater_id == rater_id
    )
    return {(vid, name) for vid, name in session.exec(query)}


def current_round_bands(session: Session, rater_id: int) -> tuple[int, set[tuple[str, str]] | None]:
    """The current round, and from round 2 this rater's bands in it (None in round 1, which
    takes every band), in one query: a queue asks on every screen."""
    on = (col(RoundBand.round) == col(StudySettings.round)) & (col(RoundBand.rater_id) == rater_id)
    query = (
        select(StudySettings.round, RoundBand.vignette_id, RoundBand.sub_action)
        .select_from(StudySettings)
        .outerjoin(RoundBand, on)  # type: ignore[arg-type]
        .where(StudySettings.id == 1)
    )
    rows = list(session.exec(query))
    number = rows[0][0] if rows else study(session).round
    if number == 1:
        return 1, None
    return number, {(vid, name) for _, vid, name in rows if vid is not None}


def round_for(session: Session, rater_id: int, vid: str, name: str) -> int:
    """The open round in which this rater's review of this band would be made: round 1 takes
    every band; a later round only the bands it was opened for, each for its chosen raters.
    Anything else is frozen, so AccessDenied. Read under the study's lock, so it still holds
    when this transaction's review is written."""
    current = lock_study(session)
    if current.phase != "open":
        raise AccessDenied(
            f"round {current.round} is closed: its reviews are frozen, and a closed round is "
            "never reopened"
        )
    if current.round > 1 and (vid, name) not in round_bands(session, rater_id, current.round):
        raise AccessDenied(
            f"round {current.round} re-reviews only the bands the coordinator chose, each by "
            f"its raters, and {vid} {name} is not one of this rater's: its earlier review is "
            "frozen"
        )
    return current.round


def reviewing_round(session: Session, rater: UserPublic, vid: str, name: str) -> int:
    """The round in which `rater` reviews this band now, if they may (else AccessDenied)."""
    authorize(session, rater, "review")
    return round_for(session, rater.id, vid, name)


def sees_proposals(settings: StudyPublic, viewer: UserPublic) -> bool:
    """Whether this person may see the proposed bands, on every page and in every command: the
    coordinator always; a rater only in review mode (blind mode hides every proposal from raters,
    in every round, so a band is written without anchoring on it)."""
    return viewer.is_coordinator or settings.mode == "review"


def verdicts_for(mode: str) -> tuple[str, ...]:
    """The verdicts a mode allows: blind mode shows no proposal, so there is none to ACCEPT."""
    return tuple(v for v in VERDICTS if mode == "review" or v != "ACCEPT")


def study(session: Session) -> StudyPublic:
    row = session.get(StudySettings, 1)
    if row is None:
        # Made by the migrations; only a database emptied by hand lacks it. Two first callers
        # may race to make it: the loser's insert rolls back to the savepoint and reads the row.
        try:
            with session.begin_nested():
                session.add(StudySettings())
        except IntegrityError:
            pass
        row = session.get(StudySettings, 1, populate_existing=True)
    return StudyPublic.model_validate(row, from_attributes=True)


def lock_study(session: Session) -> StudyPublic:
    """The study's settings, read under a lock held to the end of this transaction.

    Every write that changes the round, its phase or the mode, or that depends on them (a
    review, a hand-back, a kept draft, an assignment, a signed record), takes it before it
    reads them: a round then never closes or opens between a writer's check and its writes,
    and nothing is recorded in a round already closed. It is the lock the audit log and the
    signed log are appended under (SQLite's write lock, a PostgreSQL advisory lock), which each
    of these writes takes anyway to record its event: with one lock for both, no two writers
    can each hold one and wait for the other's."""
    audit.lock_for_append(session)
    # What this session read before the lock may be stale: the row is read again (and made by
    # study(), in a database emptied by hand).
    fresh = select(StudySettings).where(StudySettings.id == 1)
    session.exec(fresh.execution_options(populate_existing=True)).first()
    return study(session)


def set_mode(session: Session, *, actor: UserPublic, mode: str) -> StudyPublic:
    return _set(session, actor=actor, name="mode", value=mode, allowed=MODES)


def _set(
    session: Session, *, actor: UserPublic, name: str, value: str, allowed: tuple[str, ...]
) -> StudyPublic:
    authorize(session, actor, f"set_{name}")
    if value not in allowed:
        message = f"{name} must be one of {', '.join(allowed)}"
        raise FmaBandsError(message, field=name, fields={name: message})
    lock_study(session)
    row = session.get(StudySettings, 1)
    assert row is not None  # made by lock_study() just above
    before = getattr(row, name)
    if before != value:
        setattr(row, name, value)
        row.updated_at = utcnow()
        audit.record(
            session,
            kind=f"{name}_changed",
            actor=actor.pseudonym,
            payload={"from": before, "to": value, "round": row.round},
        )
    session.flush()
    return study(session)
