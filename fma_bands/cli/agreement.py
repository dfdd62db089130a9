"""`fma-bands agreement`: Krippendorff's alpha of the submitted reviews, with consensus bands."""

from typing import Any

import click

from fma_bands.cli.base import cli, coordinator, print_json, store, synced


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option(
    "--bootstrap",
    type=click.IntRange(min=0),
    default=1000,
    show_default=True,
    metavar="B",
    help="Bootstrap resamples (0: no interval).",
)
@click.option("--seed", type=int, default=20261129, show_default=True, help="Bootstrap seed.")
def agreement(as_json: bool, bootstrap: int, seed: int) -> None:
    """Krippendorff's alpha of the submitted reviews, with consensus bands."""
    from fma_bands.agreement import report_to_json
    from fma_bands.ratings import harness_span, study_report

    with store() as session:
        found, _ = synced(session)
        report = study_report(
            session, found, viewer=coordinator(session), bootstrap=bootstrap, seed=seed
        )
    if as_json:
        print_json(report_to_json(report, harness_span))
        return
    click.echo(format_report(report))


def format_report(report: Any) -> str:
    from fma_bands.ratings import harness_span, reading

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
