"""Reading Python source as Python does: the encoding comes from the BOM or coding cookie, and
whitespace only libcst rejects is made plain."""

from __future__ import annotations

import ast
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
    encoding, _ = tokenize.detect_encoding(iter(data.splitlines(keepends=True)).__next__)
    return encoding


def decode(data: bytes) -> str:
    return data.decode(encoding_of(data))


def read_source(path: str) -> str:
    return decode(Path(path).read_bytes())


# Whitespace Python accepts and libcst's tokenizer does not: a line holding only a backslash
# continuation (libcst then sees the next line's indent as unexpected), and a form feed inside the
# indentation (Python restarts the indent count after it; libcst counts it as a column).
CONTINUATION_ONLY_LINE = re.compile(r"^[ \t\f]*\\\r?$", re.MULTILINE)
INDENT_THROUGH_FORM_FEED = re.compile(r"^[ \t\f]*\f(?=[ \t]*[^ \t\f\r\n])")  # up to the last one


@dataclass(frozen=True)
class Normalised:
    text: str
    column_shifts: dict[int, int]  # line (1-based) -> characters removed from its start


def normalise_odd_whitespace(text: str) -> Normalised | None:
    """The same program with those lines made plain for libcst, line for line; None if there are none,
    or if Python would read the result differently (the two ASTs must match)."""
    lines = text.split("\n")
    shifts: dict[int, int] = {}
    changed = False
    for number, line in enumerate(lines, start=1):
        body = line.rstrip("\r")
        if CONTINUATION_ONLY_LINE.match(body):
            lines[number - 1] = line[len(body) :]  # keep only the line end: a blank line
            changed = True
        elif (match := INDENT_THROUGH_FORM_FEED.match(body)) is not None:
            lines[number - 1] = line[match.end() :]
            shifts[number] = match.end()
            changed = True
    if not changed:
        return None
    plain = "\n".join(lines)
    try:
        same = ast.dump(ast.parse(text)) == ast.dump(ast.parse(plain))
    except (SyntaxError, ValueError):
        return None
    return Normalised(plain, shifts) if same else None
