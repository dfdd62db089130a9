"""Accounts on a real store: enrolment, Argon2id passphrases, generic sign-in failure, keys."""

import pytest
from sqlmodel import select

from fma_bands.errors import FmaBandsError, WrongPassphrase
from fma_bands.store.db import session_scope
from fma_bands.store.models import AuditEvent, User
from fma_bands.users import (
    change_passphrase,
    create_first_coordinator,
    create_user,
    has_users,
    sign_in,
    unlock_signing_key,
)

RATER = dict(
    role="rater",
    specialty="emergency medicine",
    jurisdiction="Australia",
    years_post_registration=12,
)


def test_first_run_creates_the_coordinator_once(engine):
    with session_scope(engine) as s:
        assert not has_users(s)
        coordinator = create_first_coordinator(s, pseudonym="coordinator", passphrase="a" * 12)
        assert coordinator.role == "coordinator"
    with session_scope(engine) as s, pytest.raises(FmaBandsError, match="already has"):
        create_first_coordinator(s, pseudonym="intruder", passphrase="b" * 12)


def test_enrolment_stores_an_argon2_hash_and_a_sealed_key(engine):
    with session_scope(engine) as s:
        rater = create_user(
            s,
            actor="coordinator",
            pseudonym="rater-01",
            passphrase="correct horse battery",
            **RATER,
        )
    assert rater.keyid.startswith("sha256:")
    with session_scope(engine) as s:
        row = s.exec(select(User).where(User.pseudonym == "rater-01")).one()
        assert row.passphrase_hash.startswith("$argon2id$")
        assert "correct horse" not in row.passphrase_hash + row.encrypted_private_key
        key = unlock_signing_key(s, row.id, "correct horse battery")
        assert key is not None
        with pytest.raises(WrongPassphrase):
            unlock_signing_key(s, row.id, "wrong passphrase!")


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"pseudonym": "Dr Jane Smith"}, "pseudonym"),
        ({"passphrase": "short"}, "passphrase"),
        ({"specialty": None}, "specialty"),
        ({"years_post_registration": -1}, "years_post_registration"),
    ],
)
def test_bad_enrolment_names_the_field_and_writes_nothing(engine, fields, field):
    data = {"pseudonym": "rater-02", "passphrase": "long enough passphrase", **RATER, **fields}
    with session_scope(engine) as s, pytest.raises(FmaBandsError) as caught:
        create_user(s, actor="coordinator", **data)
    assert field in caught.value.fields
    with session_scope(engine) as s:
        assert not has_users(s)


def test_sign_in_failure_is_generic_and_audited(engine):
    with session_scope(engine) as s:
        create_user(s, actor="c", pseudonym="rater-01", passphrase="correct horse battery", **RATER)
    with session_scope(engine) as s:
        assert sign_in(s, "rater-01", "wrong horse battery") is None
        assert sign_in(s, "nobody-here", "correct horse battery") is None
        assert sign_in(s, "rater-01", "correct horse battery").pseudonym == "rater-01"
    with session_scope(engine) as s:
        kinds = [e.kind for e in s.exec(select(AuditEvent).order_by(AuditEvent.seq))]
        payloads = " ".join(str(e.payload) for e in s.exec(select(AuditEvent)))
    assert kinds == ["user_enrolled", "sign_in_failed", "sign_in_failed", "sign_in"]
    assert "horse" not in payloads


def test_duplicate_pseudonym_is_refused(engine):
    with session_scope(engine) as s:
        create_user(s, actor="c", pseudonym="rater-01", passphrase="correct horse battery", **RATER)
    with session_scope(engine) as s, pytest.raises(FmaBandsError, match="already enrolled"):
        create_user(s, actor="c", pseudonym="rater-01", passphrase="another passphrase", **RATER)


def test_changing_the_passphrase_reseals_the_key(engine):
    with session_scope(engine) as s:
        rater = create_user(
            s, actor="c", pseudonym="rater-01", passphrase="old passphrase 1", **RATER
        )
    with session_scope(engine) as s:
        change_passphrase(s, rater.id, "old passphrase 1", "new passphrase 2")
    with session_scope(engine) as s:
        assert sign_in(s, "rater-01", "old passphrase 1") is None
        assert sign_in(s, "rater-01", "new passphrase 2") is not None
        assert unlock_signing_key(s, rater.id, "new passphrase 2") is not None
