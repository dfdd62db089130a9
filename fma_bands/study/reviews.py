"""Reviews (docs/design.md, The review task): one rater's own drafts, submissions and revisions,
checked and saved. Reading submitted reviews back, and the blinding that keeps each rater's work
from every other rater while the review phase is open, is submissions.py.

A submitted review is never changed: revising it writes a new revision that supersedes it, and
the version a screen saw is checked across revisions, so a stale tab never overwrites a newer one.
"""

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from sqlalchemy import RowMapping, update
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlmodel import Session, col, select

from fma_bands.core.band_text import describe_values
from fma_bands.core.bands import AnyBand, parse_band, to_file, to_harness
from fma_bands.core.errors import ConflictError, FmaBandsError
from fma_bands.core.files import control_character
from fma_bands.core.labels import tool_names
from fma_bands.core.people import UserPublic
from fma_bands.core.protocol import (
    CHOICES,
    CORRECTABLE,
    CORRECTED_TEXTS,
    QUESTION_KEYS,
    QUESTIONS,
    READINGS,
)
from fma_bands.core.vignettes import Library, Proposal, Vignette
from fma_bands.evidence.log import proposal_digest
from fma_bands.store.models import Review, utcnow
from fma_bands.study import audit
from fma_bands.study.assignment import require_assigned
from fma_bands.study.state import reviewing_round, study, verdicts_for


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
    corrections: dict[str, Any] | None = None


# A clause or a reasoning is a paragraph or two; this is far more and refuses a flood at once.
MAX_CORRECTION = 4000
# The same for a review's reason and each answer's note: a review is signed with its texts, and
# a signed record must stay within what every reader of the folder accepts (study/signing.py).
MAX_REASON = 4000
MAX_NOTE = 2000
ANSWER_PARTS = ("choice", "note")


class ReviewForm(BaseModel):
    """What the review screen (or a hand-back line) sends."""

    verdict: str | None = None
    band: Any = None  # file form: a list, a {min, max} mapping, or {required, defensible}
    answers: dict[str, dict[str, str]] = {}
    reason: str | None = None
    confidence: Literal["low", "moderate", "high"] | None = None
    # An AMEND's corrections to the proposal: any of protocol.CORRECTABLE; a key left out keeps the
    # proposal's, and one equal to the proposal's is no correction.
    corrections: dict[str, Any] | None = None


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


def current_review(
    session: Session, library: Library, rater: UserPublic, vid: str, name: str
) -> ReviewData | None:
    rows = revisions(session, rater.id, vid, name)
    return as_data(rows[-1], library, {rater.id: rater.pseudonym}) if rows else None


def times_revised(session: Session, rater: UserPublic, vid: str, name: str) -> int:
    """How often the rater revised their latest review within its round: its round's
    submissions before it. A round-1 review carried into round 2 is that round's start, never
    a revision of it."""
    rows = revisions(session, rater.id, vid, name)
    if not rows:
        return 0
    latest = rows[-1]
    return sum(r.round == latest.round and r.status == "submitted" for r in rows[:-1])


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
    for key, answer in form.answers.items():
        if key not in QUESTION_KEYS:
            errors[key] = "not a protocol question"
        elif unknown := sorted(set(answer) - set(ANSWER_PARTS)):
            errors[key] = f"an answer is a choice and a note, not {', '.join(unknown)}"
        elif len(answer.get("note") or "") > MAX_NOTE:
            errors[key] = f"keep the note under {MAX_NOTE} characters"
        elif len(answer.get("choice") or "") > 40:
            errors[key] = "answer yes, no or unsure"
    if len(form.reason or "") > MAX_REASON:
        errors["reason"] = f"keep the reason under {MAX_REASON} characters"
    _, problems = _corrections_of(form, band, vignette=vignette, proposal=proposal, mode=mode)
    errors.update(problems)
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


# What the screen says beside an AMEND that changes nothing: docs/design.md allows one (the
# clause may be corrected in words alone, as a paper hand-back does), so it is said, never
# refused.
AMENDS_NOTHING = (
    "Your AMEND keeps the proposal's band and corrects none of its texts or its disputed span: "
    "your reason is the whole amendment, so say there what is wrong. If the band and its clause "
    "stand as written, choose ACCEPT."
)


def amends_nothing(form: ReviewForm, *, vignette: Vignette, proposal: Proposal, mode: str) -> bool:
    """Whether `form` is a complete AMEND of a proposal on screen that keeps its band and
    corrects nothing else."""
    if mode != "review" or form.verdict != "AMEND" or form.band is None:
        return False
    try:
        band = parse_band(proposal.sub_action, form.band, orderables=vignette.orderables)
    except FmaBandsError:
        return False  # the band's own problem is said beside it
    corrections, problems = _corrections_of(
        form, band, vignette=vignette, proposal=proposal, mode=mode
    )
    return not problems and not corrections and band == proposal.acceptable


def span_kept_inside(
    form: ReviewForm, *, vignette: Vignette, proposal: Proposal, mode: str
) -> str | None:
    """What to say beside an AMEND whose band admits values of the proposal's disputed span,
    which the AMEND keeps: a span holds only what the band leaves out, so for this review the
    span is what is left of it (rater_span), which the rater may not expect. None otherwise (a
    span the rater writes is checked against their band: check_corrections)."""
    span = proposal.disputed_span
    if mode != "review" or form.verdict != "AMEND" or form.band is None or span is None:
        return None
    if form.corrections and "disputed_span" in form.corrections:
        return None  # the rater recorded no span or wrote their own
    if (form.answers.get("q5") or {}).get("choice") == "band":
        return None  # they took the band's reading: their review leaves nothing disputed
    try:
        band = parse_band(proposal.sub_action, form.band, orderables=vignette.orderables)
    except FmaBandsError:
        return None  # the band's own problem is said beside it
    inside = span.values() & band.values()
    if not inside:
        return None
    name, names = proposal.sub_action, tool_names(vignette)
    left = span.values() - band.values()
    rest = (
        f"it keeps only {describe_values(name, left, names)}"
        if left
        else "nothing of it is left, so your review records no disputed span"
    )
    return (
        f"Your band admits {describe_values(name, inside, names)}, which the proposal's disputed "
        f"span also holds. A disputed span holds only what the band leaves out: for your review "
        f"{rest}. To record another span, choose it under Disputed span."
    )


def _corrections_of(
    form: ReviewForm, band: AnyBand | None, *, vignette: Vignette, proposal: Proposal, mode: str
) -> tuple[dict[str, Any] | None, dict[str, str]]:
    """check_corrections of the form's corrections, beside its band."""
    return check_corrections(
        form.corrections,
        verdict=form.verdict,
        mode=mode,
        proposal=proposal,
        band=band,
        orderables=vignette.orderables,
    )


def check_corrections(
    raw: Mapping[str, Any] | None,
    *,
    verdict: str | None,
    mode: str,
    proposal: Proposal,
    band: AnyBand | None,
    orderables: tuple[str, ...],
) -> tuple[dict[str, Any] | None, dict[str, str]]:
    """An AMEND's corrections as stored (only what differs from the proposal; None for none)
    and every problem by field. A corrected text is non-empty, at most MAX_CORRECTION
    characters and free of control characters; a disputed span is written as a band is (a list,
    or a {min, max} interval) and holds only values outside the rater's band."""
    if not raw:
        return None, {}
    errors: dict[str, str] = {}
    unknown = sorted(str(k) for k in raw if k not in CORRECTABLE)
    if unknown:
        errors["corrections"] = f"only {', '.join(CORRECTABLE)} can be corrected, not {unknown}"
    if mode != "review" or verdict != "AMEND":
        errors["corrections"] = (
            "only an AMEND of a proposal on screen corrects its clause, source, reasoning or "
            "disputed span"
        )
        return None, errors
    kept: dict[str, Any] = {}
    for key in CORRECTED_TEXTS:
        if key not in raw:
            continue
        text, original = raw[key], getattr(proposal, key) or ""
        if not isinstance(text, str):
            errors[key] = f"the corrected {key} is text"
        elif text.strip() == original.strip():
            continue  # the proposal's own: no correction
        elif not text.strip():
            errors[key] = f"the corrected {key} is empty: write it, or keep the proposal's"
        elif len(text) > MAX_CORRECTION:
            errors[key] = f"keep the corrected {key} under {MAX_CORRECTION} characters"
        elif (found := control_character(text)) is not None:
            errors[key] = f"the corrected {key} holds {found}: remove it"
        else:
            kept[key] = text.strip()
    if "disputed_span" in raw:
        span, problem = _corrected_span(raw["disputed_span"], proposal, band, orderables)
        if problem is not None:
            errors["disputed_span"] = problem
        elif span is not _UNCHANGED:
            kept["disputed_span"] = span
    return (kept or None), errors


_UNCHANGED = object()


def _corrected_span(
    raw: Any, proposal: Proposal, band: AnyBand | None, orderables: tuple[str, ...]
) -> tuple[Any, str | None]:
    """The span in harness form (None: no disputed span), _UNCHANGED when it is the
    proposal's, or what is wrong with it."""
    if raw is None:
        return (_UNCHANGED if proposal.disputed_span is None else None), None
    try:
        span = parse_band(proposal.sub_action, raw, orderables=orderables, span=True)
    except FmaBandsError as exc:
        return None, exc.message
    if band is not None and (inside := span.values() & band.values()):
        return None, (
            "the disputed span repeats values already in your band "
            f"({describe_values(proposal.sub_action, inside)}): it holds only "
            "what the band leaves out"
        )
    if proposal.disputed_span is not None and span.values() == proposal.disputed_span.values():
        return _UNCHANGED, None
    return to_harness(span), None


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
    mode = study(session).mode
    band, errors = check_form(
        form, vignette=vignette, proposal=proposal, mode=mode, final=submit, round=number
    )
    if errors:
        raise FmaBandsError(_summary(errors), fields=errors)
    rows = revisions(session, rater.id, vid, name)
    latest = rows[-1] if rows else None
    values = _saved_values(
        form, band, vignette=vignette, proposal=proposal, mode=mode, round=number, submit=submit
    )
    # A draft left in a closed round is frozen with it: the new round starts a new revision.
    if latest is None or latest.status == "submitted" or latest.round != number:
        row = _add_revision(session, rater, vid, name, latest, values, expected_version)
    else:
        row = _update_draft(session, latest, values, expected_version)
    _record_save(session, rater, row, submit=submit)
    return as_data(row, library, {rater.id: rater.pseudonym})


def _saved_values(
    form: ReviewForm,
    band: AnyBand | None,
    *,
    vignette: Vignette,
    proposal: Proposal,
    mode: str,
    round: int,
    submit: bool,
) -> dict[str, Any]:
    """The columns a save writes, whether into a new revision or over the open draft."""
    now = utcnow()
    values: dict[str, Any] = {
        "verdict": form.verdict,
        "band": to_file(band) if band is not None else None,
        "answers": {k: dict(v) for k, v in form.answers.items()},
        "reason": (form.reason or "").strip() or None,
        "confidence": form.confidence,
        "corrections": _corrections_of(form, band, vignette=vignette, proposal=proposal, mode=mode)[
            0
        ],
        "mode": mode,
        "context_digest": vignette.context_digest_for(proposal.sub_action),
        "band_digest": proposal.acceptable.digest(),
        "proposal_digest": proposal_digest(proposal) if mode == "review" else None,
        "round": round,
        "updated_at": now,
    }
    if submit:
        values |= {"status": "submitted", "submitted_at": now}
    return values


def _add_revision(
    session: Session,
    rater: UserPublic,
    vid: str,
    name: str,
    latest: Review | None,
    values: dict[str, Any],
    expected_version: int,
) -> Review:
    """A new revision after `latest` (or the first), if the screen saw `latest`'s version."""
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
    return row


def _update_draft(
    session: Session, draft: Review, values: dict[str, Any], expected_version: int
) -> Review:
    """The open draft overwritten, if the screen saw its version."""
    # Compare-and-set on the version: of two tabs saving the same draft, the second loses.
    result = session.execute(
        update(Review)
        .where(col(Review.id) == draft.id, col(Review.version) == expected_version)
        .values(version=col(Review.version) + 1, **values)
    )
    if result.rowcount != 1:  # type: ignore[attr-defined]
        raise _conflict()
    session.refresh(draft)
    return draft


# The audit log's kinds for a review saved and a review submitted: each event names its
# rater (the actor's pseudonym), its band, its revision and its round.
SAVED, SUBMITTED = "review_draft_saved", "review_submitted"


def _record_save(session: Session, rater: UserPublic, row: Review, *, submit: bool) -> None:
    audit.record(
        session,
        kind=SUBMITTED if submit else SAVED,
        actor=rater.pseudonym,
        payload={
            "vignette_id": row.vignette_id,
            "sub_action": row.sub_action,
            "revision": row.revision,
            "verdict": row.verdict,
            "round": row.round,
            "supersedes_revision": row.revision - 1 if row.supersedes_id else None,
        },
    )


def _conflict() -> ConflictError:
    return ConflictError(
        "this review was changed in another tab or window since you opened it; reload it to "
        "see the saved version (your entries here are kept until you do)"
    )


def is_current_row(row: Mapping[Any, Any], library: Library) -> bool:
    """is_current for a review read as a Core row."""
    return library.is_current(
        row["vignette_id"],
        row["sub_action"],
        context_digest=row["context_digest"],
        band_digest=row["band_digest"],
        proposal_digest=row["proposal_digest"],
        mode=row["mode"],
    )


def as_data(row: Review | RowMapping, library: Library, names: dict[int, str]) -> ReviewData:
    data = row.model_dump() if isinstance(row, Review) else dict(row)
    return ReviewData.model_validate(
        {
            **data,
            "rater": names[data["rater_id"]],
            "answers": data["answers"] or {},
            "stale": not is_current_row(data, library),
        }
    )


def _summary(errors: dict[str, str]) -> str:
    return "; ".join(f"{field}: {message}" for field, message in errors.items())
