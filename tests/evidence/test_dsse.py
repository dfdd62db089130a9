"""DSSE signing: published vectors, an independent verifier, tampering, passphrases, files."""

import base64
import copy
import hashlib
import json
import os

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given
from hypothesis import strategies as st
from securesystemslib.dsse import Envelope
from securesystemslib.exceptions import VerificationError
from securesystemslib.signer import SSlibKey

from fma_bands.core.canonical import canonical_json
from fma_bands.core.errors import FmaBandsError, WrongPassphrase
from fma_bands.core.files import write_json_atomically
from fma_bands.evidence.dsse import (
    IN_TOTO_PAYLOAD_TYPE,
    decode_b64_field,
    decode_base64,
    pae,
    sign_envelope,
    verify_envelope,
)
from fma_bands.evidence.keys import (
    generate_keypair,
    keyid_for,
    reseal_private_key,
    unseal_private_key,
)
from fma_bands.study.identity import check_identity_commitment, identity_commitment

# RFC 8032 section 7.1, TEST 1 (empty message).
RFC_SECRET = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"
RFC_PUBLIC = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
RFC_SIGNATURE = (
    "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555f"
    "b8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
)

RFC_KEY = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(RFC_SECRET))
RFC_PUBLIC_B64 = base64.b64encode(bytes.fromhex(RFC_PUBLIC)).decode()
RFC_KEYID = keyid_for(RFC_PUBLIC_B64)
TRUSTED = {RFC_KEYID: RFC_PUBLIC_B64}
STATEMENT = b'{"_type":"https://in-toto.io/Statement/v1","subject":[]}'


def raw_public(private_key: Ed25519PrivateKey) -> bytes:
    return private_key.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )


def signed(payload: bytes = STATEMENT, payload_type: str = IN_TOTO_PAYLOAD_TYPE) -> dict:
    return sign_envelope(payload, payload_type, RFC_KEY, RFC_KEYID)


def error_from(envelope: object, trusted: dict[str, str] = TRUSTED) -> FmaBandsError:
    with pytest.raises(FmaBandsError) as caught:
        verify_envelope(envelope, trusted)
    return caught.value


# Published vectors


def test_pae_matches_the_dsse_spec_vector():
    assert (
        pae("http://example.com/HelloWorld", b"hello world")
        == b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    )


def test_pae_counts_bytes_not_characters():
    assert pae("é", b"\xff") == b"DSSEv1 2 \xc3\xa9 1 \xff"


def test_rfc8032_test1_public_key_and_signature():
    assert raw_public(RFC_KEY).hex() == RFC_PUBLIC
    assert RFC_KEY.sign(b"").hex() == RFC_SIGNATURE


def test_keyid_is_sha256_of_the_raw_public_key():
    digest = hashlib.sha256(bytes.fromhex(RFC_PUBLIC)).hexdigest()
    assert keyid_for(RFC_PUBLIC_B64) == f"sha256:{digest}"


def test_verify_accepts_a_hand_built_envelope_signed_with_the_rfc_key():
    payload, payload_type = b"hello world", "http://example.com/HelloWorld"
    sig = RFC_KEY.sign(b"DSSEv1 29 http://example.com/HelloWorld 11 hello world")
    envelope = {
        "payload": base64.b64encode(payload).decode(),
        "payloadType": payload_type,
        "signatures": [{"keyid": RFC_KEYID, "sig": base64.b64encode(sig).decode()}],
    }
    assert envelope == sign_envelope(payload, payload_type, RFC_KEY, RFC_KEYID)
    verified = verify_envelope(envelope, TRUSTED)
    assert (verified.payload, verified.payload_type, verified.keyids) == (
        payload,
        payload_type,
        [RFC_KEYID],
    )


# Round trip and tampering


def test_round_trip_through_json():
    envelope = json.loads(json.dumps(signed()))
    assert verify_envelope(envelope, TRUSTED).payload == STATEMENT


def test_sign_refuses_a_keyid_that_is_not_the_keys_own():
    other = generate_keypair("correct horse")
    with pytest.raises(FmaBandsError, match="does not belong"):
        sign_envelope(STATEMENT, IN_TOTO_PAYLOAD_TYPE, RFC_KEY, other.keyid)


def test_tampered_payload_is_a_bad_signature():
    envelope = signed()
    envelope["payload"] = base64.b64encode(STATEMENT.replace(b"[]", b"[1]")).decode()
    assert error_from(envelope).code == "bad_signature"


def test_tampered_payload_type_is_a_bad_signature():
    envelope = signed()
    envelope["payloadType"] = "application/json"
    assert error_from(envelope).code == "bad_signature"


def test_truncated_signature_is_a_bad_signature():
    envelope = signed()
    sig = base64.b64decode(envelope["signatures"][0]["sig"])
    envelope["signatures"][0]["sig"] = base64.b64encode(sig[:-1]).decode()
    assert error_from(envelope).code == "bad_signature"


def test_signature_by_a_key_nobody_trusts_is_unknown_key():
    assert error_from(signed(), trusted={}).code == "unknown_key"
    stranger = generate_keypair("correct horse")
    assert error_from(signed(), {stranger.keyid: stranger.public_key_b64}).code == "unknown_key"


def test_key_enrolled_under_someone_elses_keyid_is_not_trusted():
    # Mallory enrols her own key under the RFC key's id and signs as that id.
    mallory = Ed25519PrivateKey.generate()
    mallory_b64 = base64.b64encode(raw_public(mallory)).decode()
    forged = signed()
    sig = mallory.sign(pae(IN_TOTO_PAYLOAD_TYPE, STATEMENT))
    forged["signatures"][0]["sig"] = base64.b64encode(sig).decode()
    assert error_from(forged, {RFC_KEYID: mallory_b64}).code == "unknown_key"


def test_one_good_and_one_bad_trusted_signature_is_a_bad_signature():
    other_pair = generate_keypair("correct horse")
    other = unseal_private_key(other_pair.sealed_private_key, "correct horse")
    envelope = signed()
    envelope["signatures"] += sign_envelope(
        b"something else", IN_TOTO_PAYLOAD_TYPE, other, other_pair.keyid
    )["signatures"]
    trusted = {**TRUSTED, other_pair.keyid: other_pair.public_key_b64}
    assert error_from(envelope, trusted).code == "bad_signature"
    assert verify_envelope(envelope, TRUSTED).keyids == [RFC_KEYID]


def test_two_good_signatures_are_both_reported():
    other_pair = generate_keypair("correct horse")
    other = unseal_private_key(other_pair.sealed_private_key, "correct horse")
    envelope = signed()
    envelope["signatures"] += sign_envelope(
        STATEMENT, IN_TOTO_PAYLOAD_TYPE, other, other_pair.keyid
    )["signatures"]
    trusted = {**TRUSTED, other_pair.keyid: other_pair.public_key_b64}
    assert verify_envelope(envelope, trusted).keyids == [RFC_KEYID, other_pair.keyid]


# Malformed envelopes


def without(envelope: dict, field: str) -> dict:
    return {key: value for key, value in envelope.items() if key != field}


@pytest.mark.parametrize(
    ("mangle", "field"),
    [
        (lambda env: without(env, "signatures"), "signatures"),
        (lambda env: without(env, "payload"), "payload"),
        (lambda env: without(env, "payloadType"), "payloadType"),
        (lambda env: {**env, "extra": 1}, "extra"),
        (lambda env: {**env, "payload": "not base64!"}, "payload"),
        (lambda env: {**env, "payload": "aGk"}, "payload"),
        (lambda env: {**env, "payload": 7}, "payload"),
        (lambda env: {**env, "payload": env["payload"] + "é"}, "payload"),
        (lambda env: {**env, "payloadType": None}, "payloadType"),
        (lambda env: {**env, "signatures": env["signatures"][0]}, "signatures"),
        (lambda env: {**env, "signatures": []}, "signatures"),
        (lambda env: {**env, "signatures": ["sig"]}, "signatures[0]"),
        (lambda env: {**env, "signatures": [{"keyid": RFC_KEYID}]}, "signatures[0]"),
        (
            lambda env: {**env, "signatures": [{**env["signatures"][0], "sig": "%%%"}]},
            "signatures[0].sig",
        ),
        (
            lambda env: {**env, "signatures": [{**env["signatures"][0], "keyid": 3}]},
            "signatures[0].keyid",
        ),
        (lambda env: [env], "envelope"),
        # One valid signature given twice, or many times over: refused unread, never verified.
        (lambda env: {**env, "signatures": env["signatures"] * 2}, "signatures[1].keyid"),
        (lambda env: {**env, "signatures": env["signatures"] * 18000}, "18000 signatures"),
    ],
)
def test_malformed_envelopes_name_the_field(mangle, field):
    error = error_from(mangle(signed()))
    assert error.code == "malformed"
    assert field in error.message


# An independent verifier


def sslib_key(keyid: str, public_raw: bytes) -> SSlibKey:
    return SSlibKey(keyid, "ed25519", "ed25519", {"public": public_raw.hex()})


def test_securesystemslib_verifies_our_envelope():
    key = sslib_key(RFC_KEYID, bytes.fromhex(RFC_PUBLIC))
    # from_dict rewrites the signature dicts in place, so hand it a copy.
    envelope = Envelope.from_dict(copy.deepcopy(signed()))
    assert envelope.pae() == pae(IN_TOTO_PAYLOAD_TYPE, STATEMENT)
    assert set(envelope.verify([key], 1)) == {RFC_KEYID}


def test_securesystemslib_rejects_our_tampered_envelope():
    key = sslib_key(RFC_KEYID, bytes.fromhex(RFC_PUBLIC))
    tampered = signed()
    tampered["payloadType"] = "application/json"
    with pytest.raises(VerificationError):
        Envelope.from_dict(copy.deepcopy(tampered)).verify([key], 1)


def test_securesystemslib_verifies_a_generated_key():
    pair = generate_keypair("correct horse")
    private_key = unseal_private_key(pair.sealed_private_key, "correct horse")
    envelope = sign_envelope(STATEMENT, IN_TOTO_PAYLOAD_TYPE, private_key, pair.keyid)
    key = sslib_key(pair.keyid, base64.b64decode(pair.public_key_b64))
    assert set(Envelope.from_dict(envelope).verify([key], 1)) == {pair.keyid}


# Passphrases


def test_generated_keypair_is_consistent():
    pair = generate_keypair("correct horse")
    private_key = unseal_private_key(pair.sealed_private_key, "correct horse")
    assert base64.b64decode(pair.public_key_b64) == raw_public(private_key)
    assert pair.keyid == keyid_for(pair.public_key_b64)
    sealed = json.loads(pair.sealed_private_key)
    assert sealed["kdf"] == "argon2id"
    assert sealed["memory_cost"] >= 65536  # memory-hard: 64 MiB per guess
    assert sealed["cipher"] == "aes-256-gcm"


def test_wrong_passphrase_is_refused_without_echoing_it():
    pair = generate_keypair("correct horse")
    with pytest.raises(WrongPassphrase) as caught:
        unseal_private_key(pair.sealed_private_key, "battery staple")
    assert "battery staple" not in str(caught.value)
    assert caught.value.__cause__ is None


def test_encrypted_pem_does_not_hold_the_raw_private_key():
    pair = generate_keypair("correct horse")
    private_key = unseal_private_key(pair.sealed_private_key, "correct horse")
    raw = private_key.private_bytes(
        serialization.Encoding.Raw,
        serialization.PrivateFormat.Raw,
        serialization.NoEncryption(),
    )
    body = "".join(pair.sealed_private_key.splitlines()[1:-1])
    der = base64.b64decode(body)
    assert raw not in der
    assert raw.hex() not in pair.sealed_private_key
    assert base64.b64encode(raw).decode() not in pair.sealed_private_key


@pytest.mark.parametrize("empty", ["", "   "])
def test_empty_passphrase_is_refused(empty):
    with pytest.raises(FmaBandsError, match="must not be empty"):
        generate_keypair(empty)
    pair = generate_keypair("correct horse")
    with pytest.raises(FmaBandsError, match="must not be empty"):
        reseal_private_key(pair.sealed_private_key, "correct horse", empty)


def test_unencrypted_pem_is_refused():
    pem = RFC_KEY.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    with pytest.raises(FmaBandsError, match="not an fma-bands sealed key"):
        unseal_private_key(pem, "correct horse")


def test_reencrypt_changes_the_passphrase_and_keeps_the_key():
    pair = generate_keypair("correct horse")
    pem = reseal_private_key(pair.sealed_private_key, "correct horse", "battery staple")
    assert raw_public(unseal_private_key(pem, "battery staple")) == base64.b64decode(
        pair.public_key_b64
    )
    with pytest.raises(WrongPassphrase):
        unseal_private_key(pem, "correct horse")
    with pytest.raises(WrongPassphrase):
        reseal_private_key(pair.sealed_private_key, "wrong", "battery staple")


# Atomic files


def test_write_json_atomically_writes_exact_content(tmp_path):
    path = tmp_path / "a.json"
    write_json_atomically(path, {"b": "é", "a": [1, 2]})
    assert path.read_bytes() == '{\n  "a": [\n    1,\n    2\n  ],\n  "b": "é"\n}\n'.encode()
    assert os.listdir(tmp_path) == ["a.json"]


def test_write_json_atomically_refuses_to_overwrite(tmp_path):
    path = tmp_path / "a.json"
    write_json_atomically(path, {"v": 1})
    with pytest.raises(FmaBandsError, match=r"a\.json: already exists"):
        write_json_atomically(path, {"v": 2})
    assert json.loads(path.read_text()) == {"v": 1}
    write_json_atomically(path, {"v": 2}, overwrite=True)
    assert json.loads(path.read_text()) == {"v": 2}
    assert os.listdir(tmp_path) == ["a.json"]


def test_failed_replace_leaves_the_original_and_no_temp_file(tmp_path, monkeypatch):
    path = tmp_path / "a.json"
    write_json_atomically(path, {"v": 1})
    original = path.read_bytes()

    def crash(*args):
        raise OSError("simulated crash")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(FmaBandsError, match="simulated crash"):
        write_json_atomically(path, {"v": 2}, overwrite=True)
    assert path.read_bytes() == original
    assert os.listdir(tmp_path) == ["a.json"]


def test_unserialisable_object_leaves_nothing_behind(tmp_path):
    with pytest.raises(TypeError):
        write_json_atomically(tmp_path / "a.json", {"v": object()})
    assert os.listdir(tmp_path) == []


# Identity commitments and canonical JSON

PRIVATE = {
    "full_name": "Dr Ada Example",
    "qualification": "FACEM",
    "registration_number": "MED0001234567",
    "registering_body": "Ahpra",
    "institution": "Example Hospital",
    "email": "ada@example.org",
}


def test_identity_commitment_checks_for_the_same_record_and_salt():
    commitment, salt_hex = identity_commitment(PRIVATE)
    assert commitment.startswith("sha256:")
    assert len(bytes.fromhex(salt_hex)) == 32
    assert check_identity_commitment(dict(reversed(PRIVATE.items())), salt_hex, commitment)


def test_identity_commitment_is_sha256_of_salt_then_canonical_json():
    salt = bytes(range(32))
    commitment, salt_hex = identity_commitment(PRIVATE, salt)
    assert salt_hex == salt.hex()
    assert commitment == "sha256:" + hashlib.sha256(salt + canonical_json(PRIVATE)).hexdigest()


def test_identity_commitments_are_salted_afresh():
    assert identity_commitment(PRIVATE)[0] != identity_commitment(PRIVATE)[0]


@pytest.mark.parametrize("field", sorted(PRIVATE))
def test_identity_commitment_fails_when_any_field_changes(field):
    commitment, salt_hex = identity_commitment(PRIVATE)
    assert not check_identity_commitment(
        {**PRIVATE, field: PRIVATE[field] + "x"}, salt_hex, commitment
    )
    assert not check_identity_commitment(PRIVATE, "00" * 32, commitment)


def test_identity_commitment_refuses_a_non_hex_salt():
    with pytest.raises(FmaBandsError, match="salt"):
        check_identity_commitment(PRIVATE, "zz", "sha256:00")


def test_canonical_json_is_sorted_compact_utf8():
    assert (
        canonical_json({"b": 1, "a": ["é", True, None]}) == '{"a":["é",true,null],"b":1}'.encode()
    )


@pytest.mark.parametrize(
    ("value", "path"),
    [(1.0, "$"), ({"a": {"b": [1, 2.5]}}, "$.a.b[1]"), ([{"x": float("nan")}], "$[0].x")],
)
def test_canonical_json_refuses_floats_naming_the_path(value, path):
    with pytest.raises(TypeError, match=r"float") as caught:
        canonical_json(value)
    assert f"a float at {path} " in str(caught.value)


def test_canonical_json_refuses_non_string_keys():
    with pytest.raises(TypeError, match="non-string key"):
        canonical_json({"a": {1: "x"}})


# Properties


@given(payload=st.binary(), payload_type=st.text())
def test_sign_then_verify_returns_the_payload(payload, payload_type):
    verified = verify_envelope(sign_envelope(payload, payload_type, RFC_KEY, RFC_KEYID), TRUSTED)
    assert (verified.payload, verified.payload_type) == (payload, payload_type)


@given(payload=st.binary(min_size=1), data=st.data())
def test_flipping_any_payload_byte_breaks_the_signature(payload, data):
    envelope = sign_envelope(payload, IN_TOTO_PAYLOAD_TYPE, RFC_KEY, RFC_KEYID)
    index = data.draw(st.integers(0, len(payload) - 1), label="index")
    mask = data.draw(st.integers(1, 255), label="mask")
    flipped = bytearray(payload)
    flipped[index] ^= mask
    envelope["payload"] = base64.b64encode(bytes(flipped)).decode()
    assert error_from(envelope).code == "bad_signature"


def test_keyid_for_refuses_bad_public_keys():
    with pytest.raises(FmaBandsError, match="not valid base64"):
        keyid_for("not base64!")
    with pytest.raises(FmaBandsError, match="32 bytes"):
        keyid_for(base64.b64encode(b"short").decode())


_B64_TEXT = st.text(
    alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=", max_size=12
)


@given(
    st.one_of(
        _B64_TEXT,
        st.binary(max_size=9).map(lambda b: base64.b64encode(b).decode()),
        st.text(max_size=8),  # any character: a JSON string may hold one outside ASCII
    )
)
def test_a_base64_field_is_accepted_exactly_when_it_is_the_encoding_of_its_bytes(text):
    # The canonical spelling is checked on the last characters, not by encoding the bytes again:
    # it must agree with the standard library decoding and encoding again on every string.
    # Which refusal: what the strict decoder cannot read (held to the standard library's
    # decoder by the next test) is invalid; what it reads in another spelling, not canonical.
    try:
        raw = base64.b64decode(text, validate=True)
        decode_base64(text)
    except ValueError:
        with pytest.raises(FmaBandsError, match="is not valid base64"):
            decode_b64_field(text, "payload")
        return
    if base64.b64encode(raw).decode() != text:
        with pytest.raises(FmaBandsError, match="is not canonical padded base64"):
            decode_b64_field(text, "payload")
    else:
        assert decode_b64_field(text, "payload") == raw


@given(
    st.one_of(
        _B64_TEXT,
        _B64_TEXT.map(str.encode),
        st.binary(max_size=9).map(base64.b64encode),
        st.text(max_size=8),
    )
)
def test_the_fast_decoder_reads_only_what_the_standard_library_reads_alike(text):
    """decode_base64 (pybase64) decodes nothing the standard library refuses or reads
    otherwise; the one thing it refuses that the other reads, padding beyond the last
    quantum (`QUJD====`), is no canonical spelling either."""
    try:
        standard: bytes | None = base64.b64decode(text, validate=True)
    except ValueError:
        standard = None
    try:
        fast: bytes | None = decode_base64(text)
    except ValueError:
        fast = None
    if fast is not None:
        assert fast == standard
    elif standard is not None:
        spelled = text.decode() if isinstance(text, bytes) else text
        assert base64.b64encode(standard).decode() != spelled


def test_stray_padding_bits_are_refused_on_both_padding_lengths():
    for text in ("QR==", "QUJ=", "QUJDRB=="):
        with pytest.raises(FmaBandsError, match="not canonical padded base64"):
            decode_b64_field(text, "payload")
    assert decode_b64_field("QUJDRA==", "payload") == b"ABCD"
    for text in ("QUJD====", "QUJDRA===", "QUJD="):  # padding past the last quantum
        with pytest.raises(FmaBandsError, match="is not valid base64"):
            decode_b64_field(text, "payload")
