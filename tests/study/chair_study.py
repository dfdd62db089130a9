"""A study whose triage band is still in dispute after round 2, for the chair's decision's tests
(tests/study/test_chair.py, tests/hostile/test_chair_attacks.py, tests/pages/test_chair_page.py).

Built once per module through the store and copied for each test: rater-01 and rater-02 give the
ESI band {2} and {3} in both rounds (no value in common) and accept the urgency band (a
consensus); both sign after round 2 closes; rater-03 is the chair the root-signed policy names.
"""

import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from fma_bands.core.protocol import DECLARATIONS
from fma_bands.core.vignettes import Library, load_library
from fma_bands.store.db import make_engine, session_scope, upgrade
from fma_bands.study import chair, governance
from fma_bands.study.enrolment import create_user
from fma_bands.study.identity import set_identity
from fma_bands.study.library import sync_vignettes
from fma_bands.study.reviews import ReviewForm, current_review, save
from fma_bands.study.rounds import close_round, open_round
from fma_bands.study.signing import attest
from tests.conftest import DEMO_VIGNETTES

VID = "demo_triage_border_01"
ESI = (VID, "esi_acuity")  # proposed [2, 3]
URGENCY = (VID, "urgency_score")  # no scope rule
ROOT_PASS = "coordinator pass"
RATERS = ("rater-01", "rater-02")
CHAIR = "rater-03"
ANSWERS = {q: {"choice": c} for q, c in (("q1", "yes"), ("q2", "yes"), ("q3", "no"))} | {
    "q4": {"choice": "no"},
    "q6": {"choice": "yes"},
}
BANDS = {"rater-01": [2], "rater-02": [3]}
IDENTITY = {
    "full_name": "Person Zeta",
    "primary_qualification": "MBBS Zeta",
    "postgraduate_qualification": "FACEM Zeta",
    "registration_number": "MED000000",
    "registering_body": "Zeta Board",
    "institution": "Zeta Infirmary",
    "email": "zeta@example.org",
}


def passphrase(name: str) -> str:
    return f"{name} passphrase"


@dataclass
class ChairStudy:
    root: Path  # holds study.db, vignettes/ and attestations/
    library: Library
    study_id: str
    users: dict  # pseudonym -> UserPublic (the coordinator's included)

    @property
    def folder(self) -> Path:
        return self.root / "attestations"

    @property
    def url(self) -> str:
        return f"sqlite:///{self.root / 'study.db'}"


def review(engine, library, rater, band, verdict, values=None, reason=None):
    with session_scope(engine) as s:
        latest = current_review(s, library, rater, *band)
        form = ReviewForm(verdict=verdict, band=values, answers=ANSWERS, reason=reason)
        version = latest.version if latest else 0
        return save(s, library, rater, *band, form, expected_version=version, submit=True)


def build(
    root: Path,
    disputed: dict[tuple[str, str], dict[str, object]] | None = None,
    accepted: tuple[tuple[str, str], ...] = (URGENCY,),
) -> ChairStudy:
    """The study, in `root`, with round 2 closed and the ESI band still in dispute; or the
    bands `disputed` names, each with the band every rater gives it in both rounds (AMEND),
    and the bands `accepted` by both."""
    if disputed is None:
        disputed = {ESI: {name: band for name, band in BANDS.items()}}
    vignettes = root / "vignettes"
    vignettes.mkdir(parents=True)
    for vid in sorted({vid for vid, _ in (*disputed, *accepted)}):
        shutil.copy(DEMO_VIGNETTES / f"{vid}.yaml", vignettes)
    library = load_library([vignettes])
    folder = root / "attestations"
    engine = make_engine(f"sqlite:///{root / 'study.db'}")
    upgrade(engine)
    with session_scope(engine) as s:
        sync_vignettes(s, library, actor="test")
        users = {
            "coordinator": create_user(
                s,
                actor=None,
                pseudonym="coordinator",
                passphrase=ROOT_PASS,
                role="coordinator",
                folder=folder,
            )
        }
        for name, specialty in (
            ("rater-01", "emergency medicine"),
            ("rater-02", "emergency medicine"),
            (CHAIR, "internal medicine"),
        ):
            users[name] = create_user(
                s,
                actor="coordinator",
                pseudonym=name,
                passphrase=passphrase(name),
                root_passphrase=ROOT_PASS,
                role="rater",
                specialty=specialty,
                jurisdiction="Australia",
                years_post_registration=10,
                folder=folder,
            )
    with session_scope(engine) as s:
        governance.set_policy(
            s,
            folder,
            actor=users["coordinator"],
            passphrase=ROOT_PASS,
            quorum=2,
            scope="warn",
            chair=CHAIR,
        )
        for name in (*RATERS, CHAIR):
            set_identity(
                s,
                actor=users["coordinator"],
                pseudonym=name,
                record=IDENTITY | {"email": f"{name}@example.org"},
                key_path=root / "identity.key",
                passphrase=ROOT_PASS,
                folder=folder,
            )
    for name in RATERS:
        for band, given in disputed.items():
            review(
                engine, library, users[name], band, "AMEND", given[name], _first(band, given[name])
            )
        for band in accepted:
            review(engine, library, users[name], band, "ACCEPT")
    with session_scope(engine) as s:
        close_round(s, actor=users["coordinator"], folder=folder)
    with session_scope(engine) as s:
        open_round(
            s, library, actor=users["coordinator"], number=2, folder=folder, bands=list(disputed)
        )
    for name in RATERS:
        for band, given in disputed.items():
            # Naming a rater, as people do: the chair's panel must not.
            reason = (
                f"kept after the panel: {_reading(band, given[name])}, as {name} said in round 1"
            )
            review(engine, library, users[name], band, "AMEND", given[name], reason)
    with session_scope(engine) as s:
        close_round(s, actor=users["coordinator"], folder=folder)
    for name in RATERS:
        with session_scope(engine) as s:
            attest(
                s,
                library,
                rater=users[name],
                passphrase=passphrase(name),
                meaning="adjudication",
                declarations=list(DECLARATIONS),
                folder=folder,
            )
    with session_scope(engine) as s:
        from fma_bands.study.state import study

        study_id = study(s).study_id
    engine.dispose()
    assert study_id is not None
    return ChairStudy(root, library, study_id, users)


def _reading(band: tuple[str, str], given: object) -> str:
    """The ESI band's reading as its reasons have always said it ("ESI 2"); any other band's
    as its values."""
    return f"ESI {given[0]}" if band == ESI and isinstance(given, list) else f"{band[1]} {given}"


def _first(band: tuple[str, str], given: object) -> str:
    return f"first reading: {_reading(band, given)}"


def copy(built: ChairStudy, target: Path) -> ChairStudy:
    """A copy of the study (store, folder and vignettes) for one test to change."""
    target.mkdir(parents=True, exist_ok=True)
    shutil.copytree(built.root / "attestations", target / "attestations")
    shutil.copytree(built.root / "vignettes", target / "vignettes")
    shutil.copy(built.root / "identity.key", target / "identity.key")
    with (
        sqlite3.connect(built.root / "study.db") as old,
        sqlite3.connect(target / "study.db") as new,
    ):
        old.backup(new)
    return ChairStudy(target, built.library, built.study_id, built.users)


def engine_of(study: ChairStudy):
    return make_engine(study.url)


def name_chair(study: ChairStudy, name: str) -> None:
    """The coordinator signs a policy naming `name` chair (quorum 2, scope warn, as built)."""
    engine = engine_of(study)
    try:
        with session_scope(engine) as s:
            governance.set_policy(
                s,
                study.folder,
                actor=study.users["coordinator"],
                passphrase=ROOT_PASS,
                quorum=2,
                scope="warn",
                chair=name,
            )
    finally:
        engine.dispose()


def decide_as_chair(study: ChairStudy, band=(2, 3), reason="both readings fit: ESI 2 or 3", **kw):
    """rater-03 records the chair's decision on the ESI band (a receipt)."""
    engine = engine_of(study)
    try:
        with session_scope(engine) as s:
            return chair.decide_band(
                s,
                study.library,
                chair=kw.pop("who", study.users[CHAIR]),
                passphrase=kw.pop("passphrase", passphrase(CHAIR)),
                folder=study.folder,
                vid=VID,
                name=kw.pop("name", "esi_acuity"),
                band=band if isinstance(band, dict) else list(band),
                reason=reason,
            )
    finally:
        engine.dispose()
