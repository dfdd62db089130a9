"""`fma-bands registry` and `export`: each band's provenance from the files, and bands.yaml."""

from pathlib import Path
from typing import Any

import click

from fma_bands.cli.base import (
    cli,
    complete_library,
    done,
    forget_statements,
    pinned,
    pinned_with_audit_head,
    print_json,
    settings,
)
from fma_bands.cli.numbers import Whole
from fma_bands.cli.paths import check_output
from fma_bands.core.errors import FmaBandsError
from fma_bands.evidence.policy import MAX_QUORUM, SCOPES


def sensitivity(command: Any) -> Any:
    """--quorum and --scope, which override the signed policy for a sensitivity run, and
    --study, which pins the folder to a study."""
    command = click.option(
        "--study",
        metavar="ID",
        help="The study the folder must be the log of (default: the database's, if any).",
    )(command)
    command = click.option(
        "--scope", type=click.Choice(SCOPES), help="Override the signed policy's scope rule."
    )(command)
    return click.option(
        "--quorum",
        type=Whole(1, MAX_QUORUM),
        help=f"Override the signed policy's quorum (1 to {MAX_QUORUM:,}).",
    )(command)


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@sensitivity
def registry(as_json: bool, quorum: int | None, scope: str | None, study: str | None) -> None:
    """Each band's provenance as decided from the files, with reasons (exit 1 when the
    attestations folder does not verify: nothing is granted then)."""
    from fma_bands.core.bands import to_harness
    from fma_bands.evidence.export import band_cuts, cut_line
    from fma_bands.evidence.registry import decide

    study_id, since = pinned(study)
    found = complete_library()
    decided = decide(
        found,
        settings().attestations,
        quorum=quorum,
        scope=scope,
        study=study_id,
        since=since,
    )
    forget_statements()
    sequence, digest = decided.head

    def cuts(d: Any) -> list[dict[str, Any]]:
        # Every named cut of the band as decided, as the export's x_thresholds states them.
        proposal = found.vignettes[d.vignette_id].proposal(d.sub_action)
        if proposal is None:
            return []
        return band_cuts(proposal, d.band, signed=d.proposal_signed)

    if as_json:
        print_json(
            {
                # No policy on file grants nothing: the defaults were not applied, so none shown.
                "policy": None if decided.policy_problem else decided.policy.as_dict(),
                "policy_problem": decided.policy_problem,
                "valid": decided.valid,
                "study": decided.study,
                "head": {"sequence": sequence, "digest": digest} if digest else None,
                "problems": [p.as_dict() for p in decided.problems],
                "strays": [p.as_dict() for p in decided.strays],
            },
            each=("bands", (d.as_dict() | {"thresholds": cuts(d)} for d in decided.decisions)),
        )
        done(0 if decided.valid else 1)
    if decided.policy_problem:
        click.echo(f"policy: none ({decided.policy_problem}); nothing is granted")
    else:
        click.echo(f"policy: quorum {decided.policy.quorum}, scope {decided.policy.scope}")
    for d in decided.decisions:
        click.echo(f"{d.vignette_id} {d.sub_action}: {d.provenance} {to_harness(d.band)}")
        if d.adjudicated_by:
            click.echo(f"    adjudicated by {', '.join(d.adjudicated_by)}")
        for cut in cuts(d):
            click.echo(f"    cut {cut_line(cut)}")
        for r in d.reasons:
            click.echo(f"    not granted: {r.code}: {r.message}")
        for w in d.warnings:
            click.echo(f"    warning: {w.code}: {w.message}")
    for problem in decided.file_problems:
        click.echo(f"file problem: {problem}")
    if not decided.valid:
        click.echo("the attestations folder does NOT verify: nothing is granted")
        done(1)


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
@click.option(
    "--provisional",
    is_flag=True,
    help="Write the export even when the attestations folder does not verify: every band as "
    "its file has it, none adjudicated, and the reason in the header.",
)
@click.option(
    "--sign-head",
    is_flag=True,
    help="Sign the head the bands were decided from with the study's root key (the coordinator "
    "named by --as, with their passphrase), so an editor can check it (verify --export).",
)
@sensitivity
def export(
    out: str,
    harness: str | None,
    quorum: int | None,
    scope: str | None,
    study: str | None,
    provisional: bool,
    sign_head: bool,
) -> None:
    """Write bands.yaml for the harness (atomically). Refused, writing nothing, when the
    attestations folder does not verify, unless --provisional."""
    from fma_bands.evidence.export import check_harness, every_band, export_document, write_bands
    from fma_bands.evidence.provenance import ADJUDICATED
    from fma_bands.evidence.registry import decide

    check_output(out, "export")
    study_id, since, audit_head = pinned_with_audit_head(study)
    signer = _head_signer() if sign_head else None
    found = complete_library()
    decided = decide(
        found, settings().attestations, quorum=quorum, scope=scope, study=study_id, since=since
    )
    forget_statements()
    document = export_document(
        found,
        settings().attestations,
        registry=decided,
        relative_to=Path(out).parent,
        provisional=provisional,
        head_signer=signer,
        audit_head=audit_head,
    )
    path = write_bands(out, document)
    if document.get("provisional"):
        click.echo(f"PROVISIONAL: {document['provisional']}", err=True)
    entries = every_band(document)
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


def _head_signer() -> Any:
    """The study's root key of the coordinator named by --as, unsealed for the signed head."""
    from fma_bands.cli.base import acting_passphrase, coordinator, store
    from fma_bands.study.enrolment import root_signer

    with store() as session:
        root = root_signer(session, coordinator(session), acting_passphrase())
    return root.keyid, root.private_key
