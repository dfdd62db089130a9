"""A seeded study at full scale, as real files and a real SQLite database, for the page and
command benchmarks: vignette files with a proposal for each of the nine sub-actions, a
coordinator and raters, every rater's submitted review of every band (bulk-inserted, each with
its audit event on a valid hash chain), the study's signed log (root, each rater's enrolment
and activation, a policy) and, optionally, each rater's signed attestation.

Everything signed goes through the store's log (fma_bands.study.ledger), as the app signs it.
Attestations signed while round 1 is open stay sealed in the store; attestations/ holds them as
it will once round 1 closes (published from a throwaway copy of the database with the round
closed), while the study's own database stays open so that the pages can still be used.

Used by `python -m benchmarks.bench_pages`; `build_study(folder, ...)` returns where it all is.
"""

from __future__ import annotations

import json
import random
import shutil
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import yaml
from sqlalchemy import insert

from benchmarks.generate_study import FOLLOWUP_TICKS, ORDERABLES
from fma_bands.core.bands import parse_band, to_file
from fma_bands.core.labels import address
from fma_bands.core.people import UserPublic
from fma_bands.core.vignettes import Library, load_library
from fma_bands.store.db import make_engine, session_scope, upgrade
from fma_bands.store.models import AuditEvent, Review
from fma_bands.study import audit
from fma_bands.study.case_keys import case_key
from fma_bands.study.enrolment import create_user
from fma_bands.study.library import sync_vignettes

DOMAINS = ("triage", "ordering", "medication", "documentation")
AMBIGUITIES = ("clear", "intermediate", "borderline")
PASSPHRASE = "benchmark passphrase"
GOOD_ANSWERS = {
    "q1": {"choice": "yes"},
    "q2": {"choice": "yes"},
    "q3": {"choice": "no"},
    "q4": {"choice": "no"},
    "q5": {"choice": "band", "note": "the band's reading fits this patient"},
    "q6": {"choice": "yes"},
}
IDENTITY = {
    "full_name": "Benchmark Clinician",
    "primary_qualification": "MBBS",
    "postgraduate_qualification": "FACEM",
    "registration_number": "MED0000000001",
    "registering_body": "Example Medical Board",
    "institution": "Example Hospital",
    "email": "clinician@example.org",
}
CORE = (
    "A {age}-year-old presents with {complaint} that began {hours} hours ago. Observations at "
    "triage: heart rate {hr}, blood pressure {sbp}/{dbp}, respiratory rate {rr}, oxygen "
    "saturation {spo2}% on air, temperature 37.{t} C. No known drug allergies; takes "
    "{medication}. Examination is otherwise unremarkable apart from the findings above, and the "
    "patient is able to give a clear history of the complaint and its course so far."
)
COMPLAINTS = (
    "central chest pressure radiating to the left arm",
    "right lower quadrant abdominal pain",
    "a severe occipital headache",
    "breathlessness on minimal exertion",
    "a painful swollen left calf",
    "dizziness on standing",
)


@dataclass(frozen=True)
class BenchStudy:
    vignettes: Path
    database_url: str
    attestations: Path
    identity_key: Path
    library: Library
    coordinator: UserPublic
    raters: tuple[UserPublic, ...]
    reviews: int

    def working_copy(self, name: str = "run.db") -> BenchStudy:
        """The same study on a fresh copy of its database, so that what a benchmark submits
        never changes the study the next run starts from."""
        source = Path(self.database_url.removeprefix("sqlite:///"))
        target = source.with_name(name)
        for suffix in ("-wal", "-shm"):
            target.with_name(target.name + suffix).unlink(missing_ok=True)
        shutil.copyfile(source, target)
        return replace(self, database_url=f"sqlite:///{target}")

    def address(self, vid: str, name: str | None = None) -> dict[str, str]:
        """The query parameters the app writes for a case (and band): the case by its token,
        keyed with the study's secret; a rater's address never finds a case by its id."""
        engine = make_engine(self.database_url)
        try:
            with session_scope(engine) as s:
                key = case_key(s)
        finally:
            engine.dispose()
        return address(vid, name, key=key)

    def env(self) -> dict[str, str]:
        """The FMA_BANDS_* variables that point the app and the command line at this study."""
        return {
            "FMA_BANDS_VIGNETTES": str(self.vignettes),
            "FMA_BANDS_DATABASE_URL": self.database_url,
            "FMA_BANDS_ATTESTATIONS": str(self.attestations),
            "FMA_BANDS_IDENTITY_KEY": str(self.identity_key),
            # The vignettes read before (evidence/kept_reads.py), the answers kept: the
            # benchmark's own, beside the study, never the user's cache.
            "FMA_BANDS_KEPT_ANSWERS": str(self.vignettes.parent / "kept-answers"),
        }


def _interval_or_set(rng: random.Random, floor: int, ceiling: int, *, sets: bool):
    lo = rng.randint(floor, ceiling)
    hi = min(ceiling, lo + rng.choice((0, 1, 1, 2)))
    if sets and rng.random() < 0.5:
        return list(range(lo, hi + 1))
    return {"min": lo, "max": hi}


def _proposals(rng: random.Random, orderables: list[str]) -> list[dict]:
    start = rng.randint(1, len(FOLLOWUP_TICKS) - 5)
    followup = {"min": FOLLOWUP_TICKS[start], "max": FOLLOWUP_TICKS[start + 2]}
    defensible = sorted(rng.sample(orderables, rng.randint(2, 4)))
    bands = {
        "esi_acuity": _interval_or_set(rng, 1, 5, sets=True),
        "urgency_score": {"min": 5 * rng.randint(2, 10), "max": 5 * rng.randint(11, 19)},
        "orders": {"required": defensible[:1], "defensible": defensible},
        "admit": rng.choice(([True], [False], [False, True])),
        "escalate_icu": rng.choice(([False], [False], [False, True])),
        "analgesia_tier": _interval_or_set(rng, 0, 3, sets=True),
        "controlled_substance_caution": rng.choice(([True], [False])),
        "referral": rng.choice(([True], [False], [False, True])),
        "followup_days": followup,
    }
    proposals = []
    for name, band in bands.items():
        proposal = {
            "sub_action": name,
            "acceptable": band,
            "provenance": "author-derived",
            "source": "Synthetic guideline for benchmarking, section 4.2",
            "clause": f"The clause that bears on {name.replace('_', ' ')} for this presentation.",
            "reasoning": "The core and, where the step shows them, the results support this band.",
        }
        if name == "followup_days":
            after = FOLLOWUP_TICKS[start + 3]
            proposal["disputed_span"] = {"min": followup["max"] + 1, "max": after}
            if rng.random() < 0.5:
                proposal["threshold"] = "value <= 14"
        proposals.append(proposal)
    return proposals


def write_vignettes(folder: Path, n: int, seed: int) -> Path:
    """n vignette files, each with a proposal for every sub-action (9 bands a vignette)."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for v in range(n):
        domain, ambiguity = DOMAINS[v % 4], AMBIGUITIES[(v // 4) % 3]
        vid = f"bench_{domain[:4]}_{ambiguity[:5]}_{v:04d}"
        orderables = rng.sample(ORDERABLES, 6)
        data = {
            "id": vid,
            "domain": domain,
            "ambiguity": ambiguity,
            "clinical_core": CORE.format(
                age=rng.randint(18, 90),
                complaint=rng.choice(COMPLAINTS),
                hours=rng.randint(1, 48),
                hr=rng.randint(55, 130),
                sbp=rng.randint(90, 190),
                dbp=rng.randint(50, 110),
                rr=rng.randint(12, 28),
                spo2=rng.randint(88, 100),
                t=rng.randint(0, 9),
                medication=rng.choice(("no regular medication", "metformin", "amlodipine")),
            ),
            "tool_results": {
                k: f"result of {k.replace('_', ' ')}: within limits" for k in orderables
            },
            "canary": f"FMA-CANARY-bench-{v:04d}-{rng.randrange(16**6):06x}",
            "proposals": _proposals(rng, orderables),
        }
        (folder / f"{vid}.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return folder


def _reading(rng: random.Random, name: str, proposal, orderables) -> object:
    """A rater's own band near the proposal, in the vignette-file form."""
    band = to_file(proposal.acceptable)
    if name == "orders" and isinstance(band, dict):
        defensible = sorted(set(band["defensible"]) ^ {rng.choice(orderables)}) or list(orderables)
        required = [r for r in band["required"] if r in defensible]
        return {"required": required, "defensible": defensible}
    if isinstance(band, dict):
        action = proposal.acceptable.action
        first, last = action.bounds or (min(action.values), max(action.values))
        step = 5 if name == "urgency_score" else 1
        lo = max(first, band["min"] - step * rng.randint(0, 1))
        hi = min(last, band["max"] + step * rng.randint(0, 2))
        return {"min": lo, "max": hi}
    domain = list(proposal.acceptable.action.domain())
    return sorted(set(band) | {rng.choice(domain)})


def unfinished_vignettes(library: Library) -> list:
    """The last tenth of the vignettes (at least one), which the first rater has still to do."""
    return list(library)[len(library) - max(1, len(library) // 10) :]


def _reviews(library: Library, raters, seed: int, start: datetime) -> list[dict]:
    """Every rater's submitted review of every band, except the last tenth of the vignettes for
    the first rater: the one the benchmark times is still at work."""
    rng = random.Random(seed + 1)
    rows = []
    unfinished = {v.id for v in unfinished_vignettes(library)}
    for r, rater in enumerate(raters):
        when = start + timedelta(minutes=r)
        for vignette in library:
            if r == 0 and vignette.id in unfinished:
                continue
            for proposal in vignette.proposals:
                when += timedelta(seconds=rng.randint(40, 300))
                draw = rng.random()
                verdict = "DECLINE" if draw < 0.05 else "ACCEPT" if draw < 0.55 else "AMEND"
                band = None
                if verdict == "AMEND":
                    raw = _reading(rng, proposal.sub_action, proposal, list(vignette.orderables))
                    band = to_file(
                        parse_band(proposal.sub_action, raw, orderables=vignette.orderables)
                    )
                rows.append(
                    {
                        "vignette_id": vignette.id,
                        "sub_action": proposal.sub_action,
                        "rater_id": rater.id,
                        "revision": 1,
                        "status": "submitted",
                        "mode": "review",
                        "verdict": verdict,
                        "band": band,
                        "answers": GOOD_ANSWERS,
                        "reason": "Benchmark reason: one sentence on the band.",
                        "context_digest": vignette.context_digest_for(proposal.sub_action),
                        "band_digest": proposal.band_digest,
                        "proposal_digest": proposal.proposal_digest,
                        "origin": "browser",
                        "version": 1,
                        "created_at": when - timedelta(seconds=30),
                        "updated_at": when,
                        "submitted_at": when,
                    }
                )
    return rows


def _events(session, reviews: list[dict], names: dict[int, str]) -> list[dict]:
    """One review_submitted event per review, chained to the events already in the log."""
    seq, prev = audit.head(session) or (0, audit.GENESIS)
    events = []
    for row in sorted(reviews, key=lambda r: r["submitted_at"]):
        seq += 1
        payload = {
            "vignette_id": row["vignette_id"],
            "sub_action": row["sub_action"],
            "revision": 1,
            "verdict": row["verdict"],
            "supersedes_revision": None,
        }
        actor, at = names[row["rater_id"]], row["submitted_at"]
        digest = audit.event_hash(
            at=at, actor=actor, kind="review_submitted", payload=payload, prev_hash=prev
        )
        events.append(
            {
                "seq": seq,
                "at": at,
                "actor": actor,
                "kind": "review_submitted",
                "payload": payload,
                "prev_hash": prev,
                "hash": digest,
            }
        )
        prev = digest
    return events


def _reused(folder: Path, wanted: dict) -> BenchStudy | None:
    """The study already built in `folder` with these parameters, if there is one."""
    from fma_bands.study.users import list_users

    marker = folder / "study.json"
    if not marker.exists() or json.loads(marker.read_text())["parameters"] != wanted:
        return None
    url = f"sqlite:///{folder / 'fma-bands.db'}"
    engine = make_engine(url)
    with session_scope(engine) as s:
        users = list_users(s)
    engine.dispose()
    [coordinator] = [u for u in users if u.is_coordinator]
    raters = tuple(sorted((u for u in users if not u.is_coordinator), key=lambda u: u.pseudonym))
    library = load_library([folder / "vignettes"])
    reviews = json.loads(marker.read_text())["reviews"]
    return BenchStudy(
        folder / "vignettes",
        url,
        folder / "attestations",
        folder / "identity.key",
        library,
        coordinator,
        raters,
        reviews,
    )


def _publish_as_closed(engine, folder: Path, coordinator: UserPublic, attestations: Path) -> None:
    """Write to `attestations` what closing round 1 would: from a throwaway copy of the database
    with the round closed, so that the study's own database keeps its round open."""
    from fma_bands.study.ledger import publish
    from fma_bands.study.rounds import close_round

    source = Path(str(engine.url.database))
    copy = folder / "closing.db"
    with engine.connect() as connection:  # the WAL's pages into the file before copying it
        connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    shutil.copyfile(source, copy)
    closing = make_engine(f"sqlite:///{copy}")
    with session_scope(closing) as s:
        close_round(s, actor=coordinator)
    with session_scope(closing) as s:
        publish(s, attestations)
    closing.dispose()
    for suffix in ("", "-wal", "-shm"):
        copy.with_name(copy.name + suffix).unlink(missing_ok=True)


def build_study(
    folder: Path,
    *,
    n_vignettes: int,
    n_raters: int,
    seed: int = 20261129,
    sign: bool = True,
    reuse: bool = False,
) -> BenchStudy:
    """Everything under `folder`: vignettes/, fma-bands.db, attestations/, identity.key; with
    `reuse`, a study built there before with the same parameters is used as it is."""
    from fma_bands.core.protocol import DECLARATIONS
    from fma_bands.evidence.policy import Policy
    from fma_bands.study.governance import set_policy
    from fma_bands.study.identity import set_identity
    from fma_bands.study.signing import attest

    wanted = {"vignettes": n_vignettes, "raters": n_raters, "seed": seed, "sign": sign}
    if reuse and (found := _reused(folder, wanted)) is not None:
        return found
    # A study built here before with other parameters is replaced whole: its log is another's.
    shutil.rmtree(folder / "attestations", ignore_errors=True)
    for suffix in ("", "-wal", "-shm"):
        (folder / f"fma-bands.db{suffix}").unlink(missing_ok=True)
    vignettes = write_vignettes(folder / "vignettes", n_vignettes, seed)
    library = load_library([vignettes])
    assert library.ok, library.problems[:3]
    url = f"sqlite:///{folder / 'fma-bands.db'}"
    attestations, key = folder / "attestations", folder / "identity.key"
    engine = make_engine(url)
    upgrade(engine)
    with session_scope(engine) as s:
        sync_vignettes(s, library, actor=None)
        coordinator = create_user(
            s,
            actor=None,
            pseudonym="coordinator",
            passphrase=PASSPHRASE,
            role="coordinator",
            folder=attestations,
        )
        raters = tuple(
            create_user(
                s,
                actor="coordinator",
                pseudonym=f"adjudicator-{r + 1:02d}",
                passphrase=PASSPHRASE,
                root_passphrase=PASSPHRASE,
                folder=attestations,
                role="rater",
                specialty=("emergency medicine", "general medicine")[r % 2],
                jurisdiction="Australia",
                years_post_registration=5 + r,
            )
            for r in range(n_raters)
        )
        default = Policy()
        set_policy(
            s,
            attestations,
            actor=coordinator,
            passphrase=PASSPHRASE,
            quorum=default.quorum,
            scope=default.scope,
        )
        for rater in raters:
            set_identity(
                s,
                actor=coordinator,
                pseudonym=rater.pseudonym,
                record=IDENTITY,
                key_path=key,
                passphrase=PASSPHRASE,
                folder=None,
            )
    start = datetime(2026, 11, 20, 8, 0, tzinfo=UTC)
    rows = _reviews(library, raters, seed, start)
    with session_scope(engine) as s:
        s.execute(insert(Review), rows)
        names = {r.id: r.pseudonym for r in raters}
        s.execute(insert(AuditEvent), _events(s, rows, names))
    if sign:
        for rater in raters:
            with session_scope(engine) as s:
                attest(
                    s,
                    library,
                    rater=rater,
                    passphrase=PASSPHRASE,
                    meaning="adjudication",
                    declarations=list(DECLARATIONS),
                    folder=attestations,
                )
        _publish_as_closed(engine, folder, coordinator, attestations)
    engine.dispose()
    (folder / "study.json").write_text(json.dumps({"parameters": wanted, "reviews": len(rows)}))
    return BenchStudy(vignettes, url, attestations, key, library, coordinator, raters, len(rows))
