"""`fma-bands vignettes check` and `vignettes list`: the vignette files, no database needed."""

from typing import Any

import click

from fma_bands.cli.base import cli, done, library, print_json


@cli.group()
def vignettes() -> None:
    """Check and list vignette files."""


@vignettes.command()
@click.argument("dirs", nargs=-1, metavar="[DIR]...")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def check(dirs: tuple[str, ...], as_json: bool) -> None:
    """Validate vignette folders (default --vignettes); exit 1 listing every problem.

    Warnings (a demographic word in a clinical core) are listed too, and leave the exit 0."""
    found = library(dirs)
    bad = len({p.file for p in found.problems})
    if as_json:
        print_json(
            {
                "valid": found.ok,
                "vignettes": len(found),
                "files": found.files,
                "files_with_problems": bad,
                "problems": [_where(p) for p in found.problems],
                "warnings": [_where(w) for w in found.warnings],
            }
        )
        done(0 if found.ok else 1)
    for problem in found.problems:
        click.echo(str(problem))
    for warning in found.warnings:
        click.echo(f"warning: {warning}")
    click.echo(
        f"{len(found)} vignettes valid, {bad} file(s) with problems "
        f"({len(found.problems)} problem(s)) in {found.files} file(s)"
        + (f"; {len(found.warnings)} warning(s)" if found.warnings else "")
    )
    done(0 if found.ok else 1)


def _where(p: Any) -> dict[str, Any]:
    return {"file": p.file, "line": p.line, "field": p.field, "message": p.message}


@vignettes.command("list")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def list_(as_json: bool) -> None:
    """List the vignettes and their proposed bands."""
    from fma_bands.core.band_text import describe

    found = library()
    if as_json:
        print_json([_vignette_json(v) for v in found])
    else:
        click.echo(f"{'id':<28} {'domain':<14} {'ambiguity':<13} proposals")
        for v in found:
            bands = "; ".join(f"{p.sub_action} {describe(p.acceptable)}" for p in v.proposals)
            click.echo(f"{v.id:<28} {v.domain:<14} {v.ambiguity or '-':<13} {bands or '-'}")
    for problem in found.problems:
        click.echo(str(problem), err=True)
    done(0 if found.ok else 1)


def _vignette_json(v: Any) -> dict[str, Any]:
    from fma_bands.core.bands import to_harness

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
