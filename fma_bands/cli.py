"""The fma-bands command: everything a study coordinator scripts."""

import argparse
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy.exc import OperationalError
from sqlmodel import Session

from fma_bands import audit
from fma_bands.agreement import DEFAULT_B, DEFAULT_SEED, report_to_json
from fma_bands.bands import describe, to_harness
from fma_bands.db import create_schema, make_engine, session_scope
from fma_bands.export import bands_document, write_bands
from fma_bands.ratings import harness_span, reading, study_report
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
        vignettes=args.vignettes, database_url=args.db, attestations=args.attestations
    )
    try:
        return args.run(args, settings) or 0
    except CommandError as exc:
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

    export = commands.add_parser("export", help="write bands.yaml for the harness")
    export.add_argument("--out", required=True, metavar="FILE", help="where to write bands.yaml")
    _runs(export, _export)
    return parser


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
        try:
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
        except AccountError as exc:
            raise CommandError(str(exc)) from None
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
        try:
            created = import_handback(
                session,
                library,
                actor=_coordinator(session),
                rater_pseudonym=args.rater,
                text=text,
                source=str(path),
            )
        except HandbackError as exc:
            raise CommandError(str(exc)) from None
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


def _export(args, settings: Settings) -> int:
    library = _complete_library(settings)
    document = bands_document(library)
    path = write_bands(Path(args.out), document)
    n = sum(len(b) for b in document["bands"].values())
    print(f"wrote {n} bands of {len(document['bands'])} vignettes to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
