"""`fma-bands chair decide` and `chair list`: the study chair's decision on a band whose raters'
bands still share no value after round 2 (docs/design.md, The registry)."""

import click

from fma_bands.cli.base import cli, coordinator, print_json, read_secret, settings, store, synced
from fma_bands.core.errors import FmaBandsError
from fma_bands.core.files import load_json


@cli.group()
def chair() -> None:
    """The chair's decision on a band still in dispute after round 2."""


@chair.command()
@click.option("--rater", required=True, metavar="NAME", help="The chair the policy names.")
@click.option("--passphrase-file", required=True, metavar="F", help="The chair's own passphrase.")
@click.option("--vignette", "vid", required=True, metavar="ID")
@click.option("--sub-action", "name", required=True, metavar="NAME")
@click.option(
    "--band",
    "band_json",
    required=True,
    metavar="JSON",
    help='The band chosen, as bands.yaml writes it: e.g. "[2, 3]" or \'{"min": 7, "max": 30}\'.',
)
@click.option("--reason", required=True, help="Why the chair chose this band.")
def decide(
    rater: str, passphrase_file: str, vid: str, name: str, band_json: str, reason: str
) -> None:
    """Sign the chair's decision on one band (the chair's own passphrase): recorded as the
    chair's, never as a rater's review or as agreement between raters."""
    from fma_bands.core.actions import sub_action
    from fma_bands.core.band_text import describe
    from fma_bands.study.chair import decide_band, read_band
    from fma_bands.study.users import require_user

    try:
        # The one JSON reader: nesting, long numbers and NULs are refused by name.
        band = load_json(band_json, source="--band")
    except FmaBandsError as exc:
        raise FmaBandsError(
            f"--band is not JSON fma-bands reads ({exc.message}): give it as bands.yaml writes "
            "a band, e.g. [2, 3]",
            field="band",
        ) from None
    passphrase = read_secret(passphrase_file)
    with store() as session:
        found, _ = synced(session)
        chosen = read_band(found, vid, name, band)
        receipt = decide_band(
            session,
            found,
            chair=require_user(session, rater),
            passphrase=passphrase,
            folder=settings().attestations,
            vid=vid,
            name=name,
            band=band,
            reason=reason,
        )
    [(sequence, digest, file)] = receipt.records
    click.echo(
        f"the chair's decision is signed: {vid}, {sub_action(name).label}: {describe(chosen)}"
    )
    click.echo(f"signed record {sequence}: {file} ({digest})")
    click.echo(f"key fingerprint: {receipt.keyid}")
    click.echo(f"head after signing: {receipt.head[0]}:{receipt.head[1]}")


@chair.command("list")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def list_(as_json: bool) -> None:
    """The bands still in dispute after round 2, and those the chair decided (the coordinator
    or the chair, named by --as)."""
    from fma_bands.core.actions import sub_action
    from fma_bands.core.band_text import describe
    from fma_bands.study.chair import as_data, chair_name, disputes

    with store() as session:
        found, _ = synced(session)
        viewer = coordinator(session)
        listed = disputes(session, found, viewer=viewer, folder=settings().attestations)
        named = chair_name(session)
    if as_json:
        print_json({"chair": named, "bands": [as_data(d) for d in listed]})
        return
    open_ = [d for d in listed if d.chaired is None]
    click.echo(
        f"chair: {named or 'none named (fma-bands policy set ... --chair NAME)'}; "
        f"{len(open_)} band(s) in dispute, {len(listed) - len(open_)} decided by the chair"
    )
    for d in listed:
        label = f"{d.vignette_id}, {sub_action(d.sub_action).label}"
        if d.chaired is None:
            click.echo(f"  in dispute: {label}: the raters' bands share no value")
        else:
            click.echo(
                f"  decided by the chair, {d.chaired.chair}: {label}: "
                f"{describe(d.decision.band)}; reason: {d.chaired.reason}"
            )
