"""Signed attestations (DESIGN 2.6, 4): a rater's reviews as an in-toto statement in a DSSE
envelope, and revocations. Only the rater can sign: the key is sealed under the passphrase the
rater chose at activation.

What a signature covers is decided here: the reviews the rater submitted in the app, hand-back
reviews only once the rater confirms them, and on signing again exactly what was signed before
plus the change, never an unconfirmed import.
"""

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlmodel import Session, col, select

from fma_bands import audit
from fma_bands.actions import sub_action
from fma_bands.bands import describe, parse_band, to_file
from fma_bands.canonical import canonical_json
from fma_bands.dsse import IN_TOTO_PAYLOAD_TYPE, STATEMENT_TYPE, sign_envelope
from fma_bands.envelopes import (
    ADJUDICATION_TYPE,
    ENVELOPE_SUFFIX,
    REVOCATION_TYPE,
    STAMP,
    evidence_of,
    latest_signed_reviews,
    read_evidence,
    record_links,
    subject_name,
)
from fma_bands.errors import FmaBandsError, WrongPassphrase
from fma_bands.files import json_text
from fma_bands.labels import case_label
from fma_bands.protocol import DECLARATIONS, MEANINGS, STATEMENT_TEXT
from fma_bands.records import ensure_record, public_record, stamp
from fma_bands.reviews import ReviewData
from fma_bands.store.db import pending_files, write_on_commit
from fma_bands.store.models import Review, User, utcnow
from fma_bands.study import authorize, study
from fma_bands.submissions import attested_band, my_latest_submitted
from fma_bands.users import UserPublic, unlock_signing_key
from fma_bands.vignettes import Library

Band = tuple[str, str]
NOT_SIGNED = "that passphrase is not right; nothing was signed"


@dataclass
class SigningPlan:
    """What a signature would cover, shown to the rater before they sign."""

    reviews: list[dict[str, Any]] = field(default_factory=list)  # what the statement will hold
    carried: list[str] = field(default_factory=list)  # bands signed before, signed again as then
    # Hand-backs the rater has not confirmed yet (covered only when confirmed with this signature).
    imported: list[dict[str, Any]] = field(default_factory=list)
    # (vignette id, sub-action, why) of each band the signature does not cover
    skipped: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def fresh(self) -> list[dict[str, Any]]:
        return [
            r
            for r in self.reviews
            if subject_name(r["vignette_id"], r["sub_action"]) not in self.carried
        ]


def shown_time(stamp: str) -> str:
    """'2026-11-29T19:30:07.378140Z' as '29 Nov 2026, 19:30:07 UTC'."""
    return datetime.strptime(stamp, STAMP).strftime("%d %b %Y, %H:%M:%S UTC")


def manifestation(folder: Path, path: Path) -> dict[str, list[str]]:
    """The signature manifestation of one signed attestation, as a one-row table."""
    [checked] = read_evidence(folder, [path]).envelopes
    signed = checked.predicate["signature_manifestation"]
    return {
        "Printed name": [signed["printed_name"]],
        "Signed at": [shown_time(signed["signed_at"])],
        "Meaning": [signed["meaning"]],
        "File": [Path(path).name],
    }


def on_file(folder: Path, pseudonym: str) -> list[str]:
    """One line for each valid attestation of the rater in the folder."""
    return [
        f"{c.path.name}: signed {shown_time(c.signed_at)} "
        f"({c.predicate['signature_manifestation']['meaning']}), "
        f"{len(c.predicate['reviews'])} bands"
        for c in evidence_of(folder, pseudonym).envelopes
        if c.pseudonym == pseudonym and not c.error and c.kind == "adjudication"
    ]


def covered_rows(signing: SigningPlan, numbers: Mapping[str, int]) -> list[dict[str, Any]]:
    """The reviews a signature covers, as the Sign attestation page lists them: by case label,
    never by id (an id can say which stratum a case is from)."""
    rows = []
    carried = set(signing.carried)
    # Raters sign the same few bands again and again: each distinct one is read and put in
    # words once (keyed by its JSON text, which tells `true` from `1`).
    words: dict[tuple[str, str], str] = {}
    for r in signing.reviews:
        label = subject_name(r["vignette_id"], r["sub_action"])
        origin = "app" if r.get("origin", "app") == "app" else "paper hand-back, confirmed by you"
        attested = r.get("attested_band")
        if attested is not None:
            key = (r["sub_action"], json.dumps(attested, sort_keys=True))
            if key not in words:
                words[key] = describe(parse_band(r["sub_action"], attested))
        rows.append(
            {
                "case": case_label(numbers, r["vignette_id"]),
                "sub-action": sub_action(r["sub_action"]).label,
                "verdict": r["verdict"],
                "band attested": "none (declined)" if attested is None else words[key],
                "revision": r.get("revision"),
                "origin": origin,
                "as signed before": label in carried,
            }
        )
    return rows


def imported_rows(signing: SigningPlan, numbers: Mapping[str, int]) -> list[dict[str, Any]]:
    """Hand-back reviews awaiting the rater's confirmation, each saying who entered it, when."""
    return [
        {
            "case": case_label(numbers, r["vignette_id"]),
            "sub-action": sub_action(r["sub_action"]).label,
            "verdict": r["verdict"],
            "band": "" if r["band"] is None else describe(parse_band(r["sub_action"], r["band"])),
            "entered": f"entered from your paper hand-back by {r['entered_by']} on "
            f"{r['entered_at']:%d %b %Y}",
            "reason": r["reason"],
        }
        for r in signing.imported
    ]


def _review_entry(review: ReviewData, library: Library) -> dict[str, Any]:
    vignette = library.vignettes[review.vignette_id]
    proposal = vignette.proposal(review.sub_action)
    assert proposal is not None
    band = attested_band(review, library)
    entry: dict[str, Any] = {
        "vignette_id": review.vignette_id,
        "sub_action": review.sub_action,
        "round": review.round,
        "revision": review.revision,
        "origin": "app" if review.origin == "browser" else "handback",
        "mode": review.mode,
        "verdict": review.verdict,
        "proposed_band": to_file(proposal.acceptable) if review.mode == "review" else None,
        "band_digest": review.band_digest,
        "proposal_digest": review.proposal_digest,
        "context_digest": review.context_digest,
        "attested_band": to_file(band) if band is not None else None,
        "answers": review.answers,
        "reason": review.reason,
    }
    if review.origin == "handback":
        entry["entered_by"] = review.entered_by or "(not recorded)"
        entry["entered_at"] = stamp(review.submitted_at or review.updated_at)
        entry["confirmed_by_rater"] = True
    return entry


def imported_entry(review: ReviewData) -> dict[str, Any]:
    """A hand-back review as the Sign attestation page lists it for confirmation."""
    return {
        "vignette_id": review.vignette_id,
        "sub_action": review.sub_action,
        "verdict": review.verdict,
        "band": review.band,
        "reason": review.reason,
        "entered_by": review.entered_by or "the coordinator (name not recorded)",
        "entered_at": review.submitted_at or review.updated_at,
        "revision": review.revision,
    }


def plan(
    session: Session,
    library: Library,
    rater: UserPublic,
    folder: Path,
    *,
    confirm_imported: bool = False,
    only: Collection[Band] | None = None,
) -> SigningPlan:
    """What a signature by `rater` would cover now.

    For each band: the latest submitted review if the rater may sign it (made in the app, or a
    hand-back they confirmed before or confirm now); otherwise the review exactly as they last
    signed it, if they have. With `only`, just those bands are taken afresh and every other band
    is what was signed before: signing again after a change covers that and the change."""
    result = SigningPlan()
    latest = my_latest_submitted(session, library, rater)
    before = latest_signed_reviews(evidence_of(folder, rater.pseudonym), rater.pseudonym)
    for vignette in library:
        for proposal in vignette.proposals:
            band = (vignette.id, proposal.sub_action)
            label = subject_name(*band)
            review = latest.get(band)
            entry = None
            if review is not None and (only is None or band in only):
                if review.stale:
                    result.skipped.append((*band, "the vignette changed after you submitted"))
                elif review.origin == "handback" and not review.confirmed_at:
                    result.imported.append(imported_entry(review))
                    if confirm_imported:
                        entry = _review_entry(review, library)
                else:
                    entry = _review_entry(review, library)
            if entry is None and band in before:
                entry = before[band]
                result.carried.append(label)
            if entry is not None:
                result.reviews.append(entry)
    return result


def _check_request(meaning: str, declarations: list[str]) -> None:
    missing = [d for d in DECLARATIONS if d not in declarations]
    unknown = [d for d in declarations if d not in DECLARATIONS]
    if unknown:
        raise FmaBandsError(f"unknown declaration(s): {', '.join(unknown)}")
    if missing:
        raise FmaBandsError(f"every declaration is required; missing: {', '.join(missing)}")
    if meaning not in MEANINGS:
        raise FmaBandsError(f"meaning must be one of {', '.join(MEANINGS)}")


def attest(
    session: Session,
    library: Library,
    *,
    rater: UserPublic,
    passphrase: str,
    meaning: str,
    declarations: list[str],
    folder: Path,
    confirm_imported: bool = False,
    only: Collection[Band] | None = None,
    now: datetime | None = None,
) -> Path:
    """Sign what `plan` says into one DSSE envelope (audited). The passphrase is the rater's:
    it unseals the key they made at activation, and nothing else can."""
    authorize(session, rater, "sign")
    _check_request(meaning, declarations)
    user = session.get(User, rater.id)
    assert user is not None, "a signed-in rater is in the store"
    if not user.identity_commitment:
        raise FmaBandsError(
            "your private identity is not recorded yet: the coordinator records it "
            "(fma-bands identity set) before you can sign"
        )
    signing = plan(session, library, rater, folder, confirm_imported=confirm_imported, only=only)
    if not signing.fresh:
        waiting = (
            f" ({len(signing.imported)} imported from your paper hand-back wait for you to "
            "confirm them)"
            if signing.imported and not confirm_imported
            else ""
        )
        raise FmaBandsError(f"you have no current submitted review to sign{waiting}")
    try:
        key, private_key = unlock_signing_key(session, rater.id, passphrase)
    except WrongPassphrase:
        raise WrongPassphrase(NOT_SIGNED) from None
    when = now or utcnow()
    # The public record the statement names is the one the rater signs now, with this key.
    ensure_record(session, user=user, key=key, private_key=private_key, folder=folder, now=when)
    seq, head_hash = audit.head(session) or (0, audit.GENESIS)
    subjects = [
        {
            "name": subject_name(r["vignette_id"], r["sub_action"]),
            "digest": {"sha256": str(r.get("band_digest") or "").removeprefix("sha256:")},
        }
        for r in signing.reviews
    ]
    statement = {
        "_type": STATEMENT_TYPE,
        "subject": subjects,
        "predicateType": ADJUDICATION_TYPE,
        "predicate": {
            "adjudicator": public_record(user, key),
            "identity_commitment": user.identity_commitment,
            "signature_manifestation": {
                "printed_name": user.pseudonym,
                "signed_at": stamp(when),
                "meaning": meaning,
            },
            "declarations": {
                "statement": STATEMENT_TEXT,
                "made": {d: DECLARATIONS[d] for d in DECLARATIONS},
            },
            "study_mode": study(session).mode,
            "reviews": signing.reviews,
            "records": record_links(folder, pending_files(session)),
            "audit_head": {"seq": seq, "hash": head_hash},
        },
    }
    envelope = sign_envelope(
        canonical_json(statement), IN_TOTO_PAYLOAD_TYPE, private_key, key.keyid
    )
    compact = stamp(when).replace("-", "").replace(":", "").replace(".", "")
    path = Path(folder) / f"{user.pseudonym}-{compact}{ENVELOPE_SUFFIX}"
    # On disk exactly when the audit event below is committed (store/db.py write_on_commit).
    write_on_commit(session, path, json_text(envelope))
    confirmed = _confirm_imports(session, rater, signing, when)
    audit.record(
        session,
        kind="attestation_signed",
        actor=user.pseudonym,
        payload={
            "file": path.name,
            "bands": [s["name"] for s in subjects],
            "signed_as_before": signing.carried,
            "confirmed_imports": confirmed,
            "meaning": meaning,
        },
    )
    return path


def _confirm_imports(
    session: Session, rater: UserPublic, signing: SigningPlan, when: datetime
) -> list[str]:
    """Mark the hand-back reviews this signature covers as confirmed by the rater."""
    wanted = {
        (r["vignette_id"], r["sub_action"], r["revision"])
        for r in signing.fresh
        if r.get("origin") == "handback"
    }
    if not wanted:
        return []
    query = select(Review).where(
        Review.rater_id == rater.id,
        Review.origin == "handback",
        col(Review.confirmed_at).is_(None),
    )
    done = []
    for row in session.exec(query):
        if (row.vignette_id, row.sub_action, row.revision) in wanted:
            row.confirmed_at = when
            done.append(subject_name(row.vignette_id, row.sub_action))
    return sorted(done)


def resign(
    session: Session,
    library: Library,
    *,
    rater: UserPublic,
    passphrase: str,
    bands: Collection[Band],
    folder: Path,
) -> Path:
    """Sign again after the rater changed these bands in the app: what they signed before, with
    the change, under the declarations every attestation makes. No import is covered."""
    return attest(
        session,
        library,
        rater=rater,
        passphrase=passphrase,
        meaning="adjudication",
        declarations=list(DECLARATIONS),
        folder=folder,
        only=bands,
    )


def revoke(
    session: Session,
    *,
    rater: UserPublic,
    passphrase: str,
    attestation: Path,
    reason: str,
    folder: Path,
) -> Path:
    """A signed revocation of one of the rater's own attestations (audited)."""
    authorize(session, rater, "sign")
    if not reason.strip():
        raise FmaBandsError("say why the attestation is revoked")
    [checked] = read_evidence(folder, [Path(attestation)]).envelopes
    if checked.error or checked.kind != "adjudication" or checked.pseudonym != rater.pseudonym:
        raise FmaBandsError(f"{Path(attestation).name} is not a valid attestation of yours")
    try:
        key, private_key = unlock_signing_key(session, rater.id, passphrase)
    except WrongPassphrase:
        raise WrongPassphrase(NOT_SIGNED) from None
    when = utcnow()
    statement = {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": Path(attestation).name, "digest": {"sha256": checked.payload_sha256}}],
        "predicateType": REVOCATION_TYPE,
        "predicate": {
            "adjudicator": {"pseudonym": rater.pseudonym, "keyid": key.keyid},
            "revokes": Path(attestation).name,
            "reason": reason.strip(),
            "revoked_at": stamp(when),
            "records": record_links(folder, pending_files(session)),
        },
    }
    envelope = sign_envelope(
        canonical_json(statement), IN_TOTO_PAYLOAD_TYPE, private_key, key.keyid
    )
    compact = stamp(when).replace("-", "").replace(":", "").replace(".", "")
    path = Path(folder) / f"{rater.pseudonym}-{compact}-revocation{ENVELOPE_SUFFIX}"
    write_on_commit(session, path, json_text(envelope))
    audit.record(
        session,
        kind="attestation_revoked",
        actor=rater.pseudonym,
        payload={"file": path.name, "revokes": Path(attestation).name},
    )
    return path
