"""The review workflow (DESIGN 2.3, 2.4): study phase and mode, queues, drafts, submissions,
revisions, hand-back import, and blinding, enforced here rather than in the pages.

A submitted review is never changed: revising it writes a new revision that supersedes it.
"""

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from sqlalchemy import update
from sqlmodel import Session, select

from fma_bands import audit
from fma_bands.actions import SUB_ACTIONS, sub_action
from fma_bands.bands import AnyBand, BandError, parse_band, parse_notation, to_file
from fma_bands.models import Review, StudySettings, User, VignetteRecord, utcnow
from fma_bands.users import UserPublic
from fma_bands.vignettes import Library, Proposal, Vignette

VERDICTS = ("ACCEPT", "AMEND", "DECLINE")
# The six protocol questions, in order; `problem` is the choice that needs a note saying which.
QUESTIONS: tuple[dict[str, str], ...] = (
    {
        "key": "q1",
        "text": "Does the cited clause say what the clause field says it says?",
        "problem": "no",
    },
    {
        "key": "q2",
        "text": "Does the reasoning rely only on facts available at this step?",
        "problem": "no",
    },
    {
        "key": "q3",
        "text": "Too wide: is any acceptable action one the clause does not support?",
        "problem": "yes",
    },
    {
        "key": "q4",
        "text": "Too narrow: is any action the clause supports missing?",
        "problem": "yes",
    },
    {
        "key": "q5",
        "text": "If a disputed span is recorded, which reading is right for this patient, and why?",
        "problem": "",
    },
    {
        "key": "q6",
        "text": "Would you sign this band as a defensible reading of that clause? "
        "If not, what should it be?",
        "problem": "no",
    },
)
CHOICES = ("yes", "no", "unsure")


class ReviewError(ValueError):
    """A review that cannot be saved; `fields` maps each form field to a plain message."""

    def __init__(self, message: str, fields: dict[str, str] | None = None):
        super().__init__(message)
        self.fields = fields or {}


class ConflictError(ReviewError):
    """The review changed since it was opened (another tab or window saved it first)."""


class BlindingError(PermissionError):
    """A rater asked for another rater's work while the review phase is open."""


class StudyPublic(BaseModel):
    model_config = ConfigDict(frozen=True)

    mode: Literal["review", "blind"]
    phase: Literal["open", "closed"]
    updated_at: datetime


class ReviewData(BaseModel):
    """One revision of one rater's review, as plain data for pages and exports."""

    model_config = ConfigDict(frozen=True)

    id: int
    vignette_id: str
    sub_action: str
    rater: str
    revision: int
    status: Literal["draft", "submitted"]
    mode: str
    verdict: str | None
    band: Any
    answers: dict[str, Any]
    reason: str | None
    context_digest: str
    proposal_digest: str | None
    origin: str
    version: int
    submitted_at: datetime | None
    updated_at: datetime
    stale: bool = False


class ReviewForm(BaseModel):
    """What the review screen (or a hand-back line) sends."""

    verdict: str | None = None
    band: Any = None  # file form: a list, a {min, max} mapping, or {required, defensible}
    answers: dict[str, dict[str, str]] = {}
    reason: str | None = None


# Study settings ---------------------------------------------------------------------------


def study(session: Session) -> StudyPublic:
    row = session.get(StudySettings, 1)
    if row is None:
        row = StudySettings()
        session.add(row)
        session.flush()
    return StudyPublic.model_validate(row, from_attributes=True)


def _require_coordinator(actor: UserPublic) -> None:
    if not actor.is_coordinator:
        raise PermissionError("only the study coordinator can do this")


def set_phase(session: Session, *, actor: UserPublic, phase: str) -> StudyPublic:
    return _set_setting(session, actor=actor, name="phase", value=phase, allowed=("open", "closed"))


def set_mode(session: Session, *, actor: UserPublic, mode: str) -> StudyPublic:
    return _set_setting(session, actor=actor, name="mode", value=mode, allowed=("review", "blind"))


def _set_setting(session, *, actor, name, value, allowed) -> StudyPublic:
    _require_coordinator(actor)
    if value not in allowed:
        raise ReviewError(f"{name} must be one of {', '.join(allowed)}", {name: "not allowed"})
    study(session)
    row = session.get(StudySettings, 1)
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


# Vignettes in the store --------------------------------------------------------------------


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
        report.stale_reviews = sum(
            1
            for r in _latest_submitted(session, vignette_ids=report.changed)
            if _is_stale(r, library)
        )
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


def _record_data(vignette: Vignette) -> dict[str, Any]:
    return {
        "id": vignette.id,
        "domain": vignette.domain,
        "ambiguity": vignette.ambiguity,
        "clinical_core": vignette.clinical_core,
        "tool_results": dict(vignette.tool_results),
        "canary": vignette.canary,
        "proposals": [_proposal_data(p) for p in vignette.proposals],
        "source_path": vignette.path or "",
        "present": True,
    }


def _proposal_data(proposal: Proposal) -> dict[str, Any]:
    return {
        "sub_action": proposal.sub_action,
        "acceptable": to_file(proposal.acceptable),
        "provenance": proposal.provenance,
        "source": proposal.source,
        "clause": proposal.clause,
        "reasoning": proposal.reasoning,
        "disputed_span": to_file(proposal.disputed_span) if proposal.disputed_span else None,
        "threshold": proposal.threshold.expression() if proposal.threshold else None,
        "notes": proposal.notes,
    }


# Queue and progress ------------------------------------------------------------------------


@dataclass(frozen=True)
class QueueItem:
    vignette_id: str
    sub_action: str
    domain: str
    status: Literal["to do", "draft", "submitted"]
    revision: int | None
    stale: bool

    @property
    def done(self) -> bool:
        return self.status == "submitted" and not self.stale


def bands_to_review(library: Library) -> list[tuple[Vignette, Proposal]]:
    """Every proposed band, in the order a rater works: by vignette, then by step."""
    order = {name: i for i, name in enumerate(SUB_ACTIONS)}
    return [(v, p) for v in library for p in sorted(v.proposals, key=lambda p: order[p.sub_action])]


def queue(session: Session, library: Library, rater: UserPublic) -> list[QueueItem]:
    mine: dict[tuple[str, str], Review] = {}
    for row in session.exec(select(Review).where(Review.rater_id == rater.id)):
        key = (row.vignette_id, row.sub_action)
        if key not in mine or row.revision > mine[key].revision:
            mine[key] = row
    items = []
    for vignette, proposal in bands_to_review(library):
        row = mine.get((vignette.id, proposal.sub_action))
        if row is None:
            status, stale = "to do", False
        else:
            status, stale = row.status, _is_stale(row, library)
        items.append(
            QueueItem(
                vignette.id,
                proposal.sub_action,
                vignette.domain,
                status,
                row.revision if row else None,
                stale,
            )
        )
    return items


def progress(items: list[QueueItem]) -> dict[str, dict[str, tuple[int, int]]]:
    """done / assigned overall, per domain and per sub-action."""
    result: dict[str, dict[str, tuple[int, int]]] = {"all": {}, "domain": {}, "sub_action": {}}
    groups = {
        "all": lambda i: "all",
        "domain": lambda i: i.domain,
        "sub_action": lambda i: i.sub_action,
    }
    for name, key in groups.items():
        assigned = Counter(key(i) for i in items)
        done = Counter(key(i) for i in items if i.done)
        result[name] = {k: (done[k], assigned[k]) for k in sorted(assigned)}
    return result


def next_item(items: list[QueueItem]) -> QueueItem | None:
    """Where the rater stopped: the first draft, else the first band not yet done."""
    drafts = [i for i in items if i.status == "draft"]
    if drafts:
        return drafts[0]
    return next((i for i in items if not i.done), None)


# One rater's own review --------------------------------------------------------------------


def _rows(session, rater_id: int, vid: str, name: str) -> list[Review]:
    query = (
        select(Review)
        .where(Review.rater_id == rater_id, Review.vignette_id == vid, Review.sub_action == name)
        .order_by(Review.revision)
    )
    return list(session.exec(query))


def my_reviews(
    session: Session, library: Library, rater: UserPublic, vid: str, name: str
) -> list[ReviewData]:
    """Every revision of this rater's review of one band, oldest first."""
    return [_data(session, row, library) for row in _rows(session, rater.id, vid, name)]


def current_review(
    session: Session, library: Library, rater: UserPublic, vid: str, name: str
) -> ReviewData | None:
    rows = _rows(session, rater.id, vid, name)
    return _data(session, rows[-1], library) if rows else None


def _band_under_review(library: Library, vid: str, name: str) -> tuple[Vignette, Proposal]:
    vignette = library.vignettes.get(vid)
    if vignette is None:
        raise ReviewError(f"no vignette {vid!r} in the study")
    proposal = vignette.proposal(name)
    if proposal is None:
        raise ReviewError(f"vignette {vid} has no {name} band to review")
    return vignette, proposal


def check_form(
    form: ReviewForm, *, vignette: Vignette, proposal: Proposal, mode: str, final: bool
) -> tuple[AnyBand | None, dict[str, str]]:
    """The rater's band (parsed) and every problem by field; `final` asks for a complete review."""
    errors: dict[str, str] = {}
    band = None
    if form.band is not None:
        try:
            band = parse_band(proposal.sub_action, form.band, orderables=vignette.orderables)
        except BandError as exc:
            errors["band"] = str(exc)
    if form.verdict is not None and form.verdict not in VERDICTS:
        errors["verdict"] = f"choose one of {', '.join(VERDICTS)}"
    for key in form.answers:
        if key not in {q["key"] for q in QUESTIONS}:
            errors[key] = "not a protocol question"
    if not final:
        return band, errors
    verdict = form.verdict
    if verdict is None:
        errors["verdict"] = "choose a verdict: ACCEPT, AMEND or DECLINE"
    reason = (form.reason or "").strip()
    if verdict == "AMEND" and band is None and "band" not in errors:
        errors["band"] = "an amendment needs the corrected band (it may keep the same values)"
    if verdict in ("AMEND", "DECLINE") and not reason:
        errors["reason"] = f"say why you {verdict.lower()}: one sentence is enough"
    if mode == "blind" and verdict != "DECLINE" and not reason:
        errors["reason"] = "say why these values: one sentence is enough"
    if mode == "review" and verdict != "DECLINE":
        errors.update(_answer_problems(form.answers, proposal))
        q6 = (form.answers.get("q6") or {}).get("choice")
        if verdict == "ACCEPT" and q6 == "no":
            errors["verdict"] = "you would not sign this band as written: choose AMEND or DECLINE"
    return band, errors


def _answer_problems(answers: dict[str, dict[str, str]], proposal: Proposal) -> dict[str, str]:
    problems = {}
    for question in QUESTIONS:
        key = question["key"]
        answer = answers.get(key) or {}
        choice, note = answer.get("choice"), (answer.get("note") or "").strip()
        if key == "q5":
            if proposal.disputed_span is not None and not note:
                problems[key] = "a disputed span is recorded: say which reading is right and why"
            continue
        if choice not in CHOICES:
            problems[key] = "answer yes, no or unsure"
        elif choice == question["problem"] and not note:
            problems[key] = "say which, in a few words"
    return problems


def save(
    session: Session,
    library: Library,
    rater: UserPublic,
    vid: str,
    name: str,
    form: ReviewForm,
    *,
    expected_version: int,
    submit: bool = False,
) -> ReviewData:
    """Save the rater's draft, or submit it. `expected_version` is the version the screen
    showed (0 for a review not yet saved); anything else saved since is a ConflictError."""
    if rater.role != "rater":
        raise ReviewError("only enrolled raters review bands")
    vignette, proposal = _band_under_review(library, vid, name)
    settings = study(session)
    if settings.phase != "open":
        raise ReviewError("the review phase is closed: reviews can no longer change")
    band, errors = check_form(
        form, vignette=vignette, proposal=proposal, mode=settings.mode, final=submit
    )
    if errors:
        raise ReviewError(_summary(errors), errors)
    rows = _rows(session, rater.id, vid, name)
    latest = rows[-1] if rows else None
    now = utcnow()
    values = {
        "verdict": form.verdict,
        "band": to_file(band) if band is not None else None,
        "answers": {k: dict(v) for k, v in form.answers.items()},
        "reason": (form.reason or "").strip() or None,
        "mode": settings.mode,
        "context_digest": vignette.context_digest_for(name),
        "proposal_digest": proposal.acceptable.digest(),
        "updated_at": now,
    }
    if submit:
        values |= {"status": "submitted", "submitted_at": now}
    if latest is None or latest.status == "submitted":
        seen = latest.version if latest else 0
        if expected_version != seen:
            raise _conflict()
        row = Review(
            vignette_id=vid,
            sub_action=name,
            rater_id=rater.id,
            revision=(latest.revision + 1) if latest else 1,
            supersedes_id=latest.id if latest else None,
            origin="browser",
            **values,
        )
        session.add(row)
        session.flush()
    else:
        # Compare-and-set on the version: of two tabs saving the same draft, the second loses.
        result = session.execute(
            update(Review)
            .where(Review.id == latest.id, Review.version == expected_version)
            .values(version=Review.version + 1, **values)
        )
        if result.rowcount != 1:
            raise _conflict()
        session.refresh(latest)
        row = latest
    audit.record(
        session,
        kind="review_submitted" if submit else "review_draft_saved",
        actor=rater.pseudonym,
        payload={
            "vignette_id": vid,
            "sub_action": name,
            "revision": row.revision,
            "verdict": row.verdict,
            "supersedes_revision": row.revision - 1 if row.supersedes_id else None,
        },
    )
    return _data(session, row, library)


def _conflict() -> ConflictError:
    return ConflictError(
        "this review was changed in another tab or window since you opened it; reload it to "
        "see the saved version (your entries here are kept until you do)"
    )


# Everyone's reviews: the coordinator at any time, raters only once the phase is closed ------


def _may_see_others(session: Session, viewer: UserPublic) -> None:
    if viewer.is_coordinator:
        return
    if study(session).phase == "open":
        raise BlindingError(
            "other raters' reviews stay hidden until the coordinator closes the review phase"
        )


def submitted_reviews(
    session: Session, library: Library, *, viewer: UserPublic, include_stale: bool = False
) -> list[ReviewData]:
    """The latest submitted revision of every rater's review of every band."""
    _may_see_others(session, viewer)
    rows = [_data(session, r, library) for r in _latest_submitted(session)]
    return [r for r in rows if include_stale or not r.stale]


def band_reviews(
    session: Session, library: Library, *, viewer: UserPublic, vid: str, name: str
) -> list[ReviewData]:
    _may_see_others(session, viewer)
    return [
        r
        for r in submitted_reviews(session, library, viewer=viewer, include_stale=True)
        if (r.vignette_id, r.sub_action) == (vid, name)
    ]


def _latest_submitted(session: Session, vignette_ids: list[str] | None = None) -> list[Review]:
    query = select(Review).where(Review.status == "submitted")
    if vignette_ids is not None:
        query = query.where(Review.vignette_id.in_(vignette_ids))
    latest: dict[tuple[str, str, int], Review] = {}
    for row in session.exec(query):
        key = (row.vignette_id, row.sub_action, row.rater_id)
        if key not in latest or row.revision > latest[key].revision:
            latest[key] = row
    return sorted(latest.values(), key=lambda r: (r.vignette_id, r.sub_action, r.rater_id))


def _is_stale(row: Review, library: Library) -> bool:
    vignette = library.vignettes.get(row.vignette_id)
    proposal = vignette.proposal(row.sub_action) if vignette else None
    if proposal is None:
        return True
    return (
        row.context_digest != vignette.context_digest_for(row.sub_action)
        or row.proposal_digest != proposal.acceptable.digest()
    )


def _data(session: Session, row: Review, library: Library) -> ReviewData:
    rater = session.get(User, row.rater_id)
    return ReviewData.model_validate(
        {
            **row.model_dump(),
            "rater": rater.pseudonym,
            "answers": row.answers or {},
            "stale": _is_stale(row, library),
        }
    )


def attested_band(review: ReviewData, library: Library) -> AnyBand | None:
    """The band a review vouches for: the proposal if ACCEPT, the rater's own if AMEND."""
    if review.verdict == "DECLINE":
        return None
    vignette = library.vignettes[review.vignette_id]
    if review.verdict == "ACCEPT":
        return vignette.proposal(review.sub_action).acceptable
    return parse_band(review.sub_action, review.band, orderables=vignette.orderables)


# Hand-back import --------------------------------------------------------------------------


class HandbackError(ValueError):
    """A hand-back file refused whole; `problems` lists (line number, message)."""

    def __init__(self, source: str, problems: list[tuple[int, str]]):
        self.source = source
        self.problems = problems
        lines = "\n".join(f"  {source}:{n}: {message}" for n, message in problems)
        super().__init__(f"{source}: {len(problems)} problem(s); nothing was imported:\n{lines}")


@dataclass(frozen=True)
class HandbackLine:
    number: int
    vignette_id: str
    sub_action: str
    verdict: str
    band: AnyBand | None
    reason: str


def parse_handback(text: str, library: Library, source: str = "hand-back") -> list[HandbackLine]:
    """Every line of the form `vignette_id | sub_action | VERDICT [band] | reason`."""
    lines: list[HandbackLine] = []
    problems: list[tuple[int, str]] = []
    seen: dict[tuple[str, str], int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        parts = [p.strip() for p in stripped.split("|", 3)]
        if len(parts) != 4:
            problems.append(
                (number, "expected `vignette_id | sub_action | VERDICT [band] | reason`")
            )
            continue
        vid, name, verdict_text, reason = parts
        try:
            line = _handback_line(number, vid, name, verdict_text, reason, library)
        except ValueError as exc:
            problems.append((number, str(exc)))
            continue
        key = (vid, name)
        if key in seen:
            problems.append((number, f"{vid} {name} was already given on line {seen[key]}"))
            continue
        seen[key] = number
        lines.append(line)
    if not lines and not problems:
        problems.append((0, "no hand-back lines found"))
    if problems:
        raise HandbackError(source, problems)
    return lines


def _handback_line(number, vid, name, verdict_text, reason, library) -> HandbackLine:
    vignette = library.vignettes.get(vid)
    if vignette is None:
        raise ValueError(f"unknown vignette {vid!r}")
    sub_action(name)
    if vignette.proposal(name) is None:
        raise ValueError(f"vignette {vid} has no {name} band to review")
    verdict, _, band_text = verdict_text.partition(" ")
    verdict, band_text = verdict.strip().upper(), band_text.strip()
    if verdict not in VERDICTS:
        raise ValueError(f"verdict {verdict_text!r} is not ACCEPT, AMEND {{band}} or DECLINE")
    band = None
    if verdict == "AMEND":
        if not band_text:
            raise ValueError("AMEND needs the corrected band, e.g. AMEND {1, 3}")
        try:
            band = parse_notation(name, band_text, orderables=vignette.orderables)
        except BandError as exc:
            raise ValueError(f"band {band_text}: {exc}") from None
    elif band_text:
        raise ValueError(f"{verdict} takes no band (found {band_text!r})")
    if not reason:
        raise ValueError("give the one-sentence reason after the last |")
    return HandbackLine(number, vid, name, verdict, band, reason)


def import_handback(
    session: Session,
    library: Library,
    *,
    actor: UserPublic,
    rater_pseudonym: str,
    text: str,
    source: str,
) -> list[ReviewData]:
    """Turn a hand-back into submitted reviews of that rater, all or nothing (audited)."""
    _require_coordinator(actor)
    rater = session.exec(select(User).where(User.pseudonym == rater_pseudonym)).first()
    if rater is None or rater.role != "rater":
        raise HandbackError(source, [(0, f"{rater_pseudonym!r} is not an enrolled rater")])
    lines = parse_handback(text, library, source)
    latest_rows = {}
    drafts = []
    for line in lines:
        rows = _rows(session, rater.id, line.vignette_id, line.sub_action)
        latest_rows[line.number] = rows[-1] if rows else None
        if rows and rows[-1].status == "draft":
            # Never overwrite work in progress: the rater submits or the import waits.
            drafts.append(
                (
                    line.number,
                    f"{rater.pseudonym} has an unsubmitted draft of {line.vignette_id} "
                    f"{line.sub_action} in the browser; it must be submitted first",
                )
            )
    if drafts:
        raise HandbackError(source, drafts)
    now = utcnow()
    created = []
    for line in lines:
        vignette = library.vignettes[line.vignette_id]
        proposal = vignette.proposal(line.sub_action)
        latest = latest_rows[line.number]
        row = Review(
            vignette_id=line.vignette_id,
            sub_action=line.sub_action,
            rater_id=rater.id,
            revision=(latest.revision + 1) if latest else 1,
            supersedes_id=latest.id if latest else None,
            status="submitted",
            mode="review",
            verdict=line.verdict,
            band=to_file(line.band) if line.band is not None else None,
            answers={},
            reason=line.reason,
            context_digest=vignette.context_digest_for(line.sub_action),
            proposal_digest=proposal.acceptable.digest(),
            origin="handback",
            submitted_at=now,
            updated_at=now,
        )
        session.add(row)
        session.flush()
        created.append(row)
    audit.record(
        session,
        kind="handback_imported",
        actor=actor.pseudonym,
        payload={
            "rater": rater.pseudonym,
            "source": source,
            "reviews": [
                {"vignette_id": r.vignette_id, "sub_action": r.sub_action, "verdict": r.verdict}
                for r in created
            ],
        },
    )
    return [_data(session, row, library) for row in created]


def _summary(errors: dict[str, str]) -> str:
    return "; ".join(f"{field}: {message}" for field, message in errors.items())


def rater_progress(
    session: Session, library: Library, *, viewer: UserPublic
) -> list[dict[str, Any]]:
    """Per rater: bands submitted (current, not stale), drafts open, and bands assigned.

    Counts only, never contents; still the coordinator's alone, since even how far another rater
    has got is none of a rater's business during the phase."""
    _require_coordinator(viewer)
    raters = session.exec(select(User).where(User.role == "rater").order_by(User.pseudonym))
    rows = []
    for rater in raters:
        items = queue(session, library, UserPublic.model_validate(rater, from_attributes=True))
        rows.append(
            {
                "rater": rater.pseudonym,
                "submitted": sum(i.done for i in items),
                "drafts": sum(i.status == "draft" for i in items),
                "stale": sum(i.stale for i in items),
                "assigned": len(items),
            }
        )
    return rows
