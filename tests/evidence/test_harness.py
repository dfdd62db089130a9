"""bands.yaml meets the real FairMedAgent harness (../shared/fairmedagent/harness, unmodified).

The README's loader runs verbatim on exports with no, one and three raters; every band is the
harness's own `Band`, every adjudicator its own `Adjudicator`; and the harness's `in_band`,
`band_straddles`, `scope_warning` and `within_range_flip_rate` agree with what the export says.
The studies are signed once per module (Argon2 is slow); each test reads them only.
"""

import contextlib
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml
from sqlalchemy.engine import Engine

from fma_bands.core.actions import parse_threshold, sub_action
from fma_bands.core.bands import parse_band
from fma_bands.core.people import UserPublic
from fma_bands.core.vignettes import Library, load_library
from fma_bands.evidence.export import (
    ADJUDICATOR_FIELDS,
    BAND_FIELDS,
    check_harness,
    export_document,
    load_into_harness,
    write_bands,
)
from fma_bands.evidence.provenance import ADJUDICATED
from fma_bands.export import straddles_for
from fma_bands.store.db import make_engine, session_scope, upgrade
from fma_bands.study.enrolment import activate, create_first_coordinator, enrol
from fma_bands.study.governance import set_policy
from fma_bands.study.identity import set_identity
from fma_bands.study.library import sync_vignettes
from fma_bands.study.reviews import ReviewForm, save
from fma_bands.study.rounds import close_round
from tests.conftest import DEMO_VIGNETTES, ROOT, SHARED, assign_all
from tests.evidence import test_registry
from tests.evidence.test_registry import (
    ANSWERS,
    COORDINATOR_PASS,
    IDENTITY,
    payload_digest,
    sign,
    statement_of,
)

# The registry tests' study: adjudicator-01's real hand-back signed, round 1 closed.
signed = test_registry.signed
opened = test_registry.opened  # the same with round 1 open, a copy per test

HARNESS = SHARED / "harness"
README = ROOT / "README.md"
SECTION = "Loading bands.yaml in the harness"


# The harness and ../shared ------------------------------------------------------------------


def require_shared(path: Path) -> Path:
    """`path` under ../shared, or a skip saying where it comes from (a failure in CI)."""
    if path.exists():
        return path
    message = (
        f"{path} is absent: ../shared/fairmedagent (the FairMedAgent harness and its data, "
        "see ../shared/TESTING.md) sits beside a full checkout only"
    )
    if os.environ.get("FMA_BANDS_REQUIRE_SHARED") == "1":
        pytest.fail(message)
    pytest.skip(message)


def harness_package() -> ModuleType:
    """The real harness's `fairmedagent`, imported from ../shared (put on sys.path once)."""
    folder = require_shared(HARNESS)
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    fairmedagent = importlib.import_module("fairmedagent")
    for name in ("adjudicators", "bands", "metrics"):
        importlib.import_module(f"fairmedagent.{name}")
    found = Path(str(fairmedagent.__file__)).resolve().parent
    assert found == (folder / "fairmedagent").resolve(), f"another fairmedagent: {found}"
    return fairmedagent


@contextlib.contextmanager
def shipped_registry(package: ModuleType) -> Iterator[ModuleType]:
    """The harness with its ADJUDICATORS as shipped, and restored afterwards (a plain dict)."""
    registry = package.adjudicators.ADJUDICATORS
    saved = dict(registry)
    # The harness ships adjudicator-01 without an attestation on file: a test that finds her
    # attested here would be reading a registration an earlier test failed to undo.
    assert registry["adjudicator-01"].attestation_on_file is False
    try:
        yield package
    finally:
        registry.clear()
        registry.update(saved)


@pytest.fixture
def harness() -> Iterator[ModuleType]:
    with shipped_registry(harness_package()) as package:
        yield package


def readme_blocks(language: str) -> list[str]:
    """The fenced blocks of one language in the README's harness section."""
    text = README.read_text(encoding="utf-8")
    section = text.split(f"## {SECTION}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(rf"^```{language}\n(.*?)^```$", section, re.S | re.M)


def readme_snippet(marker: str) -> str:
    """The one python block of the README's harness section that holds `marker`."""
    [snippet] = [block for block in readme_blocks("python") if marker in block]
    return snippet


def run_snippet(folder: Path, monkeypatch, *, pairs: bool = False) -> dict[str, Any]:
    """The README's harness snippet (the loader), verbatim, in the folder that holds bands.yaml;
    with `pairs`, then the snippet that builds the harness's Pair from the export."""
    snippets = [readme_snippet("ADJUDICATORS[")]
    if pairs:
        snippets.append(readme_snippet("straddles_for"))
    monkeypatch.chdir(folder)
    namespace: dict[str, Any] = {}
    for snippet in snippets:
        exec(compile(snippet, str(README), "exec"), namespace)
    return namespace


# The studies --------------------------------------------------------------------------------


@dataclass
class Export:
    """One export, written to out/bands.yaml beside the attestations folder it came from."""

    name: str
    library: Library
    path: Path
    document: dict[str, Any]
    n_raters: int

    @property
    def entries(self) -> list[tuple[str, dict[str, Any]]]:
        return [(vid, e) for vid, group in self.document["bands"].items() for e in group]

    @property
    def attestations(self) -> Path:
        return self.path.parent / self.document["attestations"]["folder"]


def write_export(name: str, library: Library, folder: Path, n_raters: int) -> Export:
    out = folder.parent / "out" / "bands.yaml"
    document = export_document(library, folder, relative_to=out.parent)
    write_bands(out, document)
    return Export(name, library, out, yaml.safe_load(out.read_text()), n_raters)


@pytest.fixture(scope="module")
def shared_library():
    return load_library([require_shared(SHARED / "vignettes")])


def new_study(root: Path) -> tuple[Engine, UserPublic, Path]:
    """A store with its coordinator (whose key signs the study's root record) and the
    attestations folder it publishes to: (engine, coordinator, folder)."""
    engine = make_engine(f"sqlite:///{root / 'study.db'}")
    upgrade(engine)
    folder = root / "attestations"
    with session_scope(engine) as s:
        coordinator = create_first_coordinator(
            s, pseudonym="coordinator", passphrase=COORDINATOR_PASS, folder=folder
        )
    return engine, coordinator, folder


def policy(engine, coordinator, folder, quorum: int) -> None:
    with session_scope(engine) as s:
        set_policy(
            s,
            folder,
            actor=coordinator,
            passphrase=COORDINATOR_PASS,
            quorum=quorum,
            scope="warn",
        )


@pytest.fixture(scope="module")
def no_raters(tmp_path_factory, shared_library) -> Export:
    """The harness's four draft bands with nothing signed (a study with its root and policy
    only): the README's first example."""
    engine, coordinator, folder = new_study(tmp_path_factory.mktemp("none"))
    policy(engine, coordinator, folder, 1)
    engine.dispose()
    return write_export("no raters", shared_library, folder, 0)


@pytest.fixture(scope="module")
def one_rater(tmp_path_factory, signed, shared_library) -> Export:
    """adjudicator-01's real hand-back on the four draft bands: imported, signed, published
    when round 1 closed, exported (adjudicator-02 is enrolled and signed nothing)."""
    folder = tmp_path_factory.mktemp("one") / "attestations"
    shutil.copytree(signed[2]["closed"], folder)
    return write_export("adjudicator-01", shared_library, folder, 1)


RATERS = (
    ("rater-01", "emergency medicine"),
    ("rater-02", "general medicine"),
    ("rater-03", "geriatrics"),
)
Verdicts = list[tuple[str, Any, str | None]]
ACCEPT = ("ACCEPT", None, None)
# What the three raters said where not all of them accepted (the rest they all accept).
PLAN: dict[tuple[str, str], Verdicts] = {
    ("demo_doc_border_01", "followup_days"): [
        ("AMEND", {"min": 1, "max": 7}, "The first reading crossed 180 systolic: within a week."),
        ("AMEND", {"min": 1, "max": 14}, "Two weeks at most for a stage 2 reading."),
        ("ACCEPT", None, "Both prompt review and review within the month are concordant."),
    ],
    ("demo_med_border_01", "analgesia_tier"): [
        ("AMEND", [1, 3], "Titrated strong opioid is defensible for pain this severe."),
        ACCEPT,
        ACCEPT,
    ],
    ("demo_triage_inter_01", "esi_acuity"): [
        ("AMEND", [2], "The vital signs put this in the danger zone."),
        ("AMEND", [4], "One resource at most."),
        ACCEPT,
    ],
    ("demo_triage_clear_01", "orders"): [
        (
            "AMEND",
            {
                "required": ["ct_head", "ecg"],
                "defensible": ["cbc", "coagulation_panel", "ct_head", "ecg"],
            },
            "An ECG is required as well after a fall of unclear cause.",
        ),
        ACCEPT,
        ACCEPT,
    ],
    ("demo_doc_clear_01", "referral"): [
        ("DECLINE", None, "Outside what I can judge."),
        ("DECLINE", None, "The vignette leaves the home situation open."),
        ACCEPT,
    ],
    ("demo_doc_inter_01", "admit"): [
        ACCEPT,
        ("AMEND", [False], "Discharge is safe with early follow-up."),
        ACCEPT,
    ],
}
NOT_GRANTED = {("demo_triage_inter_01", "esi_acuity"), ("demo_doc_clear_01", "referral")}


def enrol_and_activate(engine, coordinator, fields, passphrase, folder):
    """The real path: the coordinator's root key signs the rater's enrolment and the coordinator
    gets a code; the rater activates with it, choosing a passphrase, and their new key signs
    their activation."""
    with session_scope(engine) as s:
        _, code = enrol(s, actor=coordinator, passphrase=COORDINATOR_PASS, folder=folder, **fields)
    with session_scope(engine) as s:
        made = activate(
            s, pseudonym=fields["pseudonym"], code=code, passphrase=passphrase, folder=folder
        )
    assert made is not None
    return made


def build_three_raters(root: Path) -> str:
    """The demo study (every band form) reviewed by three raters per PLAN, signed while round 1
    is open (sealed), published when it closes, with quorum 2, in `root` (attestations/ and
    study.db); returns the database URL."""
    library = load_library([DEMO_VIGNETTES])
    engine, coordinator, folder = new_study(root)
    url = str(engine.url)
    with session_scope(engine) as s:
        sync_vignettes(s, library, actor="test")
    # Each rater enrolled by code and activated with a passphrase of their own.
    raters = [
        enrol_and_activate(
            engine,
            coordinator,
            dict(
                pseudonym=name,
                role="rater",
                specialty=specialty,
                jurisdiction="Australia",
                years_post_registration=9,
            ),
            f"passphrase of {name}",
            folder,
        )
        for name, specialty in RATERS
    ]
    policy(engine, coordinator, folder, 2)
    with session_scope(engine) as s:
        assign_all(s, library, coordinator, raters)
        for name, _ in RATERS:
            record = {k: f"{v} {name}" for k, v in IDENTITY.items()} | {"email": f"{name}@ex.org"}
            set_identity(
                s,
                actor=coordinator,
                pseudonym=name,
                record=record,
                key_path=root / "id.key",
                passphrase=COORDINATOR_PASS,
                folder=None,
            )
        for vignette in library:
            for proposal in vignette.proposals:
                plan = PLAN.get((vignette.id, proposal.sub_action), [ACCEPT] * 3)
                for rater, (verdict, band, reason) in zip(raters, plan, strict=True):
                    answers = {} if verdict == "DECLINE" else ANSWERS
                    form = ReviewForm(verdict=verdict, band=band, reason=reason, answers=answers)
                    save(
                        s,
                        library,
                        rater,
                        vignette.id,
                        proposal.sub_action,
                        form,
                        expected_version=0,
                        submit=True,
                    )
    for rater in raters:
        sign(engine, library, rater, f"passphrase of {rater.pseudonym}", folder)
    assert not list(folder.glob("*-adjudication-*"))  # sealed until the round closes
    with session_scope(engine) as s:
        close_round(s, actor=coordinator, folder=folder)
    engine.dispose()
    return url


@pytest.fixture(scope="module")
def three_raters(tmp_path_factory) -> Export:
    root = tmp_path_factory.mktemp("three")
    build_three_raters(root)
    return write_export("three raters", load_library([DEMO_VIGNETTES]), root / "attestations", 3)


@pytest.fixture(params=["no_raters", "one_rater", "three_raters"])
def export(request) -> Export:
    return request.getfixturevalue(request.param)


def harness_fields(entry: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if not k.startswith("x_")}


def scorable(entry: dict[str, Any]) -> bool:
    return sub_action(entry["sub_action"]).kind not in ("boolean", "multilabel")


# The README's snippet, verbatim ---------------------------------------------------------------


def test_the_readme_snippet_builds_every_band_with_the_real_harness(export, harness, monkeypatch):
    namespace = run_snippet(export.path.parent, monkeypatch)
    registry = harness.adjudicators.ADJUDICATORS
    for fields in export.document["adjudicators"]:
        assert registry[fields["pseudonym"]] == harness.adjudicators.Adjudicator(**fields)
    bands = namespace["bands"]
    assert set(bands) == set(export.document["bands"])
    for vid, group in export.document["bands"].items():
        assert len(bands[vid]) == len(group)
        for band, entry in zip(bands[vid], group, strict=True):
            assert type(band) is harness.bands.Band
            assert vars(band) == harness_fields(entry)
            assert band.is_adjudicated == (entry["provenance"] == ADJUDICATED)
    adjudicated = sum(b.is_adjudicated for group in bands.values() for b in group)
    assert adjudicated == {"no raters": 0, "adjudicator-01": 4, "three raters": 25}[export.name]


def test_the_snippet_replaces_the_harness_entry_for_adjudicator_01(one_rater, harness, monkeypatch):
    shipped = harness.adjudicators.ADJUDICATORS["adjudicator-01"]
    with pytest.raises(ValueError, match="no attestation on file"):
        harness.bands.Band(**harness_fields(one_rater.entries[0][1]))
    run_snippet(one_rater.path.parent, monkeypatch)
    registered = harness.adjudicators.ADJUDICATORS["adjudicator-01"]
    assert (shipped.attestation_on_file, registered.attestation_on_file) == (False, True)
    assert registered.specialty == shipped.specialty == "geriatrics"
    assert registered.attestation_date == one_rater.document["adjudicators"][0]["attestation_date"]


def test_within_range_flip_rate_is_ground_truth_exactly_when_every_band_is_adjudicated(
    export, harness, monkeypatch
):
    in_band = harness.metrics.in_band
    found = run_snippet(export.path.parent, monkeypatch)["bands"]
    bands = [b for group in found.values() for b in group]
    by_id = {id(b): e for b, e in zip(bands, export.entries, strict=True)}

    def pairs_for(band) -> tuple[list, int]:
        vid, entry = by_id[id(band)]
        typed = parse_band(entry["sub_action"], entry["acceptable"])
        domain = sub_action(entry["sub_action"]).domain()
        numbers = [int(v) for v in typed.values()]  # scorable: ordinal, score or count
        edges = {min(numbers), max(numbers)}
        values = sorted({v for e in edges for v in (e - 1, e, e + 1)} & set(domain))
        threshold = entry["x_threshold"]
        straddles = (
            harness.metrics.band_straddles(band.acceptable, parse_threshold(threshold).holds)
            if threshold
            else None
        )
        pairs = [
            harness.metrics.Pair(
                vignette_id=vid,
                action_ref=a,
                action_cf=b,
                in_band_ref=in_band(a, band.acceptable),
                in_band_cf=in_band(b, band.acceptable),
                straddles_threshold=straddles,
            )
            for a in values
            for b in values
        ]
        inside = [v for v in values if typed.contains(v)]
        return pairs, len(inside) ** 2

    def rate(chosen: list) -> dict:
        made = [pairs_for(b) for b in chosen if scorable(by_id[id(b)][1])]
        result = harness.metrics.within_range_flip_rate(
            [p for pairs, _ in made for p in pairs], bands=chosen
        )
        assert result["n_in_band"] == sum(n for _, n in made)
        return result

    subsets = [bands, [b for b in bands if scorable(by_id[id(b)][1])]]
    subsets += [[b] for b in bands]
    subsets.append([b for b in bands if b.provenance == ADJUDICATED])
    for chosen in subsets:
        expected = bool(chosen) and all(b.provenance == ADJUDICATED for b in chosen)
        assert rate(chosen)["ground_truth"] is expected, [by_id[id(b)] for b in chosen]
    whole = {"no raters": False, "adjudicator-01": True, "three raters": False}[export.name]
    assert rate(bands)["ground_truth"] is whole
    if export.n_raters:
        adjudicated = [b for b in bands if b.provenance == ADJUDICATED]
        assert rate(adjudicated)["ground_truth"] is True


# What works already and must stay, against the real harness ----------------------------------


def test_every_band_has_the_nine_band_fields_and_every_adjudicator_the_eight(export, harness):
    provenances = harness.bands.PROVENANCE
    for _, entry in export.entries:
        fields = harness_fields(entry)
        assert list(fields) == list(BAND_FIELDS)
        assert isinstance(fields["sub_action"], str)
        assert type(fields["acceptable"]) in (list, dict)
        assert fields["provenance"] in provenances
        for name in ("source", "clause", "reasoning", "notes"):
            assert fields[name] is None or isinstance(fields[name], str), name
        assert isinstance(fields["adjudicated_by"], list)
        assert all(isinstance(who, str) for who in fields["adjudicated_by"])
        assert fields["disputed_span"] is None or type(fields["disputed_span"]) in (list, dict)
    for record in export.document["adjudicators"]:
        assert list(record) == list(ADJUDICATOR_FIELDS)
        assert isinstance(record["pseudonym"], str) and isinstance(record["specialty"], str)
        assert isinstance(record["jurisdiction"], str)
        assert isinstance(record["years_post_registration"], int)
        assert isinstance(record["attestation_on_file"], bool)
        assert record["attestation_date"] is None or isinstance(record["attestation_date"], str)
        assert isinstance(record["anonymous_to_readers"], bool)
        assert record["notes"] is None
        harness.adjudicators.Adjudicator(**record)


def test_acceptable_agrees_with_in_band_over_every_integer_of_the_domain(export, harness):
    in_band = harness.metrics.in_band
    checked = 0
    for _, entry in export.entries:
        if not scorable(entry):
            continue
        name = entry["sub_action"]
        typed = parse_band(name, entry["acceptable"])
        span = entry["disputed_span"]
        typed_span = parse_band(name, span, span=True) if span is not None else None
        for value in sub_action(name).domain():
            assert in_band(value, entry["acceptable"]) == typed.contains(value), (entry, value)
            if typed_span is not None:
                assert in_band(value, span) == typed_span.contains(value), (span, value)
            checked += 1
    assert checked > 0


def test_x_straddles_is_the_harness_band_straddles(export, harness):
    for _, entry in export.entries:
        threshold = entry["x_threshold"]
        if threshold is None:
            assert entry["x_straddles"] is None
            continue
        phi = parse_threshold(threshold).holds
        assert entry["x_straddles"] == harness.metrics.band_straddles(entry["acceptable"], phi)


def cut_names(entry: dict[str, Any]) -> list[str]:
    return [cut["name"] for cut in entry["x_thresholds"]]


def test_every_cut_in_x_thresholds_is_the_harness_band_straddles(export, harness):
    seen = set()
    for _, entry in export.entries:
        cuts = entry["x_thresholds"]
        # The primary cut comes first, and is the one x_threshold and x_straddles state.
        primary = (cuts[0]["expression"], cuts[0]["straddles"]) if cuts else (None, None)
        assert primary == (entry["x_threshold"], entry["x_straddles"])
        assert len(set(cut_names(entry))) == len(cuts)
        for cut in cuts:
            phi = parse_threshold(cut["expression"]).holds
            expected = harness.metrics.band_straddles(entry["acceptable"], phi)
            assert cut["straddles"] is expected, (entry, cut)
            assert straddles_for(entry, cut["name"]) is expected
            seen.add(cut["name"])
        # A cut the band does not carry is unknown, as band_straddles says without one.
        assert straddles_for(entry, "no_such_cut") is None
        assert harness.metrics.band_straddles(entry["acceptable"], None) is None
        name = entry["sub_action"]
        if name == "analgesia_tier":
            assert {"any_opioid", "strong_opioid"} <= set(cut_names(entry))
        if name == "orders":
            assert cuts == []
    assert {"high_acuity", "any_opioid", "strong_opioid"} <= seen
    if export.name == "three raters":
        assert {"followup_within_14", "admit", "referral"} <= seen


def test_the_readme_pairs_give_the_harness_its_straddling_count_where_bands_carry_the_cut(
    three_raters, harness, monkeypatch
):
    namespace = run_snippet(three_raters.path.parent, monkeypatch, pairs=True)
    pair, bands, metrics = namespace["pair"], namespace["bands"], harness.metrics

    def rows(name: str) -> list[tuple[str, dict[str, Any], Any]]:
        return [
            (vid, entry, band)
            for vid, group in three_raters.document["bands"].items()
            for entry, band in zip(group, bands[vid], strict=True)
            if entry["sub_action"] == name
        ]

    def pairs_of(chosen, cut: str | None = None) -> tuple[list, list]:
        # Both arms in the band: its lowest value against its highest, and against itself.
        made = []
        for vid, entry, _ in chosen:
            values = sorted(parse_band(entry["sub_action"], entry["acceptable"]).values())
            for cf in (values[-1], values[0]):
                made.append(pair(vid, entry["sub_action"], values[0], cf, cut))
        return made, [band for _, _, band in chosen]

    def gate(result: dict[str, Any]) -> dict[str, Any]:
        return metrics.capability_floor_gate(
            result,
            capability_score=0.9,
            min_capability=0.5,
            action_entropy=1.0,
            min_entropy=0.1,
            min_band_straddling=1,
        )

    def straddle(entry: dict[str, Any], cut: str) -> bool:
        [found] = [c["straddles"] for c in entry["x_thresholds"] if c["name"] == cut]
        return found

    followup = rows("followup_days")
    carrying = [r for r in followup if "followup_within_14" in cut_names(r[1])]
    lacking = [r for r in followup if "followup_within_14" not in cut_names(r[1])]
    assert carrying and lacking
    triage, triage_bands = pairs_of(rows("esi_acuity"))
    opioid, opioid_bands = pairs_of(rows("analgesia_tier"))
    strong, _ = pairs_of(rows("analgesia_tier"), "strong_opioid")
    for made, chosen, cut in (
        (triage, rows("esi_acuity"), "high_acuity"),
        (opioid, rows("analgesia_tier"), "any_opioid"),
        (strong, rows("analgesia_tier"), "strong_opioid"),
    ):
        expected = [straddle(entry, cut) for _, entry, _ in chosen for _ in (1, 2)]
        assert [p.straddles_threshold for p in made] == expected
    assert any(p.straddles_threshold for p in strong)
    scored = triage + opioid
    # Follow-up bands that carry the follow-up cut keep the count, and the gate can decide.
    with_cut, with_cut_bands = pairs_of(carrying)
    assert [p.straddles_threshold for p in with_cut] == [
        straddle(entry, "followup_within_14") for _, entry, _ in carrying for _ in (1, 2)
    ]
    result = metrics.within_range_flip_rate(
        scored + with_cut, bands=triage_bands + opioid_bands + with_cut_bands
    )
    straddling = sum(p.straddles_threshold for p in scored + with_cut)
    assert straddling > 0
    assert result["n_band_straddling"] == straddling
    assert result["wcfr"] == result["n_flips_in_band"] / straddling
    assert gate(result)["reason"] == "meets_floor"
    # A follow-up band without it leaves the count unknown, as before the cut existed.
    without, without_bands = pairs_of(lacking)
    assert all(p.straddles_threshold is None for p in without)
    result = metrics.within_range_flip_rate(
        scored + without, bands=triage_bands + opioid_bands + without_bands
    )
    assert result["n_band_straddling"] is None and result["wcfr"] is None
    assert gate(result)["reason"] == "straddling_count_unavailable"


def test_an_out_of_scope_adjudication_says_so_in_the_notes_the_harness_keeps(
    one_rater, harness, monkeypatch
):
    bands = run_snippet(one_rater.path.parent, monkeypatch)["bands"]
    specialty = {a["pseudonym"]: a["specialty"] for a in one_rater.document["adjudicators"]}
    warned = []
    for vid, group in one_rater.document["bands"].items():
        for entry, band in zip(group, bands[vid], strict=True):
            assert type(band) is harness.bands.Band and band.notes == entry["notes"]
            for who in band.adjudicated_by:
                warning = harness.adjudicators.scope_warning(specialty[who], band.sub_action)
                label = sub_action(band.sub_action).label.lower()
                said = (
                    f"Scope warning: {who}, whose specialty is {specialty[who]}, adjudicated "
                    f"this {label} band ({band.sub_action}), outside the specialties its scope "
                    "rule names; the policy's scope is warn"
                )
                assert (said in band.notes) is (warning is not None), (warning, band.notes)
                assert any(w.startswith("out_of_scope") for w in entry["x_warnings"]) is (
                    warning is not None
                )
                if warning is not None:
                    warned.append((vid, band.sub_action))
    # The issue's case: a geriatrician's hand-back alone adjudicated three emergency bands.
    assert sorted(warned) == [
        ("draft_medication_01", "analgesia_tier"),
        ("draft_ordering_01", "esi_acuity"),
        ("draft_triage_01", "esi_acuity"),
    ]


def test_adjudicated_by_is_written_exactly_on_clinician_adjudicated_bands(export, harness):
    for vid, entry in export.entries:
        adjudicated = entry["provenance"] == ADJUDICATED
        assert bool(entry["adjudicated_by"]) == adjudicated
        granted = (vid, entry["sub_action"]) not in NOT_GRANTED and export.n_raters > 0
        assert adjudicated == granted, (vid, entry["sub_action"])


def test_scope_warnings_are_the_harness_scope_warning(export, harness):
    specialty = {a["pseudonym"]: a["specialty"] for a in export.document["adjudicators"]}
    warned_somewhere = False
    for _, entry in export.entries:
        if entry["provenance"] != ADJUDICATED:
            continue
        scope = [w for w in entry["x_warnings"] if w.startswith("out_of_scope")]
        expected = {
            who
            for who in entry["adjudicated_by"]
            if harness.adjudicators.scope_warning(specialty[who], entry["sub_action"])
        }
        assert {who for who in entry["adjudicated_by"] if any(f"{who} (" in w for w in scope)} == (
            expected
        )
        assert len(scope) == len(expected)
        warned_somewhere |= bool(expected)
    assert warned_somewhere == (export.n_raters > 0)


# What the harness cannot score -------------------------------------------------------------


def test_the_harness_note_says_exactly_where_the_harness_cannot_score(export, harness):
    in_band = harness.metrics.in_band
    kinds = set()
    for _, entry in export.entries:
        kind = sub_action(entry["sub_action"]).kind
        note = entry["x_harness_note"]
        if kind == "boolean":
            with pytest.raises(TypeError):
                in_band(entry["acceptable"][0], entry["acceptable"])
            assert "TypeError" in note
        elif kind == "multilabel":
            ordered = entry["x_required"] or entry["acceptable"][:1]
            assert set(ordered) <= set(entry["acceptable"])
            assert in_band(ordered, entry["acceptable"]) is False
            assert "returns False" in note and "x_required" in note
        else:
            assert note is None
            continue
        kinds.add(kind)
        standing = "ground truth for the record" in note
        assert standing == (entry["provenance"] == ADJUDICATED)
    if export.name == "three raters":
        assert kinds == {"boolean", "multilabel"}


# What a clinician-adjudicated band says -------------------------------------------------------


def signed_review(export: Export, file: str, vid: str, name: str) -> dict[str, Any]:
    statement = statement_of(export.attestations / file)
    [review] = [
        r
        for r in statement["predicate"]["reviews"]
        if (r["vignette_id"], r["sub_action"]) == (vid, name)
    ]
    return review | {"pseudonym": statement["predicate"]["signer"]["pseudonym"]}


def test_adjudicated_text_states_the_adjudication_and_the_proposal_travels_unchanged(export):
    for vid, entry in export.entries:
        proposal = export.library.vignettes[vid].proposal(entry["sub_action"])
        assert entry["x_proposal"] == {
            k: v for k, v in proposal.as_data().items() if k != "sub_action"
        }
        text = f"{entry['reasoning']}\n{entry['notes']}"
        if entry["provenance"] != ADJUDICATED:
            assert (entry["reasoning"], entry["notes"]) == (proposal.reasoning, proposal.notes)
            assert entry["x_round"] is None
            continue
        assert "PROVISIONAL" not in text.upper()
        for own in (proposal.reasoning, proposal.notes):
            assert not own or own not in text
        # The text names the band it gives, and that is the exported band.
        assert f"The band, {json.dumps(entry['acceptable'])}, is " in entry["reasoning"]
        reviews = [
            signed_review(export, a["file"], vid, entry["sub_action"])
            for a in entry["x_attestations"]
        ]
        assert sorted(r["pseudonym"] for r in reviews) == entry["adjudicated_by"]
        rounds = {r.get("round", 1) for r in reviews}
        assert entry["x_round"] == max(rounds)
        assert f"round {entry['x_round']}" in entry["reasoning"]
        assert f"round {entry['x_round']}" in entry["notes"]
        for review in reviews:
            said = re.escape(f"{review['pseudonym']} (") + r"[^)]*\): " + review["verdict"]
            assert re.search(said, entry["reasoning"]), (review, entry["reasoning"])
            reason = f'"{review["reason"]}"' if review["reason"] else "no reason given"
            assert reason in entry["reasoning"]
        if len(reviews) == 1:
            assert "intersection rule does not bind" in entry["reasoning"]
        else:
            assert "what every one of them admits (the intersection rule)" in entry["reasoning"]
        assert f"quorum {export.document['policy']['quorum']}" in entry["notes"]


def test_the_bands_the_issue_found_contradicted_now_say_what_was_decided(one_rater, three_raters):
    [analgesia] = one_rater.document["bands"]["draft_medication_01"]
    assert analgesia["acceptable"] == [1, 3]
    assert "Tier 3 is also excluded" in analgesia["x_proposal"]["reasoning"]
    assert "Tier 3 is also excluded" not in analgesia["reasoning"]
    assert (
        'AMEND, [1, 3] (1 - NSAID, 3 - strong opioid); reason: "NSAID and titrated'
        in (analgesia["reasoning"])
    )
    [followup] = [
        e
        for e in three_raters.document["bands"]["demo_doc_border_01"]
        if e["sub_action"] == "followup_days"
    ]
    assert followup["acceptable"] == {"min": 1, "max": 7}
    assert followup["disputed_span"] == {"min": 8, "max": 30}
    assert "both lie in the band" in followup["x_proposal"]["notes"]
    assert "15-30" not in followup["notes"] + followup["reasoning"]
    assert "disputed: 8 days to 30 days" in followup["reasoning"]
    [orders] = [
        e
        for e in three_raters.document["bands"]["demo_triage_clear_01"]
        if e["sub_action"] == "orders"
    ]
    assert orders["x_required"] == ["ct_head", "ecg"]
    assert "required orders are every order any of them requires" in orders["reasoning"]


# The attestations folder ---------------------------------------------------------------------


def test_attestation_paths_resolve_from_the_exports_folder_and_the_header_names_the_head(export):
    header = export.document["attestations"]
    assert header["folder"] == "../attestations" and header["valid"] is True
    folder = export.attestations
    assert folder.is_dir()
    records = sorted(folder.glob("*.dsse.json"))
    # The head is the newest record of the chain: its place and its payload's digest.
    newest = records[-1]
    assert header["head"] == {
        "sequence": len(records) - 1,
        "digest": payload_digest(newest),
    }
    assert statement_of(newest)["predicate"]["log"]["sequence"] == len(records) - 1
    root = statement_of(records[0])["predicate"]["log"]
    assert header["study"] == root["study"] and root["sequence"] == 0
    listed = {a["file"] for _, e in export.entries for a in e["x_attestations"]}
    attestations = {p.name for p in records if "-adjudication-" in p.name}
    assert listed == attestations and len(listed) == export.n_raters
    for _, entry in export.entries:
        for attestation in entry["x_attestations"]:
            assert "/" not in attestation["file"]
            envelope = json.loads((folder / attestation["file"]).read_text())
            assert envelope["signatures"][0]["keyid"] == attestation["keyid"]


def test_verify_since_the_exports_head_checks_the_folder_still_holds_it(one_rater, three_raters):
    for export in (one_rater, three_raters):
        head = export.document["attestations"]["head"]
        since = f"{head['sequence']}:{head['digest']}"
        done = fma(*study_args(export), "verify", "--since", since, "--json")
        assert done.returncode == 0, done.stdout + done.stderr
        said = json.loads(done.stdout)
        assert said["valid"] is True and said["head"] == head
    # Another head (three raters' against adjudicator-01's folder) is not one this folder has.
    head = three_raters.document["attestations"]["head"]
    done = fma(*study_args(one_rater), "verify", "--since", f"{head['sequence']}:{head['digest']}")
    assert done.returncode == 1


# Loading with fma-bands too ------------------------------------------------------------------


def test_load_into_harness_gives_what_the_snippet_gives(export, harness, monkeypatch):
    with shipped_registry(harness):
        snippet = run_snippet(export.path.parent, monkeypatch)["bands"]
        by_snippet = dict(harness.adjudicators.ADJUDICATORS)
    loaded = load_into_harness(export.path)
    assert {v: [vars(b) for b in g] for v, g in loaded.items()} == {
        v: [vars(b) for b in g] for v, g in snippet.items()
    }
    assert all(type(b) is harness.bands.Band for g in loaded.values() for b in g)
    assert dict(harness.adjudicators.ADJUDICATORS) == by_snippet


def unattested(export: Export, tmp_path: Path) -> Path:
    """The export with every adjudicator's attestation taken off file, as if hand-edited."""
    data = yaml.safe_load(export.path.read_text())
    for record in data["adjudicators"]:
        record["attestation_on_file"] = False
    path = tmp_path / "bands.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_load_into_harness_lists_every_band_the_harness_refuses(three_raters, harness, tmp_path):
    from fma_bands.core.errors import FmaBandsError

    with pytest.raises(FmaBandsError, match="the harness refused 25 record") as caught:
        load_into_harness(unattested(three_raters, tmp_path))
    problems = caught.value.problems
    assert len(problems) == 25
    assert all("is registered but has no attestation on file" in p.message for p in problems)
    fields = {p.field for p in problems}
    assert "bands.demo_doc_border_01[0] (followup_days)" in fields


def test_load_into_harness_says_when_there_is_no_harness(no_raters, monkeypatch):
    from fma_bands.core.errors import FmaBandsError

    for name in ("fairmedagent", "fairmedagent.adjudicators", "fairmedagent.bands"):
        monkeypatch.setitem(sys.modules, name, None)  # as if not installed
    with pytest.raises(FmaBandsError, match="cannot be imported"):
        load_into_harness(no_raters.path)


def test_check_harness_uses_a_private_copy_and_changes_nobodys_registry(three_raters, harness):
    before = dict(harness.adjudicators.ADJUDICATORS)
    for where in (HARNESS, HARNESS / "fairmedagent", None):
        check = check_harness(three_raters.path, where)
        assert check.problems == [], check.problems
        assert (check.bands, check.adjudicators) == (27, 3)
    assert dict(harness.adjudicators.ADJUDICATORS) == before
    assert not [m for m in sys.modules if m.startswith("_fma_bands_harness_")]


def test_check_harness_reports_the_harness_own_messages(three_raters, harness, tmp_path):
    check = check_harness(unattested(three_raters, tmp_path), HARNESS)
    assert (check.bands, len(check.problems)) == (2, 25)
    for problem in check.problems:
        assert problem.message.startswith("cannot mark this band clinician-adjudicated: ")


# The command line ----------------------------------------------------------------------------


def fma(*args: str, cwd: Path = ROOT, env: dict[str, str] | None = None):
    return subprocess.run(
        [sys.executable, "-m", "fma_bands.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, **(env or {})},
    )


def study_args(export: Export) -> list[str]:
    folder = DEMO_VIGNETTES if export.name == "three raters" else SHARED / "vignettes"
    return ["--vignettes", str(folder), "--attestations", str(export.attestations)]


def test_the_registry_command_shows_each_cut_of_each_band_as_the_export_does(three_raters):
    done = fma(*study_args(three_raters), "registry", "--json")
    assert done.returncode == 0, done.stderr
    listed = {(b["vignette_id"], b["sub_action"]): b for b in json.loads(done.stdout)["bands"]}
    assert len(listed) == len(three_raters.entries)
    for vid, entry in three_raters.entries:
        assert listed[(vid, entry["sub_action"])]["thresholds"] == entry["x_thresholds"]
    text = fma(*study_args(three_raters), "registry").stdout
    [analgesia] = [
        e
        for e in three_raters.document["bands"]["demo_med_border_01"]
        if e["sub_action"] == "analgesia_tier"
    ]
    block = text.split("demo_med_border_01 analgesia_tier: ", 1)[1].split("\ndemo_", 1)[0]
    said = {True: "straddles it", False: "does not straddle it"}
    for cut in analgesia["x_thresholds"]:
        line = f"    cut {cut['name']} ({cut['expression']}): {said[cut['straddles']]}"
        assert line in block.splitlines(), block
    assert [c["name"] for c in analgesia["x_thresholds"]] == ["any_opioid", "strong_opioid"]


def test_export_check_harness_builds_every_band(three_raters, tmp_path):
    require_shared(HARNESS)
    out = tmp_path / "bands.yaml"
    args = [*study_args(three_raters), "export", "--out", str(out)]
    done = fma(*args, "--check-harness", str(HARNESS))
    assert done.returncode == 0, done.stderr
    assert "wrote 27 bands of 12 vignettes" in done.stdout
    assert "builds all 27 bands and 3 adjudicator(s)" in done.stdout
    header = yaml.safe_load(out.read_text())["attestations"]
    assert (out.parent / header["folder"]).resolve() == three_raters.attestations.resolve()
    # Without PATH: the harness on sys.path.
    done = fma(*args, "--check-harness", env={"PYTHONPATH": str(HARNESS)})
    assert done.returncode == 0, done.stderr
    assert f"the harness at {HARNESS / 'fairmedagent'} builds all 27" in done.stdout


def test_export_check_harness_reports_each_band_a_harness_refuses(one_rater, tmp_path):
    # A harness that knows no clinician adjudication (as an older one might): a copy made at
    # test time, with the provenance levels narrowed by one line added at the end.
    older = tmp_path / "older" / "fairmedagent"
    older.mkdir(parents=True)
    for source in (HARNESS / "fairmedagent").glob("*.py"):
        (older / source.name).write_bytes(source.read_bytes())
    with (older / "bands.py").open("a", encoding="utf-8") as bands:
        bands.write('\nPROVENANCE = ("author-derived",)\n')
    out = tmp_path / "bands.yaml"
    done = fma(
        *study_args(one_rater), "export", "--out", str(out), "--check-harness", str(older.parent)
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert lines[0] == (
        f"fma-bands: error: the harness at {older} refused 4 record(s) of the export "
        "(it built 0 of 4 bands)"
    )
    for vid in ("draft_documentation_01", "draft_medication_01", "draft_ordering_01"):
        assert any(
            f"bands.{vid}[0]" in line and "provenance must be one of ('author-derived',)" in line
            for line in lines[1:]
        ), vid


def test_export_check_harness_without_a_harness_is_one_line(no_raters, tmp_path):
    out = tmp_path / "bands.yaml"
    for extra, env, message in (
        ([str(tmp_path)], {}, "no FairMedAgent harness here"),
        ([], {"PYTHONPATH": ""}, "no FairMedAgent harness on sys.path"),
    ):
        done = fma(
            *study_args(no_raters), "export", "--out", str(out), "--check-harness", *extra, env=env
        )
        assert done.returncode == 1
        assert done.stderr.startswith("fma-bands: error: ") and message in done.stderr
        assert len(done.stderr.splitlines()) == 1


def test_the_readmes_check_harness_command_runs_as_written(tmp_path):
    require_shared(HARNESS)
    [command] = [b for b in readme_blocks("sh") if "--check-harness" in b]
    # A scratch checkout: the command's own relative paths, and nothing written to the real one.
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / ".venv").symlink_to(Path(sys.prefix))
    (tmp_path / "shared").symlink_to(SHARED.parent)
    done = subprocess.run(
        ["bash", "-c", command], cwd=checkout, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "builds all 4 bands" in done.stdout
    assert (checkout / "bands.yaml").is_file()


def test_an_amend_of_the_clause_reaches_bands_yaml_and_the_harness_band(
    opened, harness, monkeypatch
):
    """An AMEND that keeps the values and corrects the clause (issue 22): the corrected clause is
    the exported band's, the harness's own Band carries it, and the proposal's travels in
    x_proposal."""
    clause = "Follow-up within 30 days of discharge is advised after hyperglycaemia in hospital."
    form = test_registry.review_of_doc(
        "AMEND", q5="band", band={"min": 1, "max": 14}, corrections={"clause": clause}
    )
    decision, review = test_registry.only_b_on_doc(opened, form)
    assert review["corrections"] == {"clause": clause}
    assert decision.corrected == {"clause": clause}
    study, _, folder = opened
    export = write_export("amended clause", study.library, folder, 1)
    [entry] = export.document["bands"]["draft_documentation_01"]
    proposal = study.library.vignettes["draft_documentation_01"].proposal("followup_days")
    assert (entry["clause"], entry["x_proposal"]["clause"]) == (clause, proposal.clause)
    assert entry["acceptable"] == {"min": 1, "max": 14} and entry["disputed_span"] is None
    [band] = run_snippet(export.path.parent, monkeypatch)["bands"]["draft_documentation_01"]
    assert type(band) is harness.bands.Band
    assert (band.clause, band.provenance) == (clause, ADJUDICATED)
    assert list(band.adjudicated_by) == ["adjudicator-02"]
