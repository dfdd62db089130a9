"""Paper hand-backs (docs/design.md, The review task): `vignette_id | sub_action | VERDICT [band] |
reason` lines from a rater who reviewed on paper, parsed and imported as that rater's reviews, all
or nothing: a file with any line the rater could not have saved in the browser (a bad line, a
frozen band, an unsubmitted draft, in round 1 a band not assigned to them) is refused whole.

An imported review records who entered it; the rater's signature covers it only once the rater
confirms it as theirs when signing. It goes into the open round (from round 2, only
the bands that rater re-reviews); a closed round takes no import.
"""

import re
from dataclasses import dataclass
from datetime import datetime

from sqlmodel import Session, select

from fma_bands.core.actions import sub_action
from fma_bands.core.band_text import parse_notation
from fma_bands.core.bands import AnyBand, to_file
from fma_bands.core.errors import AccessDenied, FmaBandsError, Problem
from fma_bands.core.files import control_character, decode_text
from fma_bands.core.markup import terminal_escape
from fma_bands.core.people import UserPublic
from fma_bands.core.protocol import VERDICTS
from fma_bands.core.vignettes import Library
from fma_bands.evidence.log import proposal_digest
from fma_bands.store.models import Review, User, utcnow
from fma_bands.study import audit
from fma_bands.study.assignment import load
from fma_bands.study.reviews import MAX_REASON, ReviewData, as_data, revisions
from fma_bands.study.state import authorize, round_for, study, verdicts_for

FORMAT = "vignette_id | sub_action | VERDICT [band] | reason"
# A hand-back is a few hundred short lines: anything larger is the wrong file.
MAX_BYTES = 1024 * 1024


def handback_text(data: bytes, *, source: str) -> str:
    """An uploaded hand-back's text, refused whole if too large, not UTF-8 or holding a NUL."""
    if len(data) > MAX_BYTES:
        raise FmaBandsError("the hand-back is larger than the 1 MB limit", file=source)
    return decode_text(data, what="hand-back", file=source)


def refused(source: str, problems: list[tuple[int, str]]) -> FmaBandsError:
    """The whole file refused, every problem listed with its line; nothing is imported."""
    return FmaBandsError(
        f"{len(problems)} problem(s); nothing was imported",
        file=source,
        problems=[Problem(m, file=source, line=n or None) for n, m in problems],
    )


@dataclass(frozen=True)
class HandbackLine:
    number: int
    vignette_id: str
    sub_action: str
    verdict: str
    band: AnyBand | None
    reason: str


# The line breaks a text editor writes (Unix, Windows, old Mac OS). str.splitlines also breaks at
# U+2028, U+2029, form feeds and the like: a reason holding U+2028 (as a review's may) would be
# cut in two, and a form feed would pass unseen where control_character names it on its line.
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def parse_handback(
    text: str, library: Library, source: str = "hand-back", *, mode: str = "review"
) -> list[HandbackLine]:
    """Every line of the form `vignette_id | sub_action | VERDICT [band] | reason`; in blind
    mode an ACCEPT line is refused, as in the browser (there is no proposal to accept)."""
    lines: list[HandbackLine] = []
    problems: list[tuple[int, str]] = []
    seen: dict[tuple[str, str], int] = {}
    for number, raw in enumerate(_LINE_BREAK.split(text), start=1):
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if (found := control_character(raw)) is not None:
            problems.append((number, f"the line holds {found}: remove it"))
            continue
        parts = [p.strip() for p in stripped.split("|", 3)]
        if len(parts) != 4:
            problems.append((number, f"expected `{FORMAT}`"))
            continue
        vid, name, verdict_text, reason = parts
        try:
            line = _handback_line(number, vid, name, verdict_text, reason, library)
            if line.verdict not in verdicts_for(mode):
                raise FmaBandsError(
                    "the study is in blind mode, which has no proposal to ACCEPT: give the "
                    "rater's own band (AMEND {...}) or DECLINE"
                )
        except FmaBandsError as exc:
            problems.append((number, exc.message))
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
        raise refused(source, problems)
    return lines


def _handback_line(
    number: int, vid: str, name: str, verdict_text: str, reason: str, library: Library
) -> HandbackLine:
    vignette = library.vignettes.get(vid)
    if vignette is None:
        raise FmaBandsError(f"unknown vignette {vid!r}")
    sub_action(name)
    if vignette.proposal(name) is None:
        raise FmaBandsError(f"vignette {vid} has no {name} band to review")
    verdict, _, band_text = verdict_text.partition(" ")
    verdict, band_text = verdict.strip(), band_text.strip()
    # Any case of the word itself, and nothing else upper() would make it: "declıne" (a dotless
    # i) is no DECLINE.
    verdict = verdict.upper() if verdict.isascii() else verdict
    if verdict not in VERDICTS:
        raise FmaBandsError(f"verdict {verdict_text!r} is not ACCEPT, AMEND {{band}} or DECLINE")
    band = None
    if verdict == "AMEND":
        if not band_text:
            raise FmaBandsError("AMEND needs the corrected band, e.g. AMEND {1, 3}")
        try:
            band = parse_notation(name, band_text, orderables=vignette.orderables)
        except FmaBandsError as exc:
            raise FmaBandsError(f"band {band_text}: {exc.message}") from None
    elif band_text:
        raise FmaBandsError(f"{verdict} takes no band (found {band_text!r})")
    if not reason:
        raise FmaBandsError("give the one-sentence reason after the last |")
    if len(reason) > MAX_REASON:  # as the review page refuses it
        raise FmaBandsError(f"keep the reason under {MAX_REASON} characters")
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
    authorize(session, actor, "import_handback")
    rater = session.exec(select(User).where(User.pseudonym == rater_pseudonym)).first()
    if rater is None or rater.role != "rater" or rater.id is None:
        raise refused(source, [(0, f"{rater_pseudonym!r} is not an enrolled rater")])
    rater_id = rater.id
    mode = study(session).mode
    lines = parse_handback(text, library, source, mode=mode)
    number = study(session).round
    _refuse_closed_bands(session, rater_id, lines, source)
    if number == 1:  # round 2's raters of each band were fixed when it opened
        _refuse_unassigned_bands(session, rater_id, lines, source)
    latest_rows = _revisions_to_supersede(
        session, rater_id, rater.pseudonym, lines, round=number, source=source
    )
    now = utcnow()
    created = []
    for line in lines:
        row = _imported_review(
            line,
            library,
            rater_id=rater_id,
            latest=latest_rows[line.number],
            mode=mode,
            round=number,
            entered_by=actor.pseudonym,
            now=now,
        )
        session.add(row)
        session.flush()
        created.append(row)
    _record_import(session, actor, rater, source, created)
    names = {rater.id: rater.pseudonym} if rater.id is not None else {}
    return [as_data(row, library, names) for row in created]


def _refuse_closed_bands(
    session: Session, rater_id: int, lines: list[HandbackLine], source: str
) -> None:
    """Refuse the whole file if any line's band is not open to this rater in this round."""
    frozen = []
    for line in lines:
        try:
            round_for(session, rater_id, line.vignette_id, line.sub_action)
        except AccessDenied as exc:
            frozen.append((line.number, exc.message))
    if frozen:
        raise refused(source, frozen)


def _refuse_unassigned_bands(
    session: Session, rater_id: int, lines: list[HandbackLine], source: str
) -> None:
    """Refuse the whole file if any line's band is not assigned to this rater: the browser
    refuses their review of it, so a hand-back may not count it in agreement or the registry."""
    assignments = load(session)
    rater = next(r for r in assignments.raters if r.id == rater_id)
    unassigned = [
        (
            line.number,
            f"{line.vignette_id} {line.sub_action} is not assigned to {rater.pseudonym}; the "
            "coordinator assigns it first (fma-bands assign --rater "
            f"{rater.pseudonym} --band {line.vignette_id}:{line.sub_action}, or Study admin), "
            "then imports the file again",
        )
        for line in lines
        if not assignments.covers(rater, line.vignette_id, line.sub_action)
    ]
    if unassigned:
        raise refused(source, unassigned)


def _revisions_to_supersede(
    session: Session,
    rater_id: int,
    pseudonym: str,
    lines: list[HandbackLine],
    *,
    round: int,
    source: str,
) -> dict[int, Review | None]:
    """The rater's latest revision of each line's band (None if there is none yet), by line
    number; the whole file refused if any is a draft of the open round."""
    latest_rows = {}
    drafts = []
    for line in lines:
        rows = revisions(session, rater_id, line.vignette_id, line.sub_action)
        latest_rows[line.number] = rows[-1] if rows else None
        if rows and rows[-1].status == "draft" and rows[-1].round == round:
            # Never overwrite work in progress: the rater submits or the import waits.
            drafts.append(
                (
                    line.number,
                    f"{pseudonym} has an unsubmitted draft of {line.vignette_id} "
                    f"{line.sub_action} in the browser; it must be submitted first",
                )
            )
    if drafts:
        raise refused(source, drafts)
    return latest_rows


def _imported_review(
    line: HandbackLine,
    library: Library,
    *,
    rater_id: int,
    latest: Review | None,
    mode: str,
    round: int,
    entered_by: str,
    now: datetime,
) -> Review:
    """The submitted revision one hand-back line makes, after the rater's `latest`."""
    vignette = library.vignettes[line.vignette_id]
    proposal = vignette.proposal(line.sub_action)
    assert proposal is not None, "parse_handback checked every band is proposed"
    return Review(
        vignette_id=line.vignette_id,
        sub_action=line.sub_action,
        rater_id=rater_id,
        revision=(latest.revision + 1) if latest else 1,
        supersedes_id=latest.id if latest else None,
        status="submitted",
        mode=mode,
        version=(latest.version + 1) if latest else 1,
        verdict=line.verdict,
        band=to_file(line.band) if line.band is not None else None,
        answers={},
        reason=line.reason,
        context_digest=vignette.context_digest_for(line.sub_action),
        band_digest=proposal.acceptable.digest(),
        proposal_digest=proposal_digest(proposal) if mode == "review" else None,
        origin="handback",
        round=round,
        entered_by=entered_by,
        submitted_at=now,
        updated_at=now,
    )


def _record_import(
    session: Session, actor: UserPublic, rater: User, source: str, created: list[Review]
) -> None:
    audit.record(
        session,
        kind="handback_imported",
        actor=actor.pseudonym,
        payload={
            "rater": rater.pseudonym,
            # As a terminal shows it: a file's name may hold what no audit record holds.
            "source": terminal_escape(source),
            "reviews": [
                {"vignette_id": r.vignette_id, "sub_action": r.sub_action, "verdict": r.verdict}
                for r in created
            ],
        },
    )
