"""`fma-bands queries list [--json]`: the open queries between the coordinator and the raters;
`fma-bands due set DATE | show [--json] | clear`: the current round's due date."""

import click

from fma_bands.cli.base import cli, coordinator, print_json, store, synced


@cli.group("queries")
def queries_() -> None:
    """The queries between the coordinator and each rater, one thread per rater and band."""


@queries_.command("list")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def list_(as_json: bool) -> None:
    """The open queries, those awaiting the coordinator's reply first, each band in words."""
    from fma_bands.core.actions import sub_action
    from fma_bands.core.labels import case_label, case_numbers
    from fma_bands.study.case_keys import case_key
    from fma_bands.study.queries import open_threads, threads
    from fma_bands.study.state import authorize

    with store() as session:
        found, _ = synced(session)
        # Every rater's threads, so the coordinator's rule (a rater reads theirs in the app).
        actor = authorize(session, coordinator(session), "answer_queries")
        waiting = open_threads(threads(session, actor))
        numbers = case_numbers(found, case_key(session))
    if as_json:
        print_json(
            [
                {
                    "vignette_id": t.vignette_id,
                    "sub_action": t.sub_action,
                    "band": f"{case_label(numbers, t.vignette_id)} · "
                    f"{sub_action(t.sub_action).label}",
                    "rater": t.rater,
                    "awaits": t.awaits,
                    "messages": len(t.messages),
                    "last_at": t.last_at.isoformat(),
                }
                for t in waiting
            ]
        )
        return
    yours = sum(t.awaits == "coordinator" for t in waiting)
    click.echo(
        f"{len(waiting)} open quer{'y' if len(waiting) == 1 else 'ies'}, "
        f"{yours} awaiting your reply"
    )
    for t in waiting:
        who = "awaits your reply" if t.awaits == "coordinator" else f"awaits {t.rater}'s reply"
        noun = "message" if len(t.messages) == 1 else "messages"
        click.echo(
            f"  {case_label(numbers, t.vignette_id)} ({t.vignette_id}) · "
            f"{sub_action(t.sub_action).label} · {t.rater} · {who} · {len(t.messages)} {noun}, "
            f"the last {t.last_at:%Y-%m-%d %H:%M} UTC"
        )


@cli.group("due")
def due_() -> None:
    """The date by which raters are asked to finish the current round."""


@due_.command("set")
@click.argument("day", metavar="DATE")
def set_(day: str) -> None:
    """Set (or move) the current round's due date to DATE (year-month-day, such as 2026-12-10)."""
    from fma_bands.study.due_dates import long_date, parse_due, set_due

    when = parse_due(day)
    with store() as session:
        due = set_due(session, actor=coordinator(session), due_on=when)
    click.echo(f"Round {due.round} is due on {long_date(due.due_on)}.")


@due_.command("show")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def show(as_json: bool) -> None:
    """The current round's due date, if one is set, and how many days are left."""
    from fma_bands.study.due_dates import due_date, long_date, today, when_due
    from fma_bands.study.state import study

    with store() as session:
        coordinator(session)
        current = study(session)
        number = current.round
        due = due_date(session, number)
    days = None if due is None else (due.due_on - today()).days
    if as_json:
        print_json(
            {
                "round": number,
                "phase": current.phase,
                "due_on": None if due is None else due.due_on.isoformat(),
                "days_left": days,
                "set_by": None if due is None else due.set_by,
            }
        )
        return
    if current.phase == "closed":
        # As Study admin says it: a closed round is due no more.
        was = "" if due is None else f" (it was due on {long_date(due.due_on)})"
        click.echo(f"Round {number} is closed{was}: a due date is set for an open round only.")
        return
    click.echo(f"Round {number} has no due date." if due is None else f"{when_due(due)}.")


@due_.command("clear")
def clear() -> None:
    """Take the current round's due date away."""
    from fma_bands.study.due_dates import clear_due
    from fma_bands.study.state import study

    with store() as session:
        cleared = clear_due(session, actor=coordinator(session))
        number = study(session).round
    click.echo(
        f"Round {number} has no due date now."
        if cleared
        else f"Round {number} had no due date: nothing changed."
    )
