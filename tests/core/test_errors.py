"""What a problem says is shown on a page, a terminal and in a log (fma_bands/core/errors.py):
a lone surrogate, which a file name that is not UTF-8 or JSON's \\ud800 leaves in text and no
UTF-8 output can carry, is written as its escape."""

from fma_bands.core.errors import FmaBandsError, Problem, escape_surrogates
from fma_bands.core.markup import terminal_escape, terminal_text


def test_a_lone_surrogate_is_written_as_its_escape_and_other_text_is_left_alone():
    assert escape_surrogates("951-\udcff\udcfe.dsse.json") == "951-\\udcff\\udcfe.dsse.json"
    assert escape_surrogates("é \U0001f600 plain") == "é \U0001f600 plain"


def test_a_problem_and_an_error_naming_one_can_be_written_as_utf8():
    problem = Problem("bad \ud800", file="951-\udcff.yaml", field="x\udc80")
    error = FmaBandsError("no \udcff", file="f\udcff", field="g\ud800", fields={"h": "\udcff"})
    for said in (str(problem), str(error), *error.fields.values()):
        said.encode("utf-8")  # strict: raises on a lone surrogate
    assert problem.file == "951-\\udcff.yaml" and error.message == "no \\udcff"


def test_a_terminal_is_never_handed_a_lone_surrogate():
    assert terminal_text("a\ud800\nb") == "a\\ud800\nb"
    assert terminal_escape("\udcff") == "\\udcff"
