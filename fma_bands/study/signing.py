"""Signed attestations (docs/design.md, Identity, keys and attestation; Attestations): a rater's
reviews as an in-toto statement in a DSSE envelope, and revocations. Only the rater can sign: the
key is sealed under the passphrase the rater chose at activation. What a signature covers is
signing_plan's to decide.
"""

import json
from collections.abc import Collection
from datetime import datetime
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sqlmodel import Session, col, select

from fma_bands.core.canonical import canonical_json
from fma_bands.core.errors import FmaBandsError, WrongPassphrase
from fma_bands.core.people import UserPublic
from fma_bands.core.protocol import DECLARATIONS, MEANINGS
from fma_bands.core.vignettes import Library
from fma_bands.evidence.envelope import STAMP, envelope_from_bytes, stamp
from fma_bands.evidence.log import Adjudicator, latest_signed_reviews, subject_name
from fma_bands.store.models import LogRecord, Review, SigningKey, User, utcnow
from fma_bands.study import audit, ledger
from fma_bands.study.exemptions import ExemptionSigning, exemption_signing
from fma_bands.study.ledger import Receipt, Signer
from fma_bands.study.rater_keys import public_record
from fma_bands.study.signing_plan import Band, SigningPlan, plan
from fma_bands.study.state import StudyPublic, authorize, lock_study, study
from fma_bands.study.users import unlock_signing_key

NOT_SIGNED = "that passphrase is not right; nothing was signed"
# An attestation of a whole large study is split into records of at most this many bands and
# this many bytes of reviews, each well inside what every reader of the folder accepts
# (MAX_ENVELOPE_BYTES: the payload grows by a third in base64). The texts of one review are
# bounded (study/reviews.py), so one review alone always fits.
BANDS_PER_RECORD = 200
REVIEW_BYTES_PER_RECORD = 1024 * 1024


def shown_time(stamp: str) -> str:
    """'2026-11-29T19:30:07.378140Z' as '29 Nov 2026, 19:30:07 UTC'."""
    return datetime.strptime(stamp, STAMP).strftime("%d %b %Y, %H:%M:%S UTC")


def _statement_of(row: LogRecord) -> dict[str, Any]:
    checked = envelope_from_bytes(Path(row.file_name), row.envelope.encode())
    assert checked.claimed is not None
    return checked.claimed


def manifestation(session: Session, receipt: Receipt) -> dict[str, str]:
    """The signature manifestation of what was just signed (printed name, time, meaning) with
    the receipt: the key's fingerprint, the records' places in the log and the head after
    them."""
    first = session.get(LogRecord, receipt.records[0][0])
    assert first is not None
    signed = _statement_of(first)["predicate"]["signature_manifestation"]
    sequence, digest = receipt.head
    return {
        "Printed name": signed["printed_name"],
        "Signed at": shown_time(signed["signed_at"]),
        "Meaning": signed["meaning"],
        "Key fingerprint": receipt.keyid,
        "Place in the study's log": ", ".join(str(r[0]) for r in receipt.records),
        "Head after signing": f"{sequence}:{digest}",
    }


def on_file(session: Session, pseudonym: str) -> list[str]:
    """One line for each of the rater's unrevoked attestation records: when it was signed, what
    it covers, where it is, and its record and file (what an editor or a revocation names)."""
    current = study(session)
    lines = []
    for row in _records_on_file(session, pseudonym):
        predicate = _statement_of(row)["predicate"]
        where = (
            "in the attestations folder"
            if _sealed_until(row, current) is None
            else f"sealed until round {row.sealed_round} closes"
        )
        # The file last: what a person reads first is when they signed and what it covers.
        n = len(predicate["reviews"])
        lines.append(
            f"Signed {shown_time(predicate['signed_at'])} "
            f"({predicate['signature_manifestation']['meaning']}), "
            f"{n} band{'s' if n != 1 else ''}, {where} (record {row.sequence}, "
            f"file {row.file_name})"
        )
    return lines


def receipt_on_file(session: Session, pseudonym: str) -> Receipt | None:
    """The receipt of the rater's unrevoked attestation records on file (on_file), up to the
    newest, as signing gives one: for a rater who did not keep theirs. None if none."""
    found = _records_on_file(session, pseudonym)
    if not found:
        return None
    last = found[-1]
    # A receipt names one key: the newest record's. Records an older key signed (before the
    # rater's key was reset) are listed on the page, not on this receipt.
    keyid = _keyid(last)
    rows = [row for row in found if _keyid(row) == keyid]
    return Receipt(
        pseudonym,
        keyid,
        tuple((r.sequence, r.digest, r.file_name) for r in rows),
        (last.sequence, last.digest),
        _sealed_until(last, study(session)),
    )


def _keyid(row: LogRecord) -> str:
    return json.loads(row.envelope)["signatures"][0]["keyid"]


def _records_on_file(session: Session, pseudonym: str) -> list[LogRecord]:
    revoked = ledger.store_evidence(session).revoked
    query = select(LogRecord).where(LogRecord.kind == "adjudication", LogRecord.signer == pseudonym)
    rows = session.exec(query.order_by(col(LogRecord.sequence)))
    return [row for row in rows if row.digest not in revoked]


def _sealed_until(row: LogRecord, current: StudyPublic) -> int | None:
    """The round whose close puts the record in the folder; None once it is there."""
    return None if ledger.releasable(row.sealed_round, current) else row.sealed_round


def signed_revisions(session: Session, pseudonym: str) -> dict[tuple[str, str], int]:
    """For each band, the review revision the rater's latest unrevoked attestation covers."""
    reviews = latest_signed_reviews(ledger.store_evidence(session), pseudonym)
    return {band: review.get("revision") for band, review in reviews.items()}  # type: ignore[misc]


def _check_request(meaning: str, declarations: list[str]) -> None:
    missing = [d for d in DECLARATIONS if d not in declarations]
    unknown = [d for d in declarations if d not in DECLARATIONS]
    if unknown:
        raise FmaBandsError(f"unknown declaration(s): {', '.join(unknown)}")
    if missing:
        # Each in the words the rater reads, with the name the command line gives it beside.
        said = "; ".join(f'"{DECLARATIONS[d]}" ({d})' for d in missing)
        raise FmaBandsError(f"every declaration is required; missing: {said}")
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
    folder: Path | None,
    confirm_imported: bool = False,
    only: Collection[Band] | None = None,
    now: datetime | None = None,
) -> Receipt:
    """Sign what `plan` says as records of the study's log (audited), and return the rater's
    receipt. The passphrase is the rater's: it unseals the key they made at activation, and
    nothing else can. Signed while the round is open, the records wait sealed in the store
    until it closes (ledger)."""
    authorize(session, rater, "sign")
    _check_request(meaning, declarations)
    user = _identified_signer(session, rater)
    signing = plan(session, library, rater, confirm_imported=confirm_imported, only=only)
    # The rater's exemption reviews travel in the same attestations (docs/design.md, Exemptions).
    exempting = exemption_signing(session, rater)
    if not exempting.fresh:
        _require_fresh(signing, confirm_imported, exemptions_signed=bool(exempting.reviews))
    signer, key = identified_signer(session, rater, passphrase, user)
    when = now or utcnow()
    rows = _sign_reviews(session, user, signer, key, signing, exempting, meaning, folder, when)
    confirmed = _confirm_imports(session, rater, signing, when)
    audit.record(
        session,
        kind="attestation_signed",
        actor=user.pseudonym,
        payload={
            "records": [r.file_name for r in rows],
            "bands": [subject_name(r["vignette_id"], r["sub_action"]) for r in signing.reviews],
            "signed_as_before": signing.carried,
            "confirmed_imports": confirmed,
            "exemptions": [r["attribute"] + "/" + r["sub_action"] for r in exempting.reviews],
            "meaning": meaning,
        },
    )
    return ledger.receipt(rows, signer)


def identified_signer(
    session: Session, rater: UserPublic, passphrase: str, user: User | None = None
) -> tuple[Signer, Any]:
    """The rater's signer, from their passphrase, once the roster gives them the key and the
    identity they sign under (a refusal says which is missing); and the key's stored row."""
    if user is None:
        user = _identified_signer(session, rater)
    key, private_key = _unlock(session, rater, passphrase)
    _require_identity_in_roster(_require_rostered(session, user.pseudonym, key.keyid), user)
    return Signer(user.pseudonym, key.keyid, private_key), key


def _require_rostered(session: Session, pseudonym: str, keyid: str) -> Adjudicator:
    """Refuse to sign with a key the root-signed roster does not give the rater (yet): such a
    record would not verify in its place and would make the folder invalid."""
    adjudicator = ledger.store_evidence(session).adjudicators.get(pseudonym)
    use = adjudicator.key(keyid) if adjudicator is not None else None
    if adjudicator is None or use is None or use.until is not None:
        raise FmaBandsError(
            "your enrolment has not taken effect in the study's log yet (with a steward, it "
            "waits for their approval): nothing was signed; ask the coordinator"
        )
    return adjudicator


def _require_identity_in_roster(adjudicator: Adjudicator, user: User) -> None:
    """Refuse while the root-signed roster does not carry the identity commitment the statement
    names (with a steward, the record of it waits for their approval)."""
    if adjudicator.record.get("identity_commitment") != user.identity_commitment:
        raise FmaBandsError(
            "the record of your identity has not taken effect in the study's log yet (with a "
            "steward, it waits for their approval): nothing was signed; ask the coordinator"
        )


def _identified_signer(session: Session, rater: UserPublic) -> User:
    """The rater's row in the store, refused until the coordinator has recorded their private
    identity (the statement carries its commitment)."""
    user = session.get(User, rater.id)
    assert user is not None, "a signed-in rater is in the store"
    if not user.identity_commitment:
        raise FmaBandsError(
            "your private identity is not recorded yet: the coordinator records it "
            "(fma-bands identity set) before you can sign"
        )
    return user


def _require_fresh(
    signing: SigningPlan, confirm_imported: bool, *, exemptions_signed: bool = False
) -> None:
    """Refuse a signature that would cover nothing new, saying when hand-backs wait for the
    rater's confirmation (`exemptions_signed`: the rater's exemption reviews are signed as they
    are)."""
    if signing.fresh:
        return
    waiting = (
        f" ({len(signing.imported)} imported from your paper hand-back wait for you to "
        "confirm them)"
        if signing.imported and not confirm_imported
        else ""
    )
    if (signing.reviews or exemptions_signed) and not waiting:
        raise FmaBandsError(
            "everything you have submitted is signed already, exactly as it is now: there is "
            "nothing new to sign"
        )
    raise FmaBandsError(f"you have no current submitted review to sign{waiting}")


def _unlock(
    session: Session, rater: UserPublic, passphrase: str
) -> tuple[SigningKey, Ed25519PrivateKey]:
    """The rater's key and its private half; a wrong passphrase says that nothing was signed."""
    try:
        return unlock_signing_key(session, rater.id, passphrase)
    except WrongPassphrase:
        raise WrongPassphrase(NOT_SIGNED) from None


def _sign_reviews(
    session: Session,
    user: User,
    signer: Signer,
    key: SigningKey,
    signing: SigningPlan,
    exempting: ExemptionSigning,
    meaning: str,
    folder: Path | None,
    when: datetime,
) -> list[LogRecord]:
    """The reviews `signing` covers as adjudication records of the log, BANDS_PER_RECORD at a
    time, each naming the rater, their declarations and the study's mode and round (read under
    the lock the records are appended under, so a mode change cannot slip in between)."""
    current = lock_study(session)
    parts = split_reviews(signing.reviews) or [[]]  # exemption reviews alone make one record
    rows = []
    for index, reviews in enumerate(parts, start=1):
        subjects = [
            {
                "name": subject_name(r["vignette_id"], r["sub_action"]),
                "digest": {"sha256": str(r.get("band_digest") or "").removeprefix("sha256:")},
            }
            for r in reviews
        ]
        body = {
            "adjudicator": public_record(user, key),
            "identity_commitment": user.identity_commitment,
            "signature_manifestation": {
                "printed_name": user.pseudonym,
                "signed_at": stamp(when),
                "meaning": meaning,
            },
            "declarations": {
                "statement": signing.statement(exemptions=bool(exempting.reviews)),
                "made": {d: DECLARATIONS[d] for d in DECLARATIONS},
            },
            "study_mode": current.mode,
            "part": {"index": index, "of": len(parts)},
            "reviews": reviews,
        }
        if index == 1 and exempting.reviews:
            # A separate list, so a reader of band reviews never mistakes one for a band.
            body["exemption_reviews"] = exempting.reviews
            subjects += exempting.subjects()
        rows.append(
            ledger.append(
                session,
                "adjudication",
                signer=signer,
                subject=subjects,
                body=body,
                folder=folder,
                now=when,
            )
        )
    return rows


def split_reviews(reviews: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The reviews in order, in parts of at most BANDS_PER_RECORD reviews and
    REVIEW_BYTES_PER_RECORD bytes of canonical JSON (a review larger than that alone is a part
    of its own)."""
    parts: list[list[dict[str, Any]]] = []
    size = 0
    for review in reviews:
        grown = len(canonical_json(review))
        if (
            not parts
            or len(parts[-1]) >= BANDS_PER_RECORD
            or size + grown > REVIEW_BYTES_PER_RECORD
        ):
            parts.append([])
            size = 0
        parts[-1].append(review)
        size += grown
    return parts


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
    folder: Path | None,
) -> Receipt:
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
    attestation: str,
    reason: str,
    folder: Path | None,
) -> Receipt:
    """A signed revocation of one of the rater's own attestation records, named by its file
    (audited)."""
    authorize(session, rater, "sign")
    if not reason.strip():
        raise FmaBandsError("say why the attestation is revoked")
    name = Path(attestation).name
    row = session.exec(select(LogRecord).where(LogRecord.file_name == name)).first()
    if row is None or row.kind != "adjudication" or row.signer != rater.pseudonym:
        raise FmaBandsError(f"{name} is not an attestation of yours in the study's log")
    if row.digest in ledger.store_evidence(session).revoked:
        raise FmaBandsError(f"{name} is revoked already")
    key, private_key = _unlock(session, rater, passphrase)
    _require_rostered(session, rater.pseudonym, key.keyid)
    signer = Signer(rater.pseudonym, key.keyid, private_key)
    made = ledger.append(
        session,
        "revocation",
        signer=signer,
        subject=[{"name": name, "digest": {"sha256": row.digest.removeprefix("sha256:")}}],
        body={"revokes": row.digest, "reason": reason.strip()},
        folder=folder,
    )
    audit.record(
        session,
        kind="attestation_revoked",
        actor=rater.pseudonym,
        payload={"file": made.file_name, "revokes": name},
    )
    return ledger.receipt([made], signer)
