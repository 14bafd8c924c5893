"""reporters.styled prints what rich's Console printed before it, without importing rich where it can."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest
from rich.console import Console
from rich.text import Text

from compile_lint.reporters.styled import UNWRAPPED, Output, Styled

LINES = [
    "plain",
    "",
    "trailing spaces   ",
    "   leading spaces",
    "a carriage\rreturn, a bell\x07, a backspace\x08, a vertical tab\x0b and a form feed\x0c",
    "an escape \x1b[2J stays",
    "wide 漢字 and e\u0301 combined",
    "two\nlines",
    "x" * 5000,
    "[bold]markup[/bold] and [link]",
    "an emoji code :smile: and :not_one:",
    "a\ttab",
]


def rich_console(file: io.StringIO) -> Console:
    """The console cli.output_console made before: rich, not a terminal, nothing wrapped."""
    console = Console(file=file)
    console.width = UNWRAPPED
    console.soft_wrap = True
    return console


def both(print_: object) -> tuple[str, str]:
    old, new = io.StringIO(), io.StringIO()
    print_(rich_console(old))  # type: ignore[operator]
    print_(Output(new))  # type: ignore[operator]
    return old.getvalue(), new.getvalue()


@pytest.mark.parametrize("line", LINES)
def test_a_styled_line_prints_as_rich_printed_its_text(line: str) -> None:
    styled = Styled("head: ", style="bold") + Styled(line, style="green")
    styled.append(" tail", style="dim")
    old, new = both(lambda console: console.print(styled, soft_wrap=True))
    assert new == old
    text = Text("head: ", style="bold") + Text(line, style="green")
    text.append(" tail", style="dim")
    assert styled.__rich__() == text and styled.__rich__().style == text.style == "bold"


@pytest.mark.parametrize("line", LINES)
def test_a_string_prints_as_rich_printed_it(line: str) -> None:
    for options in ({"markup": False, "highlight": False, "soft_wrap": True}, {"style": "yellow", "markup": False}, {}):
        old, new = both(lambda console: console.print(line, **options))  # noqa: B023
        assert new == old, options
    assert both(lambda console: console.print()) == ("\n", "\n")


def test_plain_output_does_not_import_rich() -> None:
    code = (
        "import io, sys\nfrom compile_lint.reporters.styled import Output, Styled\nout = io.StringIO()\n"
        "Output(out).print(Styled('a', style='bold') + Styled('b'), soft_wrap=True)\n"
        "Output(out).print('c', markup=False, highlight=False)\n"
        "print(repr(out.getvalue()), any(name.startswith('rich') for name in sys.modules))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "'ab\\nc\\n' False"


def test_forced_colours_go_through_rich(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")
    out = io.StringIO()
    output = Output(out)
    output.print(Styled("red", style="red"))
    assert output.is_terminal and "\x1b[" in out.getvalue()
