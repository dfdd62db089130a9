"""The people of a study as every layer may hold them: a user's public part and their role."""

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

Role = Literal["coordinator", "rater", "steward"]


class UserPublic(BaseModel):
    """What pages and the CLI may hold about a user: never hashes, keys or private identity."""

    model_config = ConfigDict(frozen=True)

    id: int
    pseudonym: str
    role: Role
    specialty: str | None = None
    jurisdiction: str | None = None
    years_post_registration: int | None = None
    keyid: str | None = None
    public_key: str | None = None
    active: bool = True  # False until activated with an enrolment code (and after a reset)
    demo: bool = False
    code_expires_at: datetime | None = None

    @property
    def is_coordinator(self) -> bool:
        return self.role == "coordinator"
