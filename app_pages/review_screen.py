"""The review screen as plain data: which band it shows (and why, when a link named none), what
the agent knew at that step, whether the rater sees the proposal, the rater's entries as flat
fields, every problem with them in plain words, and submitting them, with the rater's automatic
draft and skip cleared (and a signed band signed again); and what the screen holds in a
session, one typed object (ReviewState).

Entries are the screen's fields by name: `verdict`, `reason`, `confidence`, `q1:choice`,
`q1:note` ... `q6:note`, and the band editor's fields under `band:` (app_pages.band_form).
"""

import hashlib
import hmac
import secrets
from collections.abc import Collection, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from sqlmodel import Session

from app_pages import band_form
from app_pages.queue_screen import QueueRow, Status, next_after, rater_queue, resume
from fma_bands.core.actions import Step, SubAction, sub_action
from fma_bands.core.bands import AnyBand, parse_band
from fma_bands.core.errors import FmaBandsError
from fma_bands.core.labels import Knowledge, case_label, case_numbers, knowledge_at
from fma_bands.core.people import UserPublic
from fma_bands.core.protocol import CORRECTABLE, CORRECTED_TEXTS, QUESTION_KEYS
from fma_bands.core.vignettes import Library, Proposal, Vignette
from fma_bands.study import drafts, marks, round_panel
from fma_bands.study.case_keys import case_key
from fma_bands.study.reviews import (
    AMENDS_NOTHING,
    ReviewData,
    ReviewForm,
    amends_nothing,
    check_form,
    current_review,
    save,
    span_kept_inside,
    times_revised,
)
from fma_bands.study.signing import resign
from fma_bands.study.state import sees_proposals, study

CONFIDENCES = ("low", "moderate", "high")


@dataclass(frozen=True)
class Screen:
    vignette: Vignette
    proposal: Proposal
    case: str
    position: int  # from 1, in the rater's queue
    total: int
    previous: QueueRow | None
    following: QueueRow | None
    mode: str
    phase: str
    status: Status
    current: ReviewData | None
    revised: int  # how often the rater revised their review within this round
    kept: drafts.Kept | None  # the rater's automatic draft, when it is of the current version
    # Whether this rater sees the proposal: its panel, the questions about it, its band as the
    # start of theirs and beside it in the picture (fma_bands.study.state.sees_proposals).
    shows_proposal: bool
    redirected: bool = False  # the link named no band of the queue
    # Opened where the rater left off with every band of the queue submitted: the first.
    all_submitted: bool = False
    round: int = 1
    # From round 2: the anonymised answers of the round before (never this round's).
    panel: round_panel.Panel | None = None
    queue: tuple[QueueRow, ...] = ()  # the rater's whole queue, for the case picker
    cases: int = 0  # how many cases the study has ("Case 3 of 12")

    @property
    def name(self) -> str:
        return self.proposal.sub_action

    @property
    def band(self) -> tuple[str, str]:
        return (self.vignette.id, self.name)

    @property
    def key(self) -> str:
        """The prefix of the screen's widget keys; the browser sees them, so never the id."""
        return screen_key(self.vignette.id, self.name)

    @property
    def action(self) -> SubAction:
        return sub_action(self.name)

    @property
    def step(self) -> Step:
        return self.action.step_info

    @property
    def knows(self) -> Knowledge:
        """What the agent holds at this band's step: from reassessment on, every result marked
        as reaching it only if it ordered that test, and its own earlier actions."""
        return knowledge_at(self.vignette, self.step.name)

    @property
    def submitted_here(self) -> bool:
        """The rater's review of this band is submitted in this round (entries open on it are
        a revision). A review of an earlier round is not this round's answer: the rater keeps
        or revises it."""
        current = self.current
        return current is not None and current.status == "submitted" and current.round == self.round

    @property
    def editing(self) -> bool:
        """Entries are open on screen: nothing submitted yet, a draft, or a revision begun."""
        return not self.submitted_here or self.kept is not None

    @property
    def version(self) -> int:
        return self.current.version if self.current else 0

    def place(self, *, kept: bool = False, flagged: bool = False) -> str:
        """The band's place as the line under its title says it, with its status in the queue;
        `kept`: entries were kept since the screen was read (a band to do is in progress now);
        `flagged`: the rater flagged it since."""
        step = self.step.description.split(":")[0]
        in_round = f"round {self.round} · " if self.round > 1 else ""
        status = "in progress" if kept and self.status == "to do" else self.status
        flag = ", flagged" if flagged or self.queue[self.position - 1].flagged else ""
        return (
            f"{self.case} · {step} · {in_round}{self.mode} mode · "
            f"band {self.position} of {self.total} in your queue ({status}{flag})"
        )

    @property
    def carried(self) -> int | None:
        """The earlier round whose review starts this screen (its answers, verdict and band),
        or None: the rater must be told, or they may submit round 1's answers unread."""
        if self.current is not None and self.current.round < self.round:
            return self.current.round
        return None

    def entries(self) -> dict[str, Any]:
        """What the screen starts from: the automatic draft, else the stored review, else the
        proposal (when the rater sees it) or nothing (blind mode)."""
        stored = entries_from(self.current, self.proposal, self.vignette, self.shows_proposal)
        if self.current is not None and self.current.round < self.round:
            # The round-1 band and answers start the screen; the reason must be this round's.
            stored |= {"reason": "", "confidence": None}
        return stored | self.kept.entries if self.kept is not None else stored


# The browser sees widget keys (as class names), so they name a band by a digest keyed with a
# secret of this server process: stable while its sessions last, never computable from the id.
_SCREEN_SECRET = secrets.token_bytes(32)


def screen_key(vid: str, name: str) -> str:
    return f"{hmac.new(_SCREEN_SECRET, vid.encode(), hashlib.sha256).hexdigest()[:16]}:{name}"


def widget_key(prefix: str, name: str) -> str:
    """The key of the screen's widget `name` (an entry's field, or a button) for the band whose
    screen key is `prefix`: the one place these keys are made."""
    return f"{prefix}:{name}"


def open_screen(
    session: Session, library: Library, rater: UserPublic, vid: str | None, name: str | None
) -> Screen | None:
    """The screen for band (vid, name) of the rater's queue; for a link naming no band of it,
    where the rater left off, said so. None when the study has no band at all."""
    rows = rater_queue(session, library, rater)
    if not rows:
        return None
    bands = [r.band for r in rows]
    # An address naming no band (the sidebar's link) opens where the rater left off; one naming
    # a band that is not in the queue does too, and the screen says so.
    redirected = (vid, name) not in bands and (vid is not None or name is not None)
    resumed = resume(rows) if (vid, name) not in bands else None
    all_submitted = (vid, name) not in bands and resumed is None
    if (vid, name) not in bands:
        vid, name = (resumed or rows[0]).band
    at = bands.index((vid, name))  # type: ignore[arg-type]
    assert vid is not None and name is not None
    vignette = library.vignettes[vid]
    proposal = vignette.proposal(name)
    assert proposal is not None
    current = current_review(session, library, rater, vid, name)
    kept = drafts.restore(session, rater, vid, name)
    if kept is not None and kept.base_version != (current.version if current else 0):
        kept = None  # entries begun on a version since replaced (submitted in another tab)
    settings = study(session)
    numbers = case_numbers(library, case_key(session))
    return Screen(
        vignette=vignette,
        proposal=proposal,
        case=case_label(numbers, vid),
        position=at + 1,
        total=len(rows),
        previous=rows[at - 1] if at > 0 else None,
        following=rows[at + 1] if at + 1 < len(rows) else None,
        mode=settings.mode,
        phase=settings.phase,
        status=rows[at].status,
        current=current,
        revised=times_revised(session, rater, vid, name),
        kept=kept,
        shows_proposal=sees_proposals(settings, rater),
        redirected=redirected,
        all_submitted=all_submitted,
        round=settings.round,
        panel=round_panel.panel(session, library, viewer=rater, vid=vid, name=name),
        queue=tuple(rows),
        cases=len(numbers),
    )


# Entries --------------------------------------------------------------------------------------


def entries_from(
    current: ReviewData | None, proposal: Proposal, vignette: Vignette, shows_proposal: bool
) -> dict[str, Any]:
    """The fields showing a stored review, or a new one (the band starts from the proposal when
    the rater sees it, from nothing otherwise)."""
    action = sub_action(proposal.sub_action)
    band: AnyBand | None = None
    if current is not None and current.band is not None:
        band = parse_band(proposal.sub_action, current.band, orderables=vignette.orderables)
    elif shows_proposal:
        band = proposal.acceptable
    answers = current.answers if current else {}
    entries: dict[str, Any] = {
        "verdict": current.verdict if current else None,
        "reason": (current.reason or "") if current else "",
        "confidence": current.confidence if current else None,
    }
    for q in QUESTION_KEYS:
        entries[f"{q}:choice"] = (answers.get(q) or {}).get("choice")
        entries[f"{q}:note"] = (answers.get(q) or {}).get("note", "")
    fields = band_form.fields_for(action, band, vignette.orderables)
    entries |= {f"band:{k}": v for k, v in fields.items()}
    if shows_proposal:
        # An AMEND's corrections start from the proposal's texts and span (blind mode: no
        # proposal, so nothing of it enters the entries).
        corrections = current.corrections if current is not None else None
        entries |= correction_entries(proposal, corrections)
    return entries


def correction_entries(proposal: Proposal, corrections: dict[str, Any] | None) -> dict[str, Any]:
    """The corrections' fields: each text as the rater corrected it, else the proposal's, and
    the disputed span's editor (band_form.span_fields_for)."""
    corrected = corrections or {}
    entries = {
        f"fix:{key}": corrected.get(key, getattr(proposal, key) or "") for key in CORRECTED_TEXTS
    }
    action = sub_action(proposal.sub_action)
    span = band_form.span_fields_for(action, proposal.disputed_span, corrected)
    return entries | {f"span:{k}": v for k, v in span.items()}


def entry_names(proposal: Proposal, vignette: Vignette) -> tuple[str, ...]:
    """Every field of the screen for this band."""
    action = sub_action(proposal.sub_action)
    band = band_form.field_names(action, vignette.orderables)
    questions = [f"{q}:{part}" for q in QUESTION_KEYS for part in ("choice", "note")]
    band_names = [f"band:{f}" for f in band]
    fixes = [f"fix:{key}" for key in CORRECTED_TEXTS]
    span = [f"span:{f}" for f in band_form.span_field_names(action)]
    return ("verdict", "reason", "confidence", *questions, *band_names, *fixes, *span)


def band_fields(entries: dict[str, Any]) -> dict[str, Any]:
    return {k.removeprefix("band:"): v for k, v in entries.items() if k.startswith("band:")}


def span_reading(
    entries: dict[str, Any], proposal: Proposal, vignette: Vignette
) -> band_form.SpanReading:
    """The disputed span on screen (band_form.read_span)."""
    fields = {k.removeprefix("span:"): v for k, v in entries.items() if k.startswith("span:")}
    return band_form.read_span(sub_action(proposal.sub_action), fields, vignette.orderables)


def _corrections(
    entries: dict[str, Any], proposal: Proposal, vignette: Vignette
) -> dict[str, Any] | None:
    """An AMEND's corrections on screen: each text field the screen has, and the span when the
    rater records none or writes their own (the domain keeps only what differs)."""
    found: dict[str, Any] = {
        key: entries[f"fix:{key}"]
        for key in CORRECTED_TEXTS
        if isinstance(entries.get(f"fix:{key}"), str)
    }
    span = span_reading(entries, proposal, vignette)
    if span.changed and span.problem is None:
        found["disputed_span"] = span.span
    return found or None


def form_from(
    entries: dict[str, Any], proposal: Proposal, vignette: Vignette
) -> tuple[ReviewForm, str | None]:
    """The review the entries make, and what is wrong with the band on screen (if AMEND)."""
    verdict = entries.get("verdict")
    band, problem, corrections = None, None, None
    if verdict == "AMEND":
        action = sub_action(proposal.sub_action)
        reading = band_form.read(action, band_fields(entries), vignette.orderables)
        band, problem = reading.band, reading.problem
        corrections = _corrections(entries, proposal, vignette)
    answers = {}
    for q in QUESTION_KEYS:
        given = {
            part: value
            for part in ("choice", "note")
            if (value := entries.get(f"{q}:{part}")) not in (None, "")
        }
        if given:
            answers[q] = given
    confidence = entries.get("confidence")
    form = ReviewForm(
        verdict=verdict,
        band=band,
        answers=answers,
        reason=entries.get("reason"),
        confidence=confidence if confidence in CONFIDENCES else None,
        corrections=corrections,
    )
    return form, problem


def problems(
    entries: dict[str, Any],
    proposal: Proposal,
    vignette: Vignette,
    mode: str,
    *,
    final: bool,
    round: int = 1,
) -> dict[str, str]:
    """Every problem by field: only the band's while the rater works (`final=False`), all of
    them once they have tried to submit; the page shows each beside its field."""
    form, band_problem = form_from(entries, proposal, vignette)
    _, errors = check_form(
        form, vignette=vignette, proposal=proposal, mode=mode, final=final, round=round
    )
    if band_problem is not None and (final or form.band is None):
        errors["band"] = band_problem
    if form.verdict == "AMEND" and (span := span_reading(entries, proposal, vignette)).problem:
        errors["disputed_span"] = span.problem
    # While the rater works: the band's problems, and those of their corrections.
    corrections = {f for f in CORRECTABLE if f in errors}
    if not final:
        return {
            k: v
            for k, v in errors.items()
            if (k == "band" and band_problem is not None) or k in corrections
        }
    return errors


def amendment_notices(
    entries: dict[str, Any], proposal: Proposal, vignette: Vignette, mode: str
) -> list[str]:
    """What to say beside an AMEND: that it keeps the proposal's band and corrects nothing, or
    that its band admits values of the disputed span it keeps (not when the rater chose another
    span, even one not yet readable: its own message stands beside it)."""
    form, _ = form_from(entries, proposal, vignette)
    found = amends_nothing(form, vignette=vignette, proposal=proposal, mode=mode)
    keeps_span = entries.get("span:choice") not in (band_form.NO_SPAN, band_form.OWN_SPAN)
    inside = (
        span_kept_inside(form, vignette=vignette, proposal=proposal, mode=mode)
        if keeps_span
        else None
    )
    return [text for text in (AMENDS_NOTHING if found else None, inside) if text is not None]


def keep(
    session: Session,
    library: Library,
    rater: UserPublic,
    vid: str,
    name: str,
    entries: dict[str, Any],
    *,
    base_version: int,
    changed: Collection[str] | None = None,
) -> bool:
    """Keep what is on screen (the automatic draft): its fields only, never anything else the
    screen holds (a passphrase is not a field); whether it was kept (drafts.keep, which with
    `changed` writes only those fields)."""
    found = library.band(vid, name)
    if found is None:
        raise FmaBandsError("this band is no longer in the study", field="band")
    vignette, proposal = found
    wanted = set(entry_names(proposal, vignette))
    kept = {k: v for k, v in entries.items() if k in wanted}
    return drafts.keep(session, rater, vid, name, kept, base_version=base_version, changed=changed)


def submit(
    session: Session,
    library: Library,
    rater: UserPublic,
    vid: str,
    name: str,
    entries: dict[str, Any],
    *,
    expected_version: int,
) -> ReviewData:
    """Submit the review on screen: refused with every problem by field, else saved, the
    automatic draft discarded and the band no longer skipped."""
    found = library.band(vid, name)
    if found is None:
        raise FmaBandsError("this band is no longer in the study", field="band")
    vignette, proposal = found
    settings = study(session)
    errors = problems(entries, proposal, vignette, settings.mode, final=True, round=settings.round)
    if errors:
        raise FmaBandsError("; ".join(errors.values()), fields=errors)
    form, _ = form_from(entries, proposal, vignette)
    saved = save(
        session, library, rater, vid, name, form, expected_version=expected_version, submit=True
    )
    drafts.discard(session, rater, vid, name)
    marks.clear_skip(session, rater, vid, name)
    return saved


def sign_again(
    session: Session,
    library: Library,
    rater: UserPublic,
    band: tuple[str, str],
    *,
    passphrase: str,
    folder: Path,
) -> None:
    """A change to a signed review must not leave the old signature standing in its place: sign
    again what was signed before plus this change, and never an unconfirmed import. Called in
    the submission's session, so a failure (said beside the passphrase) rolls it back too."""
    try:
        resign(session, library, rater=rater, passphrase=passphrase, bands={band}, folder=folder)
    except FmaBandsError as exc:
        message = f"{exc.message}; nothing was submitted"
        raise FmaBandsError(message, fields={"passphrase": message}) from None


def after(
    session: Session, library: Library, rater: UserPublic, band: tuple[str, str]
) -> QueueRow | None:
    """The band to open after this one (submitted or skipped), or None when all are done."""
    return next_after(rater_queue(session, library, rater), band)


# What the screen holds in a session -----------------------------------------------------------


@dataclass
class BandState:
    """What this session holds for one band of the screen. Streamlit forgets a widget's value
    once it is not drawn, so the entries stand beside the widgets and are the screen's memory;
    each widget's own value is in session state under `widget(name)`."""

    prefix: str  # the band's screen key (Screen.key)
    entries: dict[str, Any]
    version: int  # the stored review's version the entries began from
    title: str = ""  # the band as the rater reads it: "Case 5 of 12 · ESI acuity level"
    tried: bool = False  # Submit was pressed: every problem shows, not only the band's
    failed: dict[str, str] = field(default_factory=dict)  # fields a submission was refused for
    failed_message: str | None = None  # why a submission was refused, when no field says it
    conflict: str | None = None  # the stored review moved on in another tab or window
    keep_error: str | None = None  # why the last change could not be kept in the store
    # What a reload would bring back: the entries as the store last kept them (or as the band
    # opened); the page's script warns before a reload while a text on screen differs.
    stored: dict[str, Any] = field(default_factory=dict)
    drawn: set[str] = field(default_factory=set)  # the entries the form's last run drew
    question: str | None = None  # a list with gaps asks before it becomes a range
    last_band: AnyBand | None = None  # the last complete band, drawn while the one on screen is not
    flag_error: str | None = None
    flag_sent: str | None = None  # said once, under the flag box
    # The flag's note as typed and not yet sent: its box is not drawn on another band's screen,
    # and Streamlit forgets the value of a widget not drawn.
    flag_note: str = ""
    # Entries kept, a flag sent, since the screen was read: the line under the title says so
    # at once (the form reruns on its own, the rest of the page on its next run).
    kept: bool = False
    flagged: bool = False
    # Submit refused so far (problems, a wrong passphrase, a conflict), and up to which refusal
    # the form has brought its messages into view.
    refusals: int = 0
    refusals_shown: int = 0

    def widget(self, name: str) -> str:
        return widget_key(self.prefix, name)


STATE_KEY = "review_screen"


@dataclass
class ReviewState:
    """Everything the review screen holds in a session, under one key of session state: each
    band opened here (by screen key), where Submit and next or Skip for now sends the rater, and
    what the next screen says once."""

    bands: dict[str, BandState] = field(default_factory=dict)
    goto: tuple[str, str] | Literal["queue"] | None = None
    flash: str | None = None  # the last action's confirmation, said by the next run of the page
    # That confirmation while the form on screen is worked on: the form (a fragment, rerun on
    # its own) draws it above the band until a refused Submit would make it read as this one's.
    shown: str | None = None
    # Set by a move to another band (a callback), cleared when the run it starts begins: a
    # change to the band left that comes with the move was made before it; one that comes in
    # a later run was a click on the band still drawn while the next one loaded.
    moving: bool = False
    # What the next screen says once of such a late click, which is not kept.
    late: str | None = None

    @staticmethod
    def of(session_state: MutableMapping[Any, Any]) -> "ReviewState":
        """The session's review state, made on first use."""
        if STATE_KEY not in session_state:
            session_state[STATE_KEY] = ReviewState()
        return session_state[STATE_KEY]

    def open(self, screen: Screen) -> BandState:
        """The band's state, begun from the screen's entries the first time this session opens
        it (loaded once a session from the store)."""
        if screen.key not in self.bands:
            entries = screen.entries()
            self.bands[screen.key] = BandState(
                screen.key,
                entries,
                screen.version,
                title=f"{screen.case} · {screen.action.label}",
                stored=dict(entries),
            )
        return self.bands[screen.key]

    def forget(self, prefix: str, session_state: MutableMapping[Any, Any]) -> None:
        """Drop everything held for one band, its widgets' values too, so the store's version
        shows again."""
        self.bands.pop(prefix, None)
        mine = widget_key(prefix, "")
        for name in [k for k in session_state if str(k).startswith(mine)]:
            del session_state[name]

    def unsent_flags(self) -> int:
        """How many bands opened in this session hold a flag's note typed and not sent."""
        return sum(1 for band in self.bands.values() if band.flag_note.strip())

    def take_flash(self) -> str | None:
        flash, self.flash = self.flash, None
        return flash

    def take_goto(self) -> tuple[str, str] | Literal["queue"] | None:
        goto, self.goto = self.goto, None
        return goto
