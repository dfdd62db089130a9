"""Files: atomic writes (a crash or a full disk never leaves a half-written export or
attestation), and bounded reads of YAML and JSON that refuse a hostile file by name, quickly."""

import codecs
import contextlib
import io
import itertools
import json
import math
import os
import re
import secrets
import stat
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any, ClassVar, NoReturn

import yaml

from fma_bands.core.errors import SURROGATE, FmaBandsError


def write_atomically(
    path: str | Path,
    data: bytes | bytearray | str | Callable[[IO[str]], None],
    *,
    overwrite: bool = True,
    shared: bool = False,
) -> Path:
    """Write via a temporary file in the same folder, fsync, then rename over the target.
    `data` may be a function that writes UTF-8 text to the stream it is given (a large file
    never held whole).

    The file is its owner's only (0600), as a secret must be from its first byte; `shared`
    gives it the mode the umask gives any new file (0644 under the usual 022), for what
    colleagues read: an export, the study's signed records.

    Any failure (a folder where the file should be, no permission, a full disk, /proc) is an
    FmaBandsError naming the file; the target is then as it was before.
    """
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    try:
        if path.is_dir():
            raise FmaBandsError("this is a folder: name a file to write", file=str(path))
        if not overwrite and path.exists():
            raise FmaBandsError("already exists; refusing to overwrite it", file=str(path))
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp"
        # O_EXCL: a new file of ours, never one (or a link) planted under that name.
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
        fd = os.open(tmp, flags, 0o666 if shared else 0o600)
        try:
            with os.fdopen(fd, "wb") as handle:
                if callable(payload):
                    text = io.TextIOWrapper(handle, encoding="utf-8", newline="")
                    payload(text)
                    text.flush()
                    text.detach()  # the handle is closed below, once
                else:
                    handle.write(payload)
                handle.flush()
                os.fsync(handle.fileno())
            if not overwrite and path.exists():
                raise FmaBandsError("already exists; refusing to overwrite it", file=str(path))
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        _fsync_folder(path.parent)
    except OSError as exc:
        raise FmaBandsError(f"cannot write: {exc.strerror or exc}", file=str(path)) from None
    return path


def json_text(obj: Any) -> str:
    """How fma-bands writes a JSON file: sorted keys, indented, UTF-8 as is."""
    return json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write_json_atomically(path: str | Path, obj: Any, *, overwrite: bool = False) -> Path:
    return write_atomically(path, json_text(obj), overwrite=overwrite)


def _fsync_folder(folder: Path) -> None:
    # The rename is durable only once the folder entry itself reaches the disk.
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# Bounded reads -------------------------------------------------------------------------------

KIB, MIB = 1024, 1024 * 1024
# Nesting deeper than this is no vignette, envelope or policy a person wrote.
MAX_DEPTH = 32


def _size(limit: int) -> str:
    return f"{limit // MIB} MB" if limit >= MIB else f"{limit // KIB} KB"


def read_bounded(path: str | Path, *, limit: int, what: str = "file") -> str:
    """The text of a regular file of at most `limit` bytes, UTF-8, without NUL bytes.

    A folder, a device (/dev/zero), a FIFO or a socket is refused before anything is read, so a
    hostile path can neither hang nor flood the process.
    """
    return decode_text(read_bounded_bytes(path, limit=limit, what=what), what=what, file=str(path))


def read_bounded_bytes(path: str | Path, *, limit: int, what: str = "file") -> bytes:
    """read_bounded's bytes, before they are read as text (for a reader that hashes them)."""
    path = Path(path)
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then says what it is.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise FmaBandsError(f"cannot read the {what}: {exc.strerror}", file=str(path)) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise FmaBandsError(f"the {what} is not a regular file", file=str(path))
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise FmaBandsError(f"the {what} is larger than the {_size(limit)} limit", file=str(path))
    return data


def decode_text(data: bytes, *, what: str, file: str | None = None) -> str:
    """UTF-8 text with no NUL byte (PostgreSQL refuses them, and no person types one); a
    leading UTF-8 byte-order mark, which some editors write, is dropped."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise FmaBandsError(
            f"the {what} is UTF-16 or UTF-32 text (it starts with a byte-order mark): save it as "
            "UTF-8",
            file=file,
            line=1,
        )
    data = data.removeprefix(codecs.BOM_UTF8)
    if b"\x00" in data:
        line = data[: data.index(b"\x00")].count(b"\n") + 1
        raise FmaBandsError(f"the {what} holds a NUL byte", file=file, line=line)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise FmaBandsError(f"the {what} is not UTF-8 text", file=file, line=line) from None


# YAML and JSON as data ----------------------------------------------------------------------

# Python refuses to turn a longer run of decimal digits into an integer (ValueError); no value in
# any file fma-bands reads is anywhere near so long.
MAX_DIGITS = 4300
# Control characters other than tab, newline and carriage return: nobody types one, a screen
# cannot show one, and PostgreSQL refuses NUL.
# Control characters, and the bidirectional overrides and isolates that make text read in an
# order other than the one it is stored in ("Trojan Source"): none belongs in a clinical text.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_INT_TAG = "tag:yaml.org,2002:int"


def control_character(text: str) -> str | None:
    """The first control character in text, named for a message (None when there is none)."""
    found = _CONTROL.search(text)
    if found is None:
        return None
    char = found.group()
    if char == "\x00":
        return "a NUL byte (\\x00)"
    kind = "direction control" if char >= "\u202a" else "control character"
    return f"the {kind} U+{ord(char):04X}"


class _Loader(yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader):  # type: ignore[misc]
    """The safe loader (libyaml's C parser where installed) with the YAML 1.2 core schema's
    meanings (`yes`, `no`, `on`, `off` and `2001-01-01` are text, `1:0` is no number and `010`
    is ten), refusing a key given twice."""

    yaml_implicit_resolvers: ClassVar[dict] = {}

    def construct_mapping(self, node, deep=False):  # type: ignore[no-untyped-def]
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            with contextlib.suppress(TypeError):
                if key in seen:
                    raise FmaBandsError(
                        f"the key {key!r} is given twice (also on line {seen[key]}): "
                        "keep one, since only one can count",
                        line=key_node.start_mark.line + 1,
                    )
                seen[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node):  # type: ignore[no-untyped-def]
        """A YAML 1.2 integer: decimal, 0o octal or 0x hexadecimal (no 1.1 leading-zero octal)."""
        text = self.construct_scalar(node)
        digits = text.lstrip("+-")
        sign = -1 if text.startswith("-") else 1
        if digits.startswith("0o"):
            return sign * int(digits[2:], 8)
        if digits.startswith("0x"):
            return sign * int(digits[2:], 16)
        return sign * int(digits)


_Loader.add_constructor(_INT_TAG, _Loader.construct_yaml_int)
# The YAML 1.2 core schema (yaml.org/spec/1.2.2, 10.3.2), in the order each is tried.
for _tag, _pattern, _first in (
    ("bool", r"true|True|TRUE|false|False|FALSE", "tTfF"),
    ("int", r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+", "-+0123456789"),
    (
        "float",
        r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.nan|\.NaN|\.NAN",
        "-+.0123456789",
    ),
    ("null", r"null|Null|NULL|~|", ["~", "n", "N", ""]),
):
    _Loader.add_implicit_resolver(
        f"tag:yaml.org,2002:{_tag}", re.compile(f"^(?:{_pattern})$"), list(_first)
    )


class _CoreResolver(yaml.resolver.BaseResolver):
    """What a plain scalar means under the YAML 1.2 core meanings the reader uses."""

    yaml_implicit_resolvers = _Loader.yaml_implicit_resolvers


_CORE = _CoreResolver()


def plain_reads_as_text(text: str) -> bool:
    """Whether `text`, written as a plain YAML scalar, reads back as text here (YAML 1.2 core):
    a writer quotes it otherwise (`1e3` is text to YAML 1.1 and a number to 1.2)."""
    return _CORE.resolve(yaml.ScalarNode, text, (True, False)) == "tag:yaml.org,2002:str"


def compose_yaml(text: str, *, source: str) -> yaml.Node | None:
    """The YAML node tree, refusing anchors and aliases (&a, *a: a billion laughs), explicit
    tags (!!set, !!binary, !name) and nesting deeper than MAX_DEPTH, in one pass over libyaml's
    events before anything is built; then every key and value is checked (_check_scalars)."""
    depth = 0
    suspect = False  # a scalar that _check_scalars may refuse
    try:
        # Compared by type, not isinstance: libyaml gives tens of thousands of events a study.
        events: Iterator[Any] = yaml.parse(text, Loader=_Loader)
        for event in events:
            kind = type(event)
            if kind is yaml.ScalarEvent:
                value = event.value
                if len(value) > _SHORTEST_SUSPECT or _CONTROL.search(value) is not None:
                    suspect = True
            elif kind is yaml.MappingStartEvent or kind is yaml.SequenceStartEvent:
                depth += 1
                if depth > MAX_DEPTH:
                    raise FmaBandsError(
                        f"nested more than {MAX_DEPTH} levels deep", file=source, line=_line(event)
                    )
            elif kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
                depth -= 1
                continue
            elif kind is yaml.AliasEvent:
                _refuse_anchor(event, source)
            else:  # stream and document events: no node
                continue
            if event.anchor is not None:
                _refuse_anchor(event, source)
            if event.tag is not None:
                tag = event.tag.replace("tag:yaml.org,2002:", "!!")
                raise FmaBandsError(
                    f"the YAML tag {tag} is not accepted (no !!set, !!binary, !!str or other "
                    "tags): write the value plainly",
                    file=source,
                    line=_line(event),
                )
        root = yaml.compose(text, Loader=_Loader)
    except yaml.YAMLError as exc:
        raise _yaml_refusal(exc, source) from None
    if suspect:
        _check_scalars(root, source)
    return root


# A scalar no longer than this can hold no integer of more than MAX_DIGITS digits (hexadecimal
# digits are the densest: 1.21 decimal digits each), so only a control character in it needs
# _check_scalars' walk, which names the field.
_SHORTEST_SUSPECT = int(MAX_DIGITS / math.log10(16))


def _line(event: yaml.Event) -> int | None:
    return event.start_mark.line + 1 if event.start_mark is not None else None


def _refuse_anchor(event: yaml.Event, source: str) -> NoReturn:
    raise FmaBandsError(
        "YAML anchors and aliases (&name, *name) are not accepted: write each value out",
        file=source,
        line=_line(event),
    )


def _check_scalars(root: yaml.Node | None, source: str) -> None:
    """Refuse, by line and field, a key or value holding a control character (an escaped
    "\\0" as much as a raw one) or an integer too long for Python to read."""
    # (field path, node, whether the node is a key), in the order the file gives them.
    todo: list[tuple[tuple[str, ...], yaml.Node, bool]] = (
        [] if root is None else [((), root, False)]
    )
    while todo:
        path, node, is_key = todo.pop()
        if isinstance(node, yaml.MappingNode):
            for key, value in reversed(node.value):
                name = key.value if isinstance(key, yaml.ScalarNode) else "?"
                todo += [((*path, name), value, False), (path, key, True)]
        elif isinstance(node, yaml.SequenceNode):
            todo += [
                ((*path, str(i)), item, False) for i, item in reversed(list(enumerate(node.value)))
            ]
        elif isinstance(node, yaml.ScalarNode):
            found = control_character(node.value)
            if found is not None:
                problem = f"holds {found}: remove it (tab and newline are the only ones allowed)"
            elif node.tag == _INT_TAG and _decimal_digits(node.value) > MAX_DIGITS:
                digits = _decimal_digits(node.value)
                about = "about " if node.value.lstrip("+-")[:2] in ("0x", "0o") else ""
                problem = f"holds a number of {about}{digits:,} digits: none is that long"
            else:
                continue
            raise FmaBandsError(
                f"a key here {problem}" if is_key else problem,
                file=source,
                line=node.start_mark.line + 1,
                field=".".join(path) or None,
            )


def _decimal_digits(text: str) -> int:
    """About how many decimal digits an integer written so has (0x and 0o ones too): Python
    refuses to show one of more than MAX_DIGITS."""
    digits = text.lstrip("+-")
    if digits[:2] in ("0x", "0o"):
        per_digit = math.log10(16 if digits[1] == "x" else 8)
        return math.ceil((len(digits) - 2) * per_digit)
    return len(digits)


def construct_yaml(node: yaml.Node | None, *, source: str) -> Any:
    """Plain data from a node tree made by compose_yaml."""
    if node is None:
        return None
    loader = _Loader("")
    try:
        return loader.construct_document(node)
    except FmaBandsError as exc:
        raise FmaBandsError(exc.message, file=source, line=exc.line) from None
    except yaml.YAMLError as exc:
        raise _yaml_refusal(exc, source) from None
    finally:
        loader.dispose()


def load_yaml(text: str, *, source: str) -> Any:
    return construct_yaml(compose_yaml(text, source=source), source=source)


def read_yaml(path: str | Path, *, limit: int, what: str = "file") -> Any:
    return load_yaml(read_bounded(path, limit=limit, what=what), source=str(path))


# The events a value read by read_yaml_values may hold: far more than any header's.
_VALUE_EVENTS = 10_000


def read_yaml_values(
    path: str | Path, keys: Iterable[str], *, limit: int, what: str = "file"
) -> dict[str, Any]:
    """The values of `keys` in a YAML file that is one mapping, read as libyaml's events go by:
    every other value is skipped without being built, so what a large file holds besides them
    (or what is planted there) costs time, never memory. Each value found is read as
    load_yaml reads a file (its limits and refusals), and a key given twice is refused."""
    wanted = set(keys)
    found: dict[str, Any] = {}
    data = read_bounded_bytes(path, limit=limit, what=what)
    try:
        events = yaml.parse(data, Loader=_Loader)
        for _ in range(3):  # stream, document and mapping start
            event = next(events, None)
        if not isinstance(event, yaml.MappingStartEvent):
            return found
        for key in events:
            if not isinstance(key, yaml.ScalarEvent):
                break
            if key.value in found:
                raise FmaBandsError(
                    f"gives the key {key.value!r} twice: keep one, since only one can count",
                    file=str(path),
                    line=_line(key),
                )
            taken = _value_events(events, keep=key.value in wanted)
            if taken is not None:
                document = [yaml.StreamStartEvent(), yaml.DocumentStartEvent(), *taken]
                text = yaml.emit([*document, yaml.DocumentEndEvent(), yaml.StreamEndEvent()])
                found[key.value] = load_yaml(text, source=str(path))
    except yaml.YAMLError as exc:
        raise _yaml_refusal(exc, str(path)) from None
    return found


def _value_events(events: Iterator[Any], *, keep: bool) -> list[Any] | None:
    """The events of the value that comes next (kept, or only passed by)."""
    kept: list[Any] = []
    depth = 0
    for event in events:
        kind = type(event)
        if kind is yaml.MappingStartEvent or kind is yaml.SequenceStartEvent:
            depth += 1
        elif kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
            depth -= 1
        if keep:
            kept.append(event)
            if len(kept) > _VALUE_EVENTS:
                raise FmaBandsError(f"a value holds more than {_VALUE_EVENTS:,} YAML events")
        if depth == 0:
            break
    return kept if keep else None


def _yaml_refusal(exc: yaml.YAMLError, source: str) -> FmaBandsError:
    mark = getattr(exc, "problem_mark", None)
    reason = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    line = mark.line + 1 if mark is not None else None
    return FmaBandsError(f"not valid YAML: {reason}", file=source, line=line)


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object, refusing a key given twice (json keeps the last, silently)."""
    found = dict(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise FmaBandsError(
                    f"gives the key {key!r} twice: keep one, since only one can count",
                    field=key,
                )
            seen.add(key)
    return found


# Objects of at most this many members whose keys and values are short strings, numbers or
# shared objects themselves are shared between documents read with `shared=True`; longer
# objects only share their short strings. A study's signed statements repeat the same small
# objects (answers, bands) and strings (digests, ids) hundreds of thousands of times: shared,
# they take a fifth of the memory. Only short texts are kept for sharing, and only so many
# objects (the table starts again when full), so what the table holds after the documents are
# gone stays small whatever a file holds.
_SHARED_MEMBERS = 8
_SHARED_TEXT = 80
_SHARED_LIMIT = 100_000
_shared: dict[tuple[Any, ...], dict[str, Any]] = {}
_shared_ids: dict[int, dict[str, Any]] = {}


def _shared_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """_object, returning the object read before when one with the same members was."""
    found = dict(pairs)
    if len(found) != len(pairs):
        return _object(pairs)  # refuses the key given twice, by name
    if len(pairs) > _SHARED_MEMBERS:
        for key, value in pairs:
            if type(value) is str and len(value) <= _SHARED_TEXT:
                found[key] = sys.intern(value)
        return found
    members: list[tuple[Any, ...]] = []
    for key, value in pairs:
        kind = type(value)
        if len(key) > _SHARED_TEXT or (kind is str and len(value) > _SHARED_TEXT):
            return found
        if kind is str or value is None:
            members.append((key, value))
        elif kind is dict:
            if id(value) not in _shared_ids:
                return found  # holds an object not shared: not shared either
            # A shared object stays alive while the table holds it, so its id names it.
            members.append((key, id(value)))
        elif kind is int or kind is bool or kind is float:
            members.append((key, kind, value))
        else:  # a list
            return found
    signature = tuple(members)
    known = _shared.get(signature)
    if known is not None:
        return known
    if len(_shared) >= _SHARED_LIMIT:
        _shared.clear()
        _shared_ids.clear()
    _shared[signature] = _shared_ids[id(found)] = found
    return found


_JSON = json.JSONDecoder(object_pairs_hook=_object)
_SHARED_JSON = json.JSONDecoder(object_pairs_hook=_shared_object)
_LONG_NUMBER = re.compile(f"[0-9]{{{MAX_DIGITS + 1},}}")


def load_json(
    text: str, *, source: str, shared: bool = False, max_containers: int | None = None
) -> Any:
    """JSON data nested at most MAX_DEPTH deep (deeper is refused, never a RecursionError),
    without a key given twice, an integer too long for Python to read, or a NUL in a string.
    With `shared`, small objects and short strings equal to ones read before are the very same
    objects: the caller must never change what it gets. With `max_containers`, data of more
    objects and lists than that is refused, before it is built where the text allows: a few
    bytes a list, such data takes twenty times its size in memory."""
    too_deep = FmaBandsError(f"nested more than {MAX_DEPTH} levels deep", file=source)
    brackets = _brackets(text)
    if max_containers is not None and brackets is not None:
        _refuse_many(len(brackets) // 2, max_containers, source)
    try:
        data = (_SHARED_JSON if shared else _JSON).decode(text)
    except RecursionError:
        raise too_deep from None
    except json.JSONDecodeError as exc:
        raise FmaBandsError(f"not valid JSON: {exc.msg}", file=source, line=exc.lineno) from None
    except FmaBandsError as exc:
        raise FmaBandsError(exc.message, file=source, field=exc.field) from None
    except ValueError:
        # json's only other refusal: an integer longer than Python reads (MAX_DIGITS).
        found = _LONG_NUMBER.search(text)
        line = text[: found.start()].count("\n") + 1 if found else None
        raise FmaBandsError(
            f"holds a number of more than {MAX_DIGITS:,} digits: none is that long",
            file=source,
            line=line,
        ) from None
    if _depth(data, brackets) > MAX_DEPTH:
        raise too_deep
    if max_containers is not None and brackets is None:
        _refuse_many(_containers(data), max_containers, source)
    # A NUL can only be written escaped (json refuses a raw one), so most text is never walked.
    if "\\u0000" in text:
        _refuse_nul(data, source)
    # So can a surrogate (text decoded from UTF-8 holds none): only then is the data walked, for
    # one left alone, which is no character and which no UTF-8 output can carry.
    if _ESCAPED_SURROGATE.search(text) is not None:
        _refuse_lone_surrogates(data, source)
    return data


# Outside its strings JSON text is ASCII: keeping only quotes and brackets (and whatever
# strings hold beyond ASCII), then keeping what lies outside the strings, leaves the brackets.
# Done on the text's UTF-8 bytes, whose translate is a table lookup where str's is a mapping's
# (a signed statement is hundreds of kilobytes): UTF-8 writes every character beyond ASCII in
# bytes that are never a quote or a bracket, and "surrogatepass" takes back any text Python holds.
_NOT_QUOTES_OR_BRACKETS = bytes(c for c in range(128) if chr(c) not in '"[]{}')
_LEAF = re.compile(r"\[\]|\{\}")


def _brackets(text: str) -> str | None:
    """The brackets of JSON text outside its strings, in order; None where a string holds an
    escaped quote (the strings cannot then be cut out by their quotes alone)."""
    if '\\"' in text:
        return None
    kept = text.encode("utf-8", "surrogatepass").translate(None, _NOT_QUOTES_OR_BRACKETS)
    # Every quote opens or closes a string: the pieces between them alternate outside, inside,
    # outside.
    return b"".join(kept.split(b'"')[::2]).decode("utf-8", "surrogatepass")


def _refuse_many(found: int, most: int, source: str) -> None:
    if found > most:
        raise FmaBandsError(
            f"holds {found:,} JSON objects and lists, more than the {most:,} any record holds",
            file=source,
        )


def _containers(data: Any) -> int:
    """How many objects and lists the JSON data holds, level by level (no recursion)."""
    count, level = 0, [data]
    while level:
        level = [c for c in level if isinstance(c, dict | list)]
        count += len(level)
        level = list(
            itertools.chain.from_iterable(v.values() if type(v) is dict else v for v in level)
        )
    return count


def _depth(data: Any, brackets: str | None) -> int:
    """How deep the JSON data nests (a scalar: 0). From its brackets (_brackets) where it has
    them: the innermost pairs removed, a level a pass; else level by level through the data.
    Neither can recurse too far."""
    if brackets is not None:
        depth = 0
        while brackets and depth <= MAX_DEPTH:
            depth += 1
            brackets = _LEAF.sub("", brackets)
        return depth + (1 if brackets else 0)
    # Only containers are carried to the next level: a signed statement holds a great many
    # scalars, so the children are chained in C and filtered in one comprehension.
    containers = (dict, list)
    level = [data] if isinstance(data, containers) else []
    depth = 0
    while level and depth <= MAX_DEPTH:
        depth += 1
        children = itertools.chain.from_iterable(
            value.values() if type(value) is dict else value for value in level
        )
        level = [c for c in children if isinstance(c, containers)]
    return depth + (1 if level else 0)


_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


def _refuse_lone_surrogates(data: Any, source: str) -> None:
    """Name the first key or string of JSON data holding a lone surrogate (\\ud800): json.loads
    joins a pair of them, written as escapes, into the one character they spell."""
    _refuse_text(
        data,
        lambda text: SURROGATE.search(text) is not None,
        "holds a lone surrogate (an escape such as \\ud800 without its pair), which is not text",
        source,
    )


def _refuse_nul(data: Any, source: str) -> None:
    """Name the first key or string of JSON data that holds a NUL (\\u0000)."""
    _refuse_text(data, lambda text: "\x00" in text, "holds a NUL byte (\\u0000): remove it", source)


def _refuse_text(data: Any, held_in: Callable[[str], bool], message: str, source: str) -> None:
    """FmaBandsError(message) naming the first key or string of JSON data that `held_in` finds,
    walked without recursing (the data may be nested as deep as load_json allows)."""
    todo: list[tuple[tuple[str, ...], Any]] = [((), data)]
    while todo:
        path, value = todo.pop()
        if isinstance(value, dict):
            held = any(held_in(key) for key in value)
            todo += [((*path, key), item) for key, item in reversed(value.items())]
        elif isinstance(value, list):
            held = False
            todo += [((*path, str(i)), item) for i, item in reversed(list(enumerate(value)))]
        else:
            held = isinstance(value, str) and held_in(value)
        if held:
            raise FmaBandsError(message, file=source, field=".".join(path) or None)


def read_json(path: str | Path, *, limit: int, what: str = "file") -> Any:
    return load_json(read_bounded(path, limit=limit, what=what), source=str(path))
