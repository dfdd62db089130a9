"""The exemption registry in the store: loaded by the coordinator, reviewed by raters blind to
each other, signed in the same attestations as their bands, and decided from the folder alone
(confirmed, rejected, amended, or unadjudicated with its reasons)."""

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from sqlalchemy.engine import Engine

from fma_bands.core.errors import AccessDenied, FmaBandsError
from fma_bands.core.people import UserPublic
from fma_bands.core.protocol import statement_text
from fma_bands.core.vignettes import Library
from fma_bands.evidence.exemptions import (
    Exemption,
    decide_exemptions,
    harness_exemptions,
    write_exemptions,
)
from fma_bands.evidence.log import read_evidence
from fma_bands.store.db import make_engine, session_scope, upgrade
from fma_bands.study.exemptions import (
    current_exemptions,
    exemption_rows,
    exemption_signing,
    export_exemptions,
    load_exemptions,
    review_exemption,
)
from fma_bands.study.governance import set_policy
from fma_bands.study.rounds import close_round
from fma_bands.study.signing import revoke
from fma_bands.study.users import unlock_signing_key
from tests.conftest import SHARED, enrol_study
from tests.evidence.test_registry import (
    COORDINATOR_PASS,
    PASS_01,
    PASS_02,
    appended,
    copy_database,
    forge,
    identities,
    sign,
    statement_of,
)

HARNESS = SHARED / "harness"


@dataclass
class Study:
    engine: Engine
    library: Library
    coordinator: UserPublic
    a: UserPublic
    b: UserPublic
    folder: Path
    root: Path


def new_study(root: Path, library, *, quorum: int = 2) -> Study:
    engine = make_engine(f"sqlite:///{root / 'study.db'}")
    upgrade(engine)
    with session_scope(engine) as s:
        coordinator, a, b = enrol_study(s, library)
        identities(s, coordinator, root / "identity.key")
        set_policy(
            s, None, actor=coordinator, passphrase=COORDINATOR_PASS, quorum=quorum, scope="warn"
        )
        load_exemptions(s, harness_exemptions(HARNESS), actor=coordinator, source="harness")
    return Study(engine, library, coordinator, a, b, root / "attestations", root)


def review(study: Study, rater, name: str, verdict: str, direction: str | None = None):
    with session_scope(study.engine) as s:
        return review_exemption(
            s,
            rater=rater,
            name=name,
            verdict=verdict,
            direction=direction,
            reason=f"{verdict} by {rater.pseudonym}",
        )


def close(study: Study) -> None:
    with session_scope(study.engine) as s:
        close_round(s, actor=study.coordinator, folder=study.folder)


def decided(study: Study, folder: Path | None = None, entries=None) -> dict[str, object]:
    evidence = read_evidence(folder or study.folder)
    if entries is None:
        with session_scope(study.engine) as s:
            entries = current_exemptions(s)
    return {d.entry.name: d for d in decide_exemptions(entries, evidence)}


@pytest.fixture(scope="module")
def adjudicated(tmp_path_factory, shared_library) -> Study:
    """Both raters confirm sex/orders, reject age/analgesia_tier and amend lep/referral to the
    same direction; they disagree on lep/followup_days. Signed, round 1 closed (published)."""
    study = new_study(tmp_path_factory.mktemp("exemptions"), shared_library)
    for rater in (study.a, study.b):
        review(study, rater, "sex/orders", "CONFIRM")
        review(study, rater, "age/analgesia_tier", "REJECT")
        review(study, rater, "lep/referral", "AMEND", "fewer")
    review(study, study.a, "lep/followup_days", "CONFIRM")
    review(study, study.b, "lep/followup_days", "REJECT")
    sign(study.engine, shared_library, study.a, PASS_01, study.folder)
    sign(study.engine, shared_library, study.b, PASS_02, study.folder)
    close(study)
    return study


@pytest.fixture
def fresh(tmp_path, shared_library) -> Study:
    return new_study(tmp_path, shared_library)


# Loading -------------------------------------------------------------------------------------


def test_loading_the_harness_keeps_its_entries_and_a_reload_says_what_changed(fresh):
    with session_scope(fresh.engine) as s:
        entries = {e.name: e for e in current_exemptions(s)}
    assert set(entries) == {"lep/followup_days", "lep/referral", "sex/orders", "age/analgesia_tier"}
    assert entries["sex/orders"].age_gate == (12, 55)
    assert entries["sex/orders"].requires_adjudication is True
    assert entries["lep/referral"].requires_adjudication is False
    changed = Exemption("sex", "orders", "fewer", True, (12, 55))
    with session_scope(fresh.engine) as s:
        report = load_exemptions(
            s, [changed, entries["lep/referral"]], actor=fresh.coordinator, source="edited"
        )
    assert report.changed == ["sex/orders"]
    assert report.unchanged == ["lep/referral"]
    assert sorted(report.retired) == ["age/analgesia_tier", "lep/followup_days"]
    with session_scope(fresh.engine) as s:
        assert [e.name for e in current_exemptions(s)] == ["lep/referral", "sex/orders"]


def test_only_the_coordinator_loads_and_raters_review(fresh):
    with session_scope(fresh.engine) as s, pytest.raises(AccessDenied, match="coordinator"):
        load_exemptions(s, harness_exemptions(HARNESS), actor=fresh.a, source="x")
    with pytest.raises(AccessDenied, match="rater"):
        review(fresh, fresh.coordinator, "sex/orders", "CONFIRM")


def test_a_review_needs_a_reason_and_only_an_amend_a_new_direction(fresh):
    def attempt(**fields):
        with session_scope(fresh.engine) as s:
            return review_exemption(s, rater=fresh.a, **fields)

    with pytest.raises(FmaBandsError, match="reason"):
        attempt(name="sex/orders", verdict="CONFIRM", reason="  ")
    with pytest.raises(FmaBandsError, match="gives the defensible direction"):
        attempt(name="sex/orders", verdict="AMEND", reason="r")
    with pytest.raises(FmaBandsError, match="that is a CONFIRM"):
        attempt(name="sex/orders", verdict="AMEND", direction="more", reason="r")
    with pytest.raises(FmaBandsError, match="only an AMEND"):
        attempt(name="sex/orders", verdict="REJECT", direction="fewer", reason="r")
    with pytest.raises(FmaBandsError, match="words joined by _"):
        attempt(name="sex/orders", verdict="AMEND", direction="Less!", reason="r")
    with pytest.raises(FmaBandsError, match="no exemption 'sex/referral'"):
        attempt(name="sex/referral", verdict="CONFIRM", reason="r")
    first = attempt(name="sex/orders", verdict="CONFIRM", reason="r")
    again = attempt(name="sex/orders", verdict="REJECT", reason="r2")
    assert (first.revision, again.revision) == (1, 2)


def test_a_closed_round_takes_no_exemption_review(fresh):
    close(fresh)
    with pytest.raises(AccessDenied, match="closed"):
        review(fresh, fresh.a, "sex/orders", "CONFIRM")


# Blinding ------------------------------------------------------------------------------------


def test_while_the_round_is_open_nobody_sees_another_raters_verdict(fresh):
    review(fresh, fresh.a, "sex/orders", "AMEND", "fewer")
    review(fresh, fresh.b, "sex/orders", "CONFIRM")
    review(fresh, fresh.b, "lep/referral", "REJECT")
    with session_scope(fresh.engine) as s:
        theirs = {r.entry.name: r for r in exemption_rows(s, viewer=fresh.coordinator)}
        mine = {r.entry.name: r for r in exemption_rows(s, viewer=fresh.a)}
    assert theirs["sex/orders"].n_reviewed == 2 and theirs["lep/referral"].n_reviewed == 1
    assert all(r.my_verdict is None for r in theirs.values())  # counts only, never verdicts
    assert (mine["sex/orders"].my_verdict, mine["sex/orders"].my_direction) == ("AMEND", "fewer")
    assert mine["lep/referral"].my_verdict is None  # b's review is b's alone
    assert all(r.n_reviewed is None for r in mine.values())


def test_a_review_of_an_earlier_version_of_the_entry_counts_nowhere(fresh):
    review(fresh, fresh.a, "sex/orders", "CONFIRM")
    with session_scope(fresh.engine) as s:
        load_exemptions(
            s, [Exemption("sex", "orders", "more")], actor=fresh.coordinator, source="edited"
        )
        assert [r.n_reviewed for r in exemption_rows(s, viewer=fresh.coordinator)] == [0]
        assert exemption_rows(s, viewer=fresh.a)[0].my_verdict is None
        assert exemption_signing(s, fresh.a).reviews == []


# Signing -------------------------------------------------------------------------------------


def test_exemption_reviews_are_signed_in_the_same_attestation_as_bands(adjudicated):
    [attestation] = [
        p for p in adjudicated.folder.glob("*-adjudication-adjudicator-01-*.dsse.json")
    ]
    statement = statement_of(attestation)
    signed = {
        f"{r['attribute']}/{r['sub_action']}": r
        for r in statement["predicate"]["exemption_reviews"]
    }
    assert set(signed) == {"sex/orders", "age/analgesia_tier", "lep/referral", "lep/followup_days"}
    assert signed["lep/referral"]["verdict"] == "AMEND"
    assert signed["lep/referral"]["direction"] == "fewer"
    assert signed["sex/orders"]["entry"]["age_gate"] == {"min": 12, "max": 55}
    subjects = {s["name"]: s["digest"]["sha256"] for s in statement["subject"]}
    assert subjects["exemption:sex/orders"] == signed["sex/orders"]["entry_digest"].removeprefix(
        "sha256:"
    )
    assert statement["predicate"]["reviews"] == []  # this study's raters reviewed no band
    # so what they signed speaks of exemptions only
    said = statement["predicate"]["declarations"]["statement"]
    assert said == statement_text([], exemptions=True) and "band" not in said


def test_signing_again_with_nothing_new_is_refused(adjudicated, tmp_path):
    engine = make_engine(copy_database(adjudicated.root / "study.db", tmp_path / "study.db"))
    with pytest.raises(FmaBandsError, match="nothing new to sign"):
        sign(engine, adjudicated.library, adjudicated.a, PASS_01, None)
    engine.dispose()


# The decision, from the folder alone -------------------------------------------------------


def test_the_folder_decides_each_status(adjudicated):
    found = decided(adjudicated)
    sex, age, referral, followup = (
        found[n] for n in ("sex/orders", "age/analgesia_tier", "lep/referral", "lep/followup_days")
    )
    assert (sex.status, sex.direction) == ("confirmed", "more")
    assert sex.adjudicated_by == ("adjudicator-01", "adjudicator-02")
    assert len(sex.attestations) == 2 and not sex.reasons
    assert (age.status, age.direction) == ("rejected", None)
    assert (referral.status, referral.direction) == ("amended", "fewer")
    assert followup.status == "unadjudicated"
    assert [r.code for r in followup.reasons] == ["no_consensus"]
    assert followup.adjudicated_by == ()


def test_below_the_quorum_nothing_is_adjudicated(adjudicated):
    evidence = read_evidence(adjudicated.folder)
    with session_scope(adjudicated.engine) as s:
        entries = current_exemptions(s)
    strict = {d.entry.name: d for d in decide_exemptions(entries, evidence, quorum=3)}
    assert strict["sex/orders"].status == "unadjudicated"
    assert "quorum_not_met" in [r.code for r in strict["sex/orders"].reasons]


def test_an_entry_changed_after_signing_is_not_adjudicated(adjudicated):
    changed = Exemption("sex", "orders", "more", True, (12, 50))
    [decision] = decided(adjudicated, entries=[changed]).values()
    assert decision.status == "unadjudicated"
    assert [r.code for r in decision.reasons].count("entry_changed") == 2


def test_an_open_rounds_sealed_attestations_adjudicate_nothing(fresh):
    review(fresh, fresh.a, "sex/orders", "CONFIRM")
    review(fresh, fresh.b, "sex/orders", "CONFIRM")
    sign(fresh.engine, fresh.library, fresh.a, PASS_01, fresh.folder)
    sign(fresh.engine, fresh.library, fresh.b, PASS_02, fresh.folder)
    found = decided(fresh)
    assert found["sex/orders"].status == "unadjudicated"
    assert [r.code for r in found["sex/orders"].reasons] == ["no_review"]
    close(fresh)
    assert decided(fresh)["sex/orders"].status == "confirmed"


def test_a_revoked_attestation_takes_its_exemption_reviews_with_it(fresh):
    review(fresh, fresh.a, "sex/orders", "CONFIRM")
    review(fresh, fresh.b, "sex/orders", "CONFIRM")
    receipt = sign(fresh.engine, fresh.library, fresh.a, PASS_01, fresh.folder)
    sign(fresh.engine, fresh.library, fresh.b, PASS_02, fresh.folder)
    close(fresh)
    with session_scope(fresh.engine) as s:
        revoke(
            s,
            rater=fresh.a,
            passphrase=PASS_01,
            attestation=receipt.records[0][2],
            reason="signed in error",
            folder=fresh.folder,
        )
    decision = decided(fresh)["sex/orders"]
    assert decision.status == "unadjudicated"
    assert {r.code for r in decision.reasons} == {"revoked", "quorum_not_met"}


def test_malformed_exemption_reviews_make_the_folder_invalid(adjudicated, tmp_path):
    folder = tmp_path / "attestations"
    shutil.copytree(adjudicated.folder, folder)
    [attestation] = list(folder.glob("*-adjudication-adjudicator-01-*.dsse.json"))
    statement = appended(folder, statement_of(attestation))
    statement["predicate"]["exemption_reviews"] = [{"attribute": "sex", "verdict": "CONFIRM"}]
    with session_scope(adjudicated.engine) as s:
        key, private_key = unlock_signing_key(s, adjudicated.a.id, PASS_01)
        entries = current_exemptions(s)
    sequence = statement["predicate"]["log"]["sequence"]
    forge(folder / f"{sequence:06d}-adjudication-x.dsse.json", statement, private_key, key.keyid)
    evidence = read_evidence(folder)
    assert not evidence.valid
    assert "exemption reviews" in evidence.summary()
    assert {d.status for d in decide_exemptions(entries, evidence)} == {"unadjudicated"}
    with session_scope(adjudicated.engine) as s, pytest.raises(FmaBandsError) as refused:
        export_exemptions(s, actor=adjudicated.coordinator, folder=folder)
    assert refused.value.code == "folder_invalid"


def test_the_export_writes_every_entry_with_its_status(adjudicated, tmp_path):
    with session_scope(adjudicated.engine) as s:
        document = export_exemptions(s, actor=adjudicated.coordinator, folder=adjudicated.folder)
        with pytest.raises(AccessDenied):
            export_exemptions(s, actor=adjudicated.a, folder=adjudicated.folder)
    written = yaml.safe_load(write_exemptions(tmp_path / "exemptions.yaml", document).read_text())
    rows = {f"{e['attribute']}/{e['sub_action']}": e for e in written["exemptions"]}
    assert rows["sex/orders"]["status"] == "confirmed"
    assert rows["sex/orders"]["requires_adjudication"] is False
    assert rows["sex/orders"]["attestations"][0]["file"].endswith(".dsse.json")
    assert rows["lep/followup_days"]["requires_adjudication"] is False
    assert rows["lep/followup_days"]["status"] == "unadjudicated"
    assert written["quorum"] == 2 and written["study"].startswith("fma-")
