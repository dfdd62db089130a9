"""The README and docs/ are checked like code: every command and option the README shows exists,
with that name; the README's layout list names exactly the packages and modules in the tree;
every shell block in docs/*.md runs; and every citation of docs/design.md in the code and the
docs names one of its sections. (sqlite-utils' tests/test_docs.py is the model.)

How the shell blocks of docs/*.md run: each block fenced as ```sh, ```bash or ```shell runs on
its own with `bash -c`, under `set -e -o pipefail`, in a scratch checkout of its own: a
temporary folder holding the repository's files, a copy of the demo vignettes, and the demo
study `fma-bands demo` makes there (`fma-bands.db`, `attestations/`), with `.venv` standing for
the environment running the tests and its `bin` on PATH, and no FMA_BANDS_* variable set. A
block passes when it exits 0 without a traceback. Every other fenced block names its language
(`text`, `yaml`, `nginx`, ...), so that no command hides in an untagged block.

A block that cannot run here says so on the line before its fence, in an HTML comment (not shown
when the doc is rendered) giving the reason:

    <!-- test_docs: not run: needs root and a PostgreSQL server -->
    <!-- test_docs: slow: the benchmark runs for minutes -->

A `not run` block is reported as skipped with its reason; a `slow` block runs only when
FMA_BANDS_DOCS_SLOW=1 is set.
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import click
import pytest

from fma_bands.cli import cli
from tests.conftest import ROOT

README = (ROOT / "README.md").read_text()
SNIPPETS = sorted(set(re.findall(r"`(fma-bands(?: [^`]*)?)`", README)))
SHELL_LINES = [
    line.strip()
    for block in re.findall(r"```sh\n(.*?)```", README, re.S)
    for line in block.splitlines()
    if "fma-bands " in line and not line.strip().startswith("#")
]


def resolve(words: list[str]) -> tuple[click.Command, list[click.Command], list[str]]:
    """The command the words name, the groups on the way, and the words left (its arguments)."""
    command: click.Command = cli
    path: list[click.Command] = [cli]
    rest = list(words)
    while isinstance(command, click.Group) and rest and not rest[0].startswith("-"):
        found = command.commands.get(rest[0])
        if found is None:
            break
        command = found
        path.append(found)
        rest.pop(0)
    return command, path, rest


def options_of(commands: list[click.Command]) -> set[str]:
    found = {opt for c in commands for p in c.params for opt in getattr(p, "opts", [])}
    return found | {"--help", "-h"}


def check(snippet: str) -> None:
    # Alternatives written `a\|b` or [open|closed] are placeholders, not words to resolve.
    words = shlex.split(snippet.replace("\\|", "|"))[1:]
    global_words = []
    while words and words[0].startswith("--"):
        global_words.append(words.pop(0))
        if words and not words[0].startswith("-") and words[0] not in cli.commands:
            words.pop(0)  # the option's value
    command, path, rest = resolve(words)
    assert path[-1] is not cli or not words, f"{snippet!r}: no command {words[0]!r}"
    if isinstance(command, click.Group):
        assert not rest or rest[0].startswith("-"), f"{snippet!r}: {rest[0]!r} is not a command"
    known = options_of(path)
    for word in global_words + rest:
        word = word.lstrip("[").rstrip("]")
        if word.startswith("--"):
            assert word.split("=")[0] in known, f"{snippet!r}: no option {word} for {command.name}"


def test_the_readme_shows_commands():
    assert len(SNIPPETS) > 20 and SHELL_LINES


@pytest.mark.parametrize("snippet", SNIPPETS)
def test_every_command_in_the_readme_exists(snippet):
    check(snippet)


@pytest.mark.parametrize("line", SHELL_LINES)
def test_every_shell_line_in_the_readme_names_real_commands(line):
    for part in re.split(r"&&|;", line):
        part = part.strip()
        if "fma-bands " in part:
            check("fma-bands " + part.split("fma-bands ", 1)[1])


def test_every_command_of_the_cli_is_in_the_readme():
    def walk(group: click.Group, prefix: str):
        for name, command in group.commands.items():
            yield f"{prefix}{name}"
            if isinstance(command, click.Group):
                yield from walk(command, f"{prefix}{name} ")

    shown = " ".join(SNIPPETS)
    missing = [name for name in walk(cli, "") if f"fma-bands {name}" not in shown]
    assert not missing, f"commands the README does not mention: {missing}"


def test_the_global_options_in_the_readme_exist():
    line = next(line for line in README.splitlines() if line.startswith("Every command has"))
    for option in re.findall(r"`(--[a-z-]+)", line):
        assert option in options_of([cli]), option


# The README's layout list against the tree ----------------------------------------------------

PACKAGE = ROOT / "fma_bands"


def layout_section() -> str:
    return README.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]


def package_bullets() -> dict[str, str]:
    """Each bullet of the layout list that opens with a package, `fma_bands/NAME/`, by name."""
    bullets = re.findall(r"^- `fma_bands/([a-z_]+)/`(.*?)(?=^- |^$)", layout_section(), re.M | re.S)
    names = [name for name, _ in bullets]
    assert len(names) == len(set(names)), f"a package has two bullets: {names}"
    return dict(bullets)


def named_in(text: str) -> set[str]:
    """The module names a bullet gives: words in backticks, a folder with a trailing slash."""
    return set(re.findall(r"`([a-z_][a-z0-9_]*/?)`", text))


def modules_of(package: Path) -> set[str]:
    """A package's modules, and its folders of Python code written `name/`."""
    found = {p.stem for p in package.glob("*.py")} - {"__init__", "__main__"}
    found |= {
        f"{d.name}/"
        for d in package.iterdir()
        if d.is_dir() and d.name != "__pycache__" and any(d.rglob("*.py"))
    }
    return found


def test_the_readme_layout_lists_every_package():
    in_tree = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert set(package_bullets()) == in_tree, "README's layout bullets against fma_bands/*/"
    loose = [p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py"]
    unnamed = [name for name in loose if f"`fma_bands/{name}`" not in layout_section()]
    assert not unnamed, f"modules of fma_bands/ the README's layout does not name: {unnamed}"


@pytest.mark.parametrize("package", sorted(p.parent.name for p in PACKAGE.glob("*/__init__.py")))
def test_the_readme_layout_names_exactly_the_modules_of(package):
    bullet = package_bullets().get(package)
    assert bullet is not None, f"the README's layout has no bullet for fma_bands/{package}/"
    in_tree, named = modules_of(PACKAGE / package), named_in(bullet)
    omitted, unknown = sorted(in_tree - named), sorted(named - in_tree)
    assert not omitted, f"modules of fma_bands/{package}/ the README's layout omits: {omitted}"
    assert not unknown, f"names in the README's fma_bands/{package}/ bullet, not in it: {unknown}"


def test_every_path_in_the_readme_layout_exists():
    # A package's bullet names its folders as `name/`, inside the package: its own test's.
    text = layout_section()
    for bullet in package_bullets().values():
        text = text.replace(bullet, "")
    paths = [
        token
        for token in re.findall(r"`([^`\s<>]+)`", text)
        if "/" in token or token.endswith((".py", ".md"))
    ]
    assert len(paths) > 20
    missing = [path for path in paths if not (ROOT / path).exists()]
    assert not missing, f"paths in the README's layout that are not in the tree: {missing}"


def test_the_readme_layout_names_every_test_folder():
    folders = [d.name for d in (ROOT / "tests").iterdir() if d.is_dir() and d.name != "__pycache__"]
    unnamed = [name for name in folders if f"`tests/{name}/`" not in layout_section()]
    assert not unnamed, f"folders of tests/ the README's layout does not name: {unnamed}"


def test_the_newcomers_questions_are_answered_in_the_layout():
    table = layout_section().split("Where a newcomer starts:", 1)[1]
    answers = {
        "where a review is saved": "fma_bands/study/reviews.py",
        "where alpha is computed": "fma_bands/agreement/metrics.py",
        "where a signature is checked": "fma_bands/evidence/dsse.py",
        "where the export is written": "fma_bands/evidence/export.py",
    }
    for question, path in answers.items():
        [row] = [line for line in table.splitlines() if line.startswith(f"| {question} |")]
        assert f"`{path}`" in row, question


# The shell blocks of docs/*.md ----------------------------------------------------------------

DOCS = sorted((ROOT / "docs").glob("*.md"))
SHELLS = ("sh", "bash", "shell")
MARKER = re.compile(r"<!-- test_docs: (not run|slow): (.*?) -->")
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.M | re.S)
SLOW = os.environ.get("FMA_BANDS_DOCS_SLOW") == "1"


@dataclass(frozen=True)
class Block:
    doc: str  # the file name in docs/
    line: int  # where its fence opens
    language: str
    code: str
    marker: tuple[str, str] | None  # (kind, reason) of a test_docs comment before the fence

    @property
    def name(self) -> str:
        return f"{self.doc}:{self.line}"


def blocks(path: Path) -> Iterator[Block]:
    text = path.read_text(encoding="utf-8")
    for fence in FENCE.finditer(text):
        line = text.count("\n", 0, fence.start()) + 1
        before = text[: fence.start()].rstrip("\n").rsplit("\n", 1)[-1]
        found = MARKER.fullmatch(before.strip())
        marker = (found[1], found[2].strip()) if found else None
        yield Block(path.name, line, fence[1].strip(), fence[2], marker)


ALL_BLOCKS = [b for doc in DOCS for b in blocks(doc)]
SHELL_BLOCKS = [b for b in ALL_BLOCKS if b.language in SHELLS]


def test_docs_show_shell_blocks():
    shown = {b.doc for b in SHELL_BLOCKS}
    assert {"design.md", "deployment.md"} <= shown, shown
    assert any(b.marker is None for b in SHELL_BLOCKS)


@pytest.mark.parametrize("block", ALL_BLOCKS, ids=lambda b: b.name)
def test_every_fenced_block_in_docs_names_its_language(block):
    assert block.language, f"{block.name}: name the block's language (```sh for commands)"


def test_every_test_docs_marker_gives_a_reason_before_a_shell_block():
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for found in re.finditer(r"<!-- test_docs:.*?-->", text):
            where = f"{doc.name}:{text.count(chr(10), 0, found.start()) + 1}"
            marker = MARKER.fullmatch(found[0])
            assert marker and marker[2].strip(), (
                f"{where}: write `not run: REASON` or `slow: REASON`"
            )
            after = text[found.end() :].lstrip(" \t")
            assert after.startswith("\n```") and after[4:].split("\n", 1)[0] in SHELLS, (
                f"{where}: a test_docs marker stands on the line before a shell block's fence"
            )


@pytest.fixture(scope="module")
def demo_checkout(tmp_path_factory) -> Path:
    """A scratch checkout with the demo study made in it, copied for each block."""
    checkout = tmp_path_factory.mktemp("docs") / "checkout"
    checkout.mkdir()
    own = {"vignettes", "attestations", ".venv", ".git"}
    for entry in ROOT.iterdir():
        if entry.name not in own and not entry.name.endswith((".db", ".log", ".key")):
            (checkout / entry.name).symlink_to(entry)
    shutil.copytree(ROOT / "vignettes", checkout / "vignettes")
    (checkout / "attestations").mkdir()
    (checkout / ".venv").symlink_to(Path(sys.prefix))
    done = subprocess.run(
        [sys.executable, "-m", "fma_bands.cli", "demo"],
        cwd=checkout,
        env=block_env(checkout),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return checkout


def block_env(checkout: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FMA_BANDS_")}
    bins = [str(checkout / ".venv" / "bin"), str(Path(sys.executable).parent)]
    env["PATH"] = os.pathsep.join([*bins, env.get("PATH", "")])
    return env


@pytest.mark.parametrize("block", SHELL_BLOCKS, ids=lambda b: b.name)
def test_every_shell_block_in_docs_runs(block, demo_checkout, tmp_path):
    if block.marker is not None and block.marker[0] == "not run":
        pytest.skip(f"{block.name} is marked not run: {block.marker[1]}")
    if block.marker is not None and not SLOW:
        pytest.skip(f"{block.name} is slow ({block.marker[1]}): FMA_BANDS_DOCS_SLOW=1 runs it")
    checkout = tmp_path / "checkout"
    shutil.copytree(demo_checkout, checkout, symlinks=True)
    done = subprocess.run(
        ["bash", "-c", "set -e -o pipefail\n" + block.code],
        cwd=checkout,
        env=block_env(checkout),
        capture_output=True,
        text=True,
        timeout=None if block.marker else 300,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{block.name} exited {done.returncode}:\n{output}"
    assert "Traceback" not in output, f"{block.name}:\n{output}"


# Citations of docs/design.md ------------------------------------------------------------------

DESIGN = ROOT / "docs" / "design.md"
CITED_IN = ("fma_bands", "app_pages", "tests", "benchmarks", "docs", "README.md", "app.py")


def design_sections() -> list[str]:
    """The design document's headings, longest first (so a section never hides a longer one)."""
    found = re.findall(r"^#{2,4} (.+)$", DESIGN.read_text(encoding="utf-8"), re.M)
    return sorted(found, key=len, reverse=True)


def citations() -> Iterator[tuple[str, str]]:
    """(file, what follows) for each citation of a section of the design document in the code and
    the docs, with line breaks, comment marks and docstring indents read as one space."""
    files = [ROOT / name for name in CITED_IN]
    paths = [p for f in files for p in ([f] if f.is_file() else sorted(f.rglob("*")))]
    for path in paths:
        if path.suffix not in (".py", ".md") or "__pycache__" in path.parts:
            continue
        text = re.sub(r"\s*\n\s*(#\s*)?", " ", path.read_text(encoding="utf-8"))
        for found in re.finditer(r"docs/design\.md`?, ", text):
            yield str(path.relative_to(ROOT)), text[found.end() : found.end() + 120]


def test_every_citation_of_docs_design_names_one_of_its_sections():
    sections = design_sections()
    cited = list(citations())
    assert len(cited) > 40
    for where, rest in cited:
        while True:
            section = next((s for s in sections if rest.startswith(s)), None)
            assert section is not None, f"{where}: no section of docs/design.md at {rest[:60]!r}"
            rest = rest[len(section) :]
            # "; docs/trust.md" after the sections cites another document: the list ends there.
            if not rest.startswith("; ") or rest.startswith("; docs/"):
                break
            rest = rest[2:]


def test_no_code_cites_the_design_document_outside_the_repository():
    outside = re.compile(r"\bDESIGN\b|shared/DESIGN")
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for folder in ("fma_bands", "app_pages", "tests", "benchmarks")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if path != Path(__file__)
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if outside.search(line)
    ]
    assert not found, f"cite docs/design.md instead: {found}"
