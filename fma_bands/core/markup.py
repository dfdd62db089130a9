"""Text from files or people written into markdown or LaTeX so that it shows verbatim: every
character either format would read as markup escaped. For reports made to be downloaded or typeset
(the methods report); pages show such text through app_pages.common.escaped."""

import re

# What CommonMark would read as markup (and $ for renderers with math): escaped with a backslash.
_MARKDOWN = re.compile(r"([\\`*_{}\[\]<>|#!$&~])")


def md_escape(text: str) -> str:
    """Text as markdown shows it verbatim: no emphasis, link, HTML, math or table break."""
    return _MARKDOWN.sub(r"\\\1", text).replace("\n", " ")


_LATEX = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
    # After \item or a row's \\, a bracket would open an optional argument.
    "[": "{[}",
    "]": "{]}",
    "−": "-",
    "Σ": r"$\Sigma$",
    "≥": r"$\geq$",
    "≤": r"$\leq$",
    "·": r"\textperiodcentered{}",
}
_LATEX_RE = re.compile("|".join(re.escape(c) for c in _LATEX))


def tex_escape(text: str) -> str:
    """Text as LaTeX typesets it verbatim: every special character escaped, line breaks as
    spaces (a blank line would end a paragraph, or a table row)."""
    return _LATEX_RE.sub(lambda m: _LATEX[m.group()], " ".join(text.splitlines()))
