"""A command's whole answer kept in the database (table kept_report, rows `answer:…`) under the
SHA-256 of everything it was made from: the state of the store (audit.state_head), the bytes of
the vignette files, the command's options and fma-bands' own code. Once a round has closed,
`fma-bands agreement` is asked for the same figures again and again; with its answer kept it
reads no vignette as YAML, no review and no kept report, and imports none of the statistics
(docs/performance.md, "Agreement reports").

Only ever a copy, as a kept report is: any review or other change saved through fma-bands is a
new state, any byte of a vignette file or of fma-bands' code a new key, so a kept answer is
never given for anything but exactly what it was made from; delete every row and the same
answers are made again. A change made to the database outside fma-bands, which the audit log
does not record, is seen once a change is next recorded, or at once with `--fresh`, as for
the kept reports.

Light on purpose: this module imports nothing of the statistics, so that finding an answer
costs what the database and the passphrase check cost.
"""

import hashlib
import json
from typing import Any

from sqlalchemy import delete
from sqlmodel import Session, col, select

from fma_bands.core.code import code_digest
from fma_bands.store.kept_rows import keep_apart, put
from fma_bands.store.models import KeptReport

ANSWER = "answer:"  # the key's prefix of a kept answer, beside the reports and states
KEEP = 8  # answers kept: a few commands' options in a few states
FORMAT = 1


def answer_key(
    command: str, *, head: tuple[int, str] | None, files: str | None, options: dict[str, Any]
) -> str | None:
    """The key of `command`'s answer with these options, in the store's state `head`
    (audit.state_head) and with the vignette files whose digest is `files`
    (vignettes.files_digest); None when either is unknown (nothing can be kept)."""
    if head is None or files is None:
        return None
    inputs = {
        "format": FORMAT,
        "command": command,
        "head": list(head),
        "files": files,
        "options": options,
        "code": code_digest("numpy", "krippendorff"),
    }
    text = json.dumps(inputs, sort_keys=True, separators=(",", ":"))
    return ANSWER + hashlib.sha256(text.encode()).hexdigest()


def kept_answer(session: Session, key: str | None) -> str | None:
    """The answer kept under `key`, if any."""
    if key is None:
        return None
    found = session.get(KeptReport, key)
    return None if found is None else found.body


def keep_answer(session: Session, key: str | None, answer: str) -> None:
    """Keep `answer` under `key`, in place of one kept before (a fresh answer may differ from
    it where the store was changed outside fma-bands); only the newest KEEP answers are kept."""
    if key is None:
        return

    def write(own: Session) -> None:
        put(own, key, answer)
        answers = col(KeptReport.key).startswith(ANSWER)
        newest = select(KeptReport.key).where(answers).order_by(col(KeptReport.made_at).desc())
        own.execute(
            delete(KeptReport).where(answers, col(KeptReport.key).not_in(newest.limit(KEEP)))
        )

    keep_apart(session, write)


def forget_answers(session: Session) -> None:
    """Drop every kept answer: asked for afresh, the store may have been changed behind
    fma-bands' back, which leaves the state every answer is kept under as it was."""

    def write(own: Session) -> None:
        own.execute(delete(KeptReport).where(col(KeptReport.key).startswith(ANSWER)))

    keep_apart(session, write, required=True)
