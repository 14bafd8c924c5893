"""Property tests: hypothesis builds small compiled functions around each codemod's pattern, with the
cases that broke models (a Python-bool condition, in-place mutation, broadcasting branches, integer
and bool dtypes, a float literal next to int64), applies `--unsafe-fixes`, and requires either that
the codemod refuses or that the rewritten code, run eagerly, gives the original's outputs (same
dtype and shape, exact for integers) on every input the original runs without error. Where a
where-rewrite applied, the fixed function must also compile under Dynamo in one graph."""

from __future__ import annotations

import ast
import contextlib
import io
import re
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from compile_lint.engine import lint_source
from compile_lint.fixes.apply import fix_text

torch = pytest.importorskip("torch")

CONDITIONS = [
    "x.sum() > 0", "(x > 0).any()", "not (x.sum() > 0)", "x.max() < 1", "(x > 0).all() or x.sum() > 1",
    "x.sum().item() > 0", "bool((x > 0).any())", "flag", "x.sum() > 0 or flag", "not flag",
    "x.float().mean().item() > 0.1", "x.sum()", "x[0, 0] > 0", "u.sum() > 0 and x.sum() < 3",
]  # fmt: skip
VALUES = [
    "x + 1", "x * 2", "x - 1", "-x", "x * 0.5", "x / 2", "x + u", "u * 2", "x.abs()", "x.clone()",
    "x.add_(1)", "torch.zeros_like(x)", "x.float()", "x.sin()", "x", "x > 0", "x + True", "torch.relu(x)",
]  # fmt: skip
SHAPES = ["assign", "assign-no-else", "return", "return-fall-through", "ternary"]
AFTER = ["", "    x.mul_(2)\n", "    y.add_(1)\n", "    y[0] = 0\n"]
DTYPES = ["float32", "int64", "bool"]
HEADER = "import torch\n\n\n@torch.compile\ndef f(x: torch.Tensor, u: torch.Tensor, flag):\n"


@st.composite
def where_programs(draw: st.DrawFn, conditions: list[str] = CONDITIONS, values: list[str] = VALUES) -> str:
    cond = draw(st.sampled_from(conditions))
    a, b = draw(st.sampled_from(values)), draw(st.sampled_from(values))
    shape = draw(st.sampled_from(SHAPES))
    after = draw(st.sampled_from(AFTER))
    if shape == "assign":
        branch = f"    if {cond}:\n        y = {a}\n    else:\n        y = {b}\n{after}    return y, x\n"
    elif shape == "assign-no-else":
        branch = f"    y = {b}\n    if {cond}:\n        y = {a}\n{after}    return y, x\n"
    elif shape == "return":
        branch = f"    if {cond}:\n        return {a}\n    else:\n        return {b}\n"
    elif shape == "return-fall-through":
        branch = f"    if {cond}:\n        return {a}\n    return {b}\n"
    else:
        branch = f"    y = {a} if {cond} else {b}\n{after}    return y, x\n"
    return HEADER + branch


def make_inputs(dtype: str, u_shape: tuple[int, ...], flag: object) -> tuple[Any, ...]:
    x = torch.randint(-3, 4, (3, 4)).to(getattr(torch, dtype))
    u = torch.randint(-3, 4, u_shape).to(getattr(torch, dtype))
    return x, u, flag


def load(text: str) -> Callable[..., Any]:
    """The function defined in `text`, without its `@torch.compile`: run eagerly."""
    namespace: dict[str, Any] = {"torch": torch}
    exec(compile(re.sub(r"@torch.compile\r?\n", "", text), "gen.py", "exec"), namespace)
    return namespace["f"]  # type: ignore[no-any-return]


def run(fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[bool, Any]:
    """(ran, result) on copies of the inputs (the code may change them in place); prints are kept quiet."""
    copies = tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            return True, fn(*copies)
    except (RuntimeError, TypeError, AttributeError, IndexError, ValueError):
        return False, None


def assert_same(fixed: Any, original: Any, source: str) -> None:
    if isinstance(original, (bool, int, float)) and isinstance(fixed, torch.Tensor):
        fixed = fixed.item()
    if isinstance(original, tuple):
        assert isinstance(fixed, tuple) and len(fixed) == len(original), source
        for left, right in zip(fixed, original, strict=True):
            assert_same(left, right, source)
        return
    assert type(fixed) is type(original), source
    if isinstance(original, torch.Tensor):
        torch.testing.assert_close(fixed, original, equal_nan=True, rtol=0, atol=0, msg=source)
    else:
        assert fixed == original, source


def check_fixed_against_original(source: str, inputs: list[tuple[Any, ...]]) -> str | None:
    """The fixed text, or None if nothing applied; fails if a rewrite changes a result."""
    findings = lint_source(source, "gen.py")
    result = fix_text(source, findings, {"safe", "unsafe"})
    event("rewritten" if result.applied else "refused")
    if not result.applied:
        return None
    ast.parse(result.text)
    original, fixed = load(source), load(result.text)
    for args in inputs:
        ran, expected = run(original, args)
        if not ran:
            continue  # the original raises on these inputs: nothing to keep
        fixed_ran, got = run(fixed, args)
        assert fixed_ran, f"the fix raises where the original did not, on {args}:\n{source}\n->\n{result.text}"
        assert_same(got, expected, f"{args}:\n{source}\n->\n{result.text}")
    return result.text


INPUT_CHOICES = st.tuples(st.sampled_from(DTYPES), st.sampled_from([(3, 4), (4,), (1, 4)]))
FLAGS = [True, False, torch.tensor(True), torch.tensor(False)]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(where_programs(), INPUT_CHOICES)
def test_where_rewrites_are_refused_or_keep_results(source: str, choice: tuple[str, tuple[int, ...]]) -> None:
    dtype, u_shape = choice
    torch.manual_seed(0)
    inputs = [make_inputs(dtype, u_shape, flag) for flag in FLAGS for _ in range(2)]
    inputs += [(-x, u, flag) for x, u, flag in inputs if dtype != "bool"]
    check_fixed_against_original(source, inputs)


NOT_OPERANDS = ["t.all()", "t.any()", "t", "t.sum() > 0", "flag", "(t > 0).any()"]
NOT_USES = [
    "return x * {v}", "return {v} * x", "return x + {v}", "return x - {v}", "return x, {v}", "return {v} * 2",
    "active = {v}\n    return x * active", "active = {v}\n    return x * active, active",
]  # fmt: skip


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(NOT_OPERANDS), st.sampled_from(NOT_USES), st.sampled_from(DTYPES), st.sampled_from(DTYPES))
def test_logical_not_is_refused_or_keeps_results(operand: str, use: str, x_dtype: str, t_dtype: str) -> None:
    source = "import torch\n\n\n@torch.compile\ndef f(x: torch.Tensor, t: torch.Tensor, flag):\n"
    source += "    " + use.format(v=f"(not {operand})") + "\n"
    x = torch.randint(-3, 4, (3, 4)).to(getattr(torch, x_dtype))
    inputs = [
        (x, torch.tensor([value]).to(getattr(torch, t_dtype)), flag)
        for value in (0, 1)
        for flag in (True, torch.tensor(False))
    ]
    check_fixed_against_original(source, inputs)


DETACH_OTHERS = ["w", "w.float()", "w.half()", "w.long()", "w.double()", "w.bool()"]
DETACH_VALUES = ["x.float().sum()", "x.abs().max()", "x.double().max()", "x.float().abs().amax()", "x.long().sum()"]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(DETACH_OTHERS),
    st.sampled_from(DETACH_VALUES),
    st.sampled_from(["+", "-", "*", "/"]),
    st.sampled_from([*DTYPES[:2], "float16"]),
    st.sampled_from([*DTYPES[:2], "float64"]),
    st.booleans(),
)
def test_item_to_detach_is_refused_or_keeps_results(
    other: str, value: str, op: str, x_dtype: str, w_dtype: str, named: bool
) -> None:
    body = (
        f"    s = {value}.item()\n    return {other} {op} s\n" if named else f"    return {other} {op} {value}.item()\n"
    )
    source = "import torch\n\n\n@torch.compile\ndef f(x: torch.Tensor, w: torch.Tensor):\n" + body
    torch.manual_seed(0)
    x = (torch.randn(3, 4) * 5).to(getattr(torch, x_dtype))
    w = (torch.randn(3, 4) * 5).to(getattr(torch, w_dtype))
    check_fixed_against_original(source, [(x, w)])


GUARD_ARGS = [
    "x.sum()",
    "x.add_(1)",
    "f'{x.mean().item():.3f}'",
    "x.shape",
    "len(x)",
    "log.append(1)",
    "x.mul_(2).sum()",
]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(GUARD_ARGS), min_size=1, max_size=3))
def test_guards_only_around_arguments_without_side_effects(args: list[str]) -> None:
    source = "import torch\n\nlog = []\n\n\n@torch.compile\ndef f(x: torch.Tensor):\n"
    source += f"    print({', '.join(args)})\n    return x * 2\n"
    result = fix_text(source, lint_source(source, "gen.py"), {"safe", "unsafe"})
    impure = any(a in ("x.add_(1)", "log.append(1)", "x.mul_(2).sum()") for a in args)
    assert bool(result.applied) is not impure, result.text


# Programs most of which the codemod takes: their rewrites go through Dynamo (most of the general ones are refused).
PROVABLE = where_programs(CONDITIONS[:7], ["x + 1", "x * 2", "x * 3 + 1", "torch.zeros_like(x) + 1", "x + True"])


@pytest.mark.dynamo
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(PROVABLE, INPUT_CHOICES)
def test_applied_where_rewrites_compile_in_one_graph(source: str, choice: tuple[str, tuple[int, ...]]) -> None:
    dtype, u_shape = choice
    torch.manual_seed(0)
    inputs = [make_inputs(dtype, u_shape, flag) for flag in (True, torch.tensor(False))]
    fixed_text = check_fixed_against_original(source, inputs)
    if fixed_text is None:
        return
    fixed = load(fixed_text)
    for args in inputs:
        ran, expected = run(load(source), args)
        if not ran:
            continue
        torch._dynamo.reset()
        compiled = torch.compile(fixed, backend="eager", fullgraph=True)
        assert_same(run(compiled, args)[1], expected, fixed_text)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["\n", "\r\n", "\r"]), st.sampled_from(SHAPES))
def test_fixed_text_keeps_line_endings_and_is_idempotent(newline: str, shape: str) -> None:
    body = {
        "assign": "    if x.sum() > 0:\n        y = x + 1\n    else:\n        y = x * 2\n    return y\n",
        "assign-no-else": "    y = x + 1\n    if x.sum() > 0:\n        y = y.detach()\n    return y\n",
        "return": "    if x.sum() > 0:\n        return x + 1\n    else:\n        return x * 2\n",
        "return-fall-through": "    if x.sum() > 0:\n        return x + 1\n    return x * 2\n",
        "ternary": "    y = x + 1 if x.sum() > 0 else x * 2\n    return y\n",
    }[shape]
    source = ("import torch\n\n\n@torch.compile\ndef f(x: torch.Tensor):\n" + body).replace("\n", newline)
    working = source.replace("\r", "\n") if newline == "\r" else source
    result = fix_text(source, lint_source(working, "gen.py"), {"safe", "unsafe"})
    assert len(result.applied) == 1, source
    assert result.text.startswith(source.split(newline + "    ", 1)[0] + newline)
    assert ("\n" not in result.text) if newline == "\r" else ("\r" not in result.text.replace("\r\n", ""))
    again = result.text.replace("\r", "\n") if newline == "\r" else result.text
    assert lint_source(again, "gen.py") == []
