"""TCL000: a file could not be read, decoded or parsed."""

from __future__ import annotations

from compile_lint.rules.base import Rule


class UnreadableFile(Rule):
    code = "TCL000"
    name = "unreadable-file"
    summary = "File could not be read, decoded or parsed; it was not linted"
    gb_codes = ()
    fix = "Fix the syntax or encoding error shown; the rest of the run is unaffected."
    severity = "error"
    scope = "module"
    what = "Reports a file that compile-lint could not read, decode or parse."
    why = (
        "A file that is not valid Python cannot be analysed, so any graph breaks in it would go "
        "unreported. compile-lint says so once and lints the remaining files."
    )
    example = "def forward(self, x)\n    return x\n"
    fixed_example = "def forward(self, x):\n    return x\n"
    invalid = ()  # reported by the engine, not by a visitor; tested in tests/test_cli.py
    valid = ()


RULE = UnreadableFile()
