"""`fma-bands registry` and `export`: each band's provenance from the files, and bands.yaml."""

from pathlib import Path
from typing import Any

import click

from fma_bands.cli.base import cli, complete_library, print_json, settings
from fma_bands.core.errors import FmaBandsError
from fma_bands.evidence.policy import SCOPES


def sensitivity(command: Any) -> Any:
    """--quorum and --scope, which override policy.yaml for a sensitivity run."""
    command = click.option(
        "--scope", type=click.Choice(SCOPES), help="Override policy.yaml's scope rule."
    )(command)
    return click.option(
        "--quorum", type=click.IntRange(min=1), help="Override policy.yaml's quorum."
    )(command)


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@sensitivity
def registry(as_json: bool, quorum: int | None, scope: str | None) -> None:
    """Each band's provenance as decided from the files, with reasons."""
    from fma_bands.core.bands import to_harness
    from fma_bands.evidence.registry import decide

    decided = decide(complete_library(), settings().attestations, quorum=quorum, scope=scope)
    if as_json:
        print_json(
            {
                # No policy on file grants nothing: the defaults were not applied, so none shown.
                "policy": None if decided.policy_problem else decided.policy.as_dict(),
                "policy_problem": decided.policy_problem,
                "bands": [d.as_dict() for d in decided.decisions],
                "file_problems": decided.file_problems,
            }
        )
        return
    if decided.policy_problem:
        click.echo(f"policy: none ({decided.policy_problem}); nothing is granted")
    else:
        click.echo(f"policy: quorum {decided.policy.quorum}, scope {decided.policy.scope}")
    for d in decided.decisions:
        click.echo(f"{d.vignette_id} {d.sub_action}: {d.provenance} {to_harness(d.band)}")
        if d.adjudicated_by:
            click.echo(f"    adjudicated by {', '.join(d.adjudicated_by)}")
        for r in d.reasons:
            click.echo(f"    not granted: {r.code}: {r.message}")
        for w in d.warnings:
            click.echo(f"    warning: {w.code}: {w.message}")
    for problem in decided.file_problems:
        click.echo(f"file problem: {problem}")


@cli.command()
@click.option("--out", required=True, metavar="FILE", help="Where to write bands.yaml.")
@click.option(
    "--check-harness",
    "harness",
    metavar="PATH",
    is_flag=False,
    flag_value="",
    default=None,
    help="Then load the export into the FairMedAgent harness at PATH (the folder holding its "
    "fairmedagent package; without PATH, the one on sys.path) and report every band it refuses.",
)
@sensitivity
def export(out: str, harness: str | None, quorum: int | None, scope: str | None) -> None:
    """Write bands.yaml for the harness (atomically)."""
    from fma_bands.evidence.export import check_harness, export_document, write_bands
    from fma_bands.evidence.provenance import ADJUDICATED

    document = export_document(
        complete_library(),
        settings().attestations,
        quorum=quorum,
        scope=scope,
        relative_to=Path(out).parent,
    )
    path = write_bands(out, document)
    entries = [e for group in document["bands"].values() for e in group]
    adjudicated = sum(e["provenance"] == ADJUDICATED for e in entries)
    click.echo(
        f"wrote {len(entries)} bands of {len(document['bands'])} vignettes to {path} "
        f"({adjudicated} clinician-adjudicated)"
    )
    if harness is None:
        return
    check = check_harness(path, harness or None)
    if check.problems:
        raise FmaBandsError(
            f"the harness at {check.where} refused {len(check.problems)} record(s) of the export "
            f"(it built {check.bands} of {len(entries)} bands)",
            problems=check.problems,
        )
    click.echo(
        f"the harness at {check.where} builds all {check.bands} bands and "
        f"{check.adjudicators} adjudicator(s)"
    )
