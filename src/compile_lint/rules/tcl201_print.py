"""TCL201: `print` inside a compiled region."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.tensors import short_code
from compile_lint.analysis.walker import RuleContext
from compile_lint.rules.base import Example, Rule


class PrintCall(Rule):
    code = "TCL201"
    name = "print-in-region"
    summary = "`print()` in a compiled region breaks the graph"
    gb_codes = ("GB0059",)
    fix = "Remove it, or guard it with `if not torch.compiler.is_compiling():`."
    what = "Flags calls to the builtin `print` inside compiled regions, whatever they print."
    why = (
        "`print` is a side effect Dynamo cannot put in a graph. It ends the graph, runs the call "
        "eagerly and resumes in a new graph: GB0059 (failed to trace builtin operator)."
    )
    example = "class Net(nn.Module):\n    def forward(self, x):\n        print(x.shape)\n        return x.relu()\n"
    fixed_example = (
        "class Net(nn.Module):\n    def forward(self, x):\n        if not torch.compiler.is_compiling():\n"
        "            print(x.shape)\n        return x.relu()\n"
    )
    invalid = (
        Example("@torch.compile\ndef f(x):\n    print('hello')\n    return x\n"),
        Example("class M(nn.Module):\n    def forward(self, x):\n        print(x)\n        return x\n"),
    )
    valid = (
        Example(
            "@torch.compile\ndef f(x):\n    if not torch.compiler.is_compiling():\n        print(x)\n    return x\n"
        ),
        Example("def main(x):\n    print(x)\n"),
    )

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "print" and "print" not in ctx.imports.aliases:
            call = short_code(node, limit=60)
            ctx.report(
                self,
                node,
                f"`{call}` in a compiled region breaks the graph",
                fix=f"Remove it, or run it only in eager mode: `if not torch.compiler.is_compiling(): {call}` "
                "(`--unsafe-fixes` adds that guard).",
            )


RULE = PrintCall()
