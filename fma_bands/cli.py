"""The fma-bands command: everything a study coordinator scripts."""

import argparse
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import yaml
from sqlalchemy.exc import OperationalError
from sqlmodel import Session

from fma_bands import audit
from fma_bands.agreement import DEFAULT_B, DEFAULT_SEED, report_to_json
from fma_bands.attestations import (
    DECLARATIONS,
    IDENTITY_FIELDS,
    MEANINGS,
    AttestationError,
    attest,
    check_revealed,
    publish_adjudicators,
    read_adjudicators,
    read_folder,
    read_policy,
    reveal_identity,
    revoke,
    set_identity,
    write_policy,
)
from fma_bands.bands import describe, to_harness
from fma_bands.db import create_schema, make_engine, session_scope
from fma_bands.export import write_bands
from fma_bands.ratings import harness_span, reading, study_report
from fma_bands.registry import Registry, decide, export_document
from fma_bands.reviews import (
    HandbackError,
    SyncReport,
    import_handback,
    set_mode,
    set_phase,
    study,
    sync_vignettes,
)
from fma_bands.settings import Settings
from fma_bands.users import AccountError, UserPublic, create_user, get_user, list_users
from fma_bands.vignettes import Library, load_library


class CommandError(Exception):
    """A failure to report in one line on stderr, with exit status 1."""


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not getattr(args, "run", None):
        parser.print_help()
        return 2
    settings = Settings.from_env(
        vignettes=args.vignettes,
        database_url=args.db,
        attestations=args.attestations,
        identity_key=args.identity_key,
    )
    try:
        return args.run(args, settings) or 0
    # Domain errors carry messages written for people: one line on stderr, never a traceback.
    except (CommandError, AccountError, AttestationError, HandbackError) as exc:
        print(f"fma-bands: error: {exc}", file=sys.stderr)
        return 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fma-bands",
        description="Clinician adjudication of FairMedAgent acceptable-action bands.",
    )
    parser.add_argument(
        "--vignettes",
        metavar="DIR",
        help="folder of vignette files (default ./vignettes, or $FMA_BANDS_VIGNETTES)",
    )
    parser.add_argument(
        "--db",
        metavar="URL",
        help="database URL (default sqlite:///fma-bands.db, or $FMA_BANDS_DATABASE_URL)",
    )
    parser.add_argument(
        "--attestations",
        metavar="DIR",
        help="attestations folder (default ./attestations, or $FMA_BANDS_ATTESTATIONS)",
    )
    parser.add_argument(
        "--identity-key",
        metavar="FILE",
        help="key sealing private identities (default ./fma-bands-identity.key, or "
        "$FMA_BANDS_IDENTITY_KEY); keep it out of attestations/ and out of version control",
    )
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")

    vignettes = commands.add_parser("vignettes", help="check and list vignette files")
    vignette_commands = vignettes.add_subparsers(title="commands", metavar="COMMAND")
    check = vignette_commands.add_parser(
        "check", help="validate vignette folders; exit 1 listing every problem"
    )
    check.add_argument("dirs", nargs="*", metavar="DIR", help="folders (default --vignettes)")
    _runs(check, _vignettes_check)
    listing = vignette_commands.add_parser("list", help="list the vignettes and their proposals")
    listing.add_argument("--json", action="store_true", help="machine-readable output")
    _runs(listing, _vignettes_list)
    vignettes.set_defaults(run=lambda a, s: vignettes.print_help() or 2)

    init = commands.add_parser("init", help="create the database and load the vignettes")
    _runs(init, _init)
    demo = commands.add_parser(
        "demo", help="set up a ready demo study (coordinator and two raters) and say how to sign in"
    )
    _runs(demo, _demo)

    user = commands.add_parser("user", help="enrol and list users")
    user_commands = user.add_subparsers(title="commands", metavar="COMMAND")
    add = user_commands.add_parser("add", help="enrol a user (a rater unless --role coordinator)")
    add.add_argument("name", help="public pseudonym, e.g. adjudicator-01")
    add.add_argument("--role", choices=["rater", "coordinator"], default="rater")
    add.add_argument("--specialty")
    add.add_argument("--jurisdiction")
    add.add_argument("--years", type=int, help="years since registration")
    add.add_argument(
        "--passphrase-file",
        required=True,
        metavar="F",
        help="file whose first line is the passphrase (keeps it out of shell history)",
    )
    _runs(add, _user_add)
    users = user_commands.add_parser("list", help="list enrolled users")
    _runs(users, _user_list)
    user.set_defaults(run=lambda a, s: user.print_help() or 2)

    phase = commands.add_parser("phase", help="show, open or close the review phase")
    phase.add_argument("state", nargs="?", choices=["open", "closed"])
    _runs(phase, _phase)
    mode = commands.add_parser("mode", help="show or set the review mode")
    mode.add_argument("state", nargs="?", choices=["review", "blind"])
    _runs(mode, _mode)

    handback = commands.add_parser("handback", help="import a paper hand-back")
    handback_commands = handback.add_subparsers(title="commands", metavar="COMMAND")
    imported = handback_commands.add_parser(
        "import", help="turn a hand-back file into submitted reviews (all or nothing)"
    )
    imported.add_argument("file", metavar="FILE")
    imported.add_argument("--rater", required=True, metavar="NAME")
    _runs(imported, _handback_import)
    handback.set_defaults(run=lambda a, s: handback.print_help() or 2)

    audit_parser = commands.add_parser("audit", help="check the audit log")
    audit_commands = audit_parser.add_subparsers(title="commands", metavar="COMMAND")
    verify = audit_commands.add_parser(
        "verify", help="check the hash chain; exit 1 naming each edited, deleted or moved event"
    )
    _runs(verify, _audit_verify)
    audit_parser.set_defaults(run=lambda a, s: audit_parser.print_help() or 2)

    agreement = commands.add_parser(
        "agreement", help="Krippendorff's alpha of the submitted reviews, with consensus bands"
    )
    agreement.add_argument("--json", action="store_true", help="machine-readable output")
    agreement.add_argument(
        "--bootstrap", type=int, default=DEFAULT_B, metavar="B", help="bootstrap resamples"
    )
    agreement.add_argument("--seed", type=int, default=DEFAULT_SEED, help="bootstrap seed")
    _runs(agreement, _agreement)

    identity = commands.add_parser("identity", help="a rater's private identity and commitment")
    identity_commands = identity.add_subparsers(title="commands", metavar="COMMAND")
    id_set = identity_commands.add_parser(
        "set", help="record a rater's private identity from a YAML file (sealed at rest)"
    )
    id_set.add_argument("name", help="the rater's pseudonym")
    id_set.add_argument(
        "--from",
        dest="source",
        required=True,
        metavar="FILE",
        help=f"YAML with exactly the keys {', '.join(IDENTITY_FIELDS)}",
    )
    _runs(id_set, _identity_set)
    reveal = identity_commands.add_parser(
        "reveal", help="print the private record with its salt, for an editor (audited)"
    )
    reveal.add_argument("name")
    _runs(reveal, _identity_reveal)
    id_check = identity_commands.add_parser(
        "check", help="check a revealed record against the published commitment"
    )
    id_check.add_argument("file", metavar="FILE")
    _runs(id_check, _identity_check)
    identity.set_defaults(run=lambda a, s: identity.print_help() or 2)

    attest_parser = commands.add_parser(
        "attest", help="sign a rater's submitted reviews into a DSSE attestation"
    )
    attest_parser.add_argument("--rater", required=True, metavar="NAME")
    attest_parser.add_argument("--passphrase-file", required=True, metavar="F")
    attest_parser.add_argument("--meaning", choices=MEANINGS, default="adjudication")
    attest_parser.add_argument(
        "--declare",
        action="append",
        default=[],
        choices=list(DECLARATIONS),
        help="repeat for each declaration; all three are required",
    )
    _runs(attest_parser, _attest)
    revoke_parser = commands.add_parser("revoke", help="revoke one of a rater's attestations")
    revoke_parser.add_argument("file", metavar="ATTESTATION")
    revoke_parser.add_argument("--rater", required=True, metavar="NAME")
    revoke_parser.add_argument("--passphrase-file", required=True, metavar="F")
    revoke_parser.add_argument("--reason", required=True)
    _runs(revoke_parser, _revoke)
    verify_parser = commands.add_parser(
        "verify", help="check attestation envelopes offline against adjudicators.yaml"
    )
    verify_parser.add_argument("paths", nargs="*", metavar="PATH")
    _runs(verify_parser, _verify)

    policy = commands.add_parser("policy", help="the registry policy in attestations/policy.yaml")
    policy_commands = policy.add_subparsers(title="commands", metavar="COMMAND")
    policy_set = policy_commands.add_parser("set", help="set quorum and scope (audited)")
    policy_set.add_argument("--quorum", type=int, required=True)
    policy_set.add_argument("--scope", choices=["warn", "require"], required=True)
    _runs(policy_set, _policy_set)
    policy_show = policy_commands.add_parser("show", help="print the policy in force")
    _runs(policy_show, _policy_show)
    policy.set_defaults(run=lambda a, s: policy.print_help() or 2)

    registry_parser = commands.add_parser(
        "registry", help="each band's provenance as decided from the files, with reasons"
    )
    registry_parser.add_argument("--json", action="store_true")
    _sensitivity(registry_parser)
    _runs(registry_parser, _registry)

    export = commands.add_parser("export", help="write bands.yaml for the harness")
    export.add_argument("--out", required=True, metavar="FILE", help="where to write bands.yaml")
    _sensitivity(export)
    _runs(export, _export)
    return parser


def _sensitivity(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--quorum", type=int, help="override policy.yaml's quorum (a sensitivity run)"
    )
    parser.add_argument(
        "--scope", choices=["warn", "require"], help="override policy.yaml's scope rule"
    )


def _runs(parser: argparse.ArgumentParser, run: Callable) -> None:
    parser.set_defaults(run=run)


def _library(settings: Settings, dirs: Sequence[str] = ()) -> Library:
    return load_library(dirs or [settings.vignettes])


def _complete_library(settings: Settings) -> Library:
    library = _library(settings)
    if not library.ok:
        problems = "\n".join(f"  {p}" for p in library.problems)
        raise CommandError(f"the vignette files have problems; fix them first:\n{problems}")
    return library


def _vignettes_check(args, settings: Settings) -> int:
    library = _library(settings, args.dirs)
    for problem in library.problems:
        print(problem)
    bad = len({p.file for p in library.problems})
    print(
        f"{len(library)} vignettes valid, {bad} file(s) with problems "
        f"({len(library.problems)} problem(s)) in {library.files} file(s)"
    )
    return 0 if library.ok else 1


def _vignettes_list(args, settings: Settings) -> int:
    library = _library(settings)
    if args.json:
        print(json.dumps([_vignette_json(v) for v in library], indent=2))
    else:
        print(f"{'id':<28} {'domain':<14} {'ambiguity':<13} proposals")
        for v in library:
            bands = "; ".join(f"{p.sub_action} {describe(p.acceptable)}" for p in v.proposals)
            print(f"{v.id:<28} {v.domain:<14} {v.ambiguity or '-':<13} {bands or '-'}")
    for problem in library.problems:
        print(problem, file=sys.stderr)
    return 0 if library.ok else 1


def _vignette_json(v) -> dict:
    return {
        "id": v.id,
        "domain": v.domain,
        "ambiguity": v.ambiguity,
        "file": v.path,
        "canary": v.canary,
        "orderables": list(v.orderables),
        "proposals": [
            {
                "sub_action": p.sub_action,
                "acceptable": to_harness(p.acceptable),
                "provenance": p.provenance,
                "disputed_span": to_harness(p.disputed_span) if p.disputed_span else None,
                "threshold": p.effective_threshold.expression() if p.effective_threshold else None,
                "straddles": p.acceptable.straddles(p.effective_threshold),
            }
            for p in v.proposals
        ],
    }


@contextmanager
def _store(settings: Settings) -> Iterator[Session]:
    engine = make_engine(settings.database_url)
    try:
        create_schema(engine)
        with session_scope(engine) as session:
            yield session
    except OperationalError as exc:
        raise CommandError(f"cannot use the database {settings.database_url}: {exc.orig}") from None
    finally:
        engine.dispose()


def _synced(settings: Settings, session: Session) -> tuple[Library, SyncReport]:
    library = _library(settings)
    if not len(library):
        # Syncing an empty or missing folder would retire every vignette in the store.
        raise CommandError(f"no vignettes loaded from {settings.vignettes}; check --vignettes")
    for problem in library.problems:
        print(f"warning: {problem}", file=sys.stderr)
    return library, sync_vignettes(session, library, actor="cli")


def _coordinator(session: Session) -> UserPublic:
    coordinators = list_users(session, role="coordinator")
    if not coordinators:
        raise CommandError("no coordinator is enrolled: run `fma-bands demo` or `user add`")
    return coordinators[0]


def _init(args, settings: Settings) -> int:
    with _store(settings) as session:
        library, report = _synced(settings, session)
        current = study(session)
    print(f"database {settings.database_url}: {len(library)} vignettes loaded ({report})")
    print(f"review phase {current.phase}, {current.mode} mode")
    return 0 if library.ok else 1


DEMO_USERS = (
    {"pseudonym": "coordinator", "role": "coordinator", "passphrase": "coordinator-demo"},
    {
        "pseudonym": "rater-01",
        "role": "rater",
        "passphrase": "rater-01-demo",
        "specialty": "emergency medicine",
        "jurisdiction": "Australia",
        "years_post_registration": 9,
    },
    {
        "pseudonym": "rater-02",
        "role": "rater",
        "passphrase": "rater-02-demo",
        "specialty": "general medicine",
        "jurisdiction": "United Kingdom",
        "years_post_registration": 15,
    },
)


def _demo(args, settings: Settings) -> int:
    with _store(settings) as session:
        library, _ = _synced(settings, session)
        for fields in DEMO_USERS:
            if get_user(session, fields["pseudonym"]) is None:
                create_user(session, actor="demo", **fields)
            elif fields["role"] == "coordinator":
                print("the demo study already exists; its accounts are unchanged")
        publish_adjudicators(session, settings.attestations)
    print(f"Demo study ready in {settings.database_url}: {len(library)} vignettes.")
    print("Run `streamlit run app.py` and sign in with one of these (demo only, not secret):")
    for fields in DEMO_USERS:
        print(
            f"  {fields['pseudonym']:<12} passphrase {fields['passphrase']:<17} ({fields['role']})"
        )
    return 0


def _user_add(args, settings: Settings) -> int:
    passphrase = _read_secret(args.passphrase_file)
    with _store(settings) as session:
        made = create_user(
            session,
            actor="cli",
            pseudonym=args.name,
            role=args.role,
            passphrase=passphrase,
            specialty=args.specialty,
            jurisdiction=args.jurisdiction,
            years_post_registration=args.years,
        )
        publish_adjudicators(session, settings.attestations)
    key = f", signing key {made.keyid}" if made.keyid else ""
    print(f"enrolled {made.pseudonym} ({made.role}){key}")
    return 0


def _read_secret(path: str) -> str:
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandError(f"cannot read the passphrase file {path}: {exc}") from None
    if not lines or not lines[0].strip():
        raise CommandError(f"the passphrase file {path} is empty")
    return lines[0]


def _user_list(args, settings: Settings) -> int:
    with _store(settings) as session:
        users = list_users(session)
    for u in users:
        detail = (
            f"{u.specialty}, {u.jurisdiction}, {u.years_post_registration} y" if u.specialty else ""
        )
        print(f"{u.pseudonym:<20} {u.role:<12} {detail}")
    return 0


def _phase(args, settings: Settings) -> int:
    with _store(settings) as session:
        current = study(session)
        if args.state:
            current = set_phase(session, actor=_coordinator(session), phase=args.state)
    print(f"review phase {current.phase}")
    return 0


def _mode(args, settings: Settings) -> int:
    with _store(settings) as session:
        current = study(session)
        if args.state:
            current = set_mode(session, actor=_coordinator(session), mode=args.state)
    print(f"{current.mode} mode")
    return 0


def _handback_import(args, settings: Settings) -> int:
    path = Path(args.file)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandError(f"cannot read {path}: {exc}") from None
    with _store(settings) as session:
        library, _ = _synced(settings, session)
        created = import_handback(
            session,
            library,
            actor=_coordinator(session),
            rater_pseudonym=args.rater,
            text=text,
            source=str(path),
        )
    print(f"imported {len(created)} submitted reviews for {args.rater} from {path}")
    for review in created:
        print(f"  {review.vignette_id} {review.sub_action}: {review.verdict}")
    return 0


def _audit_verify(args, settings: Settings) -> int:
    with _store(settings) as session:
        report = audit.verify(session)
    print(report)
    return 0 if report.ok else 1


def _agreement(args, settings: Settings) -> int:
    if args.bootstrap < 0:
        raise CommandError("--bootstrap must be 0 (no interval) or more")
    with _store(settings) as session:
        library, _ = _synced(settings, session)
        report = study_report(
            session,
            library,
            viewer=_coordinator(session),
            bootstrap=args.bootstrap,
            seed=args.seed,
        )
    if args.json:
        print(json.dumps(report_to_json(report, harness_span), indent=2))
        return 0
    print(format_report(report))
    return 0


def format_report(report) -> str:
    lines = [
        f"{'scope':<30} {'metric':<11} {'alpha':>7}  {'95% interval':<17} "
        f"{'units':>5} {'raters':>6} {'pairable':>8}  reading"
    ]
    for scope, metrics in report.metrics.items():
        for metric, a in metrics.items():
            alpha = "-" if a.alpha is None else f"{a.alpha:.3f}"
            interval = (
                f"[{a.ci_low:.3f}, {a.ci_high:.3f}]" if a.ci_low is not None else "not computed"
            )
            lines.append(
                f"{scope:<30} {metric:<11} {alpha:>7}  {interval:<17} {a.n_units:>5} "
                f"{a.n_raters:>6} {a.n_pairable:>8}  {reading(a.alpha, a.reason)}"
            )
    methods = {a.method for m in report.metrics.values() for a in m.values() if a.method}
    lines += ["", *(f"interval: {m}" for m in sorted(methods))]
    lines += ["", f"{'band':<40} {'raters':>6}  {'rule':<8} consensus / disputed"]
    for b in report.bands:
        c = b.consensus
        shown = harness_span(b.sub_action, c.consensus) if c.consensus else "-"
        disputed = harness_span(b.sub_action, c.disputed) if c.disputed else "-"
        lines.append(
            f"{b.vignette_id + ' ' + b.sub_action:<40} {b.n_raters:>6}  {c.rule:<8} "
            f"{shown} / {disputed}"
        )
    return "\n".join(lines)


def _user(session: Session, name: str) -> UserPublic:
    found = get_user(session, name)
    if found is None:
        raise CommandError(f"no user named {name!r} is enrolled")
    return found


def _identity_set(args, settings: Settings) -> int:
    path = Path(args.source)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise CommandError(f"cannot read {path}: {exc}") from None
    with _store(settings) as session:
        commitment = set_identity(
            session,
            actor=_coordinator(session),
            pseudonym=args.name,
            record=data,
            key_path=settings.identity_key,
            source=str(path),
        )
        publish_adjudicators(session, settings.attestations)
    print(f"identity of {args.name} recorded; commitment {commitment} published")
    return 0


def _identity_reveal(args, settings: Settings) -> int:
    with _store(settings) as session:
        revealed = reveal_identity(
            session,
            actor=_coordinator(session),
            pseudonym=args.name,
            key_path=settings.identity_key,
        )
    print("# Private identity record: for the editor only; check with `fma-bands identity check`.")
    print(yaml.safe_dump(revealed, sort_keys=False, allow_unicode=True), end="")
    return 0


def _identity_check(args, settings: Settings) -> int:
    path = Path(args.file)
    try:
        revealed = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise CommandError(f"cannot read {path}: {exc}") from None
    ok, message = check_revealed(revealed, read_adjudicators(settings.attestations))
    print(f"{path}: {message}")
    return 0 if ok else 1


def _attest(args, settings: Settings) -> int:
    passphrase = _read_secret(args.passphrase_file)
    with _store(settings) as session:
        library, _ = _synced(settings, session)
        path = attest(
            session,
            library,
            rater=_user(session, args.rater),
            passphrase=passphrase,
            meaning=args.meaning,
            declarations=args.declare,
            folder=settings.attestations,
        )
    print(f"signed {path}")
    return 0


def _revoke(args, settings: Settings) -> int:
    passphrase = _read_secret(args.passphrase_file)
    with _store(settings) as session:
        path = revoke(
            session,
            rater=_user(session, args.rater),
            passphrase=passphrase,
            attestation=Path(args.file),
            reason=args.reason,
            folder=settings.attestations,
        )
    print(f"revoked {args.file}: {path}")
    return 0


def _verify(args, settings: Settings) -> int:
    paths = [Path(p) for p in args.paths]
    _, checked = read_folder(settings.attestations, paths or None)
    if not checked:
        raise CommandError(f"no attestation envelopes (*.dsse.json) in {settings.attestations}")
    failed = 0
    for env in checked:
        if env.error:
            failed += 1
            print(f"FAIL {env.path}: {env.error[0]}: {env.error[1]}")
        else:
            print(f"ok   {env.path}: {env.kind} by {env.pseudonym} ({env.keyid})")
    print(f"{len(checked) - failed} of {len(checked)} envelope(s) verified")
    return 1 if failed else 0


def _policy_set(args, settings: Settings) -> int:
    with _store(settings) as session:
        policy = write_policy(
            session,
            settings.attestations,
            actor=_coordinator(session),
            quorum=args.quorum,
            scope=args.scope,
        )
    print(f"policy: quorum {policy.quorum}, scope {policy.scope}")
    return 0


def _policy_show(args, settings: Settings) -> int:
    policy = _policy(settings)
    print(f"policy: quorum {policy.quorum}, scope {policy.scope}")
    return 0


def _policy(settings: Settings):
    return read_policy(settings.attestations)


def _decided(args, settings: Settings) -> Registry:
    library = _complete_library(settings)
    return decide(library, settings.attestations, quorum=args.quorum, scope=args.scope)


def _registry(args, settings: Settings) -> int:
    registry = _decided(args, settings)
    if args.json:
        print(
            json.dumps(
                {
                    "policy": registry.policy.as_dict(),
                    "bands": [d.as_dict() for d in registry.decisions],
                    "file_problems": registry.file_problems,
                },
                indent=2,
            )
        )
        return 0
    print(f"policy: quorum {registry.policy.quorum}, scope {registry.policy.scope}")
    for d in registry.decisions:
        print(f"{d.vignette_id} {d.sub_action}: {d.provenance} {to_harness(d.band)}")
        if d.adjudicated_by:
            print(f"    adjudicated by {', '.join(d.adjudicated_by)}")
        for r in d.reasons:
            print(f"    not granted: {r.code}: {r.message}")
        for w in d.warnings:
            print(f"    warning: {w.code}: {w.message}")
    for problem in registry.file_problems:
        print(f"file problem: {problem}")
    return 0


def _export(args, settings: Settings) -> int:
    library = _complete_library(settings)
    document = export_document(library, settings.attestations, quorum=args.quorum, scope=args.scope)
    path = write_bands(Path(args.out), document)
    n = sum(len(b) for b in document["bands"].values())
    adjudicated = sum(
        1
        for entries in document["bands"].values()
        for e in entries
        if e["provenance"] == "clinician-adjudicated"
    )
    print(
        f"wrote {n} bands of {len(document['bands'])} vignettes to {path} "
        f"({adjudicated} clinician-adjudicated)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
