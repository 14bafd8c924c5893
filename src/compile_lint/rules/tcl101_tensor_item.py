"""TCL101: `.item()` reads a tensor value into Python."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.tensors import Kind
from compile_lint.analysis.walker import RuleContext
from compile_lint.rules.base import CAPTURE_SCALAR, Example, Rule

NOT_TENSORS = (Kind.OTHER, Kind.STR, Kind.SCALAR, Kind.MODULE)


class TensorItem(Rule):
    code = "TCL101"
    name = "tensor-item"
    summary = "`.item()` copies a tensor value into Python and breaks the graph"
    gb_codes = ("GB0124",)
    fix = (
        "Keep the value as a 0-d tensor (drop `.item()`), or set "
        "`torch._dynamo.config.capture_scalar_outputs = True` if it only feeds arithmetic."
    )
    silenced_by = CAPTURE_SCALAR
    what = "Flags `.item()` calls on tensors inside compiled regions, whether or not the value feeds a branch."
    why = (
        "Dynamo cannot trace a Python number whose value is only known at run time. By default "
        "(`capture_scalar_outputs=False`) it ends the graph at `.item()`, runs the call eagerly and "
        "starts a new graph after it: GB0124."
    )
    example = (
        "@torch.compile\ndef step(x):\n    scale = x.abs().max().item()\n    return x / scale\n"
    )
    fixed_example = (
        "@torch.compile\ndef step(x):\n    scale = x.abs().max()\n    return x / scale\n"
    )
    invalid = (
        Example("@torch.compile\ndef f(x):\n    return x * x.sum().item()\n"),
        Example("class M(nn.Module):\n    def forward(self, x):\n        vals = [v.item() for v in x]\n        return vals\n"),
    )
    valid = (
        Example("@torch.compile\ndef f(x):\n    return x * x.sum()\n"),
        Example("@torch.compile\ndef f(x):\n    return x * x.sum().item()\n", flags=(CAPTURE_SCALAR,)),
        Example("def not_compiled(x):\n    return x.sum().item()\n"),
    )

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value != "item" or node.args:
            return
        if ctx.facts.kind(func.value) not in NOT_TENSORS:
            ctx.report(self, node)


RULE = TensorItem()
