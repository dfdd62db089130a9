"""Canonical JSON and SHA-256 digests: the one byte form for everything that is hashed or signed."""

import hashlib
import json
from typing import Any


def canonical_json(obj: Any) -> bytes:
    """Sorted keys, no insignificant whitespace, UTF-8, and no floats (they do not hash stably)."""
    if _may_hold_a_float(obj):
        _refuse_floats(obj, "$")  # names where
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _may_hold_a_float(obj: Any) -> bool:
    """A float or a non-string key anywhere in obj, found level by level without recursing:
    the audit log hashes 27,000 events on every check, and most hold none."""
    level = [obj]
    while level:
        below: list[Any] = []
        for value in level:
            if isinstance(value, dict):
                if not all(isinstance(key, str) for key in value):
                    return True
                below.extend(value.values())
            elif isinstance(value, list | tuple):
                below.extend(value)
            elif isinstance(value, float):
                return True
        level = below
    return False


def _refuse_floats(obj: Any, path: str) -> None:
    if isinstance(obj, float):
        raise TypeError(f"a float at {path} cannot be hashed canonically; use an integer or text")
    if isinstance(obj, dict):
        for key, value in obj.items():
            if not isinstance(key, str):
                # json.dumps would coerce it, so {1: a} and {"1": a} would hash alike.
                raise TypeError(f"{path} has a non-string key {key!r}")
            _refuse_floats(value, f"{path}.{key}")
    elif isinstance(obj, list | tuple):
        for i, value in enumerate(obj):
            _refuse_floats(value, f"{path}[{i}]")


def sha256_digest(obj: Any) -> str:
    """'sha256:<hex>' of the canonical JSON of obj."""
    return "sha256:" + hashlib.sha256(canonical_json(obj)).hexdigest()
