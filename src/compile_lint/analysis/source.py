"""Reading Python source as Python does: the encoding comes from the BOM or coding cookie, and
whitespace only libcst rejects is made plain."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path

LINE_END = re.compile(r"\r\n|\r|\n")
LINE_WITH_END = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def source_lines(text: str, keepends: bool = False) -> list[str]:
    """The lines as Python (and editors) number them, like `str.splitlines` otherwise: that one also
    ends a line at \f, \v, \x1c-\x1e, \x85, \u2028 and \u2029, which shifts every later line."""
    if keepends:
        return LINE_WITH_END.findall(text)
    lines = LINE_END.split(text)
    return lines[:-1] if lines[-1] == "" else lines


def encoding_of(data: bytes) -> str:
    """The encoding a coding cookie or BOM declares (PEP 263), read from the first two lines only."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return encoding


def decode(data: bytes) -> str:
    return data.decode(encoding_of(data))


def read_source(path: str) -> str:
    return decode(Path(path).read_bytes())


# Whitespace Python accepts and libcst's tokenizer does not: a line holding only a backslash
# continuation, and a form feed inside the indentation (Python restarts the indent count after it;
# libcst counts it as a column). After a backslash-only line, CPython's tokenizer indents the next
# line's statement at the backslash's column, or at its own when the backslash is at column 0.
CONTINUATION_ONLY_LINE = re.compile(r"^[ \t\f]*\\\r?$", re.MULTILINE)
INDENT_THROUGH_FORM_FEED = re.compile(r"^[ \t\f]*\f(?=[ \t]*[^ \t\f\r\n])")  # up to the last one


@dataclass(frozen=True)
class Normalised:
    text: str
    column_shifts: dict[int, int]  # line (1-based) -> characters removed from its start (< 0: added)


def normalise_odd_whitespace(text: str) -> Normalised | None:
    """The same program with those lines made plain for libcst, line for line; None if there are none,
    or if Python would read the result differently (the two ASTs must match)."""
    lines = text.split("\n")
    shifts: dict[int, int] = {}
    changed = False
    continued_indent: str | None = None  # the indentation a backslash-only line set for the next one
    in_strings = _lines_inside_strings(text)
    for number, line in enumerate(lines, start=1):
        body = line.rstrip("\r")
        if number in in_strings:
            continue
        if CONTINUATION_ONLY_LINE.match(body):
            if continued_indent is None:
                continued_indent = _indent(body)
            lines[number - 1] = line[len(body) :]  # keep only the line end: a blank line
            changed = True
            continue
        if continued_indent:  # set at a column above 0: that column is this statement's indentation
            own = _indent(line)
            line = continued_indent + line[len(own) :]
            shifts[number] = len(own) - len(continued_indent)
            lines[number - 1] = line
            body = line.rstrip("\r")
        continued_indent = None
        if (match := INDENT_THROUGH_FORM_FEED.match(body)) is not None:
            lines[number - 1] = line[match.end() :]
            shifts[number] = shifts.get(number, 0) + match.end()
            changed = True
    if not changed:
        return None
    plain = "\n".join(lines)
    try:
        same = ast.dump(ast.parse(text)) == ast.dump(ast.parse(plain))
    except (SyntaxError, ValueError):
        return None
    return Normalised(plain, {number: shift for number, shift in shifts.items() if shift}) if same else None


def _lines_inside_strings(text: str) -> set[int]:
    """Lines that start inside a multi-line string: their whitespace is part of its value."""
    spans = multiline_tokens(text) or []  # if Python's tokenizer fails, the AST comparison still guards
    return {line for first, last in spans for line in range(first + 1, last + 1)}


def multiline_tokens(text: str) -> list[tuple[int, int]] | None:
    """(first, last) line of each token that spans lines (a multi-line string); None if Python's
    tokenizer rejects the text."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return None
    ends = (tokenize.NL, tokenize.NEWLINE)
    return [(t.start[0], t.end[0]) for t in tokens if t.start[0] < t.end[0] and t.type not in ends]


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t\f"))]
