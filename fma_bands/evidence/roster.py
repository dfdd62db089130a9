"""The enrolled adjudicators as attestations/ establishes them: each self-signed public record
checked against the key it names, the keys of one pseudonym in the order they were activated, and
adjudicators.yaml (generated from those records) compared with them. Files alone, no database.
"""

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from fma_bands.core.errors import FmaBandsError
from fma_bands.core.files import read_yaml, write_atomically
from fma_bands.evidence.envelope import (
    MAX_ENVELOPE_BYTES,
    CheckedEnvelope,
    claimed_kind,
    envelope_files,
    load_envelope,
    may_be_a_record,
    verify_signers,
)
from fma_bands.evidence.keys import keyid_for

ADJUDICATORS_FILE = "adjudicators.yaml"
ADJUDICATORS_FORMAT = "fma-bands/adjudicators/v2"
# What a public record says, in the order adjudicators.yaml lists it.
RECORD_FIELDS = (
    "pseudonym",
    "specialty",
    "jurisdiction",
    "years_post_registration",
    "anonymous_to_readers",
    "identity_commitment",
    "keyid",
    "public_key",
    "demo",
)


@dataclass
class KeyUse:
    """One key of one adjudicator: from its first self-signed record until the next key's."""

    keyid: str
    public_key: str
    since: str
    until: str | None = None  # retired when the adjudicator activated a later key


@dataclass
class Adjudicator:
    """What the self-signed records of one pseudonym establish."""

    pseudonym: str
    record: dict[str, Any]  # the latest signed public record
    keys: list[KeyUse]
    files: list[str]
    duplicate_keys: set[str] = field(default_factory=set)

    def key(self, keyid: str) -> KeyUse | None:
        return next((k for k in self.keys if k.keyid == keyid), None)

    def as_published(self) -> dict[str, Any]:
        """The entry adjudicators.yaml carries for this adjudicator."""
        entry: dict[str, Any] = {k: self.record.get(k) for k in RECORD_FIELDS}
        entry["keys"] = [
            {"keyid": k.keyid, "public_key": k.public_key, "since": k.since, "retired": k.until}
            for k in self.keys
        ]
        entry["record_files"] = list(self.files)
        return entry


def check_record(checked: CheckedEnvelope) -> None:
    """A public record counts only if the key it names signed it (proof the key holder claims
    it); anything else is an unsigned record."""
    try:
        record = checked.claimed["predicate"]["record"]  # type: ignore[index]
        keyid, public_key = record["keyid"], record["public_key"]
        honest = isinstance(keyid, str) and keyid == keyid_for(public_key)
    except (KeyError, TypeError, FmaBandsError):
        honest = False
    if not honest:
        checked.fail("unsigned_record", "the record's key id is not the hash of its public key")
        return
    keyids = verify_signers(checked, {keyid: public_key})
    if keyids is None:
        code, message = checked.error or ("unsigned_record", "")
        checked.fail("unsigned_record", f"not signed by the key it names ({code}: {message})")
        return
    checked.statement = checked.claimed
    checked.pseudonym = record["pseudonym"]
    checked.keyid = keyid


def _from_records(records: list[CheckedEnvelope]) -> dict[str, Adjudicator]:
    by_name: dict[str, list[CheckedEnvelope]] = {}
    for env in records:
        if env.error is None and env.pseudonym:
            by_name.setdefault(env.pseudonym, []).append(env)
    found: dict[str, Adjudicator] = {}
    for name, group in by_name.items():
        group.sort(key=lambda e: e.signed_at)
        keys: list[KeyUse] = []
        for env in group:
            record = env.predicate["record"]
            if not any(k.keyid == record["keyid"] for k in keys):
                if keys:
                    keys[-1].until = env.signed_at
                keys.append(KeyUse(record["keyid"], record["public_key"], env.signed_at))
        latest = group[-1].predicate["record"]
        found[name] = Adjudicator(name, dict(latest), keys, [e.path.name for e in group])
    owners: dict[str, set[str]] = {}
    for adjudicator in found.values():
        for key in adjudicator.keys:
            owners.setdefault(key.keyid, set()).add(adjudicator.pseudonym)
    for keyid, names in owners.items():
        if len(names) > 1:
            for name in names:
                found[name].duplicate_keys.add(keyid)
    return found


def check_records(
    loaded: list[CheckedEnvelope],
) -> tuple[list[CheckedEnvelope], dict[str, Adjudicator]]:
    """The public records among `loaded`, each checked, and the adjudicators they establish."""
    records = [e for e in loaded if claimed_kind(e) == "record"]
    for env in records:
        check_record(env)
    return records, _from_records(records)


def published_mismatches(
    folder: Path, adjudicators: dict[str, Adjudicator]
) -> list[tuple[str, str]]:
    """adjudicators.yaml is generated from the signed records; where it says anything else,
    somebody edited it, and only the signed record counts."""
    path = Path(folder) / ADJUDICATORS_FILE
    if not path.is_file():
        return []
    try:
        data = read_yaml(path, limit=MAX_ENVELOPE_BYTES, what="adjudicators file") or {}
        entries = data["adjudicators"]
        published = {e["pseudonym"]: e for e in entries}
    except FmaBandsError as exc:
        return [("unsigned_record", f"{ADJUDICATORS_FILE} is not readable ({exc.message})")]
    except (KeyError, TypeError) as exc:
        return [("unsigned_record", f"{ADJUDICATORS_FILE} is not readable ({exc})")]
    problems = []
    for name, entry in published.items():
        signed = adjudicators.get(name)
        if signed is None:
            problems.append(
                (
                    "unsigned_record",
                    f"{ADJUDICATORS_FILE} lists {name}, who has no self-signed record: ignored",
                )
            )
            continue
        expected = signed.as_published()
        for key in (*RECORD_FIELDS, "keys"):
            if entry.get(key) != expected.get(key):
                problems.append(
                    (
                        "unsigned_record",
                        f"{ADJUDICATORS_FILE} gives {name}'s {key} as {entry.get(key)!r}, not as "
                        f"their signed record does ({expected.get(key)!r}): the signed record "
                        "counts",
                    )
                )
    return problems


def read_adjudicators(folder: Path) -> dict[str, dict[str, Any]]:
    """pseudonym -> the latest public record that the adjudicator's own key signed: what
    log.read_evidence(folder).records() gives, reading in full only the envelopes that can be
    public records (every start of the app and of a command that opens the store asks)."""
    loaded = [load_envelope(p, wanted=("records", may_be_a_record)) for p in envelope_files(folder)]
    _, adjudicators = check_records(loaded)
    return {name: a.as_published() for name, a in sorted(adjudicators.items())}


def adjudicators_text(folder: Path) -> str:
    """adjudicators.yaml as the self-signed records in the folder make it."""
    records = read_adjudicators(folder)
    document = {"format": ADJUDICATORS_FORMAT, "adjudicators": list(records.values())}
    header = (
        "# Generated from the self-signed public records (*-record.dsse.json) beside it, for\n"
        "# people to read. fma-bands verify and the registry read the signed records, never this\n"
        "# file. No private identity is kept here.\n"
    )
    return header + yaml.safe_dump(document, sort_keys=False, allow_unicode=True)


def publish_adjudicators(folder: Path) -> Path:
    """Write attestations/adjudicators.yaml from the self-signed records in the folder alone."""
    return write_atomically(Path(folder) / ADJUDICATORS_FILE, adjudicators_text(folder))
