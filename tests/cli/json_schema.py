"""The JSON a command prints against its table in docs/cli.md: every key printed is documented
with its type, every object has all its documented keys, and each documented key is seen."""

import json
import re

from tests.conftest import ROOT

DOC = ROOT / "docs" / "cli.md"
TYPES = {"string", "integer", "number", "boolean", "object", "array", "null"}


def documented() -> dict[str, dict[str, set[str]]]:
    """{command: {key: its types}} from the sections `### \\`fma-bands CMD --json\\``."""
    sections: dict[str, dict[str, set[str]]] = {}
    current = None
    for line in DOC.read_text(encoding="utf-8").splitlines():
        heading = re.fullmatch(r"#+ `fma-bands (.+) --json`", line)
        if heading:
            current = sections.setdefault(heading.group(1), {})
            continue
        if line.startswith("#"):
            current = None
        row = re.match(r"\| `([^`]+)` \| ([^|]+) \|", line)
        if current is not None and row:
            types = {t.strip() for t in row.group(2).split(" or ")}
            assert types <= TYPES, f"docs/cli.md: {row.group(1)}: unknown type {row.group(2)}"
            current[row.group(1)] = types
    return sections


def type_of(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    for python, name in ((int, "integer"), (float, "number"), (str, "string")):
        if isinstance(value, python):
            return name
    return "object" if isinstance(value, dict) else "array"


def conforms(value: object, schema: dict[str, set[str]], path: str, seen: set[str]) -> None:
    """The value at `path` has a documented type and, if an object, exactly its documented keys."""
    seen.add(path)
    wanted = schema.get(path, {"object"})  # an array's items are objects unless documented
    assert type_of(value) in wanted, f"{path or 'the output'}: {value!r} is not {wanted}"
    if isinstance(value, dict):
        prefix = f"{path}." if path else ""
        keys = {
            k.removeprefix(prefix)
            for k in schema
            if k.startswith(prefix) and not re.search(r"\.|\[\]$", k.removeprefix(prefix))
        }
        assert set(value) == keys, (
            f"{path or 'the output'}: keys {sorted(value)}, doc {sorted(keys)}"
        )
        for key, item in value.items():
            conforms(item, schema, prefix + key, seen)
    elif isinstance(value, list):
        for item in value:
            conforms(item, schema, f"{path}[]", seen)


def check_outputs(command: str, outputs: list[str], may_be_unseen: str | None = None) -> None:
    """`may_be_unseen`: a prefix of keys the outputs tried need not show (a band's shape follows
    its sub-action, and one study's output shows one shape)."""
    schema = documented()[command]
    if "[]" in schema:  # a command that prints an array (impact), its items documented as []
        schema[""] = {"array"}
    seen: set[str] = set()
    for output in outputs:
        conforms(json.loads(output), schema, "", seen)
    unseen = sorted(set(schema) - seen)
    if may_be_unseen:
        unseen = [k for k in unseen if not k.startswith(may_be_unseen)]
    assert not unseen, f"{command}: documented keys no output tried has: {unseen}"
