"""Envelopes are parsed and verified once per process, keyed by the SHA-256 of their exact bytes
and the set of trusted keys (fma_bands.evidence.envelope): reading the folder again verifies
nothing twice, and a file changed after it was verified and cached is still refused."""

import base64
import json

import pytest

from fma_bands.evidence import envelope as one_envelope
from fma_bands.evidence.envelope import clear_cache, load_envelope, verify_signers
from fma_bands.evidence.log import latest_signed_reviews, read_evidence
from fma_bands.evidence.provenance import ADJUDICATED
from fma_bands.evidence.registry import decide
from fma_bands.evidence.roster import ADJUDICATORS_FILE, adjudicators_text
from fma_bands.store.db import session_scope
from fma_bands.study import signing
from fma_bands.study.users import unlock_signing_key
from tests.evidence import test_registry
from tests.evidence.test_registry import (
    ALL_BANDS,
    PASS_01,
    by_band,
    codes,
    forge,
    granted,
    problems,
    replace_payload,
    revoke_01,
    statement_of,
)
from tests.memory import peak_of

# The registry tests' signed study and its per-test copies of the folder and the store.
signed = test_registry.signed
files = test_registry.files
store = test_registry.store


@pytest.fixture
def verifications(monkeypatch):
    """Each signature check that really runs, by the key id it was signed with, from a cold
    cache."""
    clear_cache()
    seen: list[str] = []
    real_parsed = one_envelope.verify_parsed

    def counted_parsed(parsed, trusted):
        seen.append(parsed[2][0][0])
        return real_parsed(parsed, trusted)

    monkeypatch.setattr(one_envelope, "verify_parsed", counted_parsed)
    yield seen
    clear_cache()


def is_granted(study, folder) -> bool:
    decisions = by_band(decide(study.library, folder))
    return all(decisions[name].provenance == ADJUDICATED for name in ALL_BANDS)


def keyid_in(path) -> str:
    return json.loads(path.read_text())["signatures"][0]["keyid"]


def test_reading_the_folder_again_verifies_nothing_twice(files, verifications):
    study, folder, _ = files
    assert is_granted(study, folder)
    checked = len(verifications)
    # The root, two enrolments and activations, the policy and the attestation.
    assert checked >= len(list(folder.glob("*.dsse.json")))
    assert is_granted(study, folder)
    read_evidence(folder)
    assert len(verifications) == checked


def test_a_payload_edited_after_it_was_verified_is_still_refused(files, verifications):
    study, folder, envelope = files
    original = envelope.read_bytes()
    assert is_granted(study, folder)
    statement = statement_of(envelope)
    statement["predicate"]["reviews"][0]["verdict"] = "ACCEPT"
    replace_payload(envelope, statement)

    assert problems(folder) == {envelope.name: "bad_signature"}
    decisions = by_band(decide(study.library, folder))
    for name in ALL_BANDS:
        assert "folder_invalid" in codes(decisions[name])
    # The original bytes again: the same answer as before, from the cache.
    envelope.write_bytes(original)
    assert is_granted(study, folder)


def test_a_signature_edited_after_it_was_verified_is_still_refused(files, verifications):
    study, folder, envelope = files
    assert is_granted(study, folder)
    data = json.loads(envelope.read_text())
    sig = bytearray(base64.b64decode(data["signatures"][0]["sig"]))
    sig[0] ^= 1
    data["signatures"][0]["sig"] = base64.b64encode(bytes(sig)).decode()
    # Same length and same name: only the bytes' digest tells the file changed.
    envelope.write_text(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
    assert problems(folder) == {envelope.name: "bad_signature"}
    assert not is_granted(study, folder)


def test_the_same_bytes_under_other_keys_are_never_taken_as_verified(files, verifications):
    """An outcome is cached under the key it was checked against: the attestation, verified
    under adjudicator-01's key, is refused under adjudicator-02's (no signature is by it)."""
    _, folder, envelope = files
    evidence = read_evidence(folder)
    keyid = keyid_in(envelope)
    before = verifications.count(keyid)
    assert before == 2  # her activation record and her attestation
    [key_01] = evidence.adjudicators["adjudicator-01"].keys
    [key_02] = evidence.adjudicators["adjudicator-02"].keys
    assert verify_signers(load_envelope(envelope), {key_01.keyid: key_01.public_key}) == [keyid]
    assert verifications.count(keyid) == before  # the same key: from the cache
    other = load_envelope(envelope)
    assert verify_signers(other, {key_02.keyid: key_02.public_key}) is None
    assert other.error[0] == "unknown_key"
    # A key that is not its own hash is no key, whatever its id says.
    third = load_envelope(envelope)
    assert verify_signers(third, {key_01.keyid: key_02.public_key}) is None
    assert third.error[0] == "unknown_key"


# The log read without holding it: each payload let go once its signatures are checked ----------


def test_the_folder_is_read_holding_no_payload_and_checking_each_signature_once(
    files, verifications
):
    _, folder, _ = files
    evidence = read_evidence(folder)
    assert evidence.valid and evidence.chain
    assert all(env.payload is None for env in evidence.chain)
    signatures = sum(
        len(json.loads(p.read_text())["signatures"]) for p in folder.glob("*.dsse.json")
    )
    assert len(verifications) == signatures


def test_a_key_announced_after_the_records_it_signed_is_checked_from_the_files_again(
    files, verifications
):
    """File names are no order: an activation renamed to sort after the attestation it keys
    leaves the attestation's signature unchecked while it is read, so the walk reads its
    payload again from the file, which has not changed."""
    study, folder, envelope = files
    [activation] = folder.glob("*-activation-adjudicator-01-*.dsse.json")
    activation.rename(folder / ("zz-" + activation.name))
    evidence = read_evidence(folder)
    assert evidence.valid, evidence.summary()
    assert verifications.count(keyid_in(envelope)) == 2
    assert is_granted(study, folder)


def test_a_file_changed_after_its_payload_was_let_go_is_refused_not_trusted(files, verifications):
    _, folder, envelope = files
    evidence = read_evidence(folder)
    [key_01] = evidence.adjudicators["adjudicator-01"].keys
    read = load_envelope(envelope)
    read.release()
    statement = statement_of(envelope)
    statement["predicate"]["reviews"][0]["verdict"] = "ACCEPT"
    replace_payload(envelope, statement)
    clear_cache()  # nothing remembered: the payload must be read again, and it has changed
    assert verify_signers(read, {key_01.keyid: key_01.public_key}) is None
    assert read.error == ("malformed", "the file changed while it was read: read the folder again")


def test_a_record_edited_after_it_was_verified_is_still_refused(files, verifications):
    study, folder, _ = files
    assert is_granted(study, folder)
    [record] = folder.glob("*-enrolment-adjudicator-01-*.dsse.json")
    statement = statement_of(record)
    statement["predicate"]["enrolment"]["specialty"] = "emergency medicine"
    replace_payload(record, statement)
    assert problems(folder) == {record.name: "bad_signature"}
    assert not is_granted(study, folder)


# What the folder says of its adjudicators, read in more than one way -----------------------------


def test_adjudicators_yaml_is_the_copy_of_what_the_chain_says(files):
    _, folder, _ = files
    evidence = read_evidence(folder)
    assert (folder / ADJUDICATORS_FILE).read_text() == adjudicators_text(evidence)
    assert set(evidence.records()) == {"adjudicator-01", "adjudicator-02"}


def test_a_record_that_spells_its_type_with_escapes_is_still_read(files, store):
    """adjudicator-01's attestation, re-signed by her own key with every slash escaped (the
    same JSON value; the type URL is not in the bytes as such), still takes its place."""
    study, folder, envelope = files
    statement = statement_of(envelope)
    payload = json.dumps(statement, sort_keys=True, separators=(",", ":")).replace("/", "\\/")
    assert one_envelope.TYPE_OF["adjudication"] not in payload
    assert json.loads(payload) == statement
    with session_scope(store) as s:
        _, key = unlock_signing_key(s, study.a.id, PASS_01)
    data = json.loads(forge(envelope, statement, key).read_text())
    data["payload"] = base64.b64encode(payload.encode()).decode()
    # The escaped bytes signed as the envelope now carries them.
    pae = b"DSSEv1 %d %s %d %s" % (
        len(test_registry.IN_TOTO),
        test_registry.IN_TOTO.encode(),
        len(payload.encode()),
        payload.encode(),
    )
    data["signatures"][0]["sig"] = base64.b64encode(key.sign(pae)).decode()
    envelope.write_text(json.dumps(data))
    evidence = read_evidence(folder)
    assert evidence.chain[-1].kind == "adjudication"
    assert evidence.chain[-1].path == envelope
    assert problems(folder) == {}
    # adjudicators.yaml names the head, whose digest changed: made again, as publishing does.
    (folder / ADJUDICATORS_FILE).write_text(adjudicators_text(evidence))
    assert granted(study, folder)


def test_the_stores_signed_revisions_are_the_folders(files, store):
    """What the app tells a rater they signed (from the store's chain) is what the folder's
    chain says; revoked, nothing of it stands, read either way."""
    study, folder, _ = files
    whole = latest_signed_reviews(read_evidence(folder), "adjudicator-01")
    assert whole
    with session_scope(store) as s:
        revisions = signing.signed_revisions(s, "adjudicator-01")
    assert revisions == {band: review.get("revision") for band, review in whole.items()}
    revoke_01(store, study, folder, reason="x")
    assert latest_signed_reviews(read_evidence(folder), "adjudicator-01") == {}
    with session_scope(store) as s:
        assert signing.signed_revisions(s, "adjudicator-01") == {}


def junk(folder, name: str, payload: bytes) -> None:
    """An unsigned envelope file around `payload`, inside the size every reader accepts."""
    envelope = {
        "payload": base64.b64encode(payload).decode(),
        "payloadType": "application/vnd.in-toto+json",
        "signatures": [{"keyid": "k", "sig": "AAAA"}],
    }
    (folder / name).write_text(json.dumps(envelope))


def test_files_of_many_small_lists_are_strays_the_folder_does_not_hold(files):
    # A few bytes a list, a 3 MB payload would take twenty times its size in memory: no such
    # file is held while the folder is read, a statement or not, and the study still grants.
    study, folder, _ = files
    lists = ",".join(["[]"] * 1_000_000)
    for i in range(4):
        junk(folder, f"9{i:05d}-lists.dsse.json", f"[{lists},[{i}]]".encode())
        statement = {
            "_type": "https://in-toto.io/Statement/v1",
            "predicateType": "https://fma-bands.org/log/adjudication/v2",
            "subject": [],
            "predicate": {"log": {}, "reviews": "@"},
        }
        text = json.dumps(statement).replace('"@"', f"[{lists},[{i}]]")
        junk(folder, f"9{i:05d}-statement.dsse.json", text.encode())
    clear_cache()
    evidence, peak = peak_of(lambda: read_evidence(folder))
    assert peak < 120 * 1024 * 1024
    assert evidence.valid
    assert len(evidence.strays) == 8
    assert any("more than the 50,000 any record holds" in p.message for p in evidence.strays)
    assert is_granted(study, folder)
