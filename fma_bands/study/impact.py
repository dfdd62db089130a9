"""Which bands decide the harness's headline rate (docs/design.md, Who reviews what): each band
against the harness's own runs (its `trajectories.json` files), counted as the harness counts them.

A within-range flip needs two runs of one vignette whose actions both lie in the band and fall
on opposite sides of its threshold, so those pairs are what a band decides. Only complete
trajectories count. Coordinators see these numbers; raters never do (they would bias the band).

The pairs are counted from how many runs took each action, never listed: k runs in a band make
C(k, 2) pairs, and k_low and k_high runs on either side of its threshold make k_low x k_high
pairs across it, so the count takes time linear in the runs whatever their number.
"""

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from fma_bands.core.actions import Threshold, sub_action
from fma_bands.core.bands import AnyBand, Consensus, IntervalBand, band_from_values, to_harness
from fma_bands.core.errors import FmaBandsError
from fma_bands.core.files import MIB, read_json
from fma_bands.core.vignettes import Library
from fma_bands.study.state import authorize

if TYPE_CHECKING:
    from sqlmodel import Session

    from fma_bands.core.people import UserPublic

# A released file of 192 trajectories is 140 KB; a run of thousands stays far below this.
MAX_BYTES = 64 * MIB
Which = Literal["proposal", "consensus", "widened"]
CANNOT_SCORE = {
    "boolean": "the harness's in_band raises on a boolean action, so it scores no such band",
    "multilabel": "the harness's in_band never finds a list of orders in a list of orders",
}


@dataclass(frozen=True)
class Run:
    """One complete trajectory: a vignette under a condition, and the action at each sub-action."""

    vignette_id: str
    condition_id: str
    source: str
    actions: Mapping[str, Any]


@dataclass
class ActionCounts:
    """The complete runs of one vignette with an action for one sub-action: how many there are,
    and how many took each level, score or day count (the only actions a band can admit)."""

    runs: int = 0
    levels: Counter[int] = field(default_factory=Counter)


@dataclass(frozen=True)
class RunCounts:
    """Runs tallied once for every band: `runs` complete runs, and their actions by vignette
    and sub-action."""

    runs: int
    actions: Mapping[tuple[str, str], ActionCounts]

    def of(self, vignette_id: str, name: str) -> ActionCounts:
        return self.actions.get((vignette_id, name)) or ActionCounts()


def count_runs(runs: Iterable[Run]) -> RunCounts:
    """How many runs took each action, per vignette and sub-action, in one pass over the runs."""
    actions: dict[tuple[str, str], ActionCounts] = {}
    total = 0
    for run in runs:
        total += 1
        for name, action in run.actions.items():
            if action is None:
                continue
            counts = actions.setdefault((run.vignette_id, name), ActionCounts())
            counts.runs += 1
            if isinstance(action, int) and not isinstance(action, bool):
                counts.levels[action] += 1
    return RunCounts(total, actions)


@dataclass(frozen=True)
class Impact:
    vignette_id: str
    sub_action: str
    band: Which
    acceptable: Any  # the band in harness form
    runs: int  # complete runs of this vignette with an action for this sub-action
    runs_in_band: int | None  # None: the harness cannot score this kind of band
    pairs_in_band: int | None
    pairs_across_threshold: int | None  # None as well when the band has no threshold
    note: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "vignette_id": self.vignette_id,
            "sub_action": self.sub_action,
            "band": self.band,
            "acceptable": self.acceptable,
            "runs": self.runs,
            "runs_in_band": self.runs_in_band,
            "pairs_in_band": self.pairs_in_band,
            "pairs_across_threshold": self.pairs_across_threshold,
            "note": self.note,
        }


def read_runs(paths: Iterable[str | Path]) -> list[Run]:
    """The complete trajectories of the harness's trajectories.json files, in file order."""
    runs: list[Run] = []
    for path in paths:
        runs += runs_of(read_json(path, limit=MAX_BYTES, what="trajectories file"), str(path))
    return runs


def runs_of(data: Any, source: str) -> list[Run]:
    items = data.get("trajectories") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise FmaBandsError(
            "not a harness trajectories file: no list of trajectories",
            file=source,
            field="trajectories",
        )
    return [run for i, item in enumerate(items) if (run := _run(item, source, i)) is not None]


def _run(item: Any, source: str, i: int) -> Run | None:
    where = f"trajectories[{i}]"
    if not isinstance(item, dict) or not isinstance(item.get("vignette_id"), str):
        raise FmaBandsError("a trajectory needs a vignette_id", file=source, field=where)
    if item.get("complete") is not True:
        return None  # the harness counts only complete trajectories
    steps = item.get("actions")
    if not isinstance(steps, dict) or not all(isinstance(s, dict) for s in steps.values()):
        raise FmaBandsError(
            "a complete trajectory needs its actions by step", file=source, field=where
        )
    actions = {name: value for step in steps.values() for name, value in step.items()}
    return Run(item["vignette_id"], str(item.get("condition_id")), source, actions)


def in_band(action: Any, band: AnyBand) -> bool | None:
    """As the harness's in_band reads the exported band: an inclusive interval, else membership.
    None where the harness cannot score it (a boolean action, a list of orders) or no action."""
    if band.action.kind in CANNOT_SCORE or isinstance(action, bool):
        return None
    if not isinstance(action, int):
        return None  # missing, or not a level, score or day count
    if isinstance(band, IntervalBand):
        return band.min <= action <= band.max
    return action in band.values()


def impact(
    vignette_id: str,
    name: str,
    which: Which,
    band: AnyBand,
    threshold: Threshold | None,
    runs: "Sequence[Run] | RunCounts",
) -> Impact:
    """One band against the runs of its vignette."""
    counts = _counted(runs).of(vignette_id, name)
    kind = sub_action(name).kind
    if kind in CANNOT_SCORE:
        return Impact(
            vignette_id,
            name,
            which,
            to_harness(band),
            counts.runs,
            None,
            None,
            None,
            CANNOT_SCORE[kind],
        )
    inside = Counter({a: k for a, k in counts.levels.items() if in_band(a, band)})
    pairs, across = pair_counts(inside, threshold)
    return Impact(
        vignette_id, name, which, to_harness(band), counts.runs, inside.total(), pairs, across
    )


def pair_counts(inside: Counter[int], threshold: Threshold | None) -> tuple[int, int | None]:
    """The pairs of runs whose actions are both in the band (C(k, 2) of its k runs), and of
    those the pairs on opposite sides of the threshold (k_holds x k_fails; None without one)."""
    k = inside.total()
    if threshold is None:
        return k * (k - 1) // 2, None
    holds = sum(n for action, n in inside.items() if threshold.holds(action))
    return k * (k - 1) // 2, holds * (k - holds)


def _counted(runs: "Sequence[Run] | RunCounts") -> RunCounts:
    return runs if isinstance(runs, RunCounts) else count_runs(runs)


def widened(agreed: Consensus) -> AnyBand | None:
    """The consensus with its disputed span: what at least one rater admits."""
    if agreed.band is None:
        return None
    return band_from_values(agreed.band.sub_action, agreed.band.values() | agreed.disputed)


def study_impact(
    library: Library,
    runs: "Sequence[Run] | RunCounts",
    consensus: Mapping[tuple[str, str], Consensus] | None = None,
) -> list[Impact]:
    """Every proposed band as proposed, as the raters' consensus and as the widened consensus;
    the bands deciding most pairs across their threshold (then most pairs in band) first, each
    band's rows together. The runs are tallied once for all the bands."""
    runs = _counted(runs)
    by_band: list[list[Impact]] = []
    for vignette in library:
        for proposal in vignette.proposals:
            name, threshold = proposal.sub_action, proposal.effective_threshold
            bands: list[tuple[Which, AnyBand | None]] = [("proposal", proposal.acceptable)]
            agreed = (consensus or {}).get((vignette.id, name))
            if agreed is not None:
                bands += [("consensus", agreed.band), ("widened", widened(agreed))]
            by_band.append(
                [
                    impact(vignette.id, name, w, b, threshold, runs)
                    for w, b in bands
                    if b is not None
                ]
            )
    by_band.sort(key=_deciding_first)
    return [row for rows in by_band for row in rows]


def reviewed_impact(
    session: "Session",
    library: Library,
    runs: "Sequence[Run] | RunCounts",
    *,
    viewer: "UserPublic",
) -> list[Impact]:
    """`study_impact` with the consensus of the raters' current submitted reviews: for the
    coordinator only, since a rater shown these counts would be biased by them."""
    from fma_bands.agreement import band_agreements
    from fma_bands.study.ratings import study_ratings

    authorize(session, viewer, "see_impact")
    ratings = study_ratings(session, library, viewer=viewer)
    agreed = {(b.vignette_id, b.sub_action): b.consensus for b in band_agreements(ratings)}
    return study_impact(library, runs, agreed)


def script_row(row: Impact) -> dict[str, Any]:
    """A row as `fma-bands impact --json` prints it (scripts depend on exactly these keys)."""
    keys = ("vignette_id", "sub_action", "band", "runs_in_band", "pairs_in_band")
    return {k: getattr(row, k) for k in (*keys, "pairs_across_threshold")}


def _deciding_first(rows: list[Impact]) -> tuple:
    return (
        -max(r.pairs_across_threshold or 0 for r in rows),
        -max(r.pairs_in_band or 0 for r in rows),
        rows[0].vignette_id,
        rows[0].sub_action,
    )
