"""Envelopes are parsed and verified once per process, keyed by the SHA-256 of their exact bytes
and the set of trusted keys (fma_bands.evidence.envelope): reading the folder again verifies
nothing twice, and a file changed after it was verified and cached is still refused."""

import base64
import json

import pytest

from fma_bands.core.canonical import canonical_json
from fma_bands.evidence import envelope as one_envelope
from fma_bands.evidence import log, roster
from fma_bands.evidence.dsse import IN_TOTO_PAYLOAD_TYPE, sign_envelope
from fma_bands.evidence.envelope import clear_cache
from fma_bands.evidence.log import read_evidence
from fma_bands.evidence.provenance import ADJUDICATED
from fma_bands.evidence.registry import decide
from fma_bands.store.db import session_scope
from fma_bands.study.signing import revoke
from fma_bands.study.users import unlock_signing_key
from tests.evidence import test_registry
from tests.evidence.test_registry import ALL_BANDS, error_codes, latest_record, replace_payload
from tests.study.test_signing import PASS_01, by_band, codes, statement_of

# The registry tests' signed study and its per-test copy of the attestations folder.
signed = test_registry.signed
files = test_registry.files


@pytest.fixture
def verifications(monkeypatch):
    """Each signature check that really runs, by envelope file name, from a cold cache."""
    clear_cache()
    seen: list[str] = []
    real_envelope, real_parsed = one_envelope.verify_envelope, one_envelope.verify_parsed

    def counted_envelope(envelope, trusted):
        seen.append(envelope["signatures"][0]["keyid"])
        return real_envelope(envelope, trusted)

    def counted_parsed(parsed, trusted):
        seen.append(parsed[2][0][0])
        return real_parsed(parsed, trusted)

    monkeypatch.setattr(one_envelope, "verify_envelope", counted_envelope)
    monkeypatch.setattr(one_envelope, "verify_parsed", counted_parsed)
    yield seen
    clear_cache()


def granted(study, folder) -> bool:
    decisions = by_band(decide(study.library, folder))
    return all(decisions[name].provenance == ADJUDICATED for name in ALL_BANDS)


def test_reading_the_folder_again_verifies_nothing_twice(files, verifications):
    study, folder, _ = files
    assert granted(study, folder)
    checked = len(verifications)
    assert checked >= 2  # the public records and the attestation
    assert granted(study, folder)
    read_evidence(folder)
    assert len(verifications) == checked


def test_a_payload_edited_after_it_was_verified_is_still_refused(files, verifications):
    study, folder, envelope = files
    original = envelope.read_bytes()
    assert granted(study, folder)
    statement = statement_of(envelope)
    statement["predicate"]["reviews"][0]["verdict"] = "ACCEPT"
    replace_payload(envelope, statement)

    assert error_codes(folder) == {envelope.name: "bad_signature"}
    decisions = by_band(decide(study.library, folder))
    for name in ALL_BANDS:
        assert decisions[name].provenance != ADJUDICATED
        assert "bad_signature" in codes(decisions[name])
    # The original bytes again: the same answer as before, from the cache.
    envelope.write_bytes(original)
    assert granted(study, folder)


def test_a_signature_edited_after_it_was_verified_is_still_refused(files, verifications):
    study, folder, envelope = files
    assert granted(study, folder)
    data = json.loads(envelope.read_text())
    sig = bytearray(base64.b64decode(data["signatures"][0]["sig"]))
    sig[0] ^= 1
    data["signatures"][0]["sig"] = base64.b64encode(bytes(sig)).decode()
    # Same length and same name: only the bytes' digest tells the file changed.
    envelope.write_text(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
    assert error_codes(folder) == {envelope.name: "bad_signature"}
    decisions = by_band(decide(study.library, folder))
    assert all("bad_signature" in codes(decisions[name]) for name in ALL_BANDS)


def test_the_same_bytes_under_other_keys_are_verified_again(files, verifications):
    study, folder, envelope = files
    assert granted(study, folder)
    attestation_checks = verifications.count(
        json.loads(envelope.read_text())["signatures"][0]["keyid"]
    )
    # adjudicator-02's public record gone: the trusted keys are no longer those the cached
    # outcome was worked out under, so the unchanged attestation is verified once more.
    for record_02 in folder.glob("adjudicator-02-*-record.dsse.json"):
        record_02.unlink()
    read_evidence(folder)
    keyid = json.loads(envelope.read_text())["signatures"][0]["keyid"]
    assert verifications.count(keyid) == attestation_checks + 1


def test_a_record_edited_after_it_was_verified_is_still_unsigned(files, verifications):
    study, folder, _ = files
    assert granted(study, folder)
    record = latest_record(folder)
    statement = statement_of(record)
    statement["predicate"]["record"]["specialty"] = "emergency medicine"
    replace_payload(record, statement)
    _, checked = log.read_folder(folder)
    assert {c.path.name: c.error[0] for c in checked if c.error} == {record.name: "unsigned_record"}
    assert not granted(study, folder)


# The public records alone (every start of a command that opens the store reads them) ------------

store = test_registry.store


def test_the_public_records_read_alone_are_those_of_the_whole_folder(files):
    _, folder, _ = files
    assert roster.read_adjudicators(folder) == read_evidence(folder).records()
    assert set(roster.read_adjudicators(folder)) == {"adjudicator-01", "adjudicator-02"}


def test_a_record_that_spells_its_type_with_escapes_is_still_read(files, store):
    study, folder, _ = files
    path = latest_record(folder)
    statement = statement_of(path)
    statement["predicate"]["record"]["jurisdiction"] = "New Zealand"
    statement["predicate"]["signed_at"] = "2030-01-01T00:00:00.000000Z"
    # The same JSON value, written with escaped slashes: the URL is not in the bytes as such.
    payload = canonical_json(statement).replace(b"/", b"\\/")
    assert one_envelope.RECORD_TYPE.encode() not in payload
    assert json.loads(payload) == statement
    with session_scope(store) as s:
        _, key = unlock_signing_key(s, study.a.id, PASS_01)
    envelope = sign_envelope(payload, IN_TOTO_PAYLOAD_TYPE, key, study.a.keyid)
    (folder / "adjudicator-01-escaped-record.dsse.json").write_text(json.dumps(envelope))
    found = roster.read_adjudicators(folder)
    assert found == read_evidence(folder).records()
    assert found["adjudicator-01"]["jurisdiction"] == "New Zealand"


def test_one_raters_evidence_says_what_the_whole_folder_says_of_them(files, store):
    study, folder, envelope = files
    for name in ("adjudicator-01", "adjudicator-02"):
        whole = log.latest_signed_reviews(read_evidence(folder), name)
        assert log.latest_signed_reviews(log.evidence_of(folder, name), name) == whole
    assert log.signed_revisions(folder, "adjudicator-01")
    # Revoked: nothing of it stands, read either way.
    with session_scope(store) as s:
        revoke(
            s, rater=study.a, passphrase=PASS_01, attestation=envelope, reason="x", folder=folder
        )
    assert log.signed_revisions(folder, "adjudicator-01") == {}
    assert log.latest_signed_reviews(read_evidence(folder), "adjudicator-01") == {}
