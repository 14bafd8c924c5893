"""TCL902: a `# noqa: TCL...` comment that suppresses nothing on its line."""

from __future__ import annotations

from compile_lint.rules.base import Rule


class UnusedNoqa(Rule):
    code = "TCL902"
    name = "unused-noqa"
    summary = "`# noqa` names a TCL code that has no finding on this line"
    gb_codes = ()
    fix = "Remove the code from the `# noqa` comment (the whole comment if it names nothing else)."
    severity = "info"
    scope = "module"
    what = (
        "Reports a `# noqa: TCL...` comment that names a TCL code with no finding on its line, or a code that "
        "no rule has (ruff's RUF100 for compile-lint's codes). Codes of other tools, bare `# noqa` and codes "
        "not selected on this run are left alone. Off unless selected by a prefix with a digit: "
        '`--extend-select TCL902` (or `extend-select = ["TCL902"]`).'
    )
    why = (
        "A stale suppression hides the next real graph break on that line: after a refactor the `noqa` stays, "
        "and a new `.item()` added there is never reported. It is opt-in because a helper counts as compiled "
        "only when its caller is linted too: a run over a few files (pre-commit) would call a `noqa` unused "
        "that the whole-project run needs."
    )
    example = "@torch.compile\ndef step(x):\n    y = x.sum()  # noqa: TCL101\n    return y\n"
    fixed_example = "@torch.compile\ndef step(x):\n    y = x.sum()\n    return y\n"
    invalid = ()  # reported by the engine after noqa filtering, not by a visitor; tested in tests/test_conventions.py
    valid = ()


RULE = UnusedNoqa()
