"""Accounts on a real store (SQLite file and PostgreSQL): enrolment by a one-time code, the
passphrase the person chooses at activation, the key it seals, passphrase changes and resets,
and a sign-in that is throttled and audited without the typed text."""

import base64
import contextlib
import hashlib
import json
import re
from datetime import timedelta
from pathlib import Path

import pytest
from sqlmodel import col, select

from fma_bands.core.errors import AccessDenied, FmaBandsError, WrongPassphrase
from fma_bands.evidence.log import read_evidence
from fma_bands.store.db import session_scope
from fma_bands.store.models import AuditEvent, LogRecord, SigningKey, User, utcnow
from fma_bands.study import audit
from fma_bands.study.enrolment import activate, create_first_coordinator, create_user, enrol, reset
from fma_bands.study.throttle import FREE_FAILURES, MAX_DELAY, wait_after
from fma_bands.study.users import (
    change_passphrase,
    get_user,
    has_users,
    new_passphrase_problem,
    sign_in,
    unlock_signing_key,
)

RATER = dict(
    role="rater",
    specialty="emergency medicine",
    jurisdiction="Australia",
    years_post_registration=12,
)
COORDINATOR_PASS = "the coordinator's own passphrase"
CHOSEN = "correct horse battery staple"


@pytest.fixture
def coordinator(engine):
    with session_scope(engine) as s:
        return create_first_coordinator(s, pseudonym="coordinator", passphrase=COORDINATOR_PASS)


def enrolled(engine, coordinator, name="rater-01", folder=None):
    """The coordinator enrols a rater: a root-signed enrolment record, and a one-time code."""
    with session_scope(engine) as s:
        return enrol(
            s,
            actor=coordinator,
            passphrase=COORDINATOR_PASS,
            folder=folder,
            pseudonym=name,
            **RATER,
        )


def log_kinds(engine) -> list[tuple[str, str, str | None]]:
    """(kind, signer, about) of every record of the store's log, in order."""
    with session_scope(engine) as s:
        rows = s.exec(select(LogRecord).order_by(col(LogRecord.sequence))).all()
        return [(r.kind, r.signer, r.about) for r in rows]


def audit_text(engine) -> str:
    with session_scope(engine) as s:
        return json.dumps([[e.actor, e.kind, e.payload] for e in s.exec(select(AuditEvent))])


def test_first_run_creates_the_coordinator_once(engine):
    with session_scope(engine) as s:
        assert not has_users(s)
        made = create_first_coordinator(s, pseudonym="coordinator", passphrase="a" * 12)
        assert made.role == "coordinator" and made.active
    # The coordinator's key is the study's root: its first signature is the root record.
    assert log_kinds(engine) == [("root", "coordinator", "coordinator")]
    with session_scope(engine) as s, pytest.raises(FmaBandsError, match="already has"):
        create_first_coordinator(s, pseudonym="intruder", passphrase="b" * 12)
    assert log_kinds(engine) == [("root", "coordinator", "coordinator")]


def test_a_new_study_refuses_a_folder_that_holds_another_studys_records(engine, tmp_path):
    # Its root record would sit beside the other study's, and neither folder would verify.
    folder = tmp_path / "attestations"
    folder.mkdir()
    (folder / "000000-root-someone-0123456789ab.dsse.json").write_text("{}")
    with session_scope(engine) as s, pytest.raises(FmaBandsError, match="folder of its own"):
        create_first_coordinator(s, pseudonym="coordinator", passphrase="a" * 12, folder=folder)
    assert log_kinds(engine) == []
    with session_scope(engine) as s:
        assert not has_users(s)


def test_enrolment_makes_a_one_time_code_and_no_passphrase_or_key(engine, coordinator):
    rater, code = enrolled(engine, coordinator)
    assert not rater.active and rater.keyid is None
    assert re.fullmatch(r"([A-Z2-7]{4}-){7}[A-Z2-7]{4}", code)  # 32 base32 characters: 160 bits
    assert rater.code_expires_at - utcnow() > timedelta(days=13, hours=23)
    with session_scope(engine) as s:
        row = s.exec(select(User).where(User.pseudonym == "rater-01")).one()
        assert row.passphrase_hash is None
        assert row.enrolment_code_hash and code not in row.enrolment_code_hash
        assert code.replace("-", "") not in row.enrolment_code_hash
        assert [k.user_id for k in s.exec(select(SigningKey)).all()] == [coordinator.id]
        assert sign_in(s, "rater-01", code) is None
        enrolment = s.exec(select(LogRecord).where(LogRecord.kind == "enrolment")).one()
    assert code not in audit_text(engine) and code.replace("-", "") not in audit_text(engine)
    # The enrolment is a record of the log signed with the root key (the coordinator's), and
    # it commits to the activation without holding the code.
    assert log_kinds(engine) == [
        ("root", "coordinator", "coordinator"),
        ("enrolment", "coordinator", "rater-01"),
    ]
    assert code not in enrolment.envelope and code.replace("-", "") not in enrolment.envelope
    # Only the coordinator enrols, and only with the passphrase that unseals the root key.
    with session_scope(engine) as s, pytest.raises(AccessDenied):
        enrol(s, actor=rater, passphrase=COORDINATOR_PASS, pseudonym="rater-02", **RATER)
    with session_scope(engine) as s, pytest.raises(WrongPassphrase, match="nothing was signed"):
        enrol(
            s,
            actor=coordinator,
            passphrase="not the root passphrase",
            pseudonym="rater-02",
            **RATER,
        )
    with session_scope(engine) as s:
        assert get_user(s, "rater-02") is None
    assert len(log_kinds(engine)) == 2


def test_activation_lets_the_rater_choose_the_passphrase_and_makes_the_key(
    engine, coordinator, tmp_path
):
    _, code = enrolled(engine, coordinator)
    folder = tmp_path / "attestations"
    with session_scope(engine) as s:
        made = activate(
            s,
            pseudonym="rater-01",
            code=code.lower().replace("-", " "),
            passphrase=CHOSEN,
            folder=folder,
        )
    assert made.active and made.keyid.startswith("sha256:") and not made.demo
    with session_scope(engine) as s:
        row = s.exec(select(User).where(User.pseudonym == "rater-01")).one()
        assert row.passphrase_hash.startswith("$argon2id$") and row.enrolment_code_hash is None
        [key] = s.exec(select(SigningKey).where(SigningKey.user_id == row.id)).all()
        assert "horse" not in row.passphrase_hash + key.encrypted_private_key
        assert unlock_signing_key(s, row.id, CHOSEN)[0].keyid == made.keyid
        with pytest.raises(WrongPassphrase):
            unlock_signing_key(s, row.id, COORDINATOR_PASS)
        assert sign_in(s, "rater-01", CHOSEN).pseudonym == "rater-01"
    # The new key signed an activation naming the root-signed enrolment: the folder holds the
    # chain root, enrolment, activation, and the roster gives the new key to the rater.
    evidence = read_evidence(folder)
    assert evidence.valid, evidence.problems
    assert [(e.kind, e.keyid) for e in evidence.chain] == [
        ("root", coordinator.keyid),
        ("enrolment", coordinator.keyid),
        ("activation", made.keyid),
    ]
    adjudicator = evidence.adjudicators["rater-01"]
    assert [(k.keyid, k.since, k.until) for k in adjudicator.keys] == [(made.keyid, 2, None)]
    assert (adjudicator.record["specialty"], adjudicator.record["demo"]) == (
        "emergency medicine",
        False,
    )
    assert "rater-01" in (folder / "adjudicators.yaml").read_text()
    # The code works once.
    with session_scope(engine) as s:
        again = activate(
            s, pseudonym="rater-01", code=code, passphrase="another passphrase", folder=folder
        )
    assert again is None
    assert CHOSEN not in audit_text(engine)


@pytest.mark.parametrize(
    ("code", "days", "why"),
    [("WRONG-CODE", 0, "wrong code"), (None, 15, "expired")],
)
def test_a_wrong_or_expired_code_activates_nothing(engine, coordinator, tmp_path, code, days, why):
    _, issued = enrolled(engine, coordinator, folder=tmp_path)
    with session_scope(engine) as s:
        made = activate(
            s,
            pseudonym="rater-01",
            code=code or issued,
            passphrase=CHOSEN,
            folder=tmp_path,
            now=utcnow() + timedelta(days=days),
        )
    assert made is None, why
    with session_scope(engine) as s:
        assert not get_user(s, "rater-01").active
        assert [e["kind"] for e in audit.events(s, kinds=["activation_failed"])] == [
            "activation_failed"
        ]
    assert [k for k, _, _ in log_kinds(engine)] == ["root", "enrolment"]
    assert [p.name.split("-")[1] for p in sorted(tmp_path.glob("*.dsse.json"))] == [
        "root",
        "enrolment",
    ]


@pytest.mark.parametrize(
    ("passphrase", "message"),
    [("short", "at least 12"), ("x" * 1025, "at most 1024"), (" " * 20, "at least 12")],
)
def test_a_passphrase_is_12_to_1024_characters(engine, coordinator, tmp_path, passphrase, message):
    _, code = enrolled(engine, coordinator)
    with session_scope(engine) as s, pytest.raises(FmaBandsError) as caught:
        activate(s, pseudonym="rater-01", code=code, passphrase=passphrase, folder=tmp_path)
    assert message in caught.value.fields["passphrase"]
    with session_scope(engine) as s:  # the code was not spent on a refused passphrase
        assert activate(s, pseudonym="rater-01", code=code, passphrase="x" * 1024, folder=tmp_path)


@pytest.mark.parametrize(
    ("passphrase", "again", "problem"),
    [
        ("a long passphrase", "a long passphrase", None),
        ("a long passphrase", "a long passphrasE", "the two passphrases differ"),
        ("a long passphrase", "", "the two passphrases differ"),
        (None, "", "choose a passphrase of at least 12 characters"),  # an empty form
        ("short", "short", "choose a passphrase of at least 12 characters"),
        ("x" * 1025, "x" * 1025, "a passphrase has at most 1024 characters"),
        # Too short and typed differently: the typing is told first (the two must match).
        ("short", "shorT", "the two passphrases differ"),
    ],
)
def test_a_new_passphrase_typed_twice(passphrase, again, problem):
    assert new_passphrase_problem(passphrase, again) == problem


def test_the_first_coordinator_passphrase_is_checked_by_the_domain(engine):
    with session_scope(engine) as s, pytest.raises(FmaBandsError) as caught:
        create_first_coordinator(s, pseudonym="coordinator", passphrase="short")
    assert "at least 12" in caught.value.fields["passphrase"]
    with session_scope(engine) as s:
        assert not has_users(s)


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"pseudonym": "Dr Jane Smith"}, "pseudonym"),
        ({"specialty": None}, "specialty"),
        ({"years_post_registration": -1}, "years_post_registration"),
    ],
)
def test_bad_enrolment_names_the_field_and_writes_nothing(engine, coordinator, fields, field):
    data = {"pseudonym": "rater-02", **RATER, **fields}
    with session_scope(engine) as s, pytest.raises(FmaBandsError) as caught:
        enrol(s, actor=coordinator, passphrase=COORDINATOR_PASS, **data)
    assert field in caught.value.fields
    with session_scope(engine) as s:
        assert get_user(s, "rater-02") is None
    assert [k for k, _, _ in log_kinds(engine)] == ["root"]


def test_duplicate_pseudonym_is_refused(engine, coordinator):
    enrolled(engine, coordinator)
    with pytest.raises(FmaBandsError, match="already enrolled"):
        enrolled(engine, coordinator)


def test_changing_the_passphrase_reseals_the_same_key(engine, coordinator, tmp_path):
    _, code = enrolled(engine, coordinator)
    with session_scope(engine) as s:
        rater = activate(
            s, pseudonym="rater-01", code=code, passphrase="old passphrase 1", folder=tmp_path
        )
    with session_scope(engine) as s, pytest.raises(FmaBandsError, match="not right"):
        change_passphrase(s, rater.id, "not the old one", "new passphrase 2")
    with session_scope(engine) as s, pytest.raises(FmaBandsError, match="at least 12"):
        change_passphrase(s, rater.id, "old passphrase 1", "short")
    with session_scope(engine) as s:
        change_passphrase(s, rater.id, "old passphrase 1", "new passphrase 2")
    with session_scope(engine) as s:
        assert sign_in(s, "rater-01", "old passphrase 1") is None
        assert sign_in(s, "rater-01", "new passphrase 2") is not None
        assert unlock_signing_key(s, rater.id, "new passphrase 2")[0].keyid == rater.keyid
    assert "passphrase 2" not in audit_text(engine)


def test_a_reset_issues_a_new_code_and_the_next_activation_a_new_key(engine, coordinator, tmp_path):
    _, code = enrolled(engine, coordinator)
    with session_scope(engine) as s:
        first = activate(s, pseudonym="rater-01", code=code, passphrase=CHOSEN, folder=tmp_path)
    with session_scope(engine) as s, pytest.raises(AccessDenied):
        reset(s, actor=first, pseudonym="rater-01", passphrase=CHOSEN)
    with session_scope(engine) as s, pytest.raises(WrongPassphrase):
        reset(s, actor=coordinator, pseudonym="rater-01", passphrase=CHOSEN)
    with session_scope(engine) as s:
        assert sign_in(s, "rater-01", CHOSEN) is not None  # nothing was reset
        new_code = reset(s, actor=coordinator, pseudonym="rater-01", passphrase=COORDINATOR_PASS)
    with session_scope(engine) as s:
        assert sign_in(s, "rater-01", CHOSEN) is None  # the old passphrase stops at once
        second = activate(
            s, pseudonym="rater-01", code=new_code, passphrase="chosen again, anew", folder=tmp_path
        )
    assert second.keyid != first.keyid
    with session_scope(engine) as s:
        old, new = s.exec(
            select(SigningKey).where(SigningKey.user_id == first.id).order_by(SigningKey.id)
        ).all()
        assert (old.keyid, new.keyid) == (first.keyid, second.keyid)
        assert old.retired_at is not None and new.retired_at is None
        assert old.encrypted_private_key == ""  # the retired key can never sign again
    # The reset is a root-signed enrolment at record 3: the old key stops counting there, the
    # new one counts from its activation at record 4.
    assert log_kinds(engine)[3:] == [
        ("enrolment", "coordinator", "rater-01"),
        ("activation", "rater-01", "rater-01"),
    ]
    evidence = read_evidence(tmp_path)
    assert evidence.valid, evidence.problems
    keys = evidence.adjudicators["rater-01"].keys
    assert [(k.keyid, k.since, k.until) for k in keys] == [
        (first.keyid, 2, 3),
        (second.keyid, 4, None),
    ]


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def forge_after_head(folder: Path, pseudonym: str, keyid: str, private_key) -> Path:
    """An adjudication record by `pseudonym` at the next place of the folder's chain, built
    from the files with json, base64, hashlib and the key alone (no project code)."""
    newest: dict = {}
    for path in folder.glob("*.dsse.json"):
        payload = base64.b64decode(json.loads(path.read_text())["payload"])
        statement = json.loads(payload)
        sequence = statement["predicate"]["log"]["sequence"]
        if not newest or sequence > newest["sequence"]:
            newest = {
                "sequence": sequence,
                "study": statement["predicate"]["log"]["study"],
                "digest": "sha256:" + hashlib.sha256(payload).hexdigest(),
            }
    sequence = newest["sequence"] + 1
    statement = {
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": "case_01/esi_acuity", "digest": {"sha256": "0" * 64}}],
        "predicateType": "https://fma-bands.org/log/adjudication/v2",
        "predicate": {
            "log": {"study": newest["study"], "sequence": sequence, "previous": newest["digest"]},
            "signer": {"pseudonym": pseudonym, "keyid": keyid},
            "signed_at": "2020-01-01T00:00:00.000000Z",  # back-dated: order is by position
            "reviews": [
                {
                    "vignette_id": "case_01",
                    "sub_action": "esi_acuity",
                    "verdict": "ACCEPT",
                    "band_digest": "sha256:" + "0" * 64,
                    "context_digest": "sha256:" + "0" * 64,
                }
            ],
        },
    }
    payload = json.dumps(statement, sort_keys=True).encode()
    kind = b"application/vnd.in-toto+json"
    signature = private_key.sign(b"DSSEv1 %d %b %d %b" % (len(kind), kind, len(payload), payload))
    envelope = {
        "payload": _b64(payload),
        "payloadType": kind.decode(),
        "signatures": [{"keyid": keyid, "sig": _b64(signature)}],
    }
    path = folder / f"{sequence:06d}-adjudication-{pseudonym}-{keyid[7:19]}.dsse.json"
    path.write_text(json.dumps(envelope))
    return path


def test_a_reset_retires_the_old_key_where_the_new_enrolment_stands(engine, coordinator, tmp_path):
    """A copy of the old key (from a database backup, say) signs after the reset: the walk
    refuses it, however it is dated; the same record signed with the new key takes the place."""
    _, code = enrolled(engine, coordinator)
    with session_scope(engine) as s:
        first = activate(s, pseudonym="rater-01", code=code, passphrase=CHOSEN, folder=tmp_path)
        _, old_private = unlock_signing_key(s, first.id, CHOSEN)
    with session_scope(engine) as s:
        new_code = reset(s, actor=coordinator, pseudonym="rater-01", passphrase=COORDINATOR_PASS)
    with session_scope(engine) as s:
        second = activate(
            s, pseudonym="rater-01", code=new_code, passphrase="chosen again, anew", folder=tmp_path
        )
        _, new_private = unlock_signing_key(s, second.id, "chosen again, anew")
    assert read_evidence(tmp_path).valid

    stale = forge_after_head(tmp_path, "rater-01", first.keyid, old_private)
    evidence = read_evidence(tmp_path)
    assert not evidence.valid
    assert [(p.file, p.code) for p in evidence.problems] == [(stale.name, "unknown_key")]
    assert "retired at record 3" in evidence.problems[0].message
    assert len(evidence.chain) == 5  # root, enrolment, activation, reset, activation

    stale.unlink()
    fresh = forge_after_head(tmp_path, "rater-01", second.keyid, new_private)
    evidence = read_evidence(tmp_path)
    assert [e.path.name for e in evidence.chain][-1] == fresh.name
    # Only the readable copy lags (the app rewrites it when it appends): no record is refused.
    assert [(p.file, p.code) for p in evidence.problems] == [("adjudicators.yaml", "copy_differs")]


def test_with_a_steward_a_roster_or_policy_change_waits_for_the_stewards_signature(
    engine, coordinator, tmp_path
):
    """Threshold 2: once a steward is activated, an enrolment or a policy the coordinator signs
    takes effect only when the steward approves it too."""
    from fma_bands.study.governance import approve, awaiting, policy_in_force, set_policy

    folder = tmp_path / "attestations"
    with session_scope(engine) as s:
        _, steward_code = enrol(
            s,
            actor=coordinator,
            passphrase=COORDINATOR_PASS,
            folder=folder,
            pseudonym="steward-01",
            role="steward",
        )
    with session_scope(engine) as s:
        steward = activate(
            s,
            pseudonym="steward-01",
            code=steward_code,
            passphrase="the steward's own",
            folder=folder,
        )
    evidence = read_evidence(folder)
    assert evidence.valid, evidence.problems
    assert evidence.threshold == 2
    assert sorted(evidence.root_keys.values()) == ["coordinator", "steward-01"]

    _, code = enrolled(engine, coordinator, folder=folder)
    with session_scope(engine) as s:
        set_policy(
            s, folder, actor=coordinator, passphrase=COORDINATOR_PASS, quorum=2, scope="warn"
        )
    with session_scope(engine) as s:
        rater = activate(s, pseudonym="rater-01", code=code, passphrase=CHOSEN, folder=folder)
    # Signed by the coordinator alone: both wait, and the new key counts for nothing yet.
    evidence = read_evidence(folder)
    assert evidence.valid, evidence.problems
    assert "rater-01" not in evidence.adjudicators and evidence.policy is None
    assert sorted(name.split("-")[1] for name, _ in evidence.waiting.values()) == [
        "enrolment",
        "policy",
    ]
    with session_scope(engine) as s:
        assert policy_in_force(s) is None
        assert awaiting(s, "coordinator") == []
        assert [r.kind for r in awaiting(s, "steward-01")] == ["enrolment", "policy"]
        with pytest.raises(FmaBandsError, match="awaits your signature"):
            approve(s, actor=coordinator, passphrase=COORDINATOR_PASS, folder=folder)
    with session_scope(engine) as s, pytest.raises(WrongPassphrase):
        approve(s, actor=steward, passphrase=COORDINATOR_PASS, folder=folder)

    with session_scope(engine) as s:
        made = approve(s, actor=steward, passphrase="the steward's own", folder=folder)
        assert [r.kind for r in made] == ["approval", "approval"]
    evidence = read_evidence(folder)
    assert evidence.valid, evidence.problems
    assert evidence.waiting == {}
    assert [(k.keyid, k.until) for k in evidence.adjudicators["rater-01"].keys] == [
        (rater.keyid, None)
    ]
    assert (evidence.policy.quorum, evidence.policy.scope) == (2, "warn")
    with session_scope(engine) as s:
        assert policy_in_force(s).quorum == 2
        assert awaiting(s, "steward-01") == []
        [event] = audit.events(s, kinds=["root_changes_approved"])
    assert event["actor"] == "steward-01" and len(event["payload"]["approved"]) == 2


def test_demo_accounts_are_marked(engine, coordinator, tmp_path):
    with session_scope(engine) as s, pytest.raises(FmaBandsError, match="give its passphrase"):
        create_user(s, actor="demo", pseudonym="rater-09", passphrase="rater-09-demo", **RATER)
    with session_scope(engine) as s:
        made = create_user(
            s,
            actor="demo",
            pseudonym="rater-09",
            passphrase="rater-09-demo",
            root_passphrase=COORDINATOR_PASS,
            folder=tmp_path,
            **RATER,
        )
    assert made.demo and made.active and made.keyid
    # Enrolled by the root like any rater; the activation says someone else knew the passphrase.
    evidence = read_evidence(tmp_path)
    assert [e.kind for e in evidence.chain] == ["root", "enrolment", "activation"]
    assert evidence.chain[2].predicate["activation"]["demo"] is True
    assert evidence.adjudicators["rater-09"].record["demo"] is True


# Signing in ------------------------------------------------------------------------------------


@pytest.fixture
def rater(engine, coordinator, tmp_path):
    _, code = enrolled(engine, coordinator)
    with session_scope(engine) as s:
        return activate(s, pseudonym="rater-01", code=code, passphrase=CHOSEN, folder=tmp_path)


def test_sign_in_failure_is_generic_and_audited_without_the_typed_text(engine, rater):
    typed_in_the_name_box = "my secret passphrase typed in the wrong box"
    with session_scope(engine) as s:
        assert sign_in(s, "rater-01", "wrong horse battery", client="tab") is None
        assert sign_in(s, typed_in_the_name_box, CHOSEN, client="tab") is None
        assert sign_in(s, "rater-01", CHOSEN, client="tab").pseudonym == "rater-01"
    with session_scope(engine) as s:
        failed = audit.events(s, kinds=["passphrase_failed"])
    assert [e["payload"].get("pseudonym") for e in reversed(failed)] == ["rater-01", None]
    assert {e["payload"]["where"] for e in failed} == {"sign-in"}
    # A sign-in says where it was made: a browser's, or a command's --as.
    with session_scope(engine) as s:
        assert sign_in(s, "rater-01", CHOSEN, where="cli --as") is not None
        made = audit.events(s, kinds=["sign_in"])
    assert [e["payload"] for e in reversed(made)] == [{"where": "sign-in"}, {"where": "cli --as"}]
    unknown = failed[0]["payload"]["unknown_name_hmac"]
    assert re.fullmatch(r"[0-9a-f]{16}", unknown)
    text = audit_text(engine)
    assert typed_in_the_name_box not in text and "secret" not in text
    assert "horse" not in text
    # The same unknown name gives the same hash, so repeated attempts can be told apart.
    with session_scope(engine) as s:
        sign_in(s, typed_in_the_name_box, "x")
        again = audit.events(s, kinds=["passphrase_failed"], limit=1)[0]["payload"]
    assert again["unknown_name_hmac"] == unknown


def test_guessing_is_throttled_per_account_with_a_growing_delay(engine, rater):
    """Guesses from many tabs in a few seconds: few are checked, and the right passphrase is
    refused too while the delay runs."""
    start = utcnow()
    for i in range(61):
        # A guess made too soon is refused unchecked (AccessDenied, saying how long to wait).
        with session_scope(engine) as s, contextlib.suppress(AccessDenied):
            when = start + timedelta(seconds=i / 6)
            assert sign_in(s, "rater-01", f"guess {i}", client=f"tab {i}", now=when) is None
    with session_scope(engine) as s:
        failed = audit.events(s, kinds=["passphrase_failed"])
    # Right passphrase, a new tab, within the delay: refused, saying how long to wait.
    with session_scope(engine) as s, pytest.raises(AccessDenied, match=r"wait \d+ seconds"):
        sign_in(s, "rater-01", CHOSEN, client="new tab", now=start + timedelta(seconds=10))
    checked = [e for e in failed if not e["payload"]["throttled"]]
    assert len(checked) < 10, len(checked)
    assert wait_after(FREE_FAILURES - 1) == timedelta(0)
    delays = [wait_after(n) for n in range(FREE_FAILURES, 40)]
    assert delays == sorted(delays) and delays[0] > timedelta(0) and delays[-1] == MAX_DELAY
    # Once the delay has passed, the rater gets in, and the count starts again.
    with session_scope(engine) as s:
        later = start + timedelta(seconds=10) + MAX_DELAY + timedelta(seconds=1)
        assert sign_in(s, "rater-01", CHOSEN, client="new tab", now=later) is not None


def test_guessing_across_accounts_from_one_session_is_throttled(engine, rater, coordinator):
    start = utcnow()
    names = [f"someone-{i}" for i in range(FREE_FAILURES)] + ["rater-01"]
    for i, name in enumerate(names[:-1]):
        with session_scope(engine) as s:
            assert (
                sign_in(s, name, "guess", client="one tab", now=start + timedelta(seconds=i))
                is None
            )
    now = start + timedelta(seconds=FREE_FAILURES - 0.5)
    with session_scope(engine) as s, pytest.raises(AccessDenied, match="Too many failed"):
        sign_in(s, "rater-01", CHOSEN, client="one tab", now=now)
    with session_scope(engine) as s:
        assert sign_in(s, "rater-01", CHOSEN, client="another tab", now=now) is not None
