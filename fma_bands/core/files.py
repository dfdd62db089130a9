"""Files: atomic writes (a crash or a full disk never leaves a half-written export or
attestation), and bounded reads of YAML and JSON that refuse a hostile file by name, quickly."""

import contextlib
import itertools
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

import yaml

from fma_bands.core.errors import FmaBandsError


def write_atomically(path: str | Path, data: bytes | str, *, overwrite: bool = True) -> Path:
    """Write via a temporary file in the same folder, fsync, then rename over the target.

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
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
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
    """UTF-8 text with no NUL byte (PostgreSQL refuses them, and no person types one)."""
    if b"\x00" in data:
        line = data[: data.index(b"\x00")].count(b"\n") + 1
        raise FmaBandsError(f"the {what} holds a NUL byte", file=file, line=line)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise FmaBandsError(f"the {what} is not UTF-8 text", file=file, line=line) from None


# YAML and JSON as data ----------------------------------------------------------------------


class _Loader(yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader):  # type: ignore[misc]
    """The safe loader (libyaml's C parser where installed) that refuses a key given twice."""

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


def compose_yaml(text: str, *, source: str) -> yaml.Node | None:
    """The YAML node tree, refusing anchors and aliases (&a, *a: a billion laughs) and nesting
    deeper than MAX_DEPTH, in one pass over libyaml's events before anything is built."""
    depth = 0
    try:
        for event in yaml.parse(text, Loader=_Loader):
            line = event.start_mark.line + 1 if event.start_mark is not None else None
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                raise FmaBandsError(
                    "YAML anchors and aliases (&name, *name) are not accepted: write each "
                    "value out",
                    file=source,
                    line=line,
                )
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    raise FmaBandsError(
                        f"nested more than {MAX_DEPTH} levels deep", file=source, line=line
                    )
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
        return yaml.compose(text, Loader=_Loader)
    except yaml.YAMLError as exc:
        raise _yaml_refusal(exc, source) from None


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


def _yaml_refusal(exc: yaml.YAMLError, source: str) -> FmaBandsError:
    mark = getattr(exc, "problem_mark", None)
    reason = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    line = mark.line + 1 if mark is not None else None
    return FmaBandsError(f"not valid YAML: {reason}", file=source, line=line)


def load_json(text: str, *, source: str) -> Any:
    """JSON data nested at most MAX_DEPTH deep; deeper is refused, never a RecursionError."""
    too_deep = FmaBandsError(f"nested more than {MAX_DEPTH} levels deep", file=source)
    try:
        data = json.loads(text)
    except RecursionError:
        raise too_deep from None
    except json.JSONDecodeError as exc:
        raise FmaBandsError(f"not valid JSON: {exc.msg}", file=source, line=exc.lineno) from None
    # Level by level, so checking depth cannot itself recurse too far; only containers are
    # carried to the next level (a signed statement holds a great many scalars, so the
    # children are chained in C and filtered in one comprehension rather than a loop).
    containers = (dict, list)
    level = [data] if isinstance(data, containers) else []
    depth = 0
    while level:
        depth += 1
        if depth > MAX_DEPTH:
            raise too_deep
        children = itertools.chain.from_iterable(
            value.values() if type(value) is dict else value for value in level
        )
        level = [c for c in children if isinstance(c, containers)]
    return data


def read_json(path: str | Path, *, limit: int, what: str = "file") -> Any:
    return load_json(read_bounded(path, limit=limit, what=what), source=str(path))
