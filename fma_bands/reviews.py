"""Reviews (DESIGN 2.3, 2.4): the queue, drafts, submissions and revisions, and the blinding
that keeps each rater's work from every other rater while the review phase is open.

A submitted review is never changed: revising it writes a new revision that supersedes it, and
the version a screen saw is checked across revisions, so a stale tab never overwrites a newer one.
"""

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from sqlalchemy import RowMapping, update
from sqlalchemy import select as core_select
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlmodel import Session, col, select

from fma_bands import audit
from fma_bands.actions import SUB_ACTIONS
from fma_bands.assignment import load as load_assignments
from fma_bands.assignment import require_assigned
from fma_bands.bands import AnyBand, BandReader, parse_band, to_file
from fma_bands.envelopes import proposal_digest
from fma_bands.errors import ConflictError, FmaBandsError
from fma_bands.protocol import CHOICES, QUESTION_KEYS, QUESTIONS, READINGS
from fma_bands.store.models import Review, User, utcnow
from fma_bands.study import authorize, is_current, reviewing_round, study, verdicts_for
from fma_bands.users import UserPublic, pseudonyms
from fma_bands.vignettes import Library, Proposal, Vignette


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
    band_digest: str | None = None
    proposal_digest: str | None
    origin: str
    round: int = 1
    entered_by: str | None = None
    confirmed_at: datetime | None = None
    version: int
    submitted_at: datetime | None
    updated_at: datetime
    stale: bool = False
    confidence: str | None = None


class ReviewForm(BaseModel):
    """What the review screen (or a hand-back line) sends."""

    verdict: str | None = None
    band: Any = None  # file form: a list, a {min, max} mapping, or {required, defensible}
    answers: dict[str, dict[str, str]] = {}
    reason: str | None = None
    confidence: Literal["low", "moderate", "high"] | None = None


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
        found = mine.get((vignette.id, proposal.sub_action))
        status: Literal["to do", "draft", "submitted"] = "to do"
        stale = False
        if found is not None:
            status = "submitted" if found.status == "submitted" else "draft"
            stale = _is_stale(found, library)
        items.append(
            QueueItem(
                vignette.id,
                proposal.sub_action,
                vignette.domain,
                status,
                found.revision if found else None,
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


def revisions(session: Session, rater_id: int, vid: str, name: str) -> list[Review]:
    query = (
        select(Review)
        .where(Review.rater_id == rater_id, Review.vignette_id == vid, Review.sub_action == name)
        .order_by(col(Review.revision))
    )
    return list(session.exec(query))


def my_reviews(
    session: Session, library: Library, rater: UserPublic, vid: str, name: str
) -> list[ReviewData]:
    """Every revision of this rater's review of one band, oldest first."""
    names = {rater.id: rater.pseudonym}
    return [as_data(row, library, names) for row in revisions(session, rater.id, vid, name)]


def my_latest_submitted(
    session: Session, library: Library, rater: UserPublic
) -> dict[tuple[str, str], ReviewData]:
    """The rater's latest submitted revision of each band they submitted, in one query."""
    assert rater.id is not None
    names = {rater.id: rater.pseudonym}
    return {
        (row["vignette_id"], row["sub_action"]): as_data(row, library, names)
        for row in _latest_submitted(session, rater_id=rater.id)
    }


def current_review(
    session: Session, library: Library, rater: UserPublic, vid: str, name: str
) -> ReviewData | None:
    rows = revisions(session, rater.id, vid, name)
    return as_data(rows[-1], library, {rater.id: rater.pseudonym}) if rows else None


def _band_under_review(library: Library, vid: str, name: str) -> tuple[Vignette, Proposal]:
    vignette = library.vignettes.get(vid)
    if vignette is None:
        raise FmaBandsError(f"no vignette {vid!r} in the study", field="vignette_id")
    proposal = vignette.proposal(name)
    if proposal is None:
        raise FmaBandsError(f"vignette {vid} has no {name} band to review", field="sub_action")
    return vignette, proposal


def check_form(
    form: ReviewForm,
    *,
    vignette: Vignette,
    proposal: Proposal,
    mode: str,
    final: bool,
    round: int = 1,
) -> tuple[AnyBand | None, dict[str, str]]:
    """The rater's band (parsed) and every problem by field; `final` asks for a complete review.
    From round 2 on, keeping a band needs a reason as much as revising it does."""
    errors: dict[str, str] = {}
    band = None
    if form.band is not None:
        try:
            band = parse_band(proposal.sub_action, form.band, orderables=vignette.orderables)
        except FmaBandsError as exc:
            errors["band"] = exc.message
    allowed = verdicts_for(mode)
    if form.verdict is not None and form.verdict not in allowed:
        errors["verdict"] = (
            "blind mode shows no proposal to accept: write your own band, or decline"
            if form.verdict == "ACCEPT" and mode == "blind"
            else f"choose one of {', '.join(allowed)}"
        )
    for key in form.answers:
        if key not in QUESTION_KEYS:
            errors[key] = "not a protocol question"
    if not final:
        return band, errors
    verdict = form.verdict
    if verdict is None:
        errors["verdict"] = f"choose a verdict: {', '.join(allowed[:-1])} or {allowed[-1]}"
    reason = (form.reason or "").strip()
    if verdict == "AMEND" and band is None and "band" not in errors:
        errors["band"] = "an amendment needs the corrected band (it may keep the same values)"
    if verdict in ("AMEND", "DECLINE") and not reason:
        errors["reason"] = f"say why you {verdict.lower()}: one sentence is enough"
    if mode == "blind" and verdict != "DECLINE" and not reason:
        errors["reason"] = "say why these values: one sentence is enough"
    if round > 1 and not reason:
        errors["reason"] = (
            f"round {round}: say why you keep or revise your band after seeing the panel"
        )
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
            if proposal.disputed_span is None:
                continue
            if choice not in READINGS:
                problems[key] = "a disputed span is recorded: choose which reading is right"
            elif not note:
                problems[key] = "a disputed span is recorded: say why that reading is right"
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
    vignette, proposal = _band_under_review(library, vid, name)
    number = reviewing_round(session, rater, vid, name)
    if number == 1:  # round 2's raters of each band were fixed when it opened
        require_assigned(session, rater, vid, name)
    settings = study(session)
    band, errors = check_form(
        form, vignette=vignette, proposal=proposal, mode=settings.mode, final=submit, round=number
    )
    if errors:
        raise FmaBandsError(_summary(errors), fields=errors)
    rows = revisions(session, rater.id, vid, name)
    latest = rows[-1] if rows else None
    now = utcnow()
    values: dict[str, Any] = {
        "verdict": form.verdict,
        "band": to_file(band) if band is not None else None,
        "answers": {k: dict(v) for k, v in form.answers.items()},
        "reason": (form.reason or "").strip() or None,
        "confidence": form.confidence,
        "mode": settings.mode,
        "context_digest": vignette.context_digest_for(name),
        "band_digest": proposal.acceptable.digest(),
        "proposal_digest": proposal_digest(proposal) if settings.mode == "review" else None,
        "round": number,
        "updated_at": now,
    }
    if submit:
        values |= {"status": "submitted", "submitted_at": now}
    # A draft left in a closed round is frozen with it: the new round starts a new revision.
    if latest is None or latest.status == "submitted" or latest.round != number:
        seen = latest.version if latest else 0
        if expected_version != seen:
            raise _conflict()
        # The version runs on across revisions: a tab that saw revision 1 cannot save over 2.
        row = Review(
            vignette_id=vid,
            sub_action=name,
            rater_id=rater.id,
            revision=(latest.revision + 1) if latest else 1,
            version=seen + 1,
            supersedes_id=latest.id if latest else None,
            origin="browser",
            **values,
        )
        session.add(row)
        try:
            session.flush()
        except (IntegrityError, OperationalError):
            # Another tab wrote this revision between our read and our write (PostgreSQL: the
            # unique revision; SQLite: its snapshot is stale). The caller's session rolls back.
            raise _conflict() from None
    else:
        # Compare-and-set on the version: of two tabs saving the same draft, the second loses.
        result = session.execute(
            update(Review)
            .where(col(Review.id) == latest.id, col(Review.version) == expected_version)
            .values(version=col(Review.version) + 1, **values)
        )
        if result.rowcount != 1:  # type: ignore[attr-defined]
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
            "round": row.round,
            "supersedes_revision": row.revision - 1 if row.supersedes_id else None,
        },
    )
    return as_data(row, library, {rater.id: rater.pseudonym})


def _conflict() -> ConflictError:
    return ConflictError(
        "this review was changed in another tab or window since you opened it; reload it to "
        "see the saved version (your entries here are kept until you do)"
    )


# Everyone's reviews: the coordinator at any time, raters only once the phase is closed ------


def _may_see_others(session: Session, viewer: UserPublic) -> None:
    authorize(session, viewer, "see_reviews")


def submitted_reviews(
    session: Session,
    library: Library,
    *,
    viewer: UserPublic,
    include_stale: bool = False,
    round: int | None = None,
) -> list[ReviewData]:
    """The latest submitted revision of every rater's review of every band; with `round`, the
    latest of that round only (so a later round never changes an earlier one's figures)."""
    _may_see_others(session, viewer)
    names = pseudonyms(session)
    rows = [as_data(r, library, names) for r in _latest_submitted(session, round=round)]
    return [r for r in rows if include_stale or not r.stale]


@dataclass(frozen=True)
class SubmittedBand:
    """What one current submitted review says about its band: all agreement needs of it."""

    vignette_id: str
    sub_action: str
    rater: str
    verdict: str | None
    band: Any  # file form, as submitted
    mode: str


# The columns SubmittedBand is read from, with those that say whether the review is current.
_BAND_COLUMNS = (
    "vignette_id",
    "sub_action",
    "rater_id",
    "revision",
    "verdict",
    "band",
    "mode",
    "context_digest",
    "band_digest",
    "proposal_digest",
)


def submitted_bands(
    session: Session, library: Library, *, viewer: UserPublic, round: int | None = None
) -> list[SubmittedBand]:
    """Every rater's current (not stale) latest submitted review of every band (of one round,
    with `round`), as submitted_reviews gives them but only the columns agreement reads:
    27,000 reviews are read in one query, without their answers."""
    _may_see_others(session, viewer)
    names = pseudonyms(session)
    return [
        SubmittedBand(
            r["vignette_id"],
            r["sub_action"],
            names[r["rater_id"]],
            r["verdict"],
            r["band"],
            r["mode"],
        )
        for r in _latest_submitted(session, columns=_BAND_COLUMNS, round=round)
        if _current(r, library)
    ]


def band_reviews(
    session: Session, library: Library, *, viewer: UserPublic, vid: str, name: str
) -> list[ReviewData]:
    _may_see_others(session, viewer)
    return [
        r
        for r in submitted_reviews(session, library, viewer=viewer, include_stale=True)
        if (r.vignette_id, r.sub_action) == (vid, name)
    ]


def _latest_submitted(
    session: Session,
    vignette_ids: list[str] | None = None,
    columns: Sequence[str] | None = None,
    *,
    rater_id: int | None = None,
    status: str | None = "submitted",
    round: int | None = None,
) -> list[RowMapping]:
    """Each rater's (or one rater's) latest revision, submitted unless `status` says otherwise
    (None: of any status), of each band, as Core rows of `columns` (all by default); with
    `round`, the latest of that round only (a later round never changes an earlier one's
    figures). Core rows: building 27,000 ORM objects would cost more than the pages."""
    table = Review.__table__  # type: ignore[attr-defined]
    query = core_select(*(table.c[n] for n in columns)) if columns else core_select(table)
    if status is not None:
        query = query.where(table.c.status == status)
    if rater_id is not None:
        query = query.where(table.c.rater_id == rater_id)
    if round is not None:
        query = query.where(table.c.round == round)
    if vignette_ids is not None:
        query = query.where(table.c.vignette_id.in_(vignette_ids))
    latest: dict[tuple[str, str, int], RowMapping] = {}
    for row in session.connection().execute(query).mappings():
        key = (row["vignette_id"], row["sub_action"], row["rater_id"])
        if key not in latest or row["revision"] > latest[key]["revision"]:
            latest[key] = row
    return [latest[key] for key in sorted(latest)]


def _current(row: Mapping[Any, Any], library: Library) -> bool:
    """is_current for a review read as a Core row."""
    return library.is_current(
        row["vignette_id"],
        row["sub_action"],
        context_digest=row["context_digest"],
        band_digest=row["band_digest"],
        proposal_digest=row["proposal_digest"],
        mode=row["mode"],
    )


def _is_stale(row: Review, library: Library) -> bool:
    return not is_current(library, row)


def as_data(row: Review | RowMapping, library: Library, names: dict[int, str]) -> ReviewData:
    data = row.model_dump() if isinstance(row, Review) else dict(row)
    return ReviewData.model_validate(
        {
            **data,
            "rater": names[data["rater_id"]],
            "answers": data["answers"] or {},
            "stale": not _current(data, library),
        }
    )


def attested_band(
    review: "ReviewData | SubmittedBand", library: Library, read: BandReader | None = None
) -> AnyBand | None:
    """The band a review vouches for: the proposal if ACCEPT, the rater's own if AMEND (read
    by `read` when many are read in a row)."""
    if review.verdict == "DECLINE":
        return None
    vignette = library.vignettes[review.vignette_id]
    if review.verdict == "ACCEPT":
        proposal = vignette.proposal(review.sub_action)
        assert proposal is not None, "a review is of a proposed band"
        return proposal.acceptable
    if read is not None:
        return read(review.sub_action, review.band, vignette.orderables)
    return parse_band(review.sub_action, review.band, orderables=vignette.orderables)


def rater_progress(
    session: Session, library: Library, *, viewer: UserPublic
) -> list[dict[str, Any]]:
    """Per rater: of the bands assigned to them, those submitted (current, not stale), drafts
    open and submitted reviews made stale, and how many are assigned.

    Counts only, never contents; still the coordinator's alone, since even how far another rater
    has got is none of a rater's business during the phase."""
    authorize(session, viewer, "see_progress")
    raters = session.exec(select(User).where(User.role == "rater").order_by(User.pseudonym))
    assignments = load_assignments(session)
    # What each rater's queue would say, from one query for all raters (each rater's latest
    # revision of each band, of any status) instead of one queue per rater.
    latest: dict[int, list[RowMapping]] = {}
    for row in _latest_submitted(session, columns=_PROGRESS_COLUMNS, status=None):
        latest.setdefault(row["rater_id"], []).append(row)
    rows = []
    for rater in raters:
        theirs = assignments.bands_of(library, rater.pseudonym)
        mine = [
            r
            for r in latest.get(rater.id or 0, [])
            if (r["vignette_id"], r["sub_action"]) in theirs
        ]
        current = [r for r in mine if _current(r, library)]
        rows.append(
            {
                "rater": rater.pseudonym,
                "submitted": sum(r["status"] == "submitted" for r in current),
                "drafts": sum(r["status"] == "draft" for r in mine),
                "stale": len(mine) - len(current),
                "assigned": len(theirs),
            }
        )
    return rows


_PROGRESS_COLUMNS = (*_BAND_COLUMNS, "status")


def _summary(errors: dict[str, str]) -> str:
    return "; ".join(f"{field}: {message}" for field, message in errors.items())
