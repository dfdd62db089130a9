"""One band's panel of raters: their bands side by side, the consensus by the one intersection
rule (bands.consensus), what is disputed, and how far apart the raters are."""

from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from fma_bands.core.actions import SUB_ACTIONS
from fma_bands.core.band_text import describe, describe_values
from fma_bands.core.bands import (
    AnyBand,
    Consensus,
    MultilabelBand,
    band_from_values,
    consensus,
    to_file,
    to_harness,
)


@dataclass(frozen=True)
class BandAgreement:
    """One band's raters (those who did not DECLINE), its consensus and its disagreement."""

    vignette_id: str
    sub_action: str
    bands: tuple[tuple[str, AnyBand], ...]  # (rater, band), by rater
    n_declined: int
    consensus: Consensus
    disagreement: float | None  # mean distance over pairs of raters; None under two raters

    @property
    def n_raters(self) -> int:
        return len(self.bands)


@lru_cache(maxsize=4096)  # raters mostly repeat a few bands: each is sorted once
def band_label(band: AnyBand) -> tuple:
    """A band as the band metric compares it: its values, or for orders (required, defensible)."""
    if isinstance(band, MultilabelBand):
        return (band.required, band.defensible)
    return tuple(sorted(band.values()))


def band_agreement(
    vignette_id: str, sub_action: str, bands: Sequence[tuple[str, AnyBand]], n_declined: int
) -> BandAgreement:
    """The consensus and mean pairwise distance (the band metric's) of one band's raters."""
    chosen = [band for _, band in bands]
    return BandAgreement(
        vignette_id=vignette_id,
        sub_action=sub_action,
        bands=tuple(bands),
        n_declined=n_declined,
        consensus=consensus(chosen),
        disagreement=mean_distance(chosen),
    )


def mean_distance(bands: Sequence[AnyBand]) -> float | None:
    """The band metric's distance averaged over every pair of raters; None under two raters.
    Raters mostly repeat a few bands, so this works over the distinct ones, in plain Python."""
    m = len(bands)
    if m < 2:
        return None
    distinct = list(Counter(band_label(b) for b in bands).items())
    orders = isinstance(bands[0], MultilabelBand)
    total = 0.0
    for i, (a, count_a) in enumerate(distinct):
        for b, count_b in distinct[i + 1 :]:
            d = (_jaccard(a[0], b[0]) + _jaccard(a[1], b[1])) / 2 if orders else _jaccard(a, b)
            total += count_a * count_b * d
    return total / (m * (m - 1) / 2)


def _jaccard(a: Iterable, b: Iterable) -> float:
    """NLTK's jaccard_distance, with two empty sets at distance 0."""
    x, y = set(a), set(b)
    union = len(x | y)
    return (union - len(x & y)) / union if union else 0.0


def most_disputed_first(
    bands: Iterable[BandAgreement], cases: Mapping[str, int] | None = None
) -> list[BandAgreement]:
    """Highest mean pairwise distance first; bands with fewer than two raters last. Ties (every
    unanimous band) go by vignette id, or by `cases` (id -> case number) for a rater, to whom
    id order would say each case's stratum."""
    return sorted(
        bands,
        key=lambda b: (
            b.disagreement is None,
            -(b.disagreement or 0.0),
            b.vignette_id if cases is None else cases.get(b.vignette_id, 0),
            b.sub_action,
        ),
    )


def consensus_text(c: Consensus) -> str | None:
    """The consensus band in words, runs of values as ranges; None without one. A yes/no
    band's is said as the answer agreed on: a bare "no" would read as "no consensus"."""
    if c.band is None:
        return None
    if isinstance(c.band, MultilabelBand):
        return describe(c.band)
    values = c.band.values()
    return _answers(c.band.sub_action, values, describe_values(c.band.sub_action, values))


def disputed_text(name: str, c: Consensus, names: Mapping[str, str] | None = None) -> str | None:
    """What some but not all raters admit, as ranges (orders by the names clinicians read,
    `names`: core.labels.tool_names); None when nothing is disputed. A yes/no band's is said
    as the answer in dispute: a bare "no" would read as "no disputed span"."""
    if not c.disputed:
        return None
    if isinstance(c.band, MultilabelBand):
        # An order every rater finds defensible is disputed only because some require it and
        # some do not: "what some admit" would say the opposite of what they differ on.
        required = c.disputed & frozenset(c.band.defensible)
        defensible = c.disputed - required
        return "; ".join(
            f"{words} {describe_values(name, part, names)}"
            for words, part in (
                ("required by some raters, not all:", required),
                ("defensible to some raters, not all:", defensible),
            )
            if part
        )
    return _answers(name, c.disputed, describe_values(name, c.disputed, names))


def _answers(name: str, values: Collection[Any], text: str) -> str:
    """`text` as a yes/no sub-action's answers, else as it is."""
    action = SUB_ACTIONS.get(name)
    if action is None or action.kind != "boolean":
        return text
    return "both answers, yes and no" if len(set(values)) == 2 else f"the answer {text}"


def band_json(b: BandAgreement) -> dict[str, Any]:
    c = b.consensus
    disputed = band_from_values(b.sub_action, c.disputed) if c.disputed else None
    return {
        "vignette_id": b.vignette_id,
        "sub_action": b.sub_action,
        "n_raters": b.n_raters,
        "n_declined": b.n_declined,
        "intersection_rule": c.rule,
        # The file form: a list, {min, max}, or for orders {required, defensible}.
        "consensus": None if c.band is None else to_file(c.band),
        # The harness form of a span: {min, max} when contiguous, else the list of values.
        "disputed_span": None if disputed is None else to_harness(disputed),
        "consensus_text": consensus_text(c),
        "disputed_text": disputed_text(b.sub_action, c),
        "disagreement": b.disagreement,
    }
