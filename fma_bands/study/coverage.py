"""Each band against the quorum, for the coordinator (docs/design.md, Who reviews what): before a
round, the bands whose assigned raters cannot reach the quorum or whose scope no assigned rater
covers, with their assignment; during it, how many current reviews each band has against the quorum.

Counts only, never contents, and the coordinator's alone. A handful of queries whatever the
study's size.
"""

from dataclasses import dataclass

from sqlalchemy import select
from sqlmodel import Session, col

from fma_bands.core.actions import sub_action
from fma_bands.core.people import UserPublic
from fma_bands.core.vignettes import Library
from fma_bands.evidence.policy import Policy
from fma_bands.store.models import Review
from fma_bands.study.assignment import Assignments, load, study_bands
from fma_bands.study.governance import policy_in_force
from fma_bands.study.state import authorize
from fma_bands.study.store_state import per_state

QUORUM = "cannot reach quorum"
SCOPE = "scope not covered"


def study_quorum(session: Session) -> int | None:
    """The quorum of the policy in force; None while no policy record has taken effect."""
    policy = policy_in_force(session)
    return None if policy is None else policy.quorum


@dataclass(frozen=True)
class BandCoverage:
    vignette_id: str
    sub_action: str
    raters: tuple[str, ...]  # assigned, by pseudonym
    waiting: tuple[str, ...]  # of those, not yet activated: they cannot sign yet
    in_scope: int | None  # activated assigned raters whose specialty covers the scope
    quorum: int | None  # None: no policy yet
    problems: tuple[str, ...]
    scope_required: bool = False  # the policy counts only raters in scope (Policy.counts)

    @property
    def able(self) -> int:
        return len(self.raters) - len(self.waiting)

    def as_dict(self) -> dict[str, object]:
        return {
            "vignette_id": self.vignette_id,
            "sub_action": self.sub_action,
            "raters": list(self.raters),
            "awaiting_activation": list(self.waiting),
            "activated": self.able,
            "in_scope": self.in_scope,
            "quorum": self.quorum,
            "problems": list(self.problems),
            "scope_required": self.scope_required,
        }


def coverage(
    session: Session, library: Library, *, viewer: UserPublic, quorum: int | None
) -> list[BandCoverage]:
    """Every band with its assignment and what keeps it from being adjudicated as assigned."""
    authorize(session, viewer, "assign")
    return band_coverage(load(session), library, quorum, policy_in_force(session) or Policy())


def band_coverage(
    found: Assignments, library: Library, quorum: int | None, policy: Policy | None = None
) -> list[BandCoverage]:
    """Every band's assignment against the quorum: too few activated raters, or too few in
    scope (none, or fewer than the quorum where the policy requires the scope)."""
    rows = []
    required = policy is not None and policy.scope == "require"
    for vid, name in study_bands(library):
        assigned = found.raters_of(vid, name)
        able = [r for r in assigned if r.active]
        scoped = sum(bool(r.in_scope(name)) for r in able) if sub_action(name).scope else None
        problems = []
        # Without a policy the quorum is unknown, but a band nobody can sign reaches none.
        if len(able) < (quorum or 1):
            problems.append(QUORUM)
        if scoped is not None and scoped < ((quorum or 1) if required else 1):
            problems.append(SCOPE)
        rows.append(
            BandCoverage(
                vid,
                name,
                tuple(r.pseudonym for r in assigned),
                tuple(r.pseudonym for r in assigned if not r.active),
                scoped,
                quorum,
                tuple(problems),
                required,
            )
        )
    return rows


def problem_bands(rows: list[BandCoverage]) -> list[BandCoverage]:
    return [r for r in rows if r.problems]


def explain(row: BandCoverage) -> str:
    """Why a band is flagged, in a sentence."""
    parts = []
    if QUORUM in row.problems:
        need = f"the quorum of {row.quorum}" if row.quorum else "any quorum"
        parts.append(f"{row.able} activated rater(s) assigned, too few for {need}")
    if SCOPE in row.problems and row.in_scope:
        need = f"the quorum of {row.quorum}" if row.quorum else "any quorum"
        parts.append(
            f"{row.in_scope} activated assigned rater(s) whose specialty covers "
            f"{sub_action(row.sub_action).label}, too few for {need}: the policy "
            "counts no one outside the scope"
        )
    elif SCOPE in row.problems:
        parts.append(
            f"no activated assigned rater's specialty covers {sub_action(row.sub_action).label}"
        )
    if row.waiting:
        parts.append(f"awaiting activation: {', '.join(row.waiting)}")
    return "; ".join(parts)


# During the round -------------------------------------------------------------------------


@dataclass(frozen=True)
class BandProgress:
    vignette_id: str
    sub_action: str
    assigned: int
    submitted: int  # raters' latest submitted reviews that are current (not stale)
    declined: int  # of those, DECLINE: they count for nothing
    quorum: int | None
    to_come: int  # assigned raters with no current review of it yet, who would count
    # Of the reviews with a band, those the policy does not count: their rater's specialty is
    # outside the scope it requires (Policy.counts).
    out_of_scope: int = 0

    @property
    def counted(self) -> int:
        return self.submitted - self.declined - self.out_of_scope

    @property
    def needed(self) -> int | None:
        return None if self.quorum is None else max(0, self.quorum - self.counted)

    @property
    def status(self) -> str:
        if self.quorum is None:
            return "no policy: quorum unknown"
        aside = (
            f" ({self.out_of_scope} outside the scope the policy requires, not counted)"
            if self.out_of_scope
            else ""
        )
        if self.needed == 0:
            return "quorum reached"
        if self.to_come < (self.needed or 0):
            return f"cannot reach quorum: needs {self.needed} more, {self.to_come} to come{aside}"
        return f"needs {self.needed} more{aside}"

    def as_dict(self) -> dict[str, object]:
        return {
            "vignette_id": self.vignette_id,
            "sub_action": self.sub_action,
            "assigned": self.assigned,
            "submitted": self.submitted,
            "declined": self.declined,
            "out_of_scope": self.out_of_scope,
            "quorum": self.quorum,
            "needed": self.needed,
            "status": self.status,
        }


def _latest_submitted(session: Session) -> dict[tuple[str, str, int], tuple]:
    """Each rater's latest submitted revision of each band: (revision, verdict, context, band
    and proposal digests, mode) by (vignette, sub-action, rater id)."""
    columns = ("vignette_id", "sub_action", "rater_id", "revision", "verdict", "context_digest")
    digests = ("band_digest", "proposal_digest", "mode")
    query = select(*(col(getattr(Review, c)) for c in (*columns, *digests))).where(
        col(Review.status) == "submitted"
    )
    # Core rows, not the ORM's: building an object per review costs more than the whole table.
    latest: dict[tuple[str, str, int], tuple] = {}
    for vid, name, rater, revision, *rest in session.connection().execute(query):
        key = (vid, name, rater)
        if key not in latest or revision > latest[key][0]:
            latest[key] = (revision, *rest)
    return latest


def band_progress(
    session: Session, library: Library, *, viewer: UserPublic, quorum: int | None
) -> list[BandProgress]:
    """Every band's current reviews against the quorum, from what is recorded (reviews and
    assignments), read once per state of the store (store_state)."""
    authorize(session, viewer, "see_progress")
    policy = policy_in_force(session) or Policy()
    return per_state(
        session,
        ("band progress", quorum, policy, library.digests),
        lambda: _band_progress(session, library, quorum, policy),
    )


def _band_progress(
    session: Session, library: Library, quorum: int | None, policy: Policy
) -> list[BandProgress]:
    found = load(session)
    specialty = {r.id: r.specialty for r in found.raters}
    latest = _latest_submitted(session)
    # What a current review was made of (the digests of Library.is_current), once per band.
    now = {
        (v.id, p.sub_action): (v.context_digest_for(p.sub_action), p.band_digest, p.proposal_digest)
        for v in library
        for p in v.proposals
    }
    submitted: dict[tuple[str, str], dict[int, str | None]] = {}
    for (vid, name, rater), (_, verdict, context, band, proposal, mode) in latest.items():
        made_of = now.get((vid, name))
        if made_of is None or (context, band) != made_of[:2]:
            continue
        if mode == "blind" or proposal == made_of[2]:
            submitted.setdefault((vid, name), {})[rater] = verdict
    rows = []
    for band in study_bands(library):
        assigned = found.raters_of(*band)
        verdicts = submitted.get(band, {})
        declined = sum(v == "DECLINE" for v in verdicts.values())
        counts = {r: policy.counts(band[1], specialty.get(r)) for r in verdicts}
        aside = sum(not counts[r] for r, v in verdicts.items() if v != "DECLINE")
        to_come = sum(
            r.id not in verdicts and policy.counts(band[1], r.specialty) for r in assigned
        )
        rows.append(
            BandProgress(*band, len(assigned), len(verdicts), declined, quorum, to_come, aside)
        )
    return rows
