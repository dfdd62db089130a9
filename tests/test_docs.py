"""The README is checked like code: every command and option it shows exists, with that name.

(sqlite-utils' tests/test_docs.py is the model.) Scripts outside the project rely on these names.
"""

import re
import shlex

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
