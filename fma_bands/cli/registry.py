"""`fma-bands registry` and `export`: each band's provenance from the files, and bands.yaml."""

import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TextIO, cast

import click

from fma_bands.cli.base import (
    TextOut,
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

if TYPE_CHECKING:
    from fma_bands.evidence.kept import Answer, Answers, Keeping, Key


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


FRESH = click.option(
    "--fresh",
    is_flag=True,
    help="Decide again even when the answer to the same question about the same files is kept "
    "(and keep this one in its place).",
)
KEPT = (
    "the answer kept from the same files (each read again and found unchanged, byte for byte); "
    "--fresh decides again"
)
KEPT_NOTE = f"fma-bands: {KEPT}"


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@FRESH
@sensitivity
def registry(
    as_json: bool, quorum: int | None, scope: str | None, study: str | None, fresh: bool
) -> None:
    """Each band's provenance as decided from the files, with reasons (exit 1 when the
    attestations folder does not verify: nothing is granted then)."""
    study_id, since = pinned(study)
    asked = {"json": as_json, "quorum": quorum, "scope": scope, "study": study_id, "since": since}
    answers, key = _kept("registry", asked)
    if answers is None or key is None:
        done(_registry(sys.stdout, as_json, quorum, scope, study_id, since))
    if not fresh:
        with answers.find(key.digest) as found:
            if found is not None:
                click.echo(KEPT_NOTE, err=True)
                # As text, through what standard output does to text (terminal escapes).
                found.write_text_to(sys.stdout)
                sys.stdout.flush()
                done(found.status)
    with answers.keep(key.digest) as keeping:
        status = _registry(_Both(sys.stdout, keeping), as_json, quorum, scope, study_id, since)
        if key.still_holds():
            keeping.done(status)
    done(status)


def _registry(
    out: TextOut,
    as_json: bool,
    quorum: int | None,
    scope: str | None,
    study_id: str | None,
    since: tuple[int, str] | None,
) -> int:
    """The registry decided and written to `out`; its exit status."""
    from fma_bands.evidence.export import band_cuts, cut_line
    from fma_bands.evidence.registry import decide
    from fma_bands.evidence.yaml_writer import harness_line

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
            out=out,
        )
        return 0 if decided.valid else 1

    def say(line: str) -> None:
        out.write(line + "\n")

    if decided.policy_problem:
        say(f"policy: none ({decided.policy_problem}); nothing is granted")
    else:
        say(f"policy: quorum {decided.policy.quorum}, scope {decided.policy.scope}")
    for d in decided.decisions:
        say(f"{d.vignette_id} {d.sub_action}: {d.provenance}; {harness_line(d.band)}")
        if d.adjudicated_by:
            say(f"    adjudicated by {', '.join(d.adjudicated_by)}")
        for cut in cuts(d):
            say(f"    cut {cut_line(cut)}")
        for r in d.reasons:
            # On a granted band a reason is a review set aside, not a refusal of the band.
            say(f"    {'not counted' if d.adjudicated else 'not granted'}: {r.code}: {r.message}")
        for w in d.warnings:
            say(f"    warning: {w.code}: {w.message}")
    for problem in decided.file_problems:
        say(f"file problem: {problem}")
    if not decided.valid:
        say("the attestations folder does NOT verify: nothing is granted")
        return 1
    return 0


def _kept(question: str, asked: dict[str, Any]) -> tuple["Answers | None", "Key | None"]:
    """The kept answers and the key of this question about the study's files now; (None,
    None) when no answer can be kept (evidence/kept.py says when). With --fresh the question is
    decided again, and its answer kept in place of the one before. An answer is kept only when
    no file changed while it was decided (Key.still_holds)."""
    from fma_bands.evidence.kept import answer_key, open_answers

    answers = open_answers(settings().kept_answers)
    if answers is None:
        return None, None
    folders = (settings().vignettes, settings().attestations)
    return answers, answer_key(question, folders, asked)


class _Both:
    """Text written to standard output and, as UTF-8, into the answer being kept."""

    def __init__(self, out: TextOut, keeping: "Keeping") -> None:
        self._out, self._keeping = out, keeping

    def write(self, text: str) -> int:
        self._out.write(text)
        self._keeping.write(text.encode("utf-8", "surrogatepass"))
        return len(text)

    def flush(self) -> None:
        self._out.flush()


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
@FRESH
@sensitivity
def export(
    out: str,
    harness: str | None,
    quorum: int | None,
    scope: str | None,
    study: str | None,
    provisional: bool,
    sign_head: bool,
    fresh: bool,
) -> None:
    """Write bands.yaml for the harness (atomically). Refused, writing nothing, when the
    attestations folder does not verify, unless --provisional."""
    check_output(out, "export")
    study_id, since, audit_head = pinned_with_audit_head(study)
    asked = {
        "quorum": quorum,
        "scope": scope,
        "study": study_id,
        "since": since,
        "audit_head": audit_head,
        "provisional": provisional,
        # The header names the attestations folder relative to where bands.yaml is written.
        "out": [str(Path(out).parent), str(Path(out).parent.resolve())],
    }
    # A signed head is signed afresh: the root's signature is never kept.
    answers, key = _kept("export", asked) if not sign_head else (None, None)
    said = None
    if answers is not None and key is not None and not fresh:
        with answers.find(key.digest) as found:
            if found is not None:
                said = _export_kept(out, found)
    if said is None:
        signer = _head_signer() if sign_head else None
        exporting = (out, signer, quorum, scope, study_id, since, audit_head, provisional)
        if answers is None or key is None:
            said = _export(*exporting)
        else:
            with answers.keep(key.digest) as keeping:
                said = _export(
                    *exporting,
                    also=lambda text: keeping.write(text.encode("utf-8", "surrogatepass")),
                )
                if key.still_holds():
                    keeping.done(0, said)
        kept = ""
    else:
        # Said with what was written, on standard output: standard error keeps to one line for
        # a failure (of --check-harness, after).
        kept = f"; {KEPT}"
    if said.get("provisional"):
        click.echo(f"PROVISIONAL: {said['provisional']}", err=True)
    click.echo(
        f"wrote {said['bands']} bands of {said['vignettes']} vignettes to {Path(out)} "
        f"({said['adjudicated']} clinician-adjudicated{kept})"
    )
    if harness is None:
        return
    from fma_bands.evidence.export import check_harness

    check = check_harness(Path(out), harness or None)
    if check.problems:
        raise FmaBandsError(
            f"the harness at {check.where} refused {len(check.problems)} record(s) of the export "
            f"(it built {check.bands} of {said['bands']} bands)",
            problems=check.problems,
        )
    click.echo(
        f"the harness at {check.where} builds all {check.bands} bands and "
        f"{check.adjudicators} adjudicator(s)"
    )


def _export(
    out: str,
    signer: Any,
    quorum: int | None,
    scope: str | None,
    study_id: str | None,
    since: tuple[int, str] | None,
    audit_head: tuple[int, str] | None,
    provisional: bool,
    also: Callable[[str], object] | None = None,
) -> dict[str, Any]:
    """bands.yaml decided and written to `out` (its text handed to `also` as well); what the
    command says of it."""
    from fma_bands.evidence.export import every_band, export_document, write_bands
    from fma_bands.evidence.provenance import ADJUDICATED
    from fma_bands.evidence.registry import decide

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
    write_bands(out, document, also=also)
    entries = every_band(document)
    adjudicated = sum(e["provenance"] == ADJUDICATED for e in entries)
    return {
        "bands": len(entries),
        "vignettes": len(document["bands"]),
        "adjudicated": adjudicated,
        "provisional": document.get("provisional"),
        "stamp": document["generated_at"],
    }


def _export_kept(out: str, found: "Answer") -> dict[str, Any] | None:
    """bands.yaml as kept, written to `out` with the time it is written now; what the command
    says of it. None when the kept text does not hold its time where it says (decided afresh)."""
    from fma_bands.core.files import write_atomically
    from fma_bands.evidence.export import generated_stamp

    said = dict(found.notes)
    old, new = str(said.get("stamp", "")).encode(), generated_stamp().encode()
    # The stamp is in the header, at the top: only the first part of the text is held.
    first = bytearray(found.handle.read(64 * 1024))
    at = first.find(b"\ngenerated_at: ", 0, 4096)
    at = first.find(old, at, at + 64) if at >= 0 and old else -1
    if at < 0 or len(old) != len(new):
        return None
    first[at : at + len(new)] = new

    def copy(stream: IO[str]) -> None:
        stream.flush()
        binary = cast(TextIO, stream).buffer
        binary.write(first)
        found.copy_to(binary)

    write_atomically(out, copy, shared=True)
    said["stamp"] = new.decode()
    return said


def _head_signer() -> Any:
    """The study's root key of the coordinator named by --as, unsealed for the signed head."""
    from fma_bands.cli.base import acting_passphrase, coordinator, store
    from fma_bands.study.enrolment import root_signer

    with store() as session:
        root = root_signer(session, coordinator(session), acting_passphrase())
    return root.keyid, root.private_key
