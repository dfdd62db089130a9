"""Canonical JSON and SHA-256 digests: the one byte form for everything that is hashed or signed."""

import hashlib
import json
from typing import Any, NoReturn

# json.dumps with these arguments builds this same encoder at every call, and the audit check makes
# one call per event. Its other settings are json.dumps's defaults, so the text is the same.
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_json(obj: Any) -> bytes:
    """Sorted keys, no insignificant whitespace, UTF-8, and no floats (they do not hash stably)."""
    if _may_hold_a_float(obj):
        _refuse_floats(obj, "$")  # names where
    return _ENCODER.encode(obj).encode()


def canonical_text_float_free(obj: Any) -> str:
    """canonical_json(obj) as text, without its scan for floats and non-string keys, for an obj
    known to hold neither: strings, integers, True, False, None, and what `loads_float_free`
    returns. The caller vouches for that; anything else is encoded where canonical_json refuses."""
    return _ENCODER.encode(obj)


# What _ENCODER.encode does with a string, without the call through the encoder's Python code: the
# audit check encodes four strings for each event of the log.
_encode_string = json.encoder.encode_basestring


def canonical_text_of_string(text: str | None) -> str:
    """canonical_json's text of a string or None (a field the audit log holds as either)."""
    return "null" if text is None else _encode_string(text)


def _no_floats(text: str) -> NoReturn:
    raise ValueError(f"a float in JSON: {text}")


# The C scanner calls these for a number with a fraction or exponent, and for NaN and Infinity.
_FLOAT_FREE_DECODER = json.JSONDecoder(parse_float=_no_floats, parse_constant=_no_floats)


def loads_float_free(text: str) -> Any:
    """json.loads(text) for text without a float, NaN or Infinity, and ValueError for text with
    one. JSON object keys are strings, so the result may go to `canonical_text_float_free`."""
    return _FLOAT_FREE_DECODER.decode(text)


def _may_hold_a_float(obj: Any) -> bool:
    """A float or a non-string key anywhere in obj, found level by level without recursing:
    the audit check hashes every event of the log, and most hold none."""
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
    return sha256_of_canonical(canonical_json(obj))


def sha256_of_canonical(data: bytes) -> str:
    """'sha256:<hex>' of canonical JSON already made."""
    return "sha256:" + hashlib.sha256(data).hexdigest()
