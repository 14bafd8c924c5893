"""Fix suggestions are written for the site: they name the user's own expressions and fit the construct."""

from __future__ import annotations

from compile_lint.engine import lint_source

HEADER = "import torch\n\n@torch.compile\ndef f(x, u):\n"


def fixes(body: str) -> dict[str, str]:
    return {f.code: f.fix for f in lint_source(HEADER + body, "m.py")}


def test_item_deciding_a_branch_gets_torch_where_on_the_tensor_condition() -> None:
    fix = fixes("    if x.sum().item() > 0:\n        return x\n    return -x\n")["TCL101"]
    assert "torch.where(x.sum() > 0, " in fix


def test_item_in_arithmetic_gets_detach_on_its_receiver() -> None:
    fix = fixes("    return x / x.abs().max().item()\n")["TCL101"]
    assert "`x.abs().max().detach()`" in fix


def test_each_branch_construct_gets_its_own_fix() -> None:
    assert (
        "y = torch.where(x.sum() > 0, a, b)"
        in fixes("    if x.sum() > 0:\n        x = x + 1\n    return x\n")["TCL103"]
    )
    assert "fixed number of steps" in fixes("    while (x > 0).all():\n        x = x - 1\n    return x\n")["TCL103"]
    assert "torch.logical_and" in fixes("    z = (x.sum() > 0) and (u.sum() > 0)\n    return z\n")["TCL103"]
    assert "torch.logical_not((x > 9).any()).all()" in fixes("    assert not (x > 9).any()\n    return x\n")["TCL103"]


def test_python_not_in_a_condition_becomes_a_tensor_op_in_the_fix() -> None:
    fix = fixes("    if not torch.isfinite(x).all():\n        x = x * 0\n    return x\n")["TCL103"]
    assert "torch.where(torch.logical_not(torch.isfinite(x).all()), a, b)" in fix
    assert "where(not " not in fix


def test_print_fix_names_the_call() -> None:
    assert (
        "`if not torch.compiler.is_compiling(): print(x.shape)`"
        in fixes("    print(x.shape)\n    return x\n")["TCL201"]
    )
