"""Rounds (docs/design.md, Blinding and rounds; Who reviews what): round 1 is the independent round;
a closed round is frozen and never reopened; round 2 re-reviews the bands the coordinator chooses
(by default round 1's candidates: what the registry would refuse, or what the Agreement page
shows as disputed) by their raters, who see round 1's anonymised panel
(fma_bands.study.round_panel).

Which bands a rater may review in the open round is enforced in fma_bands.study.state.round_for.
"""

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import delete, update
from sqlmodel import Session, col, select

from fma_bands.agreement import band_agreements
from fma_bands.agreement.panel import band_agreement, disputed_text
from fma_bands.core.actions import sub_action
from fma_bands.core.errors import AccessDenied, ConflictError, FmaBandsError
from fma_bands.core.labels import case_label, case_numbers, tool_names
from fma_bands.core.people import UserPublic
from fma_bands.core.vignettes import Library
from fma_bands.evidence.policy import Policy
from fma_bands.store.models import RoundBand, ScreenDraft, StudySettings, utcnow
from fma_bands.study import audit, ledger
from fma_bands.study.case_keys import case_key
from fma_bands.study.governance import policy_in_force
from fma_bands.study.ratings import study_ratings
from fma_bands.study.state import StudyPublic, authorize, lock_study, study
from fma_bands.study.users import list_users, pseudonyms

Band = tuple[str, str]
SECOND = 2


@dataclass(frozen=True)
class Reason:
    """Why a band is a candidate for round 2, as the coordinator reads it: a few words for a
    table's cell or a choice, and the sentence that says what it means."""

    short: str
    sentence: str


# Why a band is a candidate for round 2 after a round, by code (the codes stay in JSON): what the
# registry would refuse (its own codes), and what the Agreement page shows as a disputed span.
REASONS = {
    "quorum_not_met": Reason(
        "too few raters",
        "Fewer raters gave a band than the study's policy requires (its quorum); where the "
        "policy requires the scope, only those within it count.",
    ),
    "no_consensus": Reason(
        "no consensus",
        "The raters' bands share no value, so there is no band they all stand behind.",
    ),
    "out_of_scope": Reason(
        "too few raters in scope",
        "Too few of the raters who gave a band have a specialty within this kind of decision's "
        "scope: none of them, or, where the study's policy requires the scope, fewer than its "
        "quorum (the registry counts no one outside it).",
    ),
    "disputed_span": Reason(
        "disputed span",
        "The raters' bands meet in a consensus, but some raters admit values the others do "
        "not: the disputed span the Agreement page shows.",
    ),
    "not_reviewed": Reason(
        "no one reviewed",
        "No rater submitted a review of it in the round, so a new round would have no bands to "
        "show its raters: it is listed but never chosen by default; choose it by hand to have "
        "it reviewed now.",
    ),
}
# The same reasons where no round follows (round 2 open or closed): nothing can be chosen now.
FINAL_SENTENCES = {
    "not_reviewed": "No rater submitted a review of it in round 1, and no round follows round "
    "2: it keeps the authors' provenance unless signed reviews of it reach the quorum.",
}


def reason_sentence(code: str, final: bool = False) -> str:
    """A reason's sentence; `final`: where no round follows, so nothing can be chosen."""
    return FINAL_SENTENCES.get(code, REASONS[code].sentence) if final else REASONS[code].sentence


@dataclass(frozen=True)
class Candidate:
    """A band proposed for round 2, with every reason it is one."""

    vignette_id: str
    sub_action: str
    label: str  # the band as the coordinator reads it (band_label)
    reasons: tuple[str, ...]  # codes of REASONS, in REASONS' order
    n_raters: int  # raters with a band (not DECLINE) in the round
    disputed: str | None  # what some but not all raters admit, in words; None when nothing
    final: bool = False  # listed where no round follows (from round 2 on)
    # Of n_raters, those the registry counts (Policy.counts): fewer under a required scope.
    n_counted: int | None = None

    @property
    def band(self) -> Band:
        return (self.vignette_id, self.sub_action)

    def raters_words(self) -> str:
        """The raters with a band, and how many of them count where the scope leaves some out:
        "2", or "2 (1 in scope)"."""
        if self.n_counted is None or self.n_counted == self.n_raters:
            return str(self.n_raters)
        return f"{self.n_raters} ({self.n_counted} in scope)"

    def sentences(self) -> list[str]:
        """Each reason's sentence, in the order of the codes."""
        return [reason_sentence(code, self.final) for code in self.reasons]

    def short(self) -> str:
        """The reasons in a few words each: "no consensus; too few raters"."""
        return "; ".join(REASONS[code].short for code in self.reasons)

    def as_json(self) -> dict[str, Any]:
        """The candidate as `fma-bands round show --json` prints it: codes beside sentences."""
        return {
            "vignette_id": self.vignette_id,
            "sub_action": self.sub_action,
            "reasons": list(self.reasons),
            "label": self.label,
            "reason_text": self.sentences(),
            "n_raters": self.n_raters,
            "n_counted": self.n_counted,
            "disputed_text": self.disputed,
        }


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
            f"round {self.number} {self.phase}: {count_bands(len(self.bands))} re-reviewed after "
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


def count_bands(n: int) -> str:
    """`n` bands in words: "1 band", "2 bands"."""
    return f"{n} band" if n == 1 else f"{n} bands"


def band_label(numbers: Mapping[str, int], band: Band) -> str:
    """A band as the coordinator reads it: its case label, its vignette id (the coordinator's
    name for it, which `--band` takes) and its sub-action's name."""
    vid, name = band
    return f"{case_label(numbers, vid)} · {vid} · {sub_action(name).label}"


def band_labels(session: Session, library: Library) -> dict[Band, str]:
    """Every band of the study with its label (band_label), in case order (each case's bands
    in the vignette's order), as every page lists cases."""
    numbers = case_numbers(library, case_key(session))
    last = len(numbers) + 1
    in_order = sorted(library, key=lambda v: (numbers.get(v.id, last), v.id))
    return {
        (v.id, p.sub_action): band_label(numbers, (v.id, p.sub_action))
        for v in in_order
        for p in v.proposals
    }


def chair_words(candidate: "Candidate", signer: str | None, chair: str | None) -> str:
    """The chair's part in a band still disputed after round 2: decided (by whom), awaited from
    the policy's `chair` (or from no one, the policy naming none), or not the chair's, since the
    chair decides only a band whose raters' bands share no value."""
    if signer is not None:
        return f"signed by {signer}"
    if "no_consensus" in candidate.reasons:
        if chair is None:
            return "none: the policy names no chair"
        return f"none yet (the chair is {chair})"
    # Short enough for Study admin's column; the reasons beside it say the rest.
    if "quorum_not_met" in candidate.reasons or "out_of_scope" in candidate.reasons:
        return "not the chair's: too few raters"
    return "not needed: a consensus band"


def policy_chair(session: Session) -> str | None:
    """The chair the policy in force names, if any."""
    return (policy_in_force(session) or Policy()).chair


def round_two_candidates(
    session: Session, library: Library, *, viewer: UserPublic, round: int = 1
) -> list[Candidate]:
    """The bands to re-review after `round` (after round 2: the bands of round 2 still in
    dispute), each with its reasons, in case order, with the bands no one reviewed after those
    the raters dispute: those the registry would not grant on the round's submitted reviews if
    every one were signed (quorum not met, no consensus, too few raters in scope), and those where
    the raters meet in a consensus but differ (the disputed span the Agreement page shows).

    The consensus and the disputed span are the Agreement page's own, from the same ratings
    (ratings.study_ratings, agreement.band_agreements, one intersection rule): a band the
    Agreement page shows as disputed is always a candidate. With no consensus, everything the
    raters admit is disputed, so "no consensus" says it and "disputed span" is kept for bands
    whose raters still share a consensus. Read from the store, since raters sign after the
    round; the quorum is the policy in force (the default quorum of 1 when there is none yet).
    """
    authorize(session, viewer, "see_progress")
    policy = policy_in_force(session) or Policy()
    ratings = study_ratings(session, library, viewer=viewer, round=round)
    reviewed = {(r.vignette_id, r.sub_action) for r in ratings}
    agreements = {(a.vignette_id, a.sub_action): a for a in band_agreements(ratings)}
    specialties = {u.pseudonym: u.specialty or "" for u in list_users(session, role="rater")}
    numbers = case_numbers(library, case_key(session))
    held = _bands_of(session, round) if round > 1 else None
    found = []
    for vignette in library:
        names = tool_names(vignette)
        for proposal in vignette.proposals:
            band = (vignette.id, proposal.sub_action)
            if held is not None and band not in held:
                continue  # not re-reviewed in this round: its earlier round stands
            agreement = agreements.get(band)
            given = list(agreement.bands) if agreement else []
            # The bands the registry would count (Policy.counts): where the policy requires
            # the scope, a rater outside it gives a band the Agreement page shows but the
            # registry never counts, so the quorum and the consensus are over the others.
            counting = [
                (rater, b)
                for rater, b in given
                if policy.counts(proposal.sub_action, specialties.get(rater))
            ]
            if agreement is not None and len(counting) < len(given):
                agreement = band_agreement(
                    vignette.id, proposal.sub_action, counting, agreement.n_declined
                )
            judged = [rater for rater, _ in counting]
            agreed = agreement.consensus if agreement and counting else None
            action = sub_action(proposal.sub_action)
            reasons = []
            if len(judged) < policy.quorum:
                reasons.append("quorum_not_met")
            if agreed is not None and agreed.rule == "empty":
                reasons.append("no_consensus")
            if given and action.scope:
                if policy.scope == "require":
                    outside = len(judged) < min(len(given), policy.quorum)
                else:
                    outside = not any(action.in_scope(specialties.get(r, "")) for r, _ in given)
                if outside:
                    reasons.append("out_of_scope")
            if agreed is not None and agreed.rule == "applied" and agreed.disputed:
                reasons.append("disputed_span")
            if band not in reviewed:
                reasons.append("not_reviewed")
            if not reasons:
                continue
            # As the Agreement page says it: a yes/no band's as "the answer no", never a bare "no".
            disputed = None if agreed is None else disputed_text(proposal.sub_action, agreed, names)
            found.append(
                Candidate(
                    vignette_id=vignette.id,
                    sub_action=proposal.sub_action,
                    label=band_label(numbers, band),
                    reasons=tuple(reasons),
                    n_raters=len(given),
                    disputed=disputed,
                    final=round > 1,
                    n_counted=len(judged),
                )
            )
    # The disputes a coordinator acts on first; the unreviewed bands (never chosen by default)
    # after them, each group in the order of the cases' numbers and of each case's bands.
    order = {c.band: i for i, c in enumerate(found)}
    found.sort(
        key=lambda c: ("not_reviewed" in c.reasons, numbers.get(c.vignette_id, 0), order[c.band])
    )
    return found


def left_out_of_round_two(
    session: Session, library: Library, *, viewer: UserPublic
) -> list[Candidate]:
    """Round 1's candidates that round 2 does not re-review (none before round 2 opens): the
    registry decides them from round 1's signed reviews, and no round follows round 2."""
    if state(session, viewer=viewer).number < 2:
        return []
    held = _bands_of(session, 2)
    every = round_two_candidates(session, library, viewer=viewer, round=1)
    return [dataclasses.replace(c, final=True) for c in every if c.band not in held]


def _bands_of(session: Session, number: int) -> set[Band]:
    """The bands re-reviewed in round `number` (from round 2)."""
    query = select(RoundBand.vignette_id, RoundBand.sub_action).where(RoundBand.round == number)
    return {(vid, name) for vid, name in session.exec(query)}


def choose(
    candidates: Iterable[Candidate],
    *,
    reasons: Iterable[str] = (),
    sub_actions: Iterable[str] = (),
) -> list[Band]:
    """The candidates of a group, in their order: those with any of `reasons` (when none is
    given, every candidate someone reviewed: a band no one reviewed is chosen only by its own
    reason or by hand) and of any of `sub_actions` (every sub-action when none is given)."""
    wanted, kinds = set(reasons), set(sub_actions)
    return [
        c.band
        for c in candidates
        if (wanted & set(c.reasons) if wanted else "not_reviewed" not in c.reasons)
        and (not kinds or c.sub_action in kinds)
    ]


def open_round(
    session: Session,
    library: Library,
    *,
    actor: UserPublic,
    number: int,
    folder: Path,
    bands: Iterable[Band] | None = None,
) -> RoundState:
    """Open round `number` (2, once round 1 is closed) for `bands`, by default round 1's
    candidates (round_two_candidates), each for its round-2 raters (audited)."""
    authorize(session, actor, "open_round")
    current = lock_study(session)
    _check_can_follow(current, number)
    chosen = _chosen(session, library, actor, bands)
    raters = round_two_raters(session, library, chosen)
    empty = [
        f"{vid} · {sub_action(name).label}" for (vid, name), people in raters.items() if not people
    ]
    if empty:
        raise FmaBandsError(f"no rater can review {', '.join(empty)} in round {number}")
    now = utcnow()
    _move_to(session, current, number, now)
    # What was typed and never submitted belongs to the round closed (never reopened): kept,
    # it would show a band of the new round as in progress, and Resume would go there first.
    session.execute(delete(ScreenDraft))
    _assign(session, raters, actor=actor, number=number, now=now)
    session.flush()
    return state(session, viewer=actor)


def _check_can_follow(current: StudyPublic, number: int) -> None:
    """Refuse to open round `number` unless it is round 2 and round 1 is closed."""
    if current.phase == "open":
        raise AccessDenied(
            f"round {current.round} is still open: close it (confirmed) before opening another"
        )
    if current.round >= SECOND:
        raise AccessDenied(
            f"round {current.round} has been held and is closed: a closed round is never "
            f"reopened, and no round follows round {SECOND}"
        )
    if number != current.round + 1:
        raise AccessDenied(
            f"round {current.round} is closed and a closed round is never reopened; the only "
            f"round that can follow it is round {SECOND}"
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
        raise AccessDenied(
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
    session: Session, library: Library, actor: UserPublic, bands: Iterable[Band] | None
) -> list[Band]:
    if bands is None:
        candidates = round_two_candidates(session, library, viewer=actor)
        chosen = choose(candidates)
        if not chosen:
            unreviewed = (
                f"; {count_bands(len(candidates))} no one reviewed, chosen only by name"
                if candidates
                else ""
            )
            raise FmaBandsError(
                "no band reviewed in round 1 is a candidate for round 2 (each has a consensus "
                f"with no disputed span, its quorum and a rater in scope{unreviewed}): name the "
                "bands to re-review, if any"
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
