"""What the study's root keys sign besides the roster (docs/trust.md): the registry policy, and a
steward's approvals. With a steward enrolled, the root's threshold is 2: a change to the roster or
the policy signed by the coordinator takes effect once the steward approves it too.
"""

from pathlib import Path
from typing import Any

from sqlmodel import Session, col, select

from fma_bands.core.errors import FmaBandsError
from fma_bands.core.people import UserPublic
from fma_bands.evidence.policy import Policy, check_policy
from fma_bands.store.models import LogRecord
from fma_bands.study import audit, ledger
from fma_bands.study.enrolment import root_signer
from fma_bands.study.state import authorize
from fma_bands.study.users import get_user


def policy_in_force(session: Session) -> Policy | None:
    """The policy of the newest policy record that has taken effect in the store's log."""
    return ledger.store_evidence(session).policy


def set_policy(
    session: Session,
    folder: Path | None,
    *,
    actor: UserPublic,
    passphrase: str,
    quorum: Any,
    scope: Any,
    chair: str | None = None,
) -> Policy:
    """Sign a policy record with the actor's root key (audited): the registry reads the newest
    one in force from the log, and attestations/policy.yaml is its readable copy. A `chair`
    must be an enrolled rater whose key the roster holds (the chair's decision is signed with
    it); without one the policy names no chair."""
    authorize(session, actor, "set_policy")
    policy = check_policy(quorum, scope, chair=chair)
    if chair is not None:
        _require_enrolled_rater(session, chair)
    root = root_signer(session, actor, passphrase)
    before = policy_in_force(session)
    record = ledger.append(
        session,
        "policy",
        signer=root,
        subject=[{"name": "policy", "digest": {"sha256": _digest_of(policy)}}],
        body={"policy": policy.as_dict()},
        folder=folder,
    )
    audit.record(
        session,
        kind="policy_set",
        actor=actor.pseudonym,
        payload={
            "from": before.as_dict() if before else None,
            "to": policy.as_dict(),
            "record": record.file_name,
        },
    )
    return policy


def _require_enrolled_rater(session: Session, name: str) -> None:
    """Refuse, by name, a chair who is not a rater with a key in the study's roster."""
    user = get_user(session, name)
    if user is None or user.role != "rater":
        raise FmaBandsError(
            f"{name} is not an enrolled rater: only a rater can chair", field="chair"
        )
    adjudicator = ledger.store_evidence(session).adjudicators.get(name)
    if adjudicator is None or adjudicator.role != "rater" or not adjudicator.keys:
        raise FmaBandsError(
            f"{name} has not activated their account yet: only a rater with a key can chair",
            field="chair",
        )


def _digest_of(policy: Policy) -> str:
    import hashlib

    from fma_bands.core.canonical import canonical_json

    return hashlib.sha256(canonical_json(policy.as_dict())).hexdigest()


def awaiting(session: Session, pseudonym: str) -> list[LogRecord]:
    """The records awaiting the root's threshold that `pseudonym`'s root key has not signed."""
    evidence = ledger.store_evidence(session)
    keyids = {k for k, holder in evidence.root_keys.items() if holder == pseudonym}
    digests = [d for d, (_, signers) in evidence.waiting.items() if not signers & keyids]
    if not digests:
        return []
    query = select(LogRecord).where(col(LogRecord.digest).in_(digests))
    return list(session.exec(query.order_by(col(LogRecord.sequence))))


def approve(
    session: Session, *, actor: UserPublic, passphrase: str, folder: Path | None
) -> list[LogRecord]:
    """The steward's (or any root key holder's) signature on every record awaiting theirs: one
    approval record each, appended to the log (audited)."""
    authorize(session, actor, "approve")
    root = root_signer(session, actor, passphrase)
    waiting = awaiting(session, actor.pseudonym)
    if not waiting:
        raise FmaBandsError("no change to the roster or the policy awaits your signature")
    made = []
    for record in waiting:
        made.append(
            ledger.append(
                session,
                "approval",
                signer=root,
                subject=[{"name": record.file_name, "digest": {"sha256": record.digest[7:]}}],
                body={"approves": record.digest},
                folder=folder,
            )
        )
    audit.record(
        session,
        kind="root_changes_approved",
        actor=actor.pseudonym,
        payload={"approved": [r.file_name for r in waiting]},
    )
    return made
