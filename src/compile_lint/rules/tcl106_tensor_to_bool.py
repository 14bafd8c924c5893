"""TCL106: `torch.equal`, `torch.allclose`, `is_nonzero()`: ops that return a Python bool from tensor data."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.tensors import receiver_code, short_code
from compile_lint.analysis.walker import RuleContext
from compile_lint.rules.base import Example, Rule

# op -> a tensor-valued replacement, "{a}"/"{b}" standing for the operands.
TENSOR_FORMS = {
    "equal": "({a} == {b}).all()",
    "allclose": "torch.isclose({a}, {b}).all()",
    "is_nonzero": "{a} != 0",
}


class TensorToBool(Rule):
    code = "TCL106"
    name = "tensor-to-bool"
    summary = "`torch.equal` / `torch.allclose` / `is_nonzero()` return a Python bool computed from tensor data"
    gb_codes = ("GB0033",)  # Data dependent operator
    fix = "Keep the answer a tensor: `(a == b).all()` or `torch.isclose(a, b).all()`, and use it with `torch.where`."
    what = (
        "Flags `torch.equal(a, b)`, `torch.allclose(a, b, ...)`, `torch.is_nonzero(t)` and the method forms "
        "`a.equal(b)`, `a.allclose(b)`, `t.is_nonzero()` on tensors, inside compiled regions."
    )
    why = (
        "These ops return a Python `bool` that depends on the tensors' values, which a graph cannot "
        "produce. Measured with torch 2.13 and 2.14: Dynamo breaks at the call (GB0033, data dependent "
        "operator), even when the result is not used in a branch."
    )
    example = "@torch.compile\ndef f(x, ref):\n    y = x.relu()\n    if torch.equal(y, ref):\n        return y\n    return y * 2\n"
    fixed_example = (
        "@torch.compile\ndef f(x, ref):\n    y = x.relu()\n    return torch.where((y == ref).all(), y, y * 2)\n"
    )
    invalid = (
        Example("@torch.compile\ndef f(x):\n    same = torch.allclose(x, x.round(), atol=1e-3)\n    return x\n"),
        Example("class M(nn.Module):\n    def forward(self, x):\n        y = x * 2\n        return y.equal(x)\n"),
        Example("@torch.compile\ndef f(x):\n    return x.sum().is_nonzero()\n"),
    )  # fmt: skip
    valid = (
        Example("@torch.compile\ndef f(x, y):\n    return (x == y).all()\n"),
        Example("def eager(x, y):\n    return torch.equal(x, y)\n"),
        Example("@torch.compile\ndef f(x, spec: Spec):\n    return x if spec.equal('a') else x * 2\n"),
    )  # fmt: skip

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        found = python_bool_call(node, ctx)
        if found is None:
            return
        op, operands = found
        shown = [receiver_code(operands[0]), short_code(operands[1]) if len(operands) > 1 else ""]
        instead = TENSOR_FORMS[op].format(a=shown[0], b=shown[1])
        ctx.report(
            self,
            node,
            f"`{short_code(node)}` returns a Python bool computed from tensor values: graph break (GB0033)",
            fix=f"Keep the answer a tensor: `{instead}`, and select with `torch.where` instead of branching on it.",
        )


def python_bool_call(node: cst.BaseExpression, ctx: RuleContext) -> tuple[str, list[cst.BaseExpression]] | None:
    """(op, tensor operands) if `node` is one of the ops above called on tensors, else None.

    TCL103 asks too: an `if torch.equal(a, b):` breaks at the call, not at the branch."""
    if not isinstance(node, cst.Call):
        return None
    func = node.func
    full = ctx.resolve(func)
    positional = [arg.value for arg in node.args if arg.keyword is None and not arg.star]
    if full is not None and full.startswith("torch.") and full.rsplit(".", 1)[-1] in TENSOR_FORMS:
        op, operands = full.rsplit(".", 1)[-1], positional
    elif isinstance(func, cst.Attribute) and func.attr.value in TENSOR_FORMS and ctx.facts.is_tensor(func.value):
        op, operands = func.attr.value, [func.value, *positional]
    else:
        return None
    return (op, operands) if len(operands) >= (1 if op == "is_nonzero" else 2) else None


RULE = TensorToBool()
