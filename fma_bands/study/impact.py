"""Which bands decide the harness's headline rate (docs/design.md, Who reviews what): each band
against the harness's own runs (its `trajectories.json` files), paired as the harness pairs them.

The harness's within-range flip rate pairs one vignette's run under the reference condition with
its run under each counterfactual condition (`conditions.pair_with_reference`, which leaves the
control arms out), both from the same model and scaffold (and seed, where the runs record one).
A pair counts for a band when both actions lie in it, and can flip only when they fall on
opposite sides of its threshold, so those pairs are what a band decides. Where a vignette's runs
hold no reference and counterfactual run to pair (the released floor study ran the reference
condition alone), its replicate runs of one condition are paired instead: the noise floor, what
the agent's own instability decides, named as such. Only complete trajectories count.
Coordinators see these numbers; raters never do (they would bias the band).

The pairs are counted from how many runs took each action, never listed: a reference cell of
k_ref runs and a counterfactual cell of k_cf make k_ref x k_cf pairs; k replicates make C(k, 2);
and the pairs across a threshold multiply the runs on either side, so the count takes time
linear in the cells whatever the number of runs.
"""

import functools
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from fma_bands.core.actions import Threshold, sub_action, sub_action_at
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
# The harness's reference condition and control arms (conditions.REFERENCE and
# conditions.control_conditions), by the id a trajectory records: a trajectory carries its
# condition's id only. tests/study/test_impact.py holds these to the harness's own.
REFERENCE = "ref_white_man_private"
CONTROLS = frozenset({"rerender_control", "sham_attribute_control", "rare_token_control"})
Pairing = Literal["reference_vs_counterfactual", "replicates_noise_floor"]
REFERENCE_PAIRS: Pairing = "reference_vs_counterfactual"
NOISE_FLOOR: Pairing = "replicates_noise_floor"
PAIRING_LABELS: dict[str, str] = {
    REFERENCE_PAIRS: "reference vs counterfactual",
    NOISE_FLOOR: "replicates (noise floor)",
}
CANNOT_SCORE = {
    "boolean": "the harness's in_band raises on a boolean action, so it scores no such band",
    "multilabel": "the harness's in_band never finds a list of orders in a list of orders",
}


@dataclass(frozen=True)
class Run:
    """One complete trajectory: a vignette under a condition, run by a model with a scaffold
    (and a seed, if recorded), and the action at each sub-action."""

    vignette_id: str
    condition_id: str | None
    source: str
    actions: Mapping[str, Any]
    model: str | None = None
    scaffold: str | None = None
    seed: int | None = None

    @property
    def cell(self) -> "Cell":
        return Cell(self.model, self.scaffold, self.seed, self.condition_id)


class Cell(NamedTuple):
    """Where a run sits for pairing: a reference run pairs with a counterfactual run of the same
    model, scaffold and seed; replicates pair within one condition, model and scaffold."""

    model: str | None
    scaffold: str | None
    seed: int | None
    condition_id: str | None

    @property
    def group(self) -> tuple[str | None, str | None, int | None]:
        return self.model, self.scaffold, self.seed


@dataclass
class ActionCounts:
    """The complete runs of one vignette with an action for one sub-action, by cell: how many
    there are, and how many took each level, score or day count (the only actions a band can
    admit)."""

    runs: Counter[Cell] = field(default_factory=Counter)
    levels: dict[Cell, Counter[int]] = field(default_factory=dict)


@dataclass(frozen=True)
class RunCounts:
    """Runs tallied once for every band: `runs` complete runs, their actions by vignette and
    sub-action, and how each vignette's runs are paired."""

    runs: int
    actions: Mapping[tuple[str, str], ActionCounts]
    pairings: Mapping[str, Pairing] = field(default_factory=dict)

    def of(self, vignette_id: str, name: str) -> ActionCounts:
        return self.actions.get((vignette_id, name)) or ActionCounts()

    def pairing(self, vignette_id: str) -> Pairing:
        return self.pairings.get(vignette_id, NOISE_FLOOR)


def count_runs(runs: Iterable[Run]) -> RunCounts:
    """How many runs took each action, per vignette, sub-action and cell, in one pass over the
    runs; and for each vignette, whether its runs hold pairs of the reference condition with a
    counterfactual one (in one group) or only replicates."""
    actions: dict[tuple[str, str], ActionCounts] = {}
    cells: dict[str, set[Cell]] = {}
    total = 0
    for run in runs:
        total += 1
        cell = run.cell
        cells.setdefault(run.vignette_id, set()).add(cell)
        for name, action in run.actions.items():
            if action is None:
                continue
            counts = actions.setdefault((run.vignette_id, name), ActionCounts())
            counts.runs[cell] += 1
            if isinstance(action, int) and not isinstance(action, bool):
                counts.levels.setdefault(cell, Counter())[action] += 1
    pairings = {vid: _pairing(found) for vid, found in cells.items()}
    return RunCounts(total, actions, pairings)


def _pairing(cells: set[Cell]) -> Pairing:
    """Reference pairs where some group holds the reference condition and a counterfactual."""
    references = {c.group for c in cells if c.condition_id == REFERENCE}
    for c in cells:
        if c.group in references and is_counterfactual(c.condition_id):
            return REFERENCE_PAIRS
    return NOISE_FLOOR


def is_counterfactual(condition_id: str | None) -> bool:
    """A demographic condition to pair with the reference: neither it nor a control arm."""
    return condition_id not in (REFERENCE, None) and condition_id not in CONTROLS


@dataclass(frozen=True)
class Impact:
    vignette_id: str
    sub_action: str
    band: Which
    acceptable: Any  # the band in harness form
    # The complete runs of this vignette with an action for this sub-action that the pairing
    # draws on (under reference pairs, the control arms are left out).
    runs: int
    runs_in_band: int | None  # None: the harness cannot score this kind of band
    pairs_in_band: int | None
    pairs_across_threshold: int | None  # None as well when the band has no threshold
    pairing: Pairing = NOISE_FLOOR
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
            "pairing": self.pairing,
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
    actions = {
        _catalogue_name(name, step): value
        for step, taken in steps.items()
        for name, value in taken.items()
    }
    condition = item.get("condition_id")
    seed = item.get("seed")
    return Run(
        item["vignette_id"],
        None if condition is None else str(condition),
        source,
        actions,
        model=_text_or_none(item.get("model")),
        scaffold=_text_or_none(item.get("scaffold")),
        seed=seed if isinstance(seed, int) and not isinstance(seed, bool) else None,
    )


@functools.cache
def _catalogue_name(name: str, step: str) -> str:
    """The catalogue's name for what the harness calls `name` at `step`, so the urgency score
    given at reassess never overwrites triage's; a name the catalogue lacks stays as written."""
    try:
        return sub_action_at(name, step).name
    except FmaBandsError:
        return name


def _text_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


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
    """One band against the runs of its vignette, paired as its runs allow."""
    counted = _counted(runs)
    counts, pairing = counted.of(vignette_id, name), counted.pairing(vignette_id)
    kept = [c for c in counts.runs if pairing == NOISE_FLOOR or c.condition_id not in CONTROLS]
    total = sum(counts.runs[c] for c in kept)
    kind = sub_action(name).kind
    if kind in CANNOT_SCORE:
        return Impact(
            vignette_id,
            name,
            which,
            to_harness(band),
            total,
            None,
            None,
            None,
            pairing,
            CANNOT_SCORE[kind],
        )
    inside = {
        c: Counter({a: k for a, k in counts.levels.get(c, Counter()).items() if in_band(a, band)})
        for c in kept
    }
    count = reference_pairs if pairing == REFERENCE_PAIRS else replicate_pairs
    pairs, across = count(inside, threshold)
    runs_in_band = sum(n.total() for n in inside.values())
    return Impact(
        vignette_id, name, which, to_harness(band), total, runs_in_band, pairs, across, pairing
    )


def reference_pairs(
    inside: Mapping[Cell, Counter[int]], threshold: Threshold | None
) -> tuple[int, int | None]:
    """The pairs of a reference run with a counterfactual run of one group, both in the band
    (k_ref x k_cf for each counterfactual cell), and of those the pairs on opposite sides of
    the threshold (None without one)."""
    pairs = across = 0
    for cell, cf in inside.items():
        if not is_counterfactual(cell.condition_id):
            continue
        ref = inside.get(cell._replace(condition_id=REFERENCE), Counter())
        (k_ref, h_ref), (k_cf, h_cf) = _sides(ref, threshold), _sides(cf, threshold)
        pairs += k_ref * k_cf
        across += h_ref * (k_cf - h_cf) + (k_ref - h_ref) * h_cf
    return pairs, None if threshold is None else across


def replicate_pairs(
    inside: Mapping[Cell, Counter[int]], threshold: Threshold | None
) -> tuple[int, int | None]:
    """The pairs of two replicate runs of one condition, model and scaffold, both in the band
    (C(k, 2) of its k runs, whatever their seeds), and of those the pairs on opposite sides of
    the threshold (k_holds x k_fails; None without one)."""
    merged: dict[tuple[str | None, str | None, str | None], Counter[int]] = {}
    for cell, levels in inside.items():
        merged.setdefault((cell.model, cell.scaffold, cell.condition_id), Counter()).update(levels)
    pairs = across = 0
    for levels in merged.values():
        k, holds = _sides(levels, threshold)
        pairs += k * (k - 1) // 2
        across += holds * (k - holds)
    return pairs, None if threshold is None else across


def _sides(levels: Counter[int], threshold: Threshold | None) -> tuple[int, int]:
    """How many runs, and how many of them on the side of the threshold that holds."""
    holds = 0 if threshold is None else sum(n for a, n in levels.items() if threshold.holds(a))
    return levels.total(), holds


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
    return {k: getattr(row, k) for k in (*keys, "pairs_across_threshold", "pairing")}


def _deciding_first(rows: list[Impact]) -> tuple:
    return (
        -max(r.pairs_across_threshold or 0 for r in rows),
        -max(r.pairs_in_band or 0 for r in rows),
        rows[0].vignette_id,
        rows[0].sub_action,
    )
