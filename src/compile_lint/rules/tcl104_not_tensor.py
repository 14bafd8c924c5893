"""TCL104: `not t` on a tensor as a value (not as a branch test) makes Dynamo skip the rest of the frame."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.tensors import Kind, short_code
from compile_lint.analysis.walker import RuleContext
from compile_lint.rules.base import Example, Rule
from compile_lint.rules.tcl106_tensor_to_bool import python_bool_call


class NotTensor(Rule):
    code = "TCL104"
    name = "not-tensor"
    summary = "`not` on a tensor makes Dynamo give up on the rest of the function (worse than a graph break)"
    gb_codes = ("GB0033",)
    fix = "Use `~mask` or `torch.logical_not(t)` to keep the result a tensor."
    frame_skip = True
    what = (
        "Flags `not t` where `t` is a tensor and the result is used as a value: assigned, returned or "
        "passed on (`done = not finished.any()`). `if not t:` and `while not t:` are branches, "
        "reported by TCL103."
    )
    why = (
        "Dynamo cannot trace the truth value of a tensor as a plain value (GB0033, data dependent "
        "operator), and unlike an ordinary graph break it cannot resume after it: it skips the frame "
        "from there on. The code before the `not` still runs as a compiled graph, but everything from "
        "the `not` to the end of the function runs eagerly, uncompiled, on every call (after a graph break "
        "Dynamo would compile it as a second graph). When the `not` comes first, nothing of the function "
        "is compiled. `torch._dynamo.explain` does not report it at all."
    )
    example = "@torch.compile\ndef step(x, done):\n    active = not done.all()\n    return x * active\n"
    fixed_example = (
        "@torch.compile\ndef step(x, done):\n    active = torch.logical_not(done.all())\n    return x * active\n"
    )
    invalid = (
        Example("@torch.compile\ndef f(x):\n    z = not (x.sum() > 0)\n    return x, z\n"),
        Example("@torch.compile\ndef f(x):\n    return not x.any()\n"),
    )
    valid = (
        Example("@torch.compile\ndef f(x):\n    if not (x.sum() > 0):\n        return x\n    return -x\n"),
        Example("@torch.compile\ndef f(x):\n    return ~(x > 0)\n"),
        Example("@torch.compile\ndef f(x, mask=None):\n    z = not mask is None\n    return x, z\n"),
        Example("@torch.compile\ndef f(x):\n    empty = not x.shape[0]\n    return x, empty\n"),
        Example("@torch.compile\ndef f(x, cache=None):\n    fresh = not cache\n    return x, fresh\n"),
    )

    def visit_Assert(self, node: cst.Assert, ctx: RuleContext) -> None:
        # `assert not t` is a plain data-dependent branch (GB0170, measured), not a frame skip.
        if isinstance(node.test, cst.UnaryOperation):
            ctx.reported.add(id(node.test))

    def visit_UnaryOperation(self, node: cst.UnaryOperation, ctx: RuleContext) -> None:
        if not isinstance(node.operator, cst.Not) or id(node) in ctx.reported:
            return  # a `not` in an if/while test is a branch: TCL103 claimed it
        if python_bool_call(node.expression, ctx) is not None:
            return  # `not torch.equal(a, b)`: a Python bool by then, the call broke first (TCL106)
        if ctx.facts.kind(node.expression) is Kind.TENSOR and ctx.facts.has_evidence(node.expression):
            ctx.report(
                self,
                node,
                f"`{short_code(node)}` on a tensor: Dynamo skips the frame here and runs the rest of the "
                "function uncompiled on every call (worse than a graph break)",
                fix=f"Write `torch.logical_not({short_code(node.expression)})` (or `~` on a bool tensor) "
                "to keep the result a tensor.",
            )


RULE = NotTensor()
