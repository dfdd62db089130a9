"""Who reviews what (docs/design.md, Who reviews what). A band goes to every rater whose signed
specialty covers its sub-action's scope (every rater, where the harness has no scope rule for it),
unless the coordinator has added or removed raters for that band, its vignette or its sub-action:
the latest change covering a band decides it.

Everything is read in two queries whatever the study's size, so the queue, the review rule,
the coordinator's tables and round 2 can all ask here without a query per band.
"""

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import delete, select
from sqlmodel import Session, col

from fma_bands.core.actions import SUB_ACTIONS, sub_action
from fma_bands.core.errors import AccessDenied, FmaBandsError
from fma_bands.core.people import UserPublic
from fma_bands.core.vignettes import Library
from fma_bands.store.models import Assignment, User
from fma_bands.study import audit
from fma_bands.study.state import authorize, lock_study

Band = tuple[str, str]
NOT_ASSIGNED = (
    "this band is not assigned to you, so you cannot review it; the study coordinator assigns "
    "bands (ask them if you should review this one)"
)


@dataclass(frozen=True)
class Rater:
    """A rater as assignment reads them: the specialty their public record signs."""

    id: int
    pseudonym: str
    specialty: str | None
    active: bool  # has activated their account (holds a key, so can sign)

    def in_scope(self, name: str) -> bool | None:
        """Does their specialty cover the sub-action? None where the harness has no rule."""
        return sub_action(name).in_scope(self.specialty or "")


@dataclass(frozen=True)
class Change:
    """One of the coordinator's changes, as `assign --show` and the audit log list them."""

    rater: str
    vignette_id: str | None
    sub_action: str | None
    assigned: bool
    made_by: str
    made_at: datetime

    @property
    def target(self) -> str:
        """What the change covers, in words (the sub-action by its label; its key stays in
        as_dict)."""
        known = SUB_ACTIONS.get(self.sub_action or "")
        label = known.label if known is not None else self.sub_action
        if self.vignette_id and label:
            return f"band {self.vignette_id} · {label}"
        if self.vignette_id:
            return f"every band of vignette {self.vignette_id}"
        return f"every {label} band"

    def as_dict(self) -> dict[str, object]:
        return {
            "rater": self.rater,
            "change": "added" if self.assigned else "removed",
            "vignette_id": self.vignette_id,
            "sub_action": self.sub_action,
            "made_by": self.made_by,
            "made_at": self.made_at.isoformat(),
        }


@dataclass
class Assignments:
    """The raters and the coordinator's changes, answering who is assigned to which band."""

    raters: list[Rater]  # by pseudonym
    changes: list[Change] = field(default_factory=list)  # oldest first
    # Per rater id: the latest change for each band, vignette and sub-action, as (order, added).
    _bands: dict[int, dict[Band, tuple[int, bool]]] = field(default_factory=dict)
    _vignettes: dict[int, dict[str, tuple[int, bool]]] = field(default_factory=dict)
    _subs: dict[int, dict[str, tuple[int, bool]]] = field(default_factory=dict)
    _defaults: dict[int, dict[str, bool]] = field(default_factory=dict)

    def covers(self, rater: Rater, vid: str, name: str) -> bool:
        """Is the band assigned to the rater? Asked for every band and rater of a study's table, so
        a rater the coordinator never changed goes straight to their specialty's default."""
        rid = rater.id
        if rid in self._bands or rid in self._vignettes or rid in self._subs:
            best = None
            for found in (
                self._bands.get(rid, {}).get((vid, name)),
                self._vignettes.get(rid, {}).get(vid),
                self._subs.get(rid, {}).get(name),
            ):
                if found is not None and (best is None or found[0] > best[0]):
                    best = found
            if best is not None:
                return best[1]
        defaults = self._defaults.setdefault(rid, {})
        if name not in defaults:
            defaults[name] = rater.in_scope(name) is not False
        return defaults[name]

    def raters_of(self, vid: str, name: str) -> tuple[Rater, ...]:
        return tuple(r for r in self.raters if self.covers(r, vid, name))

    def names_of(self, vid: str, name: str) -> set[str]:
        return {r.pseudonym for r in self.raters_of(vid, name)}

    def bands_of(self, library: Library, pseudonym: str) -> set[Band]:
        rater = next((r for r in self.raters if r.pseudonym == pseudonym), None)
        if rater is None:
            return set()
        return {band for band in study_bands(library) if self.covers(rater, *band)}

    def table(self, library: Library) -> dict[Band, tuple[str, ...]]:
        """Every band of the study and the pseudonyms of its assigned raters."""
        return {
            band: tuple(r.pseudonym for r in self.raters_of(*band)) for band in study_bands(library)
        }


def study_bands(library: Library) -> list[Band]:
    """Every proposed band, by vignette, then by step."""
    order = {name: i for i, name in enumerate(SUB_ACTIONS)}
    return [
        (v.id, p.sub_action)
        for v in library
        for p in sorted(v.proposals, key=lambda p: order[p.sub_action])
    ]


# Reading ------------------------------------------------------------------------------------


def load(session: Session, *, rater: UserPublic | None = None) -> Assignments:
    """Every rater and the coordinator's changes (two queries); or one rater's (one query)."""
    if rater is not None:
        raters = [Rater(rater.id, rater.pseudonym, rater.specialty, rater.active)]
    else:
        query = select(
            col(User.id), col(User.pseudonym), col(User.specialty), col(User.passphrase_hash)
        ).where(col(User.role) == "rater")
        raters = [
            Rater(uid, name, specialty, secret is not None)
            for uid, name, specialty, secret in session.execute(query.order_by(col(User.pseudonym)))
        ]
    names = {r.id: r.pseudonym for r in raters}
    columns = ("id", "rater_id", "vignette_id", "sub_action", "assigned", "made_by", "made_at")
    changes = select(*(col(getattr(Assignment, c)) for c in columns)).order_by(col(Assignment.id))
    if rater is not None:
        changes = changes.where(col(Assignment.rater_id) == rater.id)
    found = Assignments(raters)
    for order, rid, vid, name, assigned, by, at in session.execute(changes):
        if rid not in names:
            continue
        found.changes.append(Change(names[rid], vid, name, assigned, by, at))
        if vid is not None and name is not None:
            found._bands.setdefault(rid, {})[(vid, name)] = (order, assigned)
        elif vid is not None:
            found._vignettes.setdefault(rid, {})[vid] = (order, assigned)
        elif name is not None:
            found._subs.setdefault(rid, {})[name] = (order, assigned)
    return found


def assigned_raters(session: Session, vignette_id: str, sub_action: str) -> set[str]:
    """The pseudonyms of the raters assigned to one band."""
    return load(session).names_of(vignette_id, sub_action)


def assignment_table(session: Session, library: Library) -> dict[Band, tuple[str, ...]]:
    """Every band's assigned raters at once (two queries): use this, not a call per band."""
    return load(session).table(library)


def assigned_bands(session: Session, library: Library, rater: UserPublic) -> set[Band]:
    """The bands in this rater's queue."""
    if rater.role != "rater":
        return set()
    return load(session, rater=rater).bands_of(library, rater.pseudonym)


def is_assigned(session: Session, rater: UserPublic, vid: str, name: str) -> bool:
    if rater.role != "rater":
        return False
    found = load(session, rater=rater)
    return found.covers(found.raters[0], vid, name)


def require_assigned(session: Session, rater: UserPublic, vid: str, name: str) -> None:
    """Refuse a rater's review of a band not assigned to them (the rule behind every save)."""
    if not is_assigned(session, rater, vid, name):
        raise AccessDenied(NOT_ASSIGNED, field="band")


# Changing -----------------------------------------------------------------------------------


def parse_band_ref(text: str) -> Band:
    """`VIGNETTE:SUB_ACTION`, as the command line and hand-backs name a band."""
    match = re.fullmatch(r"\s*([^:\s]+)\s*:\s*([^:\s]+)\s*", text or "")
    if match is None:
        raise FmaBandsError(
            f"write a band as VIGNETTE:SUB_ACTION (e.g. draft_triage_01:esi_acuity), not {text!r}",
            field="band",
        )
    return match.group(1), match.group(2)


def change(
    session: Session,
    library: Library,
    *,
    actor: UserPublic,
    rater: str,
    bands: Sequence[Band] = (),
    vignettes: Sequence[str] = (),
    sub_actions: Sequence[str] = (),
    assigned: bool = True,
) -> list[Change]:
    """Add the rater to (or remove them from) these bands, every band of these vignettes and
    every band of these sub-actions (coordinator only, audited). Checked whole before anything
    is written; a later change of the same target replaces the earlier one."""
    authorize(session, actor, "assign")
    lock_study(session)  # a review checked against the assignment is written before this change
    who = _rater(session, rater)
    targets = _targets(library, bands, vignettes, sub_actions)
    made = []
    for vid, name in targets:
        session.execute(
            delete(Assignment).where(
                col(Assignment.rater_id) == who.id,
                col(Assignment.vignette_id).is_(None)
                if vid is None
                else col(Assignment.vignette_id) == vid,
                col(Assignment.sub_action).is_(None)
                if name is None
                else col(Assignment.sub_action) == name,
            )
        )
        row = Assignment(
            rater_id=who.id,
            vignette_id=vid,
            sub_action=name,
            assigned=assigned,
            made_by=actor.pseudonym,
        )
        session.add(row)
        session.flush()
        made.append(Change(who.pseudonym, vid, name, assigned, row.made_by, row.made_at))
    audit.record(
        session,
        kind="assignment_changed",
        actor=actor.pseudonym,
        payload={
            "rater": who.pseudonym,
            "change": "added" if assigned else "removed",
            "bands": [f"{v}:{n}" for v, n in targets if v and n],
            "vignettes": [v for v, n in targets if v and not n],
            "sub_actions": [n for v, n in targets if n and not v],
        },
    )
    return made


def _rater(session: Session, pseudonym: str) -> Rater:
    query = select(col(User.id), col(User.role), col(User.specialty), col(User.passphrase_hash))
    found = session.execute(query.where(col(User.pseudonym) == (pseudonym or "").strip())).first()
    if found is None:
        raise FmaBandsError(f"no rater named {pseudonym!r} is enrolled", field="rater")
    uid, role, specialty, secret = found
    if role != "rater":
        raise FmaBandsError(f"{pseudonym} is the study's {role}, not a rater", field="rater")
    return Rater(uid, pseudonym.strip(), specialty, secret is not None)


def _targets(
    library: Library,
    bands: Iterable[Band],
    vignettes: Iterable[str],
    sub_actions: Iterable[str],
) -> list[tuple[str | None, str | None]]:
    targets: list[tuple[str | None, str | None]] = []
    for vid, name in bands:
        if vid not in library.vignettes:
            raise FmaBandsError(f"no vignette {vid!r} in the study", field="band")
        if library.band(vid, name) is None:
            sub_action(name)  # an unknown sub-action is named as such, with the valid ones
            raise FmaBandsError(f"vignette {vid} proposes no {name} band", field="band")
        targets.append((vid, name))
    for vid in vignettes:
        if vid not in library.vignettes:
            raise FmaBandsError(f"no vignette {vid!r} in the study", field="vignette")
        targets.append((vid, None))
    for name in sub_actions:
        targets.append((None, sub_action(name).name))
    if not targets:
        raise FmaBandsError("say which bands: a band, a vignette or a sub-action", field="band")
    return list(dict.fromkeys(targets))
