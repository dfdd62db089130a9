"""The fma-bands command: everything a study coordinator scripts."""

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from fma_bands.bands import describe, to_harness
from fma_bands.export import bands_document, write_bands
from fma_bands.settings import Settings
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


def _export(args, settings: Settings) -> int:
    library = _complete_library(settings)
    document = bands_document(library)
    path = write_bands(Path(args.out), document)
    n = sum(len(b) for b in document["bands"].values())
    print(f"wrote {n} bands of {len(document['bands'])} vignettes to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
