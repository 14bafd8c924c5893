"""TCL308: an explicit `torch._dynamo.graph_break()` in a compiled region (an intended break)."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.tensors import dotted_code
from compile_lint.analysis.walker import RuleContext
from compile_lint.rules.base import Example, Rule

GRAPH_BREAK = "torch._dynamo.graph_break"


class GraphBreakCall(Rule):
    code = "TCL308"
    name = "graph-break-call"
    summary = "An explicit `torch._dynamo.graph_break()` in a compiled region: an intended graph break"
    gb_codes = ("GB0025",)  # Call to `torch._dynamo.graph_break()`
    fix = "Nothing to do if the break is wanted; otherwise remove the call."
    severity = "info"
    what = (
        "Reports each `torch._dynamo.graph_break()` call (however it is imported) in a compiled region "
        "or in a helper a region calls."
    )
    why = (
        "The call exists to end the graph: Dynamo compiles what it traced so far, runs the call eagerly and "
        "starts a new graph after it (GB0025). Measured with torch 2.13 and 2.14: in a helper the break "
        "is blamed on the helper's line. It is usually deliberate (debugging, bisecting a bad graph), so "
        "it is reported at info severity, as a reminder of where the graph is cut."
    )
    example = "@torch.compile\ndef f(x):\n    y = x.relu()\n    torch._dynamo.graph_break()\n    return y * 2\n"
    fixed_example = "@torch.compile\ndef f(x):\n    y = x.relu()\n    return y * 2\n"
    invalid = (
        Example("@torch.compile\ndef f(x):\n    torch._dynamo.graph_break()\n    return x\n"),
        Example(
            "from torch._dynamo import graph_break\n\nclass M(nn.Module):\n    def forward(self, x):\n"
            "        graph_break()\n        return x\n"
        ),
    )
    valid = (
        Example("def eager(x):\n    torch._dynamo.graph_break()\n    return x\n"),
        Example("@torch.compile\ndef f(x, breaker):\n    breaker.graph_break()\n    return x\n"),
    )

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        if ctx.resolve(node.func) == GRAPH_BREAK:
            ctx.report(
                self,
                node,
                f"`{dotted_code(node)}` ends the graph here on purpose: Dynamo compiles what it traced so far "
                "and starts a new graph after the call (GB0025)",
            )


RULE = GraphBreakCall()
