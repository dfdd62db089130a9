"""Due dates: the day by which the coordinator asks raters to finish the current round, and the
reminder each rater's queue shows (how many days are left or overdue, how many bands).

Days are counted on the calendar in UTC, the app's one clock, so every rater reads the same
count on the same day wherever the server runs.
"""

from dataclasses import dataclass
from datetime import UTC, date, datetime

from sqlmodel import Session

from fma_bands.core.errors import FmaBandsError
from fma_bands.core.people import UserPublic
from fma_bands.store.models import RoundDue, utcnow
from fma_bands.study import audit
from fma_bands.study.state import authorize, study

FIELD = "due date"


@dataclass(frozen=True)
class Due:
    round: int
    due_on: date
    set_by: str
    set_at: datetime


def today() -> date:
    return datetime.now(UTC).date()


def due_date(session: Session, number: int | None = None) -> Due | None:
    """The due date of round `number` (the current round by default), or None if none is set."""
    found = session.get(RoundDue, number if number is not None else study(session).round)
    if found is None:
        return None
    return Due(found.round, found.due_on, found.set_by, found.set_at)


def parse_due(text: str) -> date:
    """A date written as the app and the command line take it: year-month-day."""
    try:
        return date.fromisoformat(text.strip())
    except (ValueError, AttributeError):
        message = f"write the due date as year-month-day, such as 2026-12-10 (not {text!r})"
        raise FmaBandsError(message, field=FIELD, fields={FIELD: message}) from None


def set_due(session: Session, *, actor: UserPublic, due_on: date, now: date | None = None) -> Due:
    """The coordinator sets (or moves) the current round's due date (audited). A day already
    past is refused: it would only tell every rater they are late. The day it is already due
    changes nothing and records nothing."""
    authorize(session, actor, "set_due_date")
    if due_on < (now or today()):
        message = "choose today or a later day: a due date already past helps nobody"
        raise FmaBandsError(message, field=FIELD, fields={FIELD: message})
    number = study(session).round
    row = session.get(RoundDue, number)
    if row is not None and row.due_on == due_on:
        return Due(row.round, row.due_on, row.set_by, row.set_at)  # nothing moves: nothing audited
    before = None if row is None else row.due_on.isoformat()
    if row is None:
        row = RoundDue(round=number, due_on=due_on, set_by=actor.pseudonym)
    else:
        row.due_on, row.set_by, row.set_at = due_on, actor.pseudonym, utcnow()
    session.add(row)
    audit.record(
        session,
        kind="due_date_set",
        actor=actor.pseudonym,
        payload={"round": number, "from": before, "to": due_on.isoformat()},
    )
    session.flush()
    return Due(row.round, row.due_on, row.set_by, row.set_at)


def clear_due(session: Session, *, actor: UserPublic) -> bool:
    """The coordinator takes the current round's due date away (audited); False if none was
    set."""
    authorize(session, actor, "set_due_date")
    number = study(session).round
    row = session.get(RoundDue, number)
    if row is None:
        return False
    audit.record(
        session,
        kind="due_date_cleared",
        actor=actor.pseudonym,
        payload={"round": number, "from": row.due_on.isoformat()},
    )
    session.delete(row)
    session.flush()
    return True


def long_date(day: date) -> str:
    """10 December 2026: the day written out, so no reader mistakes day and month."""
    return f"{day.day} {day:%B %Y}"


def _days(n: int) -> str:
    return f"{n} day{'s' if n != 1 else ''}"


def when_due(due: Due, now: date | None = None) -> str:
    """When the round is due, and how far off or how late that is, in words."""
    days = (due.due_on - (now or today())).days
    when = long_date(due.due_on)
    if days > 0:
        return f"Round {due.round} is due on {when} (in {_days(days)})"
    if days == 0:
        return f"Round {due.round} is due today, {when}"
    return f"Round {due.round} was due on {when} (overdue by {_days(-days)})"


def reminder(due: Due, left: int, now: date | None = None) -> str:
    """The line a rater's queue shows: when the round is due, how far off or how late that is,
    and how many of their bands are left."""
    head = when_due(due, now)
    if left == 0:
        return f"{head}: all your bands are submitted."
    verb = "is" if left == 1 else "are"
    return f"{head}: {left} of your bands {verb} left."


def overdue(due: Due, now: date | None = None) -> bool:
    return due.due_on < (now or today())
