"""The registry's policy: how many adjudicators a band needs, whether the specialty scope rule is
required, and optionally the study's chair (docs/design.md, The registry). It is a
root-signed record of the log (attestations/policy.yaml is its readable copy), and required: a
folder without one grants nothing (it never falls back to a default).
"""

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import yaml

from fma_bands.core.actions import sub_action
from fma_bands.core.errors import FmaBandsError

if TYPE_CHECKING:
    from fma_bands.evidence.log import Evidence

POLICY_FILE = "policy.yaml"
SCOPES = ("warn", "require")


@dataclass(frozen=True)
class Policy:
    """The registry's rule: how many attesting adjudicators a band needs, whether the
    specialty scope rule is required or only warned about, and the rater (if any) whose signed
    decision settles a band its raters still disagree on after round 2."""

    quorum: int = 1
    scope: str = "warn"  # warn | require
    chair: str | None = None  # a rater's pseudonym

    def counts(self, name: str, specialty: str | None) -> bool:
        """Whether a rater of this specialty counts towards a band of sub-action `name`: not
        when the scope rule is required and their specialty is outside the sub-action's scope.
        The registry decides by it, and every page that says whether a band will be granted."""
        return self.scope != "require" or sub_action(name).in_scope(specialty or "") is not False

    def as_dict(self) -> dict[str, Any]:
        # The chair only when named: a policy without one keeps the record and digest it had.
        found: dict[str, Any] = {"quorum": self.quorum, "scope": self.scope}
        if self.chair is not None:
            found["chair"] = self.chair
        return found


# More attesting adjudicators than any panel holds: a larger quorum is a typing mistake.
MAX_QUORUM = 1000


def check_policy(quorum: Any, scope: Any, *, chair: Any = None, file: str | None = None) -> Policy:
    if isinstance(quorum, bool) or not isinstance(quorum, int) or not 1 <= quorum <= MAX_QUORUM:
        given = "a larger one" if isinstance(quorum, int) and quorum > MAX_QUORUM else repr(quorum)
        raise FmaBandsError(
            f"quorum must be a whole number from 1 to {MAX_QUORUM:,}, not {given}",
            file=file,
            field="quorum",
        )
    if scope not in SCOPES:
        raise FmaBandsError(
            f"scope must be warn or require, not {scope!r}", file=file, field="scope"
        )
    if chair is not None:
        from fma_bands.evidence.log import PSEUDONYM  # the log reads policies: imported here

        if not isinstance(chair, str) or not PSEUDONYM.fullmatch(chair):
            raise FmaBandsError(
                f"the chair must be a rater's pseudonym, not {chair!r}", file=file, field="chair"
            )
    return Policy(quorum, scope, chair)


def policy_text(evidence: "Evidence") -> str:
    """policy.yaml: the copy of the policy record in force, for people to read."""
    assert evidence.policy is not None
    return (
        f"# fma-bands registry policy: a copy of the signed record {evidence.policy_file}.\n"
        "# The registry reads that record; fma-bands verify checks this copy matches it.\n"
        + yaml.safe_dump(evidence.policy.as_dict())
    )
