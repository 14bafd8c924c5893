"""TCL105: `.tolist()` copies a tensor into a Python list."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.tensors import short_code
from compile_lint.analysis.walker import RuleContext
from compile_lint.rules.base import Example, Rule

INTEGER_METHODS = frozenset({"argmax", "argmin", "argsort", "long", "int", "short", "nonzero", "count_nonzero"})


class TensorToList(Rule):
    code = "TCL105"
    name = "tensor-tolist"
    summary = "`.tolist()` copies a tensor into a Python list and breaks the graph"
    gb_codes = ("GB0109", "GB0033")
    fix = (
        "Keep the values in the tensor: iterate over it (`for row in t`), index it, or use "
        "`torch.unbind(t)`; call `.tolist()` after the compiled region if Python needs the list."
    )
    what = "Flags `.tolist()` calls on tensors inside compiled regions."
    why = (
        "A Python list of the tensor's values only exists at run time. Dynamo ends the graph at "
        "`.tolist()`: GB0109 for float and bool tensors (Tensor.tolist() with non-integer tensor), "
        "GB0033 (data dependent operator) for integer tensors. `capture_scalar_outputs=True` removes "
        "the break only for integer tensors, so the rule reports `.tolist()` either way."
    )
    example = "@torch.compile\ndef f(x, weights):\n    for w in weights.tolist():\n        x = x * w\n    return x\n"
    fixed_example = "@torch.compile\ndef f(x, weights):\n    for w in weights:\n        x = x * w\n    return x\n"
    invalid = (
        Example("@torch.compile\ndef f(x):\n    values = x.tolist()\n    return x\n"),
        Example("class M(nn.Module):\n    def forward(self, x):\n        return len(x.argmax(1).tolist())\n"),
    )
    valid = (
        Example("@torch.compile\ndef f(x):\n    values = list(x.shape)\n    return x * len(values)\n"),
        Example("@torch.compile\ndef f(x):\n    return x.numpy()\n"),
        Example("def eager_only(x):\n    return x.tolist()\n"),
    )

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value != "tolist" or node.args:
            return
        tensor = func.value
        if not ctx.facts.may_be_tensor(tensor):
            return
        shown = short_code(tensor)
        ctx.report(
            self,
            node,
            f"`{shown}.tolist()` copies a tensor into a Python list and breaks the graph",
            gb_codes=("GB0033",) if _is_integer(tensor) else None,
            fix=f"Keep the values in the tensor: iterate over `{shown}`, index it or `torch.unbind` it; "
            "call `.tolist()` after the compiled region if Python needs the list.",
        )


def _is_integer(tensor: cst.BaseExpression) -> bool:
    """An integer tensor for certain (`t.argmax()`, `t.long()`): its `.tolist()` breaks with GB0033."""
    return (
        isinstance(tensor, cst.Call)
        and isinstance(tensor.func, cst.Attribute)
        and tensor.func.attr.value in INTEGER_METHODS
    )


RULE = TensorToList()
