"""What only someone holding this user's key could write: the one answer kept in a folder of
kept answers (evidence/kept.py), replaced under its own key."""

from pathlib import Path

from fma_bands.evidence.kept import SUFFIX, open_answers


def replace_the_answer(folder: Path, body: bytes) -> None:
    """The body of the one answer kept in `folder`, replaced by `body`, authenticated."""
    (answer,) = folder.glob("*" + SUFFIX)
    answers = open_answers(folder)
    assert answers is not None
    with answers.keep(answer.name.removesuffix(SUFFIX)) as keeping:
        keeping.write(body)
        keeping.done(0)
