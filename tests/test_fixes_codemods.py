"""What each codemod rewrites, and what it must leave alone (comments, elif chains, Python values)."""

from __future__ import annotations

import textwrap

import pytest

from compile_lint.engine import lint_source
from compile_lint.fixes import FIXABLE, fixability
from compile_lint.fixes.apply import fix_text
from compile_lint.fixes.codemods import CODEMODS
from compile_lint.rules import rule_by_code


def fixed(source: str, allowed: tuple[str, ...] = ("safe", "unsafe")) -> str:
    text = textwrap.dedent(source)
    return fix_text(text, lint_source(text, "m.py"), set(allowed)).text  # type: ignore[arg-type]


def body(text: str) -> str:
    """The text after the `import torch` header every example starts with."""
    return text.split("import torch\n", 1)[1]


def test_fixable_table_matches_the_codemods() -> None:
    assert set(FIXABLE) == set(CODEMODS)
    assert all(rule_by_code(code) is not None for code in FIXABLE)
    assert fixability("TCL101") == "safe" and fixability("TCL103") == "unsafe" and fixability("TCL999") == "no"


def test_if_else_assignment_becomes_where() -> None:
    out = fixed(
        """\
        import torch
        @torch.compile
        def f(x: torch.Tensor):
            # pick a side
            if x.sum() > 0:  # noqa: E501
                y = x + 1
            else:
                y = x * 2
            return y
        """
    )
    assert body(out) == (
        "@torch.compile\ndef f(x: torch.Tensor):\n    # pick a side\n"
        "    y = torch.where(x.sum() > 0, x + 1, x * 2)  # noqa: E501\n    return y\n"
    )


def test_if_without_else_keeps_the_old_value() -> None:
    source = "import torch\n@torch.compile\ndef f(x: torch.Tensor):\n    if x.mean() > 0:\n        x = x.clone()\n    return x\n"
    assert "    x = torch.where(x.mean() > 0, x.clone(), x)\n" in fixed(source)


def test_non_bool_condition_gets_bool_and_not_becomes_logical_not() -> None:
    source = "import torch\n@torch.compile\ndef f(x: torch.Tensor):\n    if not x.sum():\n        return x + 1\n    return x * 2\n"
    assert "    return torch.where(torch.logical_not(x.sum().bool()), x + 1, x * 2)\n" in fixed(source)


@pytest.mark.parametrize(
    "function",
    [
        # a comment inside a branch would be lost
        "def f(x):\n    if x.sum() > 0:\n        # why\n        y = x\n    else:\n        y = -x\n    return y\n",
        # elif chain
        "def f(x):\n    if x.sum() > 0:\n        y = x\n    elif x.sum() < -1:\n        y = -x\n    else:\n        y = x * 0\n    return y\n",
        # branches assign Python numbers, not tensors
        "def f(x):\n    if x.sum() > 0:\n        y = 1\n    else:\n        y = 2\n    return x * y\n",
        # different names on each side
        "def f(x):\n    if x.sum() > 0:\n        y = x\n    else:\n        z = x\n    return x\n",
        # a Python value in the condition: torch.logical_and cannot take it
        "def f(x, training: bool):\n    if x.sum() > 0 and training:\n        x = x + 1\n    return x\n",
        # the condition reads a name the branch assigns, with more than one assignment
        "def f(x):\n    if x.sum() > 0:\n        x = x + 1\n        y = x * 2\n    else:\n        x = x - 1\n        y = x\n    return x + y\n",
        # not all paths return
        "def f(x):\n    if x.sum() > 0:\n        return x\n    x = x + 1\n    return x\n",
    ],
)
def test_patterns_that_are_not_mechanical_are_left_alone(function: str) -> None:
    source = "import torch\n\n@torch.compile\n" + function
    assert any(f.code == "TCL103" for f in lint_source(source, "m.py")), "the example must be a finding"
    assert fixed(source) == source


def test_prints_next_to_each_other_share_one_guard() -> None:
    out = fixed(
        "import torch\n@torch.compile\ndef f(x):\n    print(1)\n\n    print(2)\n    y = x + 1\n    print(3)\n    return y\n"
    )
    assert body(out) == (
        "@torch.compile\ndef f(x):\n    if not torch.compiler.is_compiling():\n        print(1)\n\n        print(2)\n"
        "    y = x + 1\n    if not torch.compiler.is_compiling():\n        print(3)\n    return y\n"
    )


def test_print_that_is_not_a_statement_of_its_own_is_left_alone() -> None:
    source = "import torch\n@torch.compile\ndef f(x, flag: bool):\n    if flag: print(x)\n    y = x; print(y)\n    return x\n"
    assert fixed(source) == source


def test_item_detach_is_safe_only_on_the_same_tensor() -> None:
    source = (
        "import torch\n@torch.compile\ndef f(x, w: torch.Tensor):\n    a = x / x.abs().max().item()\n"
        "    b = a * w.sum().item()\n    return b + w.half() * w.float().sum().item()\n"
    )
    safe_only = fixed(source, ("safe",))
    assert "a = x / x.abs().max().detach()\n" in safe_only and "w.sum().item()" in safe_only
    unsafe = fixed(source)
    assert "b = a * w.sum().item()\n" in unsafe, "a's dtype is unknown: an int `a` would promote differently"
    assert "return b + w.half() * w.float().sum().detach()\n" in unsafe, "float16 times a real 0-d tensor"


def test_item_outside_arithmetic_is_left_alone() -> None:
    source = "import torch\n@torch.compile\ndef f(x):\n    return x.sum().item()\n"
    assert fixed(source) == source


def test_torch_import_goes_after_docstring_and_future_imports() -> None:
    source = '"""Doc."""\nfrom __future__ import annotations\n\n# models\nfrom torch import nn\n\n\nclass M(nn.Module):\n    def forward(self, x):\n        print(x)\n        return x\n'
    out = fixed(source)
    assert out.startswith(
        '"""Doc."""\nfrom __future__ import annotations\n\n# models\nimport torch\nfrom torch import nn\n'
    )


def test_a_module_where_torch_is_something_else_gets_no_torch_fixes() -> None:
    source = "from mylib import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n    def forward(self, x):\n        print(x)\n        return x / x.abs().max().item()\n"
    out = fixed(source)
    assert "print(x)\n" in out and "is_compiling" not in out
    assert "x.abs().max().detach()" in out  # needs no `torch` name


def test_code_outside_the_finding_is_byte_identical() -> None:
    source = (
        "import torch\n\nVALUE = {  'odd' :1 }   # spacing kept\n\n\n@torch.compile\ndef f(x: torch.Tensor):\n"
        "    a  =  x*2    # so is this\n    if x.sum() > 0:\n        y = x\n    else:\n        y = x.detach()\n"
        "    return  y+a\n"
    )
    out = fixed(source)
    before, _, after = source.partition("    if x.sum() > 0:\n        y = x\n    else:\n        y = x.detach()\n")
    assert out == before + "    y = torch.where(x.sum() > 0, x, x.detach())\n" + after


def test_item_in_a_condition_is_dropped_and_the_branch_selected() -> None:
    """The seed example; with capture_scalar_outputs the finding is TCL103 instead, same fix."""
    source = (
        "import torch\n@torch.compile\ndef step(x: torch.Tensor):\n    y = x * 2\n    if y.sum().item() > 0:\n"
        "        return y + 1\n    return y * 3\n"
    )
    expected = "    return torch.where(y.sum() > 0, y + 1, y * 3)\n"
    assert expected in fixed(source)
    captured = "import torch\ntorch._dynamo.config.capture_scalar_outputs = True\n" + source.split("\n", 1)[1]
    assert [f.code for f in lint_source(captured, "m.py")] == ["TCL103"]
    assert expected in fixed(captured)


@pytest.mark.parametrize(
    ("use", "changed"),
    [
        ("return x.float() / scale + x.half() * scale", True),
        ("return x / scale", False),  # x's dtype is unknown
        ("return x.float() / scale, scale", False),  # returned as a Python number
        ("scale = scale * 2\n    return x.float() / scale", False),  # rebound
        ("return x[: int(scale)]", False),
    ],
)
def test_item_assigned_to_a_name_only_when_every_use_is_tensor_arithmetic(use: str, changed: bool) -> None:
    source = (
        f"import torch\n@torch.compile\ndef f(x: torch.Tensor):\n    scale = x.float().abs().max().item()\n    {use}\n"
    )
    out = fixed(source)
    assert ("scale = x.float().abs().max().detach()" in out) is changed
    assert fixed(source, ("safe",)) == source


HEAD = "import torch\nfrom torch import nn\n\n\n"


@pytest.mark.parametrize(
    ("source", "why"),
    [
        (
            HEAD + "def helper(x: torch.Tensor, flag):\n    if x.sum() > 0 or flag:\n        y = x + 1\n"
            "    else:\n        y = x * 2\n    return y\n\n\n@torch.compile\ndef f(x: torch.Tensor):\n"
            "    return helper(x, x.any()) + helper(x, True)\n",
            "`flag` is a Python bool in one call: torch.logical_or(..., True.bool()) raises",
        ),
        (
            HEAD + "def helper(x: torch.Tensor, done):\n    if done:\n        y = x + 1\n    else:\n        y = x * 2\n"
            "    return y\n\n\n@torch.compile\ndef f(x: torch.Tensor):\n"
            "    return helper(x, x.sum() > 0) + helper(x, True)\n",
            "`done` may be a Python bool: `done.bool()` raises AttributeError",
        ),
        (
            HEAD + "@torch.compile\ndef f(x: torch.Tensor):\n    if x.sum() > 0:\n        y = x.add_(1)\n"
            "    else:\n        y = x * 2\n    return y\n",
            "an in-place op in a branch would run whichever side is taken",
        ),
        (
            HEAD + "@torch.compile\ndef f(x: torch.Tensor):\n    y = x.detach()\n    if x.sum() > 0:\n"
            "        y = x.clone()\n    y.add_(1)\n    return y, x\n",
            "the original's `y` is x's memory when the branch is not taken; y.add_ changes x there",
        ),
        (
            HEAD + "@torch.compile\ndef f(x: torch.Tensor, u: torch.Tensor):\n    if x.sum() > 0:\n"
            "        y = x + u\n    else:\n        y = x * 2\n    return y\n",
            "branches of different shapes: torch.where broadcasts them",
        ),
        (
            HEAD + "@torch.compile\ndef f(x: torch.Tensor):\n    if x.sum() > 0:\n        y = x + 1\n"
            "    else:\n        y = x * 0.5\n    return y\n",
            "int64 `x + 1` next to `x * 0.5`: torch.where would make both float",
        ),
        (
            HEAD + "@torch.compile\ndef f(x: torch.Tensor):\n    if x.sum() > 0:\n        y = x + 1\n"
            "    else:\n        y = x - 1\n    return y\n",
            "`x - 1` raises on a bool x where `x + 1` does not: the branch not taken must not raise",
        ),
        (
            HEAD + "@torch.compile\ndef f(x):\n    if x.sum() > 0:\n        y = x + 1\n    else:\n        y = x * 2\n"
            "    return y\n",
            "an unannotated entry parameter is only assumed to be a tensor",
        ),
        (
            HEAD + "@torch.compile\ndef f(x: torch.Tensor, m: torch.Tensor):\n    if m.all():\n"
            "        y = x\n    else:\n        y = x[m]\n    return y\n",
            "masking changes the shape",
        ),
        (
            HEAD + "@torch.compile\ndef f(x: torch.Tensor):\n    if x.float().mean().item() > 0.1:\n"
            "        y = x + 1\n    else:\n        y = x * 2\n    return y\n",
            "0.1 is compared in float64 by Python, in the tensor's dtype by torch",
        ),
        (
            HEAD + "@torch.compile\ndef f(x: torch.Tensor, t: torch.Tensor):\n    if t > 0:\n        y = x + 1\n"
            "    else:\n        y = x * 2\n    return y\n",
            "`t` may have shape (1, 1, 1): torch.where would add dimensions",
        ),
    ],
)
def test_rewrites_that_could_break_a_model_are_not_offered(source: str, why: str) -> None:
    findings = lint_source(source, "m.py")
    assert any(f.code in ("TCL101", "TCL102", "TCL103") for f in findings), "the example must be a finding"
    assert fixed(source) == source, why


@pytest.mark.parametrize(
    ("use", "changed"),
    [
        ("return x * active", True),
        ("return x - active", False),  # `-` raises on a bool tensor, not on a Python bool
        ("return x, active", False),  # the caller gets a tensor where it got a bool
        ("return active * 2", False),  # a Python number operand: the result becomes a tensor
    ],
)
def test_logical_not_only_where_the_tensor_acts_as_the_bool(use: str, changed: bool) -> None:
    source = f"import torch\n@torch.compile\ndef f(x: torch.Tensor, done: torch.Tensor):\n    active = not done.all()\n    {use}\n"
    assert ("torch.logical_not(done.all())" in fixed(source)) is changed


def test_guard_is_not_offered_around_arguments_with_side_effects() -> None:
    source = "import torch\n@torch.compile\ndef f(x: torch.Tensor):\n    print(x.add_(1))\n    print(x.shape)\n    return x\n"
    out = fixed(source)
    assert "    print(x.add_(1))\n    if not torch.compiler.is_compiling():\n        print(x.shape)\n" in out
