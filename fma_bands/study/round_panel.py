"""The anonymised panel a round-2 rater sees (docs/design.md, Who reviews what): every round-1 band
of the band's raters as Rater A, B, C, how many admit each value, and the round-1 reasons, never a
name: a reason that names a user of the study by their pseudonym shows "[a rater]" there instead.

The letters follow a digest of what each rater answered, so their order says nothing of who
answered (not their id, name, enrolment or submission time), and they are drawn afresh for each
band, so "Rater A" of one band is no one in particular on the next. Only reviews of the round
before are read: a round-2 answer never reaches another rater while round 2 is open.
"""

import hashlib
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from string import ascii_uppercase

from sqlmodel import Session, select

from fma_bands.core.actions import Value, sub_action
from fma_bands.core.band_text import describe_values
from fma_bands.core.bands import AnyBand, MultilabelBand, to_file
from fma_bands.core.canonical import canonical_json
from fma_bands.core.errors import AccessDenied
from fma_bands.core.labels import humanise, tool_names
from fma_bands.core.people import UserPublic
from fma_bands.core.vignettes import Library
from fma_bands.store.models import Review
from fma_bands.study.reviews import ReviewData, as_data
from fma_bands.study.state import round_bands, study
from fma_bands.study.submissions import attested_band
from fma_bands.study.users import pseudonyms

UNNAMED = "[a rater]"


@dataclass(frozen=True)
class PanelEntry:
    letter: str  # "Rater A"
    verdict: str
    band: AnyBand | None  # None when they declined
    reason: str | None


@dataclass(frozen=True)
class Panel:
    vignette_id: str
    sub_action: str
    round: int  # the round the panel's answers come from
    entries: tuple[PanelEntry, ...]
    # "admitted by 2 of 3: 2 - emergent to 3 - urgent", most first; tests by the names the
    # vignette gives them ("required by 2 of 3: Chest X-ray, ECG").
    counts: tuple[str, ...]

    @property
    def n_bands(self) -> int:
        return sum(e.band is not None for e in self.entries)


def panel(
    session: Session, library: Library, *, viewer: UserPublic, vid: str, name: str
) -> Panel | None:
    """The panel of round-1 answers for one band of the open round, or None in round 1. A
    rater sees it only for a band they review in the current round."""
    current = study(session)
    if current.round < 2:
        return None
    mine = viewer.role == "rater" and (vid, name) in round_bands(session, viewer.id, current.round)
    if not (viewer.is_coordinator or mine):
        raise AccessDenied(
            f"the round-{current.round - 1} panel of a band is shown only to its round-"
            f"{current.round} raters"
        )
    earlier = current.round - 1
    vignette = library.vignettes.get(vid)
    names = tool_names(vignette) if vignette is not None else {}
    reviews = latest_of_round(session, library, vid, name, earlier)
    return build(vid, name, earlier, reviews, names, hide=pseudonyms(session).values())


def build(
    vid: str,
    name: str,
    number: int,
    reviews: Iterable[tuple[ReviewData, AnyBand | None]],
    names: Mapping[str, str] | None = None,
    hide: Iterable[str] = (),
) -> Panel:
    """The panel of these reviews (with the band each vouches for), lettered by digest; tests
    are counted under `names` (key -> the name a rater reads, core.labels.tool_names); each
    pseudonym of `hide` a reason names is UNNAMED."""
    keyed = sorted(((_digest(vid, name, r, band), r, band) for r, band in reviews), key=_first)
    unnamed = _unnamer(hide)
    entries = tuple(
        PanelEntry(f"Rater {_letter(i)}", r.verdict or "", band, unnamed(r.reason))
        for i, (_, r, band) in enumerate(keyed)
    )
    counted = [e.band for e in entries if e.band]
    return Panel(vid, name, number, entries, _counts(name, counted, names or {}))


def in_words(name: str, values: Iterable[Value], names: Mapping[str, str]) -> str:
    """Values of sub-action `name` as people read them: runs as ranges ("1 to 6 days"), and
    tests by their names (`names`, else the key humanised: "CBC, Chest X-ray"), never a key."""
    if sub_action(name).kind != "multilabel":
        return describe_values(name, values)
    shown = sorted(names.get(str(v)) or humanise(str(v)) for v in set(values))
    return ", ".join(shown) if shown else "none"


def _unnamer(hide: Iterable[str]) -> Callable[[str | None], str | None]:
    """A function putting UNNAMED for each of the pseudonyms in a text, in any case, where the
    pseudonym stands as a word of its own (rater-01 in "rater-01's", not in "rater-011")."""
    names = sorted({n for n in hide if n}, key=len, reverse=True)
    if not names:
        return lambda text: text
    found = re.compile(
        r"(?<![\w-])(?:" + "|".join(map(re.escape, names)) + r")(?![\w-])", re.IGNORECASE
    )
    return lambda text: None if text is None else found.sub(UNNAMED, text)


def _first(item: tuple) -> str:
    return item[0]


def _letter(i: int) -> str:
    return (
        ascii_uppercase[i] if i < 26 else f"{ascii_uppercase[i // 26 - 1]}{ascii_uppercase[i % 26]}"
    )


def _digest(vid: str, name: str, review: ReviewData, band: AnyBand | None) -> str:
    """What the rater answered, and nothing of who they are."""
    answered = {
        "band": vid + "\x1f" + name,
        "verdict": review.verdict,
        "attested": None if band is None else to_file(band),
        "reason": review.reason,
    }
    return hashlib.sha256(canonical_json(answered)).hexdigest()


def _counts(name: str, bands: list[AnyBand], names: Mapping[str, str]) -> tuple[str, ...]:
    """For each number of raters, the values admitted by exactly that many, in words."""
    n = len(bands)
    if not n:
        return ()
    lines = []
    if isinstance(bands[0], MultilabelBand):
        # Every required test is defensible too: a rater's test is counted once, where it
        # stands for them (required, or defensible without being required).
        orders = [b for b in bands if isinstance(b, MultilabelBand)]
        required = Counter(v for b in orders for v in b.required)
        lines += _by_count(name, required, n, "Required by", names)
        only = Counter(v for b in orders for v in b.defensible if v not in b.required)
        lines += _by_count(name, only, n, "Defensible, not required, for", names)
        return tuple(lines)
    tally = Counter(v for b in bands for v in b.values())
    return tuple(_by_count(name, tally, n, "Admitted by", names))


def _by_count(name: str, tally: Counter, n: int, word: str, names: Mapping[str, str]) -> list[str]:
    lines = []
    boolean = sub_action(name).kind == "boolean"
    for k in range(n, 0, -1):
        values = [v for v, c in tally.items() if c == k]
        # A yes/no answer a line each: "either (yes or no)" would read as one rater admitting
        # both, where each answer was given by different raters.
        groups = (
            [[v] for v in sorted(values, reverse=True)] if boolean else [values] if values else []
        )
        for group in groups:
            said = in_words(name, group, names)
            if boolean:
                said = f"the answer {said}"
            # Several values some raters admit: each value by k of them, not one rater all of
            # them ("Admitted by 1 of 2: 2 to 3" read as one rater admitting both).
            each = len(group) > 1 and k < n
            lead = f"Each {word[0].lower()}{word[1:]}" if each else word
            lines.append(f"{lead} {k} of {n}: {said}")
    return lines


def latest_of_round(
    session: Session, library: Library, vid: str, name: str, number: int
) -> list[tuple[ReviewData, AnyBand | None]]:
    query = select(Review).where(
        Review.vignette_id == vid,
        Review.sub_action == name,
        Review.status == "submitted",
        Review.round == number,
    )
    latest: dict[int, Review] = {}
    for row in session.exec(query):
        if row.rater_id not in latest or row.revision > latest[row.rater_id].revision:
            latest[row.rater_id] = row
    # The panel never holds a name: each review is read under a blank one.
    found = [as_data(row, library, {row.rater_id: ""}) for row in latest.values()]
    return [(r, attested_band(r, library)) for r in found if not r.stale]
