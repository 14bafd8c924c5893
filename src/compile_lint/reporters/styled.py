"""Report lines without importing rich where nothing reads colours (a pipe, a file, pre-commit, a CI log).

rich costs ~30 ms of imports, a fifth of a warm one-file run. `Styled` is the part of rich's `Text` the reports
build (text appended with styles, `+`); `Output` prints it as plain lines when its file is not a terminal, and
hands anything else (a terminal, colours forced, markup, emoji codes, tabs, tables) to rich's Console, which is
created on first use. Both print the same characters: a Styled line is what rich would render from it.
"""

from __future__ import annotations

import builtins
import os
import re
import sys
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

UNWRAPPED = 100_000  # the width of a console that is not a terminal: tables at their natural width, nothing wraps
STRIPPED = dict.fromkeys((7, 8, 11, 12, 13))  # what rich's Text drops (rich.control.STRIP_CONTROL_CODES)
EMOJI_CODE = re.compile(r":\S*?:")  # rich replaces `:name:` in a printed str, even without markup
TERMINAL_ENVIRONMENT = ("FORCE_COLOR", "TTY_COMPATIBLE")  # make rich see a terminal (or not) whatever the file is


class Styled:
    """Text with styled spans, as rich's `Text(text, style)`, `.append(text, style)` and `+` build it."""

    def __init__(self, text: str = "", style: str = "") -> None:
        self.plain = text.translate(STRIPPED)
        self.style = style
        self.spans: list[tuple[int, int, str]] = []

    def append(self, text: str, style: str = "") -> Styled:
        text = text.translate(STRIPPED)
        if text and style:
            self.spans.append((len(self.plain), len(self.plain) + len(text), style))
        self.plain += text
        return self

    def __add__(self, other: Styled) -> Styled:
        result = Styled(self.plain, self.style)
        result.spans = [*self.spans]
        if other.plain:
            offset = len(self.plain)
            if other.style:
                result.spans.append((offset, offset + len(other.plain), other.style))
            result.spans.extend((start + offset, end + offset, style) for start, end, style in other.spans)
            result.plain += other.plain
        return result

    def __rich__(self) -> Text:
        from rich.text import Span, Text

        return Text(self.plain, style=self.style, spans=[Span(*span) for span in self.spans])


class Output:
    """A console on `file` (default: stdout, or stderr), printing plain lines itself where it can. On a terminal
    it wraps at the terminal's width; anywhere else nothing wraps, whatever COLUMNS says: one finding header per
    line, carets under their line, tables at their natural width (ruff prints plain lines there too)."""

    def __init__(self, file: IO[str] | None = None, stderr: bool = False) -> None:
        self._file = file
        self._stderr = stderr
        self._rich: Console | None = None

    @property
    def file(self) -> IO[str]:
        """As rich's Console: the stream at the time of printing (pytest and redirect_stdout swap it)."""
        if self._file is not None:
            return self._file
        return sys.stderr if self._stderr else sys.stdout

    @property
    def rich(self) -> Console:
        if self._rich is None:
            from rich.console import Console

            self._rich = Console(file=self._file, stderr=self._stderr)
            if not self._rich.is_terminal:
                self._rich.width = UNWRAPPED
                self._rich.soft_wrap = True
        return self._rich

    @property
    def is_terminal(self) -> bool:
        return False if self._plain() else self.rich.is_terminal

    def _plain(self) -> bool:
        """Whether rich would see no terminal here, decided without importing it (when in doubt: False)."""
        if any(name in os.environ for name in TERMINAL_ENVIRONMENT):
            return False
        if hasattr(builtins, "get_ipython") or "idlelib" in sys.modules:  # rich's Jupyter and IDLE cases
            return False
        isatty = getattr(self.file, "isatty", None)
        try:
            return isatty is not None and not isatty()
        except ValueError:  # a closed file: rich says "not a terminal" too, and writing fails either way
            return False

    def print(self, *objects: Any, **options: Any) -> None:
        """rich's `Console.print`; a Styled, a str without markup and nothing are written here when plain."""
        line = self._plain_line(objects, options)
        if line is None:
            self.rich.print(*objects, **options)
            return
        self.file.write(line + "\n")
        self.file.flush()

    def _plain_line(self, objects: tuple[Any, ...], options: dict[str, Any]) -> str | None:
        if len(objects) > 1 or not set(options) <= {"style", "markup", "highlight", "soft_wrap"}:
            return None
        if not objects:
            line = ""
        elif isinstance(objects[0], Styled):
            line = objects[0].plain
        elif isinstance(objects[0], str) and options.get("markup") is False and not EMOJI_CODE.search(objects[0]):
            line = objects[0].translate(STRIPPED)
        else:
            return None
        if "\t" in line or not self._plain():  # rich expands tabs by cell width: leave that to it
            return None
        return line
