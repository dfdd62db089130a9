"""The FairMedAgent harness's side of an export: which bands it cannot score yet, and its own
`Band` and `Adjudicator` built from an export's records (the harness is imported, never copied).
"""

import contextlib
import importlib
import importlib.util
import secrets
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fma_bands.core.actions import sub_action
from fma_bands.core.errors import FmaBandsError, Problem


def harness_note(name: str, adjudicated: bool) -> str | None:
    """Why the harness cannot score a band of this sub-action yet, or None when it can."""
    kind = sub_action(name).kind
    if kind not in ("boolean", "multilabel"):
        return None
    standing = (
        "Clinician-adjudicated, so ground truth for the record, but the harness will not score "
        "it yet"
        if adjudicated
        else "The harness will not score this band yet"
    )
    if kind == "boolean":
        return (
            f"{standing}: its in_band raises TypeError on a boolean action (it takes a bool "
            "for the dichotomy phi, not for an action)."
        )
    return (
        f"{standing}: its in_band tests membership, so a list of orders is never in the list "
        "of defensible orders (it returns False), and its Band has no field for the required "
        "orders, which travel only in x_required."
    )


@dataclass
class Harness:
    """The three names of the FairMedAgent harness an export needs, and where it was found."""

    adjudicator: Any
    band: Any
    registered: dict[str, Any]  # fairmedagent.adjudicators.ADJUDICATORS
    where: str


@dataclass
class HarnessCheck:
    """What the harness made of an export: every refusal is in `problems`."""

    where: str
    bands: int = 0
    adjudicators: int = 0
    problems: list[Problem] = field(default_factory=list)


def build(
    harness: Harness,
    adjudicators: Sequence[Mapping[str, Any]],
    bands: Mapping[str, Sequence[Mapping[str, Any]]],
    source: str | Path,
) -> tuple[dict[str, list[Any]], HarnessCheck]:
    """Register every adjudicator, then build every band (in that order: `Band` checks the
    registry); each refusal is kept with the harness's own message and where it happened."""
    check = HarnessCheck(harness.where)
    for i, fields in enumerate(adjudicators):
        try:
            harness.registered[fields["pseudonym"]] = harness.adjudicator(**fields)
            check.adjudicators += 1
        except Exception as exc:  # the harness's own code: whatever it raises is its message
            check.problems.append(Problem(str(exc), file=str(source), field=f"adjudicators[{i}]"))
    built: dict[str, list[Any]] = {}
    for vid, entries in bands.items():
        for i, fields in enumerate(entries):
            try:
                built.setdefault(vid, []).append(harness.band(**fields))
                check.bands += 1
            except Exception as exc:  # as above
                where = f"bands.{vid}[{i}] ({fields['sub_action']})"
                check.problems.append(Problem(str(exc), file=str(source), field=where))
    return built, check


def importable_harness() -> Harness:
    """The `fairmedagent` on sys.path, whose ADJUDICATORS an export is registered in."""
    try:
        adjudicators = importlib.import_module("fairmedagent.adjudicators")
        bands = importlib.import_module("fairmedagent.bands")
    except ImportError as exc:
        raise FmaBandsError(
            f"the FairMedAgent harness cannot be imported ({exc}): put the folder that holds "
            "its fairmedagent package on sys.path"
        ) from None
    where = str(Path(str(adjudicators.__file__)).parent)
    return Harness(adjudicators.Adjudicator, bands.Band, adjudicators.ADJUDICATORS, where)


@contextlib.contextmanager
def private_harness(folder: str | Path | None) -> Iterator[Harness]:
    """The harness's package in `folder` (or on sys.path) imported under a private name, so
    registering in it changes nobody's harness, and removed again afterwards."""
    package = _package(folder)
    name = f"_fma_bands_harness_{secrets.token_hex(6)}"
    try:
        spec = importlib.util.spec_from_file_location(
            name, package / "__init__.py", submodule_search_locations=[str(package)]
        )
        assert spec is not None and spec.loader is not None, "a file location always has a spec"
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
        adjudicators = importlib.import_module(f"{name}.adjudicators")
        bands = importlib.import_module(f"{name}.bands")
    except Exception as exc:  # the harness's own import: whatever fails, say so in one line
        _forget(name)
        raise FmaBandsError(
            f"cannot import the harness: {type(exc).__name__}: {exc}", file=str(package)
        ) from None
    try:
        registered = adjudicators.ADJUDICATORS
        yield Harness(adjudicators.Adjudicator, bands.Band, registered, str(package))
    finally:
        _forget(name)


def _package(folder: str | Path | None, needs: str = "bands.py", how: str = "") -> Path:
    """The folder of the harness's fairmedagent package: `folder` itself, its fairmedagent, or
    the one on sys.path; it must hold `needs`. `how` says how to name it (an option)."""
    if folder is None:
        spec = importlib.util.find_spec("fairmedagent")
        if spec is None or spec.origin is None:
            raise FmaBandsError(
                "no FairMedAgent harness on sys.path: name the folder that holds its "
                f"fairmedagent package{how}"
            )
        package = Path(spec.origin).parent
    else:
        given = Path(folder)
        package = given / "fairmedagent" if (given / "fairmedagent").is_dir() else given
    if not all((package / name).is_file() for name in ("__init__.py", needs)):
        raise FmaBandsError(
            "no FairMedAgent harness here: expected its fairmedagent package "
            f"(fairmedagent/__init__.py and fairmedagent/{needs})",
            file=str(folder if folder is not None else package),
        )
    return package


def _forget(name: str) -> None:
    for module in [m for m in sys.modules if m == name or m.startswith(f"{name}.")]:
        del sys.modules[module]
