"""The study's log as attestations/ holds it, read from the files alone.

Every signed record names its study, its sequence number and the digest of the record before it:
one chain, as in Certificate Transparency, that starts at the study's root record (signed by the
study's root key). Walking it from the root decides everything by position, never by a claimed
time: which keys the root-signed roster gives to which adjudicator and when, which policy is in
force, which attestation is a rater's latest, which was revoked. A fork, a gap, or a record that
claims the next place and does not verify makes the folder invalid (the registry then grants
nothing); a file that is not part of the chain is a stray and changes nothing.
"""

import hashlib
import os
import re
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fma_bands.core.errors import FmaBandsError, escape_surrogates
from fma_bands.core.files import read_bounded_bytes
from fma_bands.core.markup import terminal_escape
from fma_bands.evidence.dsse import STATEMENT_TYPE
from fma_bands.evidence.envelope import (
    ENVELOPE_SUFFIX,
    MAX_ENVELOPE_BYTES,
    TYPE_OF,
    CheckedEnvelope,
    check_signature,
    envelope_files,
    load_envelope,
    verify_signers,
)
from fma_bands.evidence.kept_parses import keep_parses, recall_parses
from fma_bands.evidence.keys import keyid_for
from fma_bands.evidence.policy import Policy, check_policy
from fma_bands.evidence.shapes import chair_decision_well_formed

if TYPE_CHECKING:
    # Only a type here: `fma-bands verify` reads envelopes, never vignettes, and the vignettes'
    # band models are slow to import.
    from fma_bands.core.vignettes import Proposal

ROOT_SIGNED = ("enrolment", "identity", "policy", "approval")
# Records that take effect only once the root's threshold of keys has signed them.
NEEDS_THRESHOLD = ("enrolment", "identity", "policy")
ROLES = ("rater", "steward")
PSEUDONYM = re.compile(r"[a-z0-9][a-z0-9_-]{2,39}")
COMMITMENT = re.compile(r"sha256:[0-9a-f]{64}")


def subject_name(vignette_id: str, sub_action: str) -> str:
    return f"{vignette_id}/{sub_action}"


def proposal_digest(proposal: "Proposal") -> str:
    """The digest of the whole proposal a rater judged: values, disputed span, threshold, source,
    clause, reasoning, notes and provenance. A change to any of them after signing shows."""
    return proposal.proposal_digest


def study_id_for(root_keyids: Iterable[str]) -> str:
    """A study's id, made from its root keys' ids: pinning the id pins the root, so nobody can
    sign a whole new log under the same id with keys of their own."""
    joined = "\n".join(sorted(root_keyids)).encode()
    return "fma-" + hashlib.sha256(joined).hexdigest()[:32]


def activation_check(proof: str) -> str:
    """What an enrolment record commits to: the hash of the proof the activation reveals, which
    only the holder of the enrolment code can compute before it is revealed."""
    return "sha256:" + hashlib.sha256(proof.encode()).hexdigest()


def record_statement(
    kind: str,
    *,
    study: str,
    sequence: int,
    previous: str | None,
    signer: dict[str, Any],
    signed_at: str,
    subject: list[dict[str, Any]],
    body: dict[str, Any],
    audit_head: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The in-toto statement of one record of the log, at its place in the chain."""
    predicate = {
        "log": {"study": study, "sequence": sequence, "previous": previous},
        "signer": signer,
        "signed_at": signed_at,
        **body,
    }
    if audit_head is not None:
        predicate["audit_head"] = audit_head
    return {
        "_type": STATEMENT_TYPE,
        "subject": subject,
        "predicateType": TYPE_OF[kind],
        "predicate": predicate,
    }


def file_name(sequence: int, kind: str, who: str, payload_sha256: str) -> str:
    """A record's file: its place first (ls lists the chain in order), then what and whose, then
    the start of its digest (so no name can be taken before the record exists)."""
    return f"{sequence:06d}-{kind}-{who}-{payload_sha256[:12]}{ENVELOPE_SUFFIX}"


# What the walk establishes --------------------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    """Something wrong with the folder: `file` names the file ('' for the folder itself)."""

    file: str
    code: str
    message: str

    def __post_init__(self) -> None:
        # A file's name is whatever the folder holds, and pages and terminals show it.
        object.__setattr__(self, "file", escape_surrogates(self.file))
        object.__setattr__(self, "message", escape_surrogates(self.message))

    def as_dict(self) -> dict[str, str]:
        return {"file": self.file, "code": self.code, "message": self.message}

    def __str__(self) -> str:
        # A file name is whatever the folder holds: it may not act on a terminal or a log.
        return terminal_escape(
            f"{self.file}: {self.code}: {self.message}"
            if self.file
            else f"{self.code}: {self.message}"
        )


@dataclass
class KeyUse:
    """One key of one adjudicator: it counts from record `since` until record `until`."""

    keyid: str
    public_key: str
    since: int
    until: int | None = None


@dataclass
class Adjudicator:
    """What the root-signed roster and the activations establish about one pseudonym."""

    pseudonym: str
    role: str
    record: dict[str, Any]  # the public fields of the latest effective enrolment
    keys: list[KeyUse] = field(default_factory=list)
    files: list[str] = field(default_factory=list)

    def key(self, keyid: str) -> KeyUse | None:
        return next((k for k in self.keys if k.keyid == keyid), None)

    def as_published(self) -> dict[str, Any]:
        """The entry adjudicators.yaml carries for this adjudicator."""
        return {
            **self.record,
            "role": self.role,
            "keys": [
                {"keyid": k.keyid, "public_key": k.public_key, "since": k.since, "until": k.until}
                for k in self.keys
            ],
            "record_files": list(self.files),
        }


@dataclass
class Evidence:
    """Everything attestations/ establishes, read from its files alone."""

    folder: Path
    study: str | None = None
    root_keys: dict[str, str] = field(default_factory=dict)  # keyid -> holder's pseudonym
    root_public: dict[str, str] = field(default_factory=dict)  # keyid -> public key
    threshold: int = 1
    chain: list[CheckedEnvelope] = field(default_factory=list)  # verified, in order
    adjudicators: dict[str, Adjudicator] = field(default_factory=dict)
    policy: Policy | None = None
    policy_file: str | None = None
    revoked: set[str] = field(default_factory=set)  # digests of revoked attestations
    # digest of each chair's decision -> the chair the policy in force at its place named
    chairs: dict[str, str | None] = field(default_factory=dict)
    # digest -> (file, root keys that signed it) of each record awaiting the root's threshold
    waiting: dict[str, tuple[str, set[str]]] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)  # any of them: the folder is invalid
    strays: list[Problem] = field(default_factory=list)  # reported; they change nothing

    @property
    def valid(self) -> bool:
        return not self.problems and self.study is not None

    @property
    def head(self) -> tuple[int, str]:
        """(sequence, digest) of the newest record of the chain; (-1, '') for none."""
        if not self.chain:
            return -1, ""
        last = self.chain[-1]
        return last.position[1], last.digest  # type: ignore[index]

    def adjudications(self) -> list[CheckedEnvelope]:
        return [e for e in self.chain if e.kind == "adjudication"]

    def chair_decisions(self) -> list[CheckedEnvelope]:
        """The chair's decisions of the chain, in order (each verified at its place)."""
        return [e for e in self.chain if e.kind == "chair_decision"]

    def records(self) -> dict[str, dict[str, Any]]:
        """pseudonym -> the public record of every rostered adjudicator (raters only)."""
        return {
            name: a.as_published()
            for name, a in sorted(self.adjudicators.items())
            if a.role == "rater"
        }

    def summary(self) -> str:
        """One sentence on why the folder is invalid, naming the first problem."""
        if self.valid:
            return "the folder verifies"
        first = self.problems[0] if self.problems else Problem("", "folder_invalid", "no root")
        more = len(self.problems) - 1
        return f"{first}" + (f" (and {more} more)" if more > 0 else "")


# The walk -------------------------------------------------------------------------------------

Effect = Callable[[], None]


class _Walk:
    """The chain walked from its root: the state of the roster, the root and the policy at the
    current position, and the checks each kind of record must pass to take the next place."""

    def __init__(self, evidence: Evidence) -> None:
        self.evidence = evidence
        self.roots: dict[str, tuple[str, str]] = {}  # keyid -> (public key, holder)
        self.enrolments: dict[str, dict[str, Any]] = {}  # digest -> enrolment and its state
        self.latest_enrolment: dict[str, str] = {}  # pseudonym -> digest of its newest
        self.owners: dict[str, str] = {}  # keyid -> pseudonym, every key ever bound
        self.waiting: dict[str, dict[str, Any]] = {}  # digest -> record awaiting signatures
        self.signed_by: dict[str, str] = {}  # adjudication digest -> pseudonym
        self.identities: dict[str, str] = {}  # pseudonym -> root-signed identity commitment

    # Checking one candidate: (code, message) when it cannot take the place, else its effect.

    def check(self, env: CheckedEnvelope, sequence: int) -> tuple[str, str] | Effect:
        kind = env.kind
        try:
            if kind == "root":
                return ("malformed", "only the first record of a log is its root")
            if kind in ROOT_SIGNED:
                return self._root_signed(env, sequence)
            if kind == "activation":
                return self._activation(env, sequence)
            if kind in ("adjudication", "revocation", "chair_decision"):
                return self._by_adjudicator(env, sequence)
        except FmaBandsError as exc:
            return ("malformed", f"the {kind} record is not valid: {exc.message}")
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            return (
                "malformed",
                f"the {kind} record lacks a field or has one of the wrong type ({exc})",
            )
        return ("malformed", f"a record of unknown kind {kind!r}")

    def _root_signer(self, env: CheckedEnvelope) -> tuple[str, str] | str:
        trusted = {keyid: public for keyid, (public, _) in self.roots.items()}
        keyids = verify_signers(env, trusted)
        if keyids is None:
            assert env.error is not None
            code, message = env.error
            if code == "unknown_key":
                return ("unrostered_key", "it is not signed by a root key of the study")
            return code, message
        return keyids[0]

    def _root_signed(self, env: CheckedEnvelope, sequence: int) -> tuple[str, str] | Effect:
        signer = self._root_signer(env)
        if isinstance(signer, tuple):
            return signer
        predicate = env.predicate
        if predicate["signer"].get("keyid") != signer:
            return ("malformed", "the signer it names is not the root key that signed it")
        digest = env.digest
        if env.kind == "approval":
            approves = predicate["approves"]
            waiting = self.waiting.get(approves)
            if waiting is None:
                return (
                    "malformed",
                    f"it approves {str(approves)[:19]}, no record awaiting approval",
                )
            if signer in waiting["signers"]:
                return ("malformed", "the same root key approves the same record twice")
            return lambda: self._sign(approves, signer, sequence, env)
        if env.kind == "policy":
            wanted = predicate["policy"]
            if set(wanted) - {"chair"} != {"quorum", "scope"} or wanted.get("chair", "") is None:
                return ("malformed", "a policy is exactly a quorum, a scope and maybe a chair")
            policy = check_policy(wanted["quorum"], wanted["scope"], chair=wanted.get("chair"))

            def policy_effect(_at: int) -> None:
                self.evidence.policy, self.evidence.policy_file = policy, env.path.name

            return lambda: self._propose(digest, signer, sequence, env, policy_effect)
        if env.kind == "identity":
            return self._identity(env, signer, sequence)
        enrolment = _enrolment(predicate["enrolment"])
        if isinstance(enrolment, tuple):
            return enrolment
        name = enrolment["pseudonym"]
        if name in {holder for _, holder in self.roots.values()}:
            return ("malformed", f"{name} holds a root key and cannot be enrolled again")

        def enrol() -> None:
            self.enrolments[digest] = {**enrolment, "effective": None, "activation": None}
            self.latest_enrolment[name] = digest
            # Resetting a steward cannot wait for the steward who lost their key.
            self._propose(
                digest,
                signer,
                sequence,
                env,
                lambda at: self._enrolment_takes_effect(digest, at),
                excluding=name,
            )

        return enrol

    def _identity(
        self, env: CheckedEnvelope, signer: str, sequence: int
    ) -> tuple[str, str] | Effect:
        """A rater's identity commitment, as the root signs it into the roster."""
        identity = env.predicate["identity"]
        name, commitment = identity["pseudonym"], identity["identity_commitment"]
        if not isinstance(commitment, str) or not COMMITMENT.fullmatch(commitment):
            return ("malformed", "the identity commitment is not a sha256 digest")
        enrolment = self.enrolments.get(self.latest_enrolment.get(name, ""))
        if enrolment is None or enrolment["role"] != "rater":
            return ("unrostered_key", f"no root-signed enrolment of a rater {name} precedes it")

        def takes_effect(_at: int) -> None:
            self.identities[name] = commitment
            if (adjudicator := self.evidence.adjudicators.get(name)) is not None:
                adjudicator.record["identity_commitment"] = commitment

        return lambda: self._propose(env.digest, signer, sequence, env, takes_effect)

    def _propose(
        self,
        digest: str,
        signer: str,
        sequence: int,
        env: CheckedEnvelope,
        effect: Callable[[int], None],
        excluding: str | None = None,
    ) -> None:
        others = sum(holder != excluding for _, holder in self.roots.values())
        self.waiting[digest] = {
            "signers": set(),
            "threshold": max(1, min(self.evidence.threshold, others)),
            "effect": effect,
            "file": env.path.name,
        }
        self._sign(digest, signer, sequence, env)

    def _sign(self, digest: str, signer: str, sequence: int, env: CheckedEnvelope) -> None:
        waiting = self.waiting[digest]
        waiting["signers"].add(signer)
        if len(waiting["signers"]) >= waiting["threshold"]:
            del self.waiting[digest]
            waiting["effect"](sequence)

    def _enrolment_takes_effect(self, digest: str, sequence: int) -> None:
        enrolment = self.enrolments[digest]
        enrolment["effective"] = sequence
        name = enrolment["pseudonym"]
        if self.latest_enrolment.get(name) != digest:
            return  # a later enrolment of the same person was proposed since: it governs
        adjudicator = self.evidence.adjudicators.get(name)
        if adjudicator is None:
            adjudicator = Adjudicator(name, enrolment["role"], {})
            self.evidence.adjudicators[name] = adjudicator
        for key in adjudicator.keys:
            if key.until is None:  # a reset: the key in use stops counting here
                key.until = sequence
                if self.roots.pop(key.keyid, None) is not None:
                    self.evidence.root_keys.pop(key.keyid, None)
                    self.evidence.root_public.pop(key.keyid, None)
                    self.evidence.threshold = min(self.evidence.threshold, len(self.roots))
        adjudicator.record = _public_fields(enrolment)
        if name in self.identities:
            adjudicator.record["identity_commitment"] = self.identities[name]
        if enrolment["activation"] is not None:
            self._bind(digest, sequence)

    def _activation(self, env: CheckedEnvelope, sequence: int) -> tuple[str, str] | Effect:
        activation = env.predicate["activation"]
        name, keyid, public = activation["pseudonym"], activation["keyid"], activation["public_key"]
        if not _named_by(keyid, public):
            return ("malformed", "the activation's key id is not the hash of its public key")
        if verify_signers(env, {keyid: public}) is None:
            assert env.error is not None
            return env.error
        if env.predicate["signer"].get("keyid") != keyid:
            return ("malformed", "an activation is signed by the key it activates")
        digest = activation["enrolment"]
        enrolment = self.enrolments.get(digest)
        if enrolment is None or enrolment["pseudonym"] != name:
            return ("unrostered_key", f"no root-signed enrolment of {name} is named by it")
        if self.latest_enrolment.get(name) != digest:
            return ("unrostered_key", f"it names an enrolment of {name} that a later one replaced")
        if enrolment["activation"] is not None:
            return ("unrostered_key", f"that enrolment of {name} was activated already")
        proof = activation["proof"]
        if not isinstance(proof, str) or activation_check(proof) != enrolment["activation_check"]:
            return ("unrostered_key", "its proof is not the one the enrolment commits to")
        if keyid in self.owners:
            return (
                "duplicate_key",
                f"the key {keyid} was enrolled before, for {self.owners[keyid]}",
            )
        demo = activation.get("demo") is True

        def effect() -> None:
            enrolment["activation"] = {"keyid": keyid, "public_key": public, "demo": demo}
            self.owners[keyid] = name
            if enrolment["effective"] is not None:
                self._bind(digest, sequence)

        return effect

    def _bind(self, digest: str, sequence: int) -> None:
        """The enrolment's activated key counts from `sequence` for its pseudonym."""
        enrolment = self.enrolments[digest]
        adjudicator = self.evidence.adjudicators[enrolment["pseudonym"]]
        activation = enrolment["activation"]
        adjudicator.keys.append(KeyUse(activation["keyid"], activation["public_key"], sequence))
        adjudicator.record["demo"] = activation["demo"]
        if enrolment["role"] == "steward":
            self.roots[activation["keyid"]] = (activation["public_key"], enrolment["pseudonym"])
            self.evidence.root_keys[activation["keyid"]] = enrolment["pseudonym"]
            self.evidence.root_public[activation["keyid"]] = activation["public_key"]
            self.evidence.threshold = min(enrolment["threshold"], len(self.roots))

    def _by_adjudicator(self, env: CheckedEnvelope, sequence: int) -> tuple[str, str] | Effect:
        signer = env.predicate["signer"]
        name, keyid = signer["pseudonym"], signer["keyid"]
        adjudicator = self.evidence.adjudicators.get(name)
        use = adjudicator.key(keyid) if adjudicator is not None else None
        if adjudicator is None or adjudicator.role != "rater" or use is None:
            return ("unrostered_key", f"the root-signed roster gives no key {keyid} to {name}")
        if use.until is not None:
            return ("unknown_key", f"signed with a key of {name} retired at record {use.until}")
        if verify_signers(env, {keyid: use.public_key}) is None:
            assert env.error is not None
            return env.error
        if env.kind == "revocation":
            revokes = env.predicate["revokes"]
            if self.signed_by.get(revokes) != name:
                return ("malformed", f"it revokes {str(revokes)[:19]}, no attestation of {name}'s")

            def revoke() -> None:
                self.evidence.revoked.add(revokes)

            return revoke
        if env.kind == "chair_decision":
            if not chair_decision_well_formed(env.predicate.get("decision")):
                return ("malformed", "its decision lacks the band, the band chosen or a reason")
            # Who was chair here is kept: the registry counts a decision only from the rater
            # the policy named chair at its place in the log (and still names).
            chair = self.evidence.policy.chair if self.evidence.policy is not None else None

            def decided() -> None:
                self.evidence.chairs[env.digest] = chair

            return decided
        if env.lacks is not None:
            return ("malformed", env.lacks)

        def signed() -> None:
            self.signed_by[env.digest] = name

        return signed


def _enrolment(fields: Any) -> dict[str, Any] | tuple[str, str]:
    if not isinstance(fields, dict):
        return ("malformed", "the enrolment is not a mapping")
    name, role = fields.get("pseudonym"), fields.get("role")
    if not isinstance(name, str) or not PSEUDONYM.fullmatch(name):
        return ("malformed", f"the enrolment's pseudonym {name!r} is not a pseudonym")
    if role not in ROLES:
        return ("malformed", f"the enrolment's role {role!r} is not rater or steward")
    if not isinstance(fields.get("activation_check"), str):
        return ("malformed", "the enrolment commits to no activation")
    for key in ("specialty", "jurisdiction"):
        if not isinstance(fields.get(key), str | None):
            return ("malformed", f"the enrolment's {key} is not text")
    years = fields.get("years_post_registration")
    if years is not None and (isinstance(years, bool) or not isinstance(years, int)):
        return ("malformed", "the enrolment's years since registration is not a whole number")
    if not isinstance(fields.get("anonymous_to_readers", True), bool):
        return ("malformed", "the enrolment's anonymous_to_readers is not true or false")
    threshold = fields.get("threshold", 1)
    if role == "steward" and (
        isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 1
    ):
        return ("malformed", "a steward's enrolment names the new threshold, a whole number")
    return dict(fields, threshold=threshold)


def _public_fields(enrolment: dict[str, Any]) -> dict[str, Any]:
    return {
        "pseudonym": enrolment["pseudonym"],
        "specialty": enrolment.get("specialty"),
        "jurisdiction": enrolment.get("jurisdiction"),
        "years_post_registration": enrolment.get("years_post_registration"),
        "anonymous_to_readers": enrolment.get("anonymous_to_readers", True),
        "demo": False,
    }


def _root(env: CheckedEnvelope) -> tuple[dict[str, tuple[str, str]], int] | tuple[str, str]:
    """The root record's keys and threshold, if it is signed by them; else (code, message)."""
    try:
        root = env.predicate["root"]
        keys = {k["keyid"]: (k["public_key"], k["holder"]) for k in root["keys"]}
        threshold = root["threshold"]
    except (KeyError, TypeError):
        return ("malformed", "the root record names no keys and threshold")
    if (
        isinstance(threshold, bool)
        or not isinstance(threshold, int)
        or not 1 <= threshold <= len(keys)
    ):
        return ("malformed", "the root's threshold is not a number of its keys")
    if not all(_named_by(k, p) and isinstance(h, str) for k, (p, h) in keys.items()):
        return ("malformed", "a root key's id is not the hash of its public key")
    signers = verify_signers(env, {k: p for k, (p, _) in keys.items()})
    if signers is None:
        assert env.error is not None
        return env.error
    if len(signers) < threshold:
        return ("unrostered_key", f"signed by {len(signers)} of the {threshold} root keys it needs")
    if env.position is None or env.position[2] is not None:
        return ("malformed", "the root record links to no earlier record")
    if env.position[0] != study_id_for(keys):
        return ("malformed", "the study's id is not the one its root keys make")
    return keys, threshold


def _named_as_made(env: CheckedEnvelope, sequence: int) -> bool:
    """Whether the file has the name file_name gives the record: its place and kind first, the
    start of its digest last."""
    name = env.path.name
    return name.startswith(f"{sequence:06d}-{env.kind}-") and name.endswith(
        f"-{(env.payload_sha256 or '')[:12]}{ENVELOPE_SUFFIX}"
    )


def _named_by(keyid: Any, public_key: Any) -> bool:
    """Whether `keyid` is the hash of `public_key`, an Ed25519 public key (a malformed key is
    no key, never an error that stops the walk)."""
    try:
        return isinstance(keyid, str) and keyid_for(public_key) == keyid
    except (FmaBandsError, ValueError, TypeError):
        return False


def _is_root(env: CheckedEnvelope) -> bool:
    return isinstance(_root(env)[0], dict)


def read_evidence(
    folder: Path,
    *,
    study: str | None = None,
    since: tuple[int, str] | None = None,
) -> Evidence:
    """The chain in `folder`, walked from its root. `study` names the study the folder must be
    (the app knows it; an editor reads it from the paper); `since` a head seen earlier, which
    the chain must still hold (nothing before it removed or changed)."""
    folder = Path(folder)
    evidence = Evidence(folder)
    if not folder.is_dir():
        evidence.problems.append(Problem("", "folder_invalid", f"{folder} is not a folder"))
        return evidence
    recall_parses(folder)
    loaded = checked_early(load_envelope(p) for p in envelope_files(folder))
    keep_parses(folder, (env.file_sha256 for env in loaded if env.file_sha256 is not None))
    walk_log(loaded, evidence, study=study, since=since)
    if evidence.study is not None and not evidence.problems:
        # Against a broken chain the copies cannot be checked: they would only seem edited.
        _check_copies(evidence)
    return evidence


def checked_early(envelopes: Iterable[CheckedEnvelope]) -> list[CheckedEnvelope]:
    """The envelopes, each with its signatures checked as it is read against the public keys
    the records before it announce (the root's keys, each activation's key) and its payload
    then let go, so that the whole log is never held at once. Announced is not trusted: the
    walk decides which key counts where, and finds these outcomes cached (a signature checked
    under a key the walk does not trust is never used)."""
    announced: dict[str, str] = {}  # keyid -> public key, as records claim them
    loaded = []
    for env in envelopes:
        announced.update(_announced_keys(env))
        for keyid, _ in env.signatures or ():
            if keyid in announced:
                check_signature(env, keyid, announced[keyid])
        env.release()
        loaded.append(env)
    return loaded


def _announced_keys(env: CheckedEnvelope) -> dict[str, str]:
    """keyid -> public key of the keys a root record or an activation claims to bring."""
    try:
        if env.kind == "root":
            keys = env.predicate["root"]["keys"]
            return {k["keyid"]: k["public_key"] for k in keys if _key_pair(k)}
        if env.kind == "activation":
            activation = env.predicate["activation"]
            return {activation["keyid"]: activation["public_key"]} if _key_pair(activation) else {}
    except (AssertionError, KeyError, TypeError):
        pass
    return {}


def _key_pair(found: Any) -> bool:
    return (
        isinstance(found, dict)
        and isinstance(found.get("keyid"), str)
        and isinstance(found.get("public_key"), str)
    )


def walk_log(
    loaded: list[CheckedEnvelope],
    evidence: Evidence,
    *,
    study: str | None,
    since: tuple[int, str] | None = None,
) -> Evidence:
    """What the records in `loaded` establish (read_evidence, for records held anywhere)."""
    candidates = _candidates(loaded, evidence, study)
    if evidence.study is None:
        return evidence
    walk = _Walk(evidence)
    _walk(candidates, walk, evidence)
    evidence.waiting = {
        digest: (w["file"], set(w["signers"])) for digest, w in walk.waiting.items()
    }
    if since is not None:
        _check_since(evidence, since)
    return evidence


def _candidates(
    loaded: list[CheckedEnvelope], evidence: Evidence, study: str | None
) -> dict[int, list[CheckedEnvelope]]:
    """The files that claim a place in this study's log, by sequence; the study is chosen by
    its root record (or given); every other file is a stray."""
    claiming: list[CheckedEnvelope] = []
    for env in loaded:
        if env.error or env.position is None:
            code, message = env.error or ("malformed", "it claims no place in a study's log")
            evidence.strays.append(Problem(env.path.name, "stray_file", f"{code}: {message}"))
        else:
            claiming.append(env)
    roots: dict[str, list[CheckedEnvelope]] = {}
    for env in claiming:
        if env.kind == "root" and env.position[1] == 0:  # type: ignore[index]
            roots.setdefault(env.position[0], []).append(env)  # type: ignore[index]
    if study is None:
        valid_roots = {s for s, group in roots.items() if any(_is_root(e) for e in group)}
        if len(valid_roots) > 1:
            evidence.problems.append(
                Problem(
                    "",
                    "folder_invalid",
                    f"the folder holds the roots of {len(valid_roots)} studies "
                    f"({', '.join(sorted(valid_roots))}): name the study to check",
                )
            )
            return {}
        study = next(iter(valid_roots), None)
    if study is None:
        evidence.problems.append(
            Problem(
                "", "folder_invalid", "no root record signed by a study's root key is in the folder"
            )
        )
        return {}
    evidence.study = study
    by_sequence: dict[int, list[CheckedEnvelope]] = {}
    for env in claiming:
        position = env.position
        assert position is not None
        if position[0] != study:
            message = f"a record of study {position[0]}, not {study}"
            evidence.strays.append(Problem(env.path.name, "wrong_study", message))
            continue
        by_sequence.setdefault(position[1], []).append(env)
    return by_sequence


def _walk(candidates: dict[int, list[CheckedEnvelope]], walk: _Walk, evidence: Evidence) -> None:
    # Record 0 is always walked: a study named by the caller with no record in the folder
    # (emptied, or replaced by another study's records) has its root missing, never verifies.
    last = max(candidates, default=0)
    previous: str | None = None
    for sequence in range(last + 1):
        group = candidates.get(sequence, [])
        members: dict[str, tuple[CheckedEnvelope, Effect | None]] = {}
        refused: list[tuple[CheckedEnvelope, tuple[str, str]]] = []
        for env in group:
            position = env.position
            assert position is not None
            if position[2] != previous:
                link = f"it links to {str(position[2])[:19]}, not to record {sequence - 1}"
                refused.append((env, ("folder_invalid", link)))
                continue
            if sequence == 0:
                found = _root(env)
                outcome: tuple[str, str] | Effect
                if isinstance(found[0], dict):
                    keys, threshold = found  # type: ignore[misc]

                    def outcome(keys=keys, threshold=threshold) -> None:
                        walk.roots = dict(keys)
                        evidence.root_keys = {k: h for k, (_, h) in keys.items()}
                        evidence.root_public = {k: p for k, (p, _) in keys.items()}
                        evidence.threshold = threshold

                else:
                    outcome = found  # type: ignore[assignment]
            else:
                outcome = walk.check(env, sequence)
            if isinstance(outcome, tuple):
                refused.append((env, outcome))
            elif env.digest in members:
                kept = members[env.digest][0]
                if _named_as_made(env, sequence) and not _named_as_made(kept, sequence):
                    # Of two copies of one record, the one under the name the app gives it is
                    # the record, whatever name sorts first: a copy planted under another name
                    # displaces nothing (the readable copies name the record's own file).
                    members[env.digest], kept, env = (env, outcome), env, kept
                evidence.strays.append(
                    Problem(env.path.name, "stray_file", f"a copy of {kept.path.name}")
                )
            else:
                members[env.digest] = (env, outcome)
        if len(members) == 1:
            [(env, effect)] = members.values()
            assert effect is not None
            env.statement, env.keyid = env.claimed, env.predicate.get("signer", {}).get("keyid")
            env.pseudonym = env.predicate.get("signer", {}).get("pseudonym")
            effect()
            evidence.chain.append(env)
            previous = env.digest
            for other, (code, message) in refused:
                other.fail(code, message)
                evidence.strays.append(
                    Problem(
                        other.path.name,
                        "stray_file",
                        f"{code}: {message} (record {sequence} is {env.path.name})",
                    )
                )
            continue
        # Over the places files claim, never the numbers between: a claim can be any number.
        later = sorted(
            e.path.name for s, group in candidates.items() if s > sequence for e in group
        )
        # Named: a file that claims a place beyond a gap is where to look.
        after = (
            f"; the {len(later)} record(s) after it, from {later[0]}, cannot be checked"
            if later
            else ""
        )
        if len(members) > 1:
            names = ", ".join(sorted(e.path.name for e, _ in members.values()))
            evidence.problems.append(
                Problem(
                    "",
                    "folder_invalid",
                    f"the log forks at record {sequence}: {names} both verify{after}",
                )
            )
        elif refused:
            for env, (code, message) in refused:
                env.fail(code, message)
                evidence.problems.append(
                    Problem(
                        env.path.name, code, f"record {sequence} does not verify: {message}{after}"
                    )
                )
        else:
            evidence.problems.append(
                Problem("", "folder_invalid", f"record {sequence} is missing{after}")
            )
        return


def _check_since(evidence: Evidence, since: tuple[int, str]) -> None:
    sequence, digest = since
    have = evidence.chain[sequence].digest if 0 <= sequence < len(evidence.chain) else None
    if have != digest:
        found = "is not in the folder" if have is None else f"is {have[:19]}"
        evidence.problems.append(
            Problem(
                "",
                "folder_invalid",
                f"the folder does not extend the head {sequence}:{digest}: "
                f"its record {sequence} {found}",
            )
        )


def _check_copies(evidence: Evidence) -> None:
    """policy.yaml and adjudicators.yaml are readable copies of what the chain says: a copy that
    says anything else (a hand edit) misleads its reader, so the folder does not verify."""
    from fma_bands.evidence.policy import POLICY_FILE, policy_text
    from fma_bands.evidence.roster import ADJUDICATORS_FILE, adjudicators_text

    expected = {
        POLICY_FILE: policy_text(evidence) if evidence.policy else None,
        ADJUDICATORS_FILE: adjudicators_text(evidence),
    }
    for name, text in expected.items():
        path = evidence.folder / name
        if not path.exists() and not path.is_symlink():
            if text is not None and name == POLICY_FILE:
                evidence.problems.append(
                    Problem(
                        name,
                        "copy_differs",
                        f"{name} is missing; the signed policy record is {evidence.policy_file}",
                    )
                )
            continue
        try:
            found = read_bounded_bytes(path, limit=4 * 1024 * 1024, what=name)
        except FmaBandsError as exc:
            evidence.problems.append(
                Problem(name, "copy_differs", f"cannot read it: {exc.message}")
            )
            continue
        if text is None or found != text.encode():
            said = (
                "there is no signed policy record"
                if text is None
                else "it is not the copy of the signed records"
            )
            evidence.problems.append(
                Problem(
                    name,
                    "copy_differs",
                    f"{name} was edited: {said}; only the signed records count (delete it: "
                    "the next fma-bands command or app start writes the copy again)",
                )
            )


def latest_signed_reviews(
    evidence: Evidence, pseudonym: str
) -> dict[tuple[str, str], dict[str, Any]]:
    """For each band, the review exactly as the rater's latest unrevoked attestation covering it
    signed it (latest by position in the chain)."""
    covered: dict[tuple[str, str], dict[str, Any]] = {}
    for env in evidence.adjudications():
        if env.pseudonym == pseudonym and env.digest not in evidence.revoked:
            for review in env.predicate["reviews"]:
                covered[(review["vignette_id"], review["sub_action"])] = review
    return covered


def parse_head(text: str) -> tuple[int, str]:
    """'SEQ:DIGEST' (as verify prints a head) as (sequence, digest)."""
    sequence, _, digest = text.partition(":")
    # ASCII digits only, and no more than a log could count ("²".isdigit() holds, int() refuses).
    if not re.fullmatch(r"[0-9]{1,18}", sequence) or not re.fullmatch(
        r"sha256:[0-9a-f]{64}", digest
    ):
        raise FmaBandsError(
            f"a head is SEQ:DIGEST, as verify prints it (e.g. 12:sha256:…), not {text!r}"
        )
    return int(sequence), digest


def folder_digests(folder: Path) -> tuple[tuple[str, str], ...]:
    """Every entry of the folder by name, with the SHA-256 of its bytes for a regular file:
    what a decision read from the folder alone may be cached under, since a byte changed in any
    file (an envelope, policy.yaml, adjudicators.yaml) makes another key."""
    folder = Path(folder)
    if not folder.is_dir():
        return ()
    return tuple((p.name, _digest_of(p)) for p in sorted(folder.iterdir()))


MAX_FOLDER_FILE_BYTES = MAX_ENVELOPE_BYTES  # the largest any reader of the folder reads


# Each file's digest by what its status says of it (device, inode, size, modification and
# change times): a page asks for the folder's digests on every run, and a file is read again
# only once written again (which sets its change time, as no one can by hand).
_digests: dict[tuple[Any, ...], str] = {}
_DIGESTS_KEPT = 20_000


def _digest_of(path: Path) -> str:
    try:
        # O_NONBLOCK: a FIFO must not wait for a writer; only a regular file is read.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        return f"unreadable: {exc.strerror}"
    with os.fdopen(fd, "rb") as handle:
        found = os.fstat(handle.fileno())
        if not stat.S_ISREG(found.st_mode):
            return "not a regular file"
        if found.st_size > MAX_FOLDER_FILE_BYTES:  # refused by every reader: never read
            return f"too large: {found.st_size} bytes"
        status = (
            str(path),
            found.st_dev,
            found.st_ino,
            found.st_size,
            found.st_mtime_ns,
            found.st_ctime_ns,
        )
        known = _digests.get(status)
        if known is None:
            known = hashlib.file_digest(handle, "sha256").hexdigest()
            if len(_digests) >= _DIGESTS_KEPT:
                _digests.clear()
            _digests[status] = known
        return known
