"""`fma-bands init`, `demo`, `phase` and `mode`: setting up a study and running its phases."""

import shutil
from pathlib import Path

import click
import yaml

from fma_bands.cli.base import cli, coordinator, done, settings, store, synced
from fma_bands.core.errors import AccessDenied, FmaBandsError
from fma_bands.core.files import write_atomically
from fma_bands.evidence.policy import Policy

# The demo vignettes: in the wheel, a folder of the package (pyproject.toml, package-dir); in a
# checkout, the repository's vignettes/ (an editable install maps no folder of data).
PACKAGE = Path(__file__).resolve().parent.parent
DEMO_VIGNETTE_FOLDERS = (PACKAGE / "demo_vignettes", PACKAGE.parent / "vignettes")

# The accounts `fma-bands demo` makes: demo only, printed, never secret.
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


@cli.command()
def init() -> None:
    """Create the database (or bring it to the current schema) and load the vignettes."""
    from fma_bands.store.db import shown_url
    from fma_bands.study.state import study

    with store(create=True) as session:
        found, report = synced(session)
        current = study(session)
    click.echo(
        f"database {shown_url(settings().database_url)}: {len(found)} vignettes loaded ({report})"
    )
    click.echo(f"review phase {current.phase}, {current.mode} mode (round {current.round})")
    done(0 if found.ok else 1)


@cli.command()
@click.option(
    "--reuse",
    is_flag=True,
    help="When the database already holds the demo study, say how to start the app and succeed "
    "(so a script may run `fma-bands demo --reuse` every time).",
)
def demo(reuse: bool) -> None:
    """Set up a ready demo study (coordinator and two raters) and say how to sign in.

    A missing vignette folder is filled with the demo vignettes that ship with fma-bands, so the
    demo works from any folder. Refused on a database that already holds a study: the demo
    accounts' passphrases are printed, so they never join a real one."""
    from fma_bands.cli.base import has_database, library
    from fma_bands.cli.serve import start_command
    from fma_bands.store.db import shown_url
    from fma_bands.study.enrolment import create_user
    from fma_bands.study.governance import set_policy
    from fma_bands.study.identity import set_identity
    from fma_bands.study.library import sync_vignettes
    from fma_bands.study.users import has_users, list_users, require_user

    shown, folder = shown_url(settings().database_url), settings().attestations
    start = f"start the app with `{start_command()}`"
    if has_database():
        with store() as session:
            taken = has_users(session)
            is_demo = taken and all(u.demo for u in list_users(session, role="coordinator"))
        if is_demo and reuse:
            click.echo(f"The demo study is already in {shown}: {start} and sign in with:")
            _print_demo_accounts()
            _print_coordinator_commands()
            return
        if taken:
            what = "the demo study" if is_demo else "a study that is not the demo"
            raise FmaBandsError(
                f"{shown} already holds a study ({what}), and `fma-bands demo` only sets up a "
                f"new one: {start}"
                + (f" (`{start_command('demo --reuse')}` says so and succeeds)" if is_demo else "")
                + ". To start the demo over, delete that database and the attestations folder "
                f"{folder}, or give another --db and --attestations."
            )
    if any(folder.glob("*.dsse.json")):
        raise FmaBandsError(
            f"{folder} already holds another study's signed records: `fma-bands demo` "
            "needs an attestations folder of its own (give another --attestations)."
        )
    if not settings().vignettes.exists():
        _copy_demo_vignettes(settings().vignettes)
    # Read before the database is made, so that a folder with no vignette leaves nothing behind.
    found = library()
    if not len(found):
        raise FmaBandsError(
            f"no vignettes loaded from {settings().vignettes}: give a folder of vignette files "
            "with --vignettes DIR, or a folder that does not exist yet for the demo's own",
            problems=found.problems,
        )
    for problem in found.problems:
        click.echo(f"warning: {problem}", err=True)
    with store(create=True) as session:
        sync_vignettes(session, found, actor="cli")
        root = DEMO_USERS[0]["passphrase"]
        for fields in DEMO_USERS:
            create_user(session, actor="demo", folder=folder, root_passphrase=root, **fields)
        coordinator_account = require_user(session, "coordinator")
        set_policy(
            session,
            folder,
            actor=coordinator_account,
            passphrase=root,
            quorum=1,
            scope="warn",
        )
        # As the Rater identities page records them, so that the roster the raters' signatures
        # point to holds each one's commitment and a demo rater can sign straight away.
        for fields in DEMO_USERS:
            if fields["role"] == "rater":
                set_identity(
                    session,
                    actor=coordinator_account,
                    pseudonym=str(fields["pseudonym"]),
                    record=demo_identity(str(fields["pseudonym"])),
                    key_path=settings().identity_key,
                    passphrase=root,
                    folder=folder,
                    source="demo",
                )
    recommended = _write_recommended_policy(folder)
    click.echo(f"Demo study ready in {shown}: {len(found)} vignettes.")
    click.echo(f"Now {start} and sign in with one of these (demo only, not secret):")
    _print_demo_accounts()
    _print_coordinator_commands()
    click.echo(
        "These are demo accounts: their passphrases are printed here, so the raters' signed "
        "activation records say demo and the registry warns. A real rater is enrolled with a "
        "code and chooses their own passphrase."
    )
    click.echo(
        "Each demo rater's private identity is recorded (made up, and saying it is a demo), so "
        f"they can sign their attestations at once; it is sealed under {settings().identity_key}. "
        "In a real study the coordinator records each rater's on the Rater identities page."
    )
    click.echo(
        f"The demo's policy is quorum 1, scope warn, so one rater's review of a band outside "
        f"their specialty counts, with a warning. The policy recommended for a real study, "
        f"quorum {RECOMMENDED_POLICY.quorum}, scope {RECOMMENDED_POLICY.scope}, is in "
        f"{recommended}: not in force here, and signed by nobody."
    )


def demo_identity(pseudonym: str) -> dict[str, str]:
    """A demo rater's private identity: made up, and saying in every field that it is a demo,
    so that nobody reads it as a real clinician's (and it is never anyone's real details)."""
    return {
        "full_name": f"Demo {pseudonym} (not a real person)",
        "primary_qualification": "none: demo account",
        "postgraduate_qualification": "none: demo account",
        "registration_number": f"DEMO-{pseudonym}",
        "registering_body": "none: fma-bands demo study",
        "institution": "fma-bands demo study",
        "email": f"{pseudonym}@demo.invalid",
    }


# The policy README recommends for a real study (A policy for a real study): two adjudicators
# per band, each inside the sub-action's scope rule.
RECOMMENDED_POLICY = Policy(quorum=2, scope="require")
RECOMMENDED_POLICY_FILE = "policy.recommended.yaml"


def _write_recommended_policy(folder: Path) -> Path:
    """The recommended policy, written beside the demo's policy.yaml for the coordinator who
    sets up a real study next; a readable file that no fma-bands command reads."""
    policy = RECOMMENDED_POLICY
    text = (
        "# The registry policy fma-bands recommends for a real study (README, A policy for a\n"
        "# real study). It is NOT in force: the demo runs under policy.yaml (quorum 1, scope\n"
        "# warn), and nothing reads this file. In a real study, the coordinator signs it with:\n"
        f"#   fma-bands policy set --quorum {policy.quorum} --scope {policy.scope}\n"
        + yaml.safe_dump(policy.as_dict())
    )
    return write_atomically(Path(folder) / RECOMMENDED_POLICY_FILE, text, shared=True)


def _print_coordinator_commands() -> None:
    click.echo(
        "A coordinator's commands on the study's store (agreement, round, assign ...) say who "
        "runs them: `fma-bands --as coordinator agreement` asks for the passphrase at a "
        "terminal; a script gives --passphrase-file FILE, or sets FMA_BANDS_AS and "
        "FMA_BANDS_PASSPHRASE_FILE. Those that decide from the files alone (verify, registry, "
        "export) need no one's passphrase: an editor runs them too."
    )


def _print_demo_accounts() -> None:
    for fields in DEMO_USERS:
        click.echo(
            f"  {fields['pseudonym']:<12} passphrase {fields['passphrase']:<17} ({fields['role']})"
        )


def _copy_demo_vignettes(target: Path) -> None:
    """The demo vignettes that ship with fma-bands, copied into `target` (a new folder), so that
    the study's files are all in the folder it runs from."""
    source = next((p for p in DEMO_VIGNETTE_FOLDERS if any(p.glob("*.yaml"))), None)
    if source is None:
        raise FmaBandsError(
            f"there is no vignette folder {target}, and this installation of fma-bands holds no "
            "demo vignettes to put there: give --vignettes DIR"
        )
    try:
        target.mkdir(parents=True)
        for path in sorted(source.glob("*.yaml")):
            shutil.copyfile(path, target / path.name)
    except OSError as exc:
        raise FmaBandsError(
            f"cannot write the demo vignettes: {exc.strerror or exc}", file=str(target)
        ) from None
    click.echo(f"The demo vignettes that ship with fma-bands are now in {target}.")


@cli.command()
@click.argument("state", required=False, type=click.Choice(["open", "closed"]))
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def phase(state: str | None, as_json: bool) -> None:
    """Show the phase of the current round, or close it, as `fma-bands round close` does (a
    closed round is never reopened: see `fma-bands round`)."""
    from fma_bands.cli.base import print_json
    from fma_bands.study.rounds import close_round
    from fma_bands.study.state import study

    with store() as session:
        current = study(session)
        number, shown = current.round, str(current.phase)
        if state:
            actor = coordinator(session)
            if state == "closed":
                closed = close_round(session, actor=actor, folder=settings().attestations)
                number, shown = closed.number, closed.phase
            elif current.phase == "closed":
                raise AccessDenied(
                    f"round {number} is closed and a closed round is never reopened: open round "
                    "2 for the bands still in dispute instead (fma-bands round open 2)"
                )
    if as_json:
        print_json({"round": number, "phase": shown})
        return
    click.echo(f"review phase {shown}" + (f" (round {number})" if number > 1 else ""))


@cli.command()
@click.argument("state", required=False, type=click.Choice(["review", "blind"]))
def mode(state: str | None) -> None:
    """Show the review mode, or set it."""
    from fma_bands.study.state import set_mode, study

    with store() as session:
        current = study(session)
        if state:
            current = set_mode(session, actor=coordinator(session), mode=state)
    click.echo(f"{current.mode} mode")
