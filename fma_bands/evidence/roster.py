"""The enrolled adjudicators as the log establishes them, and attestations/adjudicators.yaml,
the copy of them made for people to read (`fma-bands verify` checks it is an exact copy; the
registry never reads it).
"""

from typing import TYPE_CHECKING

import yaml

if TYPE_CHECKING:
    from fma_bands.evidence.log import Evidence

ADJUDICATORS_FILE = "adjudicators.yaml"
ADJUDICATORS_FORMAT = "fma-bands/adjudicators/v3"


def adjudicators_text(evidence: "Evidence") -> str:
    """adjudicators.yaml as the chain in the folder makes it."""
    document = {
        "format": ADJUDICATORS_FORMAT,
        "study": evidence.study,
        "head": {"sequence": evidence.head[0], "digest": evidence.head[1]},
        "adjudicators": [a.as_published() for _, a in sorted(evidence.adjudicators.items())],
    }
    header = (
        "# Generated from the signed records (*.dsse.json) beside it, for people to read.\n"
        "# fma-bands verify checks it is an exact copy; the registry reads the signed records.\n"
        "# No private identity is kept here.\n"
    )
    return header + yaml.safe_dump(document, sort_keys=False, allow_unicode=True)
