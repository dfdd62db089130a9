"""YAML text byte for byte as `yaml.dump(data, Dumper=..., sort_keys=False, allow_unicode=True,
width=...)` writes it, for bands.yaml: yaml.dump, even with libyaml's emitter, makes a full
export a wait a user notices (docs/performance.md, "bands.yaml").

yaml.dump builds a node for every value (the representer), asks the resolver twice about every
scalar's tag (the serializer), and only then hands events to the emitter; for bands.yaml, about
148,000 scalars but only a few hundred distinct ones, that was nearly all of its time. For plain
data the events follow from the values alone, so `dump` makes them in a walk, each distinct
scalar's event once (with the implicit flags the serializer would give it), and hands them to
the same emitter. Anything else (another type, a subclass, a list or dict reached twice, which
yaml.dump writes as an anchor and alias, nesting deeper than any export) goes to yaml.dump.
`dump_to` writes to a stream as the events are made: a large study's export (a hundred
megabytes of text, millions of events) is never held whole.
"""

import io
import itertools
import re
from collections.abc import Callable, Iterator
from typing import IO, Any

import yaml
from yaml.events import (
    DocumentEndEvent,
    DocumentStartEvent,
    Event,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
    StreamStartEvent,
)
from yaml.nodes import ScalarNode

from fma_bands.core.bands import AnyBand, MultilabelBand, to_harness
from fma_bands.core.files import plain_reads_as_text

# libyaml's emitter, where PyYAML was built with it, writes an export faster than PyYAML's own
# and the same text byte for byte, except for strings PyYAML writes double-quoted
# (a tab, a control character, a space beside a line break: libyaml folds long ones otherwise)
# and characters the two judge differently (beyond U+FFFF, U+0085, U+FEFF). A document holding
# any such string is written by the pure-Python emitter (tests/evidence/test_export.py checks
# any text).
# One more difference was always there and is kept: an empty key, `'': x` from libyaml, `? ''`
# then `: x` from PyYAML (bands.yaml has none; tests/evidence/test_yaml_writer.py pins it).
C_DUMPER = getattr(yaml, "CSafeDumper", None)
_ODD_CHARACTER = re.compile("[^\n\x20-\x7e\xa0-\ud7ff\ue000-\ufefe\uff00-\ufffd]")
# A space beside a line break, looked for as substrings: as alternatives of the expression
# above, each would be tried at every character of every string.
_SPACE_BY_BREAK = tuple(pair for brk in "\n\u2028\u2029" for pair in (" " + brk, brk + " "))

TAG = "tag:yaml.org,2002:"
# What SafeRepresenter makes of each plain scalar type: its tag and its text.
_SCALARS: dict[type, tuple[str, Callable[[Any], str]]] = {
    str: (TAG + "str", lambda value: value),
    int: (TAG + "int", str),
    bool: (TAG + "bool", lambda value: "true" if value else "false"),
    type(None): (TAG + "null", lambda value: "null"),
}
# yaml.dump's default_flow_style=False: every list and dict in block style. The emitter never
# changes an event, so one of each serves every list and dict.
_MAPPING = MappingStartEvent(None, TAG + "map", True, flow_style=False)
_SEQUENCE = SequenceStartEvent(None, TAG + "seq", True, flow_style=False)
_MAPPING_END, _SEQUENCE_END = MappingEndEvent(), SequenceEndEvent()
# bands.yaml nests under ten deep. Far deeper data goes to yaml.dump, which, taking two calls a
# level where the walk takes one, runs out of stack sooner: it then fails as it always did.
MAX_DEPTH = 64


class _NotPlain(Exception):
    """Data the walk leaves to yaml.dump."""


class _Events:
    """The events yaml.dump's serializer emits for plain data, in its order."""

    def __init__(self, resolver: yaml.resolver.BaseResolver) -> None:
        self.scalars: dict[type, dict[Any, ScalarEvent]] = {kind: {} for kind in _SCALARS}
        self.resolver = resolver

    def check(self, data: Any) -> None:
        """Walk the data once: _NotPlain if yaml.dump must write it; else every distinct
        scalar's event is made (and the emitter can be chosen from the strings)."""
        containers: set[int] = set()
        for _ in self.of(data, containers):
            pass

    def of(self, data: Any, containers: set[int] | None = None) -> Iterator[Event]:
        """The data's events, from a walk with a stack of its own (a generator a level would
        pass every event up through each level above it)."""
        stack: list[Iterator[Any]] = [iter((data,))]
        ends: list[Event | None] = [None]
        while stack:
            for value in stack[-1]:
                kind = type(value)
                if kind is dict or kind is list:
                    if len(stack) > MAX_DEPTH:
                        raise _NotPlain
                    if containers is not None:
                        if id(value) in containers:
                            raise _NotPlain
                        containers.add(id(value))  # the document keeps each alive
                    if kind is dict:
                        yield _MAPPING
                        stack.append(itertools.chain.from_iterable(value.items()))
                        ends.append(_MAPPING_END)
                    else:
                        yield _SEQUENCE
                        stack.append(iter(value))
                        ends.append(_SEQUENCE_END)
                    break
                seen = self.scalars.get(kind)
                if seen is None:
                    raise _NotPlain
                event = seen.get(value)
                if event is None:
                    event = seen[value] = self.scalar(kind, value)
                yield event
            else:
                stack.pop()
                end = ends.pop()
                if end is not None:
                    yield end

    def scalar(self, kind: type, data: Any) -> ScalarEvent:
        # As Serializer.serialize_node: is the tag the one the text implies, or the default?
        tag, text_of = _SCALARS[kind]
        text = text_of(data)
        implicit = (
            tag == self.resolver.resolve(ScalarNode, text, (True, False)),
            tag == self.resolver.resolve(ScalarNode, text, (False, True)),
        )
        return ScalarEvent(None, tag, implicit, text)

    def document(self, data: Any) -> Iterator[Event]:
        yield from (StreamStartEvent(), DocumentStartEvent())
        yield from self.of(data)
        yield from (DocumentEndEvent(), StreamEndEvent())


class QuotingAsCore:
    """A dumper's resolver that also quotes text which YAML 1.2's core meanings, the ones
    fma-bands reads with (core/files.py), would take for something else: `1e3` and `0o17` are
    text to YAML 1.1 and the harness, numbers to YAML 1.2. Written quoted, both read text."""

    def resolve(self, kind: type, value: Any, implicit: tuple[bool, bool]) -> str:
        tag: str = super().resolve(kind, value, implicit)  # type: ignore[misc]
        if kind is ScalarNode and implicit[0] and tag == STR and not plain_reads_as_text(value):
            return "tag:yaml.org,2002:core-number"  # not str: the serializer quotes it
        return tag


STR = "tag:yaml.org,2002:str"


class SafeDumper(QuotingAsCore, yaml.SafeDumper):
    pass


class _Resolver(QuotingAsCore, yaml.resolver.Resolver):
    pass


C_SAFE_DUMPER: type | None = (
    type("CSafeDumper", (QuotingAsCore, C_DUMPER), {}) if C_DUMPER is not None else None
)


def dump(data: Any, *, width: int, dumper: type | None = None) -> str:
    """`yaml.dump(data, Dumper=dumper, sort_keys=False, allow_unicode=True, width=width)`, the
    same text, for `dumper` a safe dumper (the safe representer and the default resolver,
    perhaps QuotingAsCore); without one, this module's SafeDumper, or its libyaml twin where
    that writes what PyYAML's own would."""
    text = io.StringIO()
    dump_to(text, data, width=width, dumper=dumper)
    return text.getvalue()


def dump_to(stream: IO[str], data: Any, *, width: int, dumper: type | None = None) -> None:
    """dump's text, written to `stream` as it is made."""
    quoting = dumper is None or issubclass(dumper, QuotingAsCore)
    walk = _Events(_Resolver() if quoting else yaml.resolver.Resolver())
    try:
        walk.check(data)
    except _NotPlain:
        chosen = dumper or emitter_for(_strings(data))
        yaml.dump(data, stream, Dumper=chosen, sort_keys=False, allow_unicode=True, width=width)
        return
    chosen = dumper or emitter_for(iter(walk.scalars[str]))
    yaml.emit(walk.document(data), stream=stream, Dumper=chosen, allow_unicode=True, width=width)


def emitter_for(strings: Iterator[str]) -> type:
    """libyaml's dumper, unless PyYAML's own would write one of these strings differently."""
    if C_SAFE_DUMPER is None or any(_written_differently(text) for text in strings):
        return SafeDumper
    return C_SAFE_DUMPER


def _written_differently(text: str) -> bool:
    return _ODD_CHARACTER.search(text) is not None or any(p in text for p in _SPACE_BY_BREAK)


def _strings(data: Any) -> Iterator[str]:
    stack = [data]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            yield value
        elif isinstance(value, dict):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, list | tuple):
            stack.extend(value)


def flow(value: Any) -> str:
    """A value as bands.yaml's YAML writes it, on one line: [2, 3], {min: 1, max: 30}."""
    text = yaml.safe_dump(value, default_flow_style=True, sort_keys=False, width=10_000)
    return text.removesuffix("...\n").strip()


def harness_line(band: AnyBand) -> str:
    """A band as the harness values bands.yaml writes for it, on one line: `acceptable`, and
    an orders band's `x_required`."""
    line = f"acceptable: {flow(to_harness(band))}"
    if isinstance(band, MultilabelBand):
        line += f"; x_required: {flow(list(band.required))}"
    return line
