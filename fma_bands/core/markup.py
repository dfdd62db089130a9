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


# Characters a terminal acts on rather than shows (C0 and C1 controls, DEL) and those that
# reorder what follows (bidirectional overrides and isolates): a file name holding them could
# erase a line, hide the rest or print a verdict of its own.
_ACTING = [*range(0x20), 0x7F, *range(0x80, 0xA0), 0x200E, 0x200F, *range(0x202A, 0x202F)]
_ACTING += [*range(0x2066, 0x206A)]
# And lone surrogates (a file name that is not UTF-8, JSON's "\ud800"), which a terminal set to
# UTF-8 cannot be written at all.
_ACTING += [*range(0xD800, 0xE000)]
_SHOWN = {c: f"\\u{c:04x}" for c in _ACTING}  # as JSON writes them too
_SHOWN_IN_TEXT = {c: e for c, e in _SHOWN.items() if chr(c) not in "\n\t"}


def terminal_escape(text: str) -> str:
    """One line as a terminal shows it verbatim: every control and reordering character written
    as its escape (a newline too), so a name from a file can neither act nor start a line."""
    return text.translate(_SHOWN)


def terminal_text(text: str) -> str:
    """Text for a terminal, its lines and tabs kept and every other acting character escaped."""
    return text.translate(_SHOWN_IN_TEXT)
