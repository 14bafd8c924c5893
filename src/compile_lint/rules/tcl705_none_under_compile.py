"""TCL705: a name that is always None under torch.compile, used as if it held a value."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.values import NONE
from compile_lint.analysis.walker import RuleContext
from compile_lint.rules.base import Example, Rule


class NoneUnderCompile(Rule):
    code = "TCL705"
    name = "none-under-compile"
    summary = "A name that is always None when compiled is subscripted, iterated or read: Dynamo skips the frame"
    gb_codes = ("GB0088",)  # Observed exception
    frame_skip = True
    fix = (
        "Compute the value under compile too (drop the `is_compiling()` guard around its assignment), "
        "or guard this use the same way: `if value is not None:`."
    )
    what = (
        "Flags `v[...]`, `v.attr`, `len(v)` and `for ... in v` where every assignment that reaches the line "
        "leaves the local name `v` None while Dynamo traces, typically because the real value is only "
        "computed under `if not torch.compiler.is_compiling():` (or `is_torchdynamo_compiling()`, "
        "`torch.jit.is_scripting()`...)."
    )
    why = (
        "Under compile the guard is constant, so the name is None where it is used: the subscript or "
        "attribute raises inside the trace. Measured with torch 2.13 and 2.14: Dynamo observes the "
        "exception (GB0088) and gives up on the whole function, which then runs eagerly on every call."
    )
    example = (
        "@torch.compile\ndef f(x):\n    stats = None\n    if not torch.compiler.is_compiling():\n"
        "        stats = x.mean(dim=0)\n    return x - stats[0]\n"
    )
    fixed_example = "@torch.compile\ndef f(x):\n    stats = x.mean(dim=0)\n    return x - stats[0]\n"
    invalid = (
        Example(
            "@torch.compile\ndef f(x):\n    cache = None\n    if not torch.compiler.is_compiling():\n"
            "        cache = [x]\n    for item in cache:\n        x = x + item\n    return x\n"
        ),
        Example(
            "@torch.compile\ndef f(x):\n    ref = None\n    if not torch.jit.is_scripting() and not torch.compiler.is_compiling():\n"
            "        ref = x\n    return x * ref.sum()\n"
        ),
    )  # fmt: skip
    valid = (
        Example(
            "@torch.compile\ndef f(x):\n    stats = None\n    if not torch.compiler.is_compiling():\n"
            "        stats = x.mean()\n    if stats is not None:\n        x = x - stats\n    return x\n"
        ),
        Example("@torch.compile\ndef f(x, mask=None):\n    return x if mask is None else x * mask[0]\n"),
        Example("@torch.compile\ndef f(x):\n    cache = None\n    if x.dim() > 1:\n        cache = x[0]\n    return x + cache[0]\n"),
    )  # fmt: skip

    def _check(self, node: cst.CSTNode, operand: cst.BaseExpression, how: str, ctx: RuleContext) -> None:
        if not isinstance(operand, cst.Name) or operand.value not in ctx.facts.env:
            return  # only names this function binds: a parameter or an attribute may be set elsewhere
        if not ctx.facts.value(operand).only((NONE,)) or id(node) in ctx.reported:
            return
        ctx.report(
            self,
            node,
            f"`{operand.value}` is always None when compiled here, and the code {how} it: Dynamo observes the "
            "error and runs the whole function eagerly (GB0088)",
        )

    def visit_Subscript(self, node: cst.Subscript, ctx: RuleContext) -> None:
        self._check(node, node.value, "subscripts", ctx)

    def visit_Attribute(self, node: cst.Attribute, ctx: RuleContext) -> None:
        self._check(node, node.value, "reads an attribute of", ctx)

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        func = node.func
        if isinstance(func, cst.Name) and func.value == "len" and len(node.args) == 1:
            self._check(node, node.args[0].value, "takes the length of", ctx)

    def visit_For(self, node: cst.For, ctx: RuleContext) -> None:
        self._check(node.iter, node.iter, "iterates over", ctx)


RULE = NoneUnderCompile()
