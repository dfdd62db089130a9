"""`fma-bands round show | open 2 [--band VID:SUB ...] | close`: the study's review rounds."""

from collections.abc import Mapping
from typing import TYPE_CHECKING

import click

from fma_bands.cli.base import cli, coordinator, print_json, settings, store, synced
from fma_bands.cli.numbers import Whole

if TYPE_CHECKING:
    from fma_bands.study.rounds import Candidate, Reason


@cli.group("round")
def round_() -> None:
    """Show, open or close the study's review rounds (a closed round is never reopened)."""


@round_.command("show")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def show(as_json: bool) -> None:
    """The current round and its phase; from round 2, its bands and their raters; after a closed
    round, the candidates for round 2 with their reasons (those Study admin lists)."""
    from fma_bands.study.chair import on_record
    from fma_bands.study.rounds import (
        REASONS,
        count_bands,
        left_out_of_round_two,
        policy_chair,
        round_two_candidates,
        state,
    )

    with store() as session:
        found, _ = synced(session)
        actor = coordinator(session)
        current = state(session, viewer=actor)
        candidates = []
        if current.phase == "closed":
            candidates = round_two_candidates(session, found, viewer=actor, round=current.number)
        left_out = left_out_of_round_two(session, found, viewer=actor)
        chaired = on_record(session) if current.number > 1 else None
        chair = policy_chair(session)
    if as_json:
        print_json(
            {
                "round": current.number,
                "phase": current.phase,
                "bands": [
                    {"vignette_id": b.vignette_id, "sub_action": b.sub_action, "raters": b.raters}
                    for b in current.bands
                ],
                # The candidates, under the key this output has always had.
                "discordant": [c.as_json() for c in candidates],
                # Round 1's candidates round 2 does not re-review (from round 2 on).
                "not_chosen_for_round_2": [c.as_json() for c in left_out],
                # The chair's decisions signed in the store: the registry grants from the folder.
                "chair_decisions": [
                    {"vignette_id": vid, "sub_action": name, "chair": who}
                    for (vid, name), who in sorted((chaired or {}).items())
                ],
            }
        )
        return
    click.echo(current.describe())
    for b in current.bands:
        click.echo(f"  {b.vignette_id}:{b.sub_action}  raters: {', '.join(b.raters)}")
    if current.phase == "closed":
        if current.number == 1:
            click.echo(f"candidates for round 2: {count_bands(len(candidates))}")
        else:
            after = f"still disputed after round {current.number}"
            click.echo(f"{after}: {count_bands(len(candidates))}")
        _list(candidates, REASONS, chaired, chair)
    if left_out:
        click.echo(
            f"round 1's candidates not chosen for round 2: {count_bands(len(left_out))} (the "
            "registry decides them from round 1's signed reviews; no round follows round 2)"
        )
        _list(left_out, REASONS)


def _list(
    candidates: "list[Candidate]",
    reasons: "Mapping[str, Reason]",
    chaired: Mapping[tuple[str, str], str] | None = None,
    chair: str | None = None,
) -> None:
    """Each candidate band, with its reasons in words and their codes, and the chair's decision
    signed for it (`chaired`, after round 2)."""
    from fma_bands.study.rounds import chair_words

    for c in candidates:
        raters = f"{c.n_raters} rater{'' if c.n_raters == 1 else 's'} with a band"
        if c.raters_words() != str(c.n_raters):
            raters += f", {c.n_counted} of them in the scope the policy requires"
        click.echo(f"  {c.vignette_id}:{c.sub_action}  {c.label}; {raters}")
        for code, sentence in zip(c.reasons, c.sentences(), strict=True):
            click.echo(f"    - {reasons[code].short}: {sentence} (code: {code})")
        if c.disputed is not None:
            click.echo(f"    what some but not all raters admit: {c.disputed}")
        if chaired is not None:
            who = chaired.get(c.band)
            said = chair_words(c, who, chair) + (
                " (the registry grants from the folder)" if who else ""
            )
            click.echo(f"    chair's decision: {said}")


@round_.command("open")
@click.argument("number", type=Whole(1, 2))
@click.option(
    "--band",
    "bands",
    multiple=True,
    metavar="VID:SUB",
    help=(
        "A band to re-review (repeatable); by default every candidate of round 1 (round show) "
        "that someone reviewed."
    ),
)
def open_(number: int, bands: tuple[str, ...]) -> None:
    """Open round NUMBER (2) for the chosen bands, once round 1 is closed."""
    from fma_bands.study.rounds import open_round, parse_band_names

    chosen = parse_band_names(bands) if bands else None
    with store() as session:
        found, _ = synced(session)
        opened = open_round(
            session,
            found,
            actor=coordinator(session),
            number=number,
            folder=settings().attestations,
            bands=chosen,
        )
    click.echo(opened.describe())
    for b in opened.bands:
        click.echo(f"  {b.vignette_id}:{b.sub_action}  raters: {', '.join(b.raters)}")


@round_.command("close")
def close() -> None:
    """Close the open round: its reviews are frozen, and it is never reopened."""
    from fma_bands.study.rounds import close_round

    with store() as session:
        closed = close_round(session, actor=coordinator(session), folder=settings().attestations)
    click.echo(closed.describe())
