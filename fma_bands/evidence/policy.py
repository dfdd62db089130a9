"""The registry's policy, attestations/policy.yaml: how many adjudicators a band needs and
whether the specialty scope rule is required. Read from the file alone, like every registry input,
and required: a folder without a valid policy grants nothing (it never falls back to a default).
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from fma_bands.core.errors import FmaBandsError
from fma_bands.core.files import KIB, read_yaml, write_atomically

POLICY_FILE = "policy.yaml"
SCOPES = ("warn", "require")
_HEADER = "# fma-bands registry policy: the registry reads it, so its decisions can be redone.\n"


@dataclass(frozen=True)
class Policy:
    """The registry's rule: how many attesting adjudicators a band needs, and whether the
    specialty scope rule is required or only warned about."""

    quorum: int = 1
    scope: str = "warn"  # warn | require

    def as_dict(self) -> dict[str, Any]:
        return {"quorum": self.quorum, "scope": self.scope}


def check_policy(quorum: Any, scope: Any, *, file: str | None = None) -> Policy:
    if isinstance(quorum, bool) or not isinstance(quorum, int) or quorum < 1:
        raise FmaBandsError(
            f"quorum must be a whole number of at least 1, not {quorum!r}",
            file=file,
            field="quorum",
        )
    if scope not in SCOPES:
        raise FmaBandsError(
            f"scope must be warn or require, not {scope!r}", file=file, field="scope"
        )
    return Policy(quorum, scope)


def read_policy(folder: Path) -> Policy:
    """The policy in force; FmaBandsError with code no_policy when it is missing or invalid."""
    path = Path(folder) / POLICY_FILE
    if not path.is_file():
        raise FmaBandsError(
            "there is no policy.yaml: nothing is granted until the coordinator sets one "
            "(Study admin page, or fma-bands policy set)",
            file=str(path),
            code="no_policy",
        )
    try:
        data = read_yaml(path, limit=64 * KIB, what="policy")
    except FmaBandsError as exc:
        raise FmaBandsError(
            f"cannot read the policy: {exc.message}",
            file=str(path),
            line=exc.line,
            code="no_policy",
        ) from None
    if not isinstance(data, dict) or set(data) != {"quorum", "scope"}:
        raise FmaBandsError(
            "the policy is a mapping of exactly quorum and scope", file=str(path), code="no_policy"
        )
    try:
        return check_policy(data["quorum"], data["scope"], file=str(path))
    except FmaBandsError as exc:
        raise FmaBandsError(exc.message, file=exc.file, field=exc.field, code="no_policy") from None


def write_policy_file(folder: Path, policy: Policy) -> Path:
    return write_atomically(Path(folder) / POLICY_FILE, _HEADER + yaml.safe_dump(policy.as_dict()))
