"""The fields of one vignette file: read as the author wrote them and checked one by one, every
problem reported under its field and the line it starts on.

`vignettes` builds a Vignette and its Proposals from what these readers return.
"""

import re
from collections.abc import Callable
from typing import Any

import yaml

from fma_bands.core.actions import (
    SUB_ACTIONS,
    SubAction,
    Threshold,
    parse_threshold,
    registered_cut,
    sub_action,
    sub_action_at,
)
from fma_bands.core.bands import AnyBand, parse_band
from fma_bands.core.errors import FmaBandsError

FILE_PROVENANCES = ("author-derived", "guideline-derived")
PROPOSAL_TEXTS = ("source", "clause", "reasoning", "notes")
_TEXT_FIELDS = ("id", "domain", "ambiguity", "clinical_core", "canary")
# An orderable's name is a key of the harness's tool results: plain ASCII, so none looks alike.
ORDERABLE = re.compile(r"[a-z0-9_]+")


class Lines:
    """Maps a field path to the line it starts on, from the YAML node tree (and, given the
    file's text, a top-level field's value to its text as written)."""

    def __init__(self, root: yaml.Node | None, text: str | None = None):
        self.root, self.text = root, text

    def written(self, key: str) -> tuple[int, str] | None:
        """The line a top-level field's value starts on and its text as the file spells it
        (with a block scalar's indicator, `>-`), or None when unknown."""
        if self.text is None or not isinstance(self.root, yaml.MappingNode):
            return None
        value = next((v for k, v in self.root.value if k.value == key), None)
        if value is None:
            return None
        start, end = value.start_mark, value.end_mark
        return start.line + 1, self.text[start.index : end.index]

    def of(self, *path: str | int) -> int | None:
        node = self.root
        line = node.start_mark.line + 1 if node is not None else None
        for key in path:
            if isinstance(node, yaml.MappingNode):
                pair = next(((k, v) for k, v in node.value if k.value == key), None)
                if pair is None:
                    return line
                # A field is found on its key's line, which is where a person looks for it.
                line, node = pair[0].start_mark.line + 1, pair[1]
            elif isinstance(node, yaml.SequenceNode) and isinstance(key, int):
                if key >= len(node.value):
                    return line
                node = node.value[key]
                line = node.start_mark.line + 1
            else:
                return line
        return line


def as_written(data: Any, root: yaml.Node | None) -> Any:
    """The file's data with its text fields and results kept exactly as written:
    `inr: 1.0` is the text "1.0" and `pregnancy_test: no` the text "no", not a number or a
    boolean the author never meant."""
    if not isinstance(data, dict) or not isinstance(root, yaml.MappingNode):
        return data
    written = dict(data)
    for key_node, value_node in root.value:
        key = key_node.value
        if key in _TEXT_FIELDS and isinstance(value_node, yaml.ScalarNode) and key in written:
            written[key] = value_node.value
        elif key in ("tool_results", "tool_labels") and isinstance(value_node, yaml.MappingNode):
            written[key] = {
                k.value: v.value if isinstance(v, yaml.ScalarNode) else data[key].get(k.value)
                for k, v in value_node.value
            }
        elif key == "proposals" and isinstance(value_node, yaml.SequenceNode):
            written[key] = [
                _proposal_as_written(item, node)
                for item, node in zip(data[key], value_node.value, strict=True)
            ]
    return written


def _proposal_as_written(item: Any, node: yaml.Node) -> Any:
    if not isinstance(item, dict) or not isinstance(node, yaml.MappingNode):
        return item
    written = dict(item)
    for key_node, value_node in node.value:
        if key_node.value in PROPOSAL_TEXTS and isinstance(value_node, yaml.ScalarNode):
            written[key_node.value] = value_node.value
    return written


def read_text(data: dict, key: str, problem, required: bool = True) -> str | None:
    value = data.get(key)
    if value is None:
        if required:
            problem("missing (required)", key)
        return None
    if not isinstance(value, str) or not value.strip():
        problem(f"must be non-empty text, not {type(value).__name__}", key)
        return None
    return value.strip()


def read_tool_results(raw: Any, problem) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        problem("must map each orderable test to its result text", "tool_results")
        return {}
    results = {}
    for key, value in raw.items():
        if not isinstance(key, str) or not ORDERABLE.fullmatch(key):
            problem(
                "an orderable's name uses lowercase ASCII letters a-z, digits 0-9 and '_' only",
                "tool_results",
                key,
            )
        elif not isinstance(value, str) or not value.strip():
            problem("the result must be non-empty text", "tool_results", key)
        else:
            results[key] = value.strip()
    return results


def read_tool_labels(raw: Any, tool_results: dict[str, str], problem) -> dict[str, str]:
    """Optional readable names for the orderables, e.g. `d_dimer: D-dimer`."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        problem("must map orderable tests to the names raters read", "tool_labels")
        return {}
    labels = {}
    for key, value in raw.items():
        if key not in tool_results:
            problem("names no orderable in tool_results", "tool_labels", str(key))
        elif not isinstance(value, str) or not value.strip():
            problem("the name must be non-empty text", "tool_labels", key)
        else:
            labels[key] = value.strip()
    return labels


class ProblemsAt:
    """Problems of one proposal, each reported under its field, remembering whether any was."""

    def __init__(self, problem: Callable[..., None], *path: str | int) -> None:
        self._problem, self.path, self.ok = problem, path, True

    def __call__(self, message: str, *field: str) -> None:
        self._problem(message, *self.path, *field)
        self.ok = False


def read_sub_action(item: dict, here: ProblemsAt) -> SubAction | None:
    """A proposal's sub-action: by its name, or by the harness's name and the step it is
    decided at (`sub_action: urgency_score` with `step: reassess`)."""
    name, step = item.get("sub_action"), item.get("step")
    if name is None:
        here("missing (required)", "sub_action")
        return None
    if step is not None and not isinstance(step, str):
        here(f"a step is written as text such as reassess, not {type(step).__name__}", "step")
        return None
    try:
        return sub_action(str(name)) if step is None else sub_action_at(str(name), step)
    except FmaBandsError as exc:
        here(exc.message, exc.field or "sub_action")
        return None


def read_optional_text(item: dict, key: str, here: ProblemsAt) -> str | None:
    value = item.get(key)
    if value is not None and (not isinstance(value, str) or not value.strip()):
        here("must be non-empty text when given", key)
    return value.strip() if isinstance(value, str) else None


def read_provenance(item: dict, texts: dict[str, str | None], here: ProblemsAt) -> str:
    provenance = item.get("provenance", "author-derived")
    if provenance == "clinician-adjudicated":
        here(
            "a vignette file cannot claim clinician-adjudicated: only the registry grants it, "
            "from signed attestations; write author-derived or guideline-derived",
            "provenance",
        )
    elif provenance not in FILE_PROVENANCES:
        here(f"use one of {', '.join(FILE_PROVENANCES)}", "provenance")
    elif provenance == "guideline-derived" and not (texts["source"] and texts["clause"]):
        here("a guideline-derived band needs both source and clause", "provenance")
    return str(provenance)


def read_proposal_bands(
    name: str, item: dict, orderables: tuple[str, ...], here: ProblemsAt
) -> tuple[AnyBand | None, AnyBand | None]:
    acceptable = disputed = None
    if "acceptable" not in item:
        here("missing (required)", "acceptable")
    else:
        try:
            acceptable = parse_band(name, item["acceptable"], orderables=orderables)
        except FmaBandsError as exc:
            here(exc.message, "acceptable")
    if item.get("disputed_span") is not None:
        try:
            disputed = parse_band(name, item["disputed_span"], orderables=orderables, span=True)
        except FmaBandsError as exc:
            here(exc.message, "disputed_span")
    if acceptable is not None and disputed is not None:
        overlap = acceptable.values() & disputed.values()
        if overlap:
            here(
                f"the disputed span repeats values already in the band ({sorted(overlap)}): "
                "it holds only what the band leaves out",
                "disputed_span",
            )
    return acceptable, disputed


def read_threshold(action: SubAction, raw: Any, here: ProblemsAt) -> Threshold | None:
    if raw is None:
        return None
    try:
        threshold = parse_threshold(raw)
    except FmaBandsError as exc:
        here(exc.message, "threshold")
        return None
    if type(threshold.value) is not action.value_type or action.kind == "multilabel":
        here(f"{action.name} takes a threshold on {action.describe_domain()}", "threshold")
        return None
    # A registered cut's name means one line on one sub-action: on another it would be read
    # by the harness as that cut while drawing a different line.
    if (
        threshold.name
        and registered_cut(threshold.name) is not None
        and threshold.name not in {cut.name for cut in action.registered_cuts}
    ):
        owners = [
            a.name
            for a in SUB_ACTIONS.values()
            if threshold.name in {cut.name for cut in a.registered_cuts}
        ]
        here(
            f"{threshold.name} is a cut of {', '.join(owners)}, not of {action.name}",
            "threshold",
        )
        return None
    return threshold
