"""`fma-bands exemptions load | list | review | export`: the harness's confounded-pair
exemptions, loaded by the coordinator, reviewed by the raters, exported as exemptions.yaml
(docs/design.md, Exemptions)."""

import os
from pathlib import Path

import click

from fma_bands.cli.base import (
    cli,
    coordinator,
    has_database,
    pinned,
    print_json,
    read_secret,
    settings,
    store,
)
from fma_bands.cli.paths import check_output
from fma_bands.core.errors import AccessDenied, FmaBandsError

VERDICT_CHOICES = ("CONFIRM", "REJECT", "AMEND")


def _source_options(command):
    command = click.option(
        "--file",
        "yaml_file",
        metavar="F",
        help="A YAML file of entries (`exemptions:` then a list of attribute, sub_action, "
        "direction, requires_adjudication, age_gate, rationale).",
    )(command)
    return click.option(
        "--harness",
        metavar="DIR",
        help="The folder holding the harness's fairmedagent package: its conditions.CONFOUNDED, "
        "REQUIRES_ADJUDICATION and REGISTRY_AGE_GATES.",
    )(command)


def _entries(harness: str | None, yaml_file: str | None):
    from fma_bands.evidence.exemptions import harness_exemptions, read_exemptions

    if (harness is None) == (yaml_file is None):
        raise click.UsageError("give one of --harness DIR and --file F")
    if harness is not None:
        return harness_exemptions(harness), str(Path(harness))
    assert yaml_file is not None
    return read_exemptions(yaml_file), str(Path(yaml_file))


@cli.group("exemptions")
def exemptions() -> None:
    """The harness's confounded-pair exemptions: load, list, review, export."""


@exemptions.command("load")
@_source_options
def load(harness: str | None, yaml_file: str | None) -> None:
    """Load the registry's entries (a coordinator action): the store then holds exactly these;
    a changed entry's earlier reviews count no more."""
    from fma_bands.study.exemptions import load_exemptions
    from fma_bands.study.state import study

    entries, source = _entries(harness, yaml_file)
    with store() as session:
        actor = coordinator(session)
        report = load_exemptions(session, entries, actor=actor, source=source)
        current = study(session)
    click.echo(report.describe())
    if current.phase != "open":
        click.echo(
            f"warning: round {current.round} is closed, and raters review exemptions only while a "
            "round is open: load them before the last round closes",
            err=True,
        )


def _rater(session, name: str, passphrase_file: str):
    """The rater named, proved by their own passphrase."""
    from fma_bands.study.users import SIGN_IN_FAILED, sign_in

    user = sign_in(session, name, read_secret(passphrase_file), where="cli exemptions")
    if user is None:
        raise AccessDenied(SIGN_IN_FAILED.replace("Sign-in", "Authentication"))
    return user


@exemptions.command("list")
@click.option("--rater", metavar="NAME", help="List as this rater: their own reviews only.")
@click.option("--passphrase-file", metavar="F", help="The rater's own passphrase.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def list_(rater: str | None, passphrase_file: str | None, as_json: bool) -> None:
    """The entries in force: for the coordinator, how many raters reviewed each in the current
    round (never what they said while it is open); for a rater (--rater), their own reviews."""
    from fma_bands.study.exemptions import exemption_rows

    if (rater is None) != (passphrase_file is None):
        raise click.UsageError("--rater and --passphrase-file go together")
    with store() as session:
        viewer = (
            _rater(session, rater, passphrase_file)
            if rater is not None and passphrase_file is not None
            else coordinator(session)
        )
        rows = exemption_rows(session, viewer=viewer)
    mine = viewer.role != "coordinator"
    if as_json:
        print_json(
            {
                "exemptions": [
                    {
                        "entry": row.entry.name,
                        **row.entry.as_fields(),
                        "reviewed_by": row.n_reviewed,
                        "my_review": None
                        if row.my_verdict is None
                        else {
                            "verdict": row.my_verdict,
                            "direction": row.my_direction,
                            "reason": row.my_reason,
                            "round": row.my_round,
                        },
                    }
                    for row in rows
                ]
            }
        )
        return
    if not rows:
        click.echo("no exemption is loaded (fma-bands exemptions load)")
    for row in rows:
        entry = row.entry
        gate = f", ages {entry.age_gate[0]} to {entry.age_gate[1]}" if entry.age_gate else ""
        pending = ", requires adjudication" if entry.requires_adjudication else ""
        head = f"{entry.name}: {entry.direction}{gate}{pending}"
        if mine:
            said = (
                "not reviewed yet"
                if row.my_verdict is None
                else f"your review: {row.my_verdict}"
                + (f" {row.my_direction}" if row.my_direction else "")
                + f" ({row.my_reason})"
            )
            click.echo(f"{head}; {said}")
        else:
            click.echo(f"{head}; reviewed by {row.n_reviewed} rater(s) this round")


@exemptions.command("review")
@click.argument("entry", metavar="ATTRIBUTE/SUB_ACTION")
@click.option("--verdict", required=True, type=click.Choice(VERDICT_CHOICES))
@click.option("--direction", metavar="D", help="With AMEND: the defensible direction.")
@click.option("--reason", required=True, help="Why (every review needs one).")
@click.option("--rater", required=True, metavar="NAME")
@click.option("--passphrase-file", required=True, metavar="F", help="The rater's own passphrase.")
def review(
    entry: str,
    verdict: str,
    direction: str | None,
    reason: str,
    rater: str,
    passphrase_file: str,
) -> None:
    """Review one exemption as a rater, in the open round: CONFIRM the registered direction,
    REJECT the exemption, or AMEND it with another direction. `fma-bands attest` signs it with
    the rater's band reviews."""
    from fma_bands.study.exemptions import review_exemption

    with store() as session:
        who = _rater(session, rater, passphrase_file)
        made = review_exemption(
            session, rater=who, name=entry, verdict=verdict, direction=direction, reason=reason
        )
        revision = made.revision
    click.echo(f"recorded: {entry} {verdict} (revision {revision}); sign it with fma-bands attest")


@exemptions.command("export")
@click.argument("out", metavar="OUT")
@_source_options
@click.option(
    "--study",
    metavar="ID",
    help="The study the folder must be the log of (default: the database's, if any).",
)
def export(out: str, harness: str | None, yaml_file: str | None, study: str | None) -> None:
    """Write exemptions.yaml (OUT is the file, or a folder to write it in): each entry's status
    as the attestations folder alone decides it. The entries are the store's, or those of
    --harness or --file; with these and no database (an editor with the folder), it needs no
    account, and --study pins the folder to the published study."""
    from fma_bands.evidence.exemptions import (
        EXEMPTIONS_FILE,
        exemptions_document,
        write_exemptions,
    )
    from fma_bands.study.exemptions import export_exemptions

    given = None
    if harness is not None or yaml_file is not None:
        given, _ = _entries(harness, yaml_file)
    target = Path(out)
    if target.is_dir() and not target.is_symlink():
        target = target / EXEMPTIONS_FILE
    elif out.endswith(("/", os.sep)):
        raise FmaBandsError(f"no folder {out} to write {EXEMPTIONS_FILE} in: make it first")
    check_output(target, EXEMPTIONS_FILE)  # refused before anything is decided
    study_id, since = pinned(study)
    if given is not None and not has_database():
        document = exemptions_document(given, settings().attestations, study=study_id)
    else:
        with store() as session:
            actor = coordinator(session)
            document = export_exemptions(
                session, actor=actor, folder=settings().attestations, entries=given, since=since
            )
    if not document["exemptions"]:
        raise FmaBandsError("no exemption is loaded: nothing to export (fma-bands exemptions load)")
    write_exemptions(target, document)
    counts: dict[str, int] = {}
    for entry in document["exemptions"]:
        counts[entry["status"]] = counts.get(entry["status"], 0) + 1
    said = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    click.echo(f"wrote {target}: {said}")
