"""The coordinator's exports of bands.yaml from the app, each recorded in the audit log: which
head of the study's log it was decided from, whether that head is signed, what it grants and
where it went. The export itself is written from the files alone (evidence/export.py); its
record says that it was made, and by whom."""

from typing import Literal

from sqlmodel import Session

from fma_bands.core.people import UserPublic
from fma_bands.study import audit
from fma_bands.study.state import authorize

EXPORTED = "bands_exported"


def record_export(
    session: Session,
    actor: UserPublic,
    *,
    how: Literal["written", "downloaded"],
    head: tuple[int, str],
    signed: bool,
    bands: int,
    adjudicated: int,
    where: str | None = None,
) -> None:
    """Record that `actor` exported bands.yaml (`written` to `where` on the server, or
    `downloaded` through the browser), decided from the log's `head`."""
    authorize(session, actor, "export_bands")
    payload: dict = {
        "how": how,
        "head": {"sequence": head[0], "digest": head[1]},
        "head_signed": signed,
        "bands": bands,
        "adjudicated": adjudicated,
    }
    if where is not None:
        payload["file"] = where
    audit.record(session, kind=EXPORTED, actor=actor.pseudonym, payload=payload)
