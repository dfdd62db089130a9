"""SQLModel tables: vignettes synchronised from files, users and their signing keys, reviews, study
settings, audit events, sign-in throttling.

The schema changes only through a migration in fma_bands/store/migrations.

Validation happens on the non-table models and in the domain functions; table rows are built from
validated data only. No `from __future__ import annotations` here: SQLModel reads the annotations.
"""

from datetime import UTC, date, datetime
from typing import Any

from sqlalchemy import JSON, DateTime, Text, TypeDecorator, UniqueConstraint
from sqlmodel import Field, SQLModel


class UTCDateTime(TypeDecorator):
    """Timezone-aware UTC in, UTC out, on SQLite (which keeps no zone) and PostgreSQL alike."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime: every timestamp must be timezone-aware UTC")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def utcnow() -> datetime:
    return datetime.now(UTC)


def _when(**kwargs: Any) -> Any:
    return Field(default_factory=utcnow, sa_type=UTCDateTime, **kwargs)


def _json(**kwargs: Any) -> Any:
    return Field(sa_type=JSON, **kwargs)


class VignetteRecord(SQLModel, table=True):
    __tablename__ = "vignette"

    id: str = Field(primary_key=True)
    domain: str
    ambiguity: str | None = None
    clinical_core: str
    tool_results: dict = _json(default_factory=dict)
    canary: str
    # Proposals in the vignette-file form, exactly as loaded (bands as lists or mappings).
    proposals: list = _json(default_factory=list)
    source_path: str
    # A vignette removed from the files is retired, never deleted: its reviews stay.
    present: bool = True
    synced_at: datetime = _when()


class User(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    pseudonym: str = Field(unique=True, index=True)
    role: str  # coordinator | rater | steward
    # None until the person activates the account with their enrolment code, and
    # again after a reset: the coordinator never sets another person's passphrase.
    passphrase_hash: str | None = None
    specialty: str | None = None
    jurisdiction: str | None = None
    years_post_registration: int | None = None
    # A one-time enrolment code, stored hashed; cleared once used.
    enrolment_code_hash: str | None = None
    enrolment_code_expires_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    activated_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    # The passphrase was chosen by whoever made the account (`fma-bands demo`, tests), not by
    # the person: the signed public record says so, and the registry warns.
    demo: bool = False
    # The private identity, sealed under a key only the coordinator's files hold.
    identity_sealed: str | None = None
    identity_commitment: str | None = None
    created_at: datetime = _when()


class SigningKey(SQLModel, table=True):
    """A rater's Ed25519 key pair, the private half sealed under their passphrase. A reset
    retires the key in use (kept, so older signatures still verify) and the next activation
    makes a new one."""

    __tablename__ = "signing_key"

    id: int | None = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="user.id", index=True)
    keyid: str = Field(unique=True)
    public_key: str
    encrypted_private_key: str
    created_at: datetime = _when()
    retired_at: datetime | None = Field(default=None, sa_type=UTCDateTime)


class Review(SQLModel, table=True):
    __table_args__ = (UniqueConstraint("vignette_id", "sub_action", "rater_id", "revision"),)

    id: int | None = Field(default=None, primary_key=True)
    vignette_id: str = Field(foreign_key="vignette.id", index=True)
    sub_action: str
    rater_id: int = Field(foreign_key="user.id", index=True)
    revision: int = 1
    status: str = "draft"  # draft | submitted
    mode: str = "review"  # review | blind
    verdict: str | None = None  # ACCEPT | AMEND | DECLINE
    band: Any = _json(default=None)  # the rater's own band, file form, when AMEND or blind
    answers: dict = _json(default_factory=dict)  # "q1".."q6" -> text
    reason: str | None = None
    context_digest: str  # what the rater saw for that step
    band_digest: str | None = None  # the proposed band's digest when the review was made
    # The whole proposal the rater saw (values, span, threshold, source, clause, reasoning,
    # notes, provenance); None in blind mode, where the rater sees no proposal.
    proposal_digest: str | None = None
    origin: str = "browser"  # browser | handback
    round: int = 1
    # A hand-back is entered by the coordinator: who, and when the rater confirmed it as theirs.
    entered_by: str | None = None
    confirmed_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    version: int = 1  # optimistic concurrency: a save must name the version it edited
    supersedes_id: int | None = Field(default=None, foreign_key="review.id")
    created_at: datetime = _when()
    updated_at: datetime = _when()
    submitted_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    # How sure the rater is (low | moderate | high), if they say: recorded and exported with the
    # review, never part of agreement.
    confidence: str | None = None
    # An AMEND's corrections to the proposal: only the keys the rater changed among clause,
    # source, reasoning and disputed_span (a band in file form, or None for "no disputed span").
    # None when they changed none.
    corrections: dict | None = _json(default=None)


class StudySettings(SQLModel, table=True):
    __tablename__ = "study_settings"

    id: int = Field(default=1, primary_key=True)
    mode: str = "review"  # review | blind
    phase: str = "open"  # open | closed: of the current round
    round: int = 1  # the current round; a closed round is never reopened
    # The study's random id, named by every signed record; set with the root record.
    study_id: str | None = None
    # The registry's quorum and scope rule live in attestations/policy.yaml, not here, so that
    # its decisions can be redone from files alone.
    updated_at: datetime = _when()


class RoundBand(SQLModel, table=True):
    """One band re-reviewed in a later round and one rater who reviews it there:
    fixed when the coordinator opens the round, so who sees the panel never shifts under it."""

    __tablename__ = "round_band"
    __table_args__ = (UniqueConstraint("round", "vignette_id", "sub_action", "rater_id"),)

    id: int | None = Field(default=None, primary_key=True)
    round: int = Field(index=True)
    vignette_id: str = Field(foreign_key="vignette.id")
    sub_action: str
    rater_id: int = Field(foreign_key="user.id", index=True)
    opened_by: str
    opened_at: datetime = _when()


class AuditEvent(SQLModel, table=True):
    __tablename__ = "audit_event"

    seq: int = Field(primary_key=True)
    at: datetime = _when()
    actor: str | None = None
    kind: str
    payload: dict = _json(default_factory=dict)
    prev_hash: str
    hash: str = Field(unique=True)


class SignInThrottle(SQLModel, table=True):
    """Failed sign-ins per account (a keyed hash of the name typed) and per browser session."""

    __tablename__ = "sign_in_throttle"

    key: str = Field(primary_key=True)
    failures: int = 0
    last_failure_at: datetime | None = Field(default=None, sa_type=UTCDateTime)


class AppSecret(SQLModel, table=True):
    """Server-side secrets made on first use, such as the key of the audit log's name hashes."""

    __tablename__ = "app_secret"

    name: str = Field(primary_key=True)
    value: str


class ScreenDraft(SQLModel, table=True):
    """What a rater has on the review screen for one band, kept as they work (no audit event:
    it is scratch, not a review) so that a reload or a closed tab loses nothing."""

    __tablename__ = "screen_draft"
    __table_args__ = (UniqueConstraint("rater_id", "vignette_id", "sub_action"),)

    id: int | None = Field(default=None, primary_key=True)
    rater_id: int = Field(foreign_key="user.id", index=True)
    vignette_id: str = Field(foreign_key="vignette.id")
    sub_action: str
    entries: dict = _json(default_factory=dict)  # the screen's fields, as typed
    base_version: int = 0  # the version of the stored review these entries started from
    updated_at: datetime = _when()


class BandMark(SQLModel, table=True):
    """A rater's mark on one band: skipped for now, or flagged for the coordinator with a note."""

    __tablename__ = "band_mark"

    id: int | None = Field(default=None, primary_key=True)
    rater_id: int = Field(foreign_key="user.id", index=True)
    vignette_id: str = Field(foreign_key="vignette.id")
    sub_action: str
    kind: str  # skip | flag
    note: str | None = None
    created_at: datetime = _when()
    # A skip is cleared when the band is submitted; a flag when the coordinator has dealt with it.
    cleared_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    cleared_by: str | None = None


class Assignment(SQLModel, table=True):
    """The coordinator's change to who reviews what: a rater added to or removed
    from one band, every band of a vignette, or every band of a sub-action. The latest change
    covering a band decides it; a band no change covers goes by the rater's specialty scope."""

    __tablename__ = "assignment"

    id: int | None = Field(default=None, primary_key=True)
    rater_id: int = Field(foreign_key="user.id", index=True)
    # Both set: one band. One set: every band of that vignette, or of that sub-action.
    vignette_id: str | None = Field(default=None, foreign_key="vignette.id")
    sub_action: str | None = None
    assigned: bool  # True: added, False: removed
    made_by: str
    made_at: datetime = _when()


class KeptReport(SQLModel, table=True):
    """An agreement report as computed, kept under the SHA-256 of everything it was computed from
    (fma_bands/study/kept_reports.py): a page or command that finds it skips the bootstrap. Only
    ever a copy: delete every row and the same reports are computed again."""

    __tablename__ = "kept_report"

    key: str = Field(primary_key=True)
    body: str = Field(sa_type=Text)  # JSON (kept_reports.report_json)
    made_at: datetime = _when()


class LogRecord(SQLModel, table=True):
    """One signed record of the study's log (fma_bands/study/ledger.py): the store holds the
    whole chain, and attestations/ receives each record once it may be shown (an attestation
    signed while its round is open waits here until the round closes)."""

    __tablename__ = "log_record"

    sequence: int = Field(primary_key=True)
    digest: str = Field(unique=True)  # sha256:<hex> of the signed payload
    kind: str
    signer: str  # the pseudonym whose key signed it
    about: str | None = None  # the pseudonym an enrolment or activation concerns
    file_name: str = Field(unique=True)
    envelope: str = Field(sa_type=Text)
    sealed_round: int | None = None  # kept out of attestations/ until this round closes
    created_at: datetime = _when()


class ExemptionEntry(SQLModel, table=True):
    """One entry of the harness's confounded-pair registry as the coordinator loaded it
    (fma_bands/evidence/exemptions.py): an entry left out of a later load is retired, never
    deleted, so its reviews stay."""

    __tablename__ = "exemption_entry"
    __table_args__ = (UniqueConstraint("attribute", "sub_action"),)

    id: int | None = Field(default=None, primary_key=True)
    attribute: str
    sub_action: str
    direction: str
    requires_adjudication: bool = False
    age_gate: dict | None = _json(default=None)  # {"min": a, "max": b} or None
    rationale: str | None = Field(default=None, sa_type=Text)
    digest: str  # what a review binds (Exemption.digest)
    source: str  # the harness folder or YAML file it was loaded from
    present: bool = True
    loaded_at: datetime = _when()


class ExemptionReview(SQLModel, table=True):
    """A rater's review of one exemption entry: never changed, a later one supersedes it."""

    __tablename__ = "exemption_review"

    id: int | None = Field(default=None, primary_key=True)
    attribute: str
    sub_action: str
    rater_id: int = Field(foreign_key="user.id", index=True)
    round: int = 1
    revision: int = 1
    verdict: str  # CONFIRM | REJECT | AMEND
    direction: str | None = None  # the amended direction, with AMEND only
    reason: str = Field(sa_type=Text)
    entry_digest: str  # the entry as it was when reviewed
    created_at: datetime = _when()


class BrowserSession(SQLModel, table=True):
    """A signed-in browser: the SHA-256 of the random token its cookie holds (never the token),
    for whom, and when it was last active; a reload within the idle time finds it again. Ended
    by signing out or by the idle time, never reused."""

    __tablename__ = "browser_session"

    token_hash: str = Field(primary_key=True)
    user_id: int = Field(foreign_key="user.id", index=True)
    created_at: datetime = _when()
    last_seen_at: datetime = _when()
    ended_at: datetime | None = Field(default=None, sa_type=UTCDateTime)


class QueryMessage(SQLModel, table=True):
    """One message of a query: a thread between the coordinator and one rater about one band,
    never shown to any other rater. A message with `closes` set ends the thread."""

    __tablename__ = "query_message"

    id: int | None = Field(default=None, primary_key=True)
    vignette_id: str = Field(foreign_key="vignette.id")
    sub_action: str
    rater_id: int = Field(foreign_key="user.id", index=True)  # whose thread it is
    author: str  # the pseudonym of whoever wrote it: that rater or the coordinator
    body: str = Field(sa_type=Text)
    closes: bool = False
    created_at: datetime = _when()


class RoundDue(SQLModel, table=True):
    """The date by which the coordinator asks raters to finish a round."""

    __tablename__ = "round_due"

    round: int = Field(primary_key=True)
    due_on: date
    set_by: str
    set_at: datetime = _when()
