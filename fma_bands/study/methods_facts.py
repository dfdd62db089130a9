"""What a study's methods report states beside its alphas (GRRAS): the raters and their
specialties, the vignettes and bands, the assignment and quorum, the rounds and the software, read
from the store; and the report itself, from the same Report the Agreement page shows."""

import platform
from collections import Counter
from importlib.metadata import PackageNotFoundError, version

from sqlalchemy import distinct, func
from sqlmodel import Session, col, select

from fma_bands.agreement import DEFAULT_B, DEFAULT_SEED
from fma_bands.agreement.methods import FORMATS, RaterFacts, StudyFacts, render
from fma_bands.core.errors import AccessDenied, FmaBandsError
from fma_bands.core.people import UserPublic
from fma_bands.core.vignettes import AMBIGUITIES, DOMAINS, Library
from fma_bands.evidence.policy import Policy
from fma_bands.store.models import Assignment, Review, RoundBand
from fma_bands.study.assignment import assignment_table
from fma_bands.study.governance import policy_in_force
from fma_bands.study.ratings import study_report
from fma_bands.study.state import study
from fma_bands.study.users import list_users

# The software that computes the figures; Python's own version is added to these.
PACKAGES = ("fma-bands", "krippendorff", "numpy")
NOT_STATED = "not stated"


def software_versions() -> dict[str, str]:
    found = {}
    for name in PACKAGES:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = "(version unknown: not installed as a package)"
    found["Python"] = platform.python_version()
    return found


def study_facts(
    session: Session, library: Library, *, viewer: UserPublic, round: int = 1
) -> StudyFacts:
    """The facts of the study for the methods report of round `round` (the coordinator's only:
    they name every rater and the assignment)."""
    _check_may_report(viewer)
    current = study(session)
    if not 1 <= round <= current.round:
        raise FmaBandsError(
            f"round {round} has not been held: the study is in round {current.round}",
            field="round",
        )
    raters = list_users(session, role="rater")
    submitting = session.exec(
        select(func.count(distinct(col(Review.rater_id)))).where(
            Review.round == round, Review.status == "submitted"
        )
    ).one()
    strata = Counter(v.ambiguity or NOT_STATED for v in library)
    domains = Counter(v.domain for v in library)
    names = [p.sub_action for v in library for p in v.proposals]
    policy = policy_in_force(session)
    assigned = [len(raters) for raters in assignment_table(session, library).values()]
    changes = session.exec(select(func.count()).select_from(Assignment)).one()
    second = None
    if current.round >= 2:
        bands = select(RoundBand.vignette_id, RoundBand.sub_action).where(RoundBand.round == 2)
        second = len(set(session.exec(bands)))
    return StudyFacts(
        round=round,
        rounds_held=current.round,
        phase=current.phase,
        raters=tuple(
            RaterFacts(r.pseudonym, r.specialty, r.years_post_registration) for r in raters
        ),
        n_submitting=submitting,
        n_vignettes=len(library),
        strata={s: strata[s] for s in (*AMBIGUITIES, NOT_STATED) if strata[s]},
        domains={d: domains[d] for d in DOMAINS if domains[d]},
        n_bands=len(names),
        n_sub_actions=len(set(names)),
        quorum=(policy or Policy()).quorum,
        scope_rule=(policy or Policy()).scope,
        policy_signed=policy is not None,
        assignment_changes=changes,
        raters_per_band=(min(assigned), max(assigned)) if assigned else None,
        round_two_bands=second,
        versions=software_versions(),
        study_id=current.study_id,
    )


def _check_may_report(viewer: UserPublic) -> None:
    # The report names every rater and how bands were assigned, and while a round is open its
    # figures: the coordinator's alone, as the agreement command is.
    if not viewer.is_coordinator:
        raise AccessDenied("only the study coordinator can make the methods report")


def study_methods_report(
    session: Session,
    library: Library,
    *,
    viewer: UserPublic,
    fmt: str = "md",
    round: int = 1,
    bootstrap: int = DEFAULT_B,
    seed: int = DEFAULT_SEED,
    fresh: bool = False,
) -> str:
    """The methods report of round `round` as md, csv or tex: the figures of the Report the
    Agreement page and `fma-bands agreement` show (the kept one, with the same B and seed)."""
    if fmt not in FORMATS:
        raise FmaBandsError(
            f"unknown report format {fmt!r}: use one of {', '.join(FORMATS)}", field="format"
        )
    facts = study_facts(session, library, viewer=viewer, round=round)
    report = study_report(
        session, library, viewer=viewer, bootstrap=bootstrap, seed=seed, round=round, fresh=fresh
    )
    return render(report, facts, fmt)
