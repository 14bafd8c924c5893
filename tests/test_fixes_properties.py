"""Property tests on generated branch shapes: the fix parses, is idempotent, leaves the code around
it byte-identical, and (run eagerly) gives the original's result whichever branch is taken."""

from __future__ import annotations

import ast
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compile_lint.engine import lint_source
from compile_lint.fixes.apply import fix_text

torch = pytest.importorskip("torch")

CONDITIONS = ["x.sum() > 0", "(x > 0).any()", "not (x.mean() > 0)", "x.max() < 1", "(x > 0).all() or x.sum() > 1"]
EXPRESSIONS = ["x + 1", "x * 2", "x.sin()", "-x", "(x - 1) / 2", "torch.relu(x)", "x.abs().sqrt()"]
NAMES = ["y", "out", "h2"]
PREFIX = "import torch\n\n\n@torch.compile\ndef f(x):\n{i}before = x * 3  # untouched\n"
SUFFIX = "{i}after = 1\n"


@st.composite
def branchy_functions(draw: st.DrawFn) -> tuple[str, str, str]:
    """(prefix, branch statement, suffix) of a function whose branch is a TCL103 finding."""
    i = " " * draw(st.sampled_from([2, 4, 8]))
    cond = draw(st.sampled_from(CONDITIONS))
    a, b = draw(st.sampled_from(EXPRESSIONS)), draw(st.sampled_from(EXPRESSIONS))
    name = draw(st.sampled_from(NAMES))
    shape = draw(st.sampled_from(["assign", "assign-no-else", "return", "return-fall-through", "ternary"]))
    if shape == "assign":
        branch = f"{i}if {cond}:\n{i}{i}{name} = {a}\n{i}else:\n{i}{i}{name} = {b}\n"
        tail = f"{i}return {name} + before\n"
    elif shape == "assign-no-else":
        branch = f"{i}if {cond}:\n{i}{i}before = {a}\n"
        tail = f"{i}return before\n"
    elif shape == "return":
        branch = f"{i}if {cond}:\n{i}{i}return {a}\n{i}else:\n{i}{i}return {b}\n"
        tail = ""
    elif shape == "return-fall-through":
        branch = f"{i}if {cond}:\n{i}{i}return {a}\n{i}return {b}\n"
        tail = ""
    else:
        branch = f"{i}{name} = {a} if {cond} else {b}\n"
        tail = f"{i}return {name}\n"
    suffix = SUFFIX.format(i=i) + tail if tail else ""
    return PREFIX.format(i=i), branch, suffix


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(branchy_functions(), st.sampled_from(["\n", "\r\n"]))
def test_fix_parses_is_idempotent_and_keeps_results(parts: tuple[str, str, str], newline: str) -> None:
    prefix, branch, suffix = (p.replace("\n", newline) for p in parts)
    source = prefix + branch + suffix
    findings = lint_source(source, "gen.py")
    assert [f.code for f in findings] == ["TCL103"], source
    result = fix_text(source, findings, {"safe", "unsafe"})
    assert len(result.applied) == 1, source
    ast.parse(result.text)
    assert result.text.startswith(prefix) and result.text.endswith(suffix)
    assert newline == "\r\n" or "\r" not in result.text
    assert newline == "\n" or "\n" not in result.text.replace("\r\n", "")
    again = lint_source(result.text, "gen.py")
    assert again == [] and fix_text(result.text, again, {"safe", "unsafe"}).text == result.text

    def run(text: str, x: object) -> object:
        namespace: dict[str, object] = {"torch": torch}
        eager = re.sub(r"@torch.compile\r?\n", "", text)  # compare eagerly; Dynamo runs in test_fixes_dynamo
        exec(compile(eager, "gen.py", "exec"), namespace)
        return namespace["f"](x)  # type: ignore[operator]

    for x in (torch.rand(3, 4) + 0.5, -(torch.rand(3, 4) + 0.5), torch.rand(3, 4) * 0.1):
        torch.testing.assert_close(run(result.text, x), run(source, x), equal_nan=True)
