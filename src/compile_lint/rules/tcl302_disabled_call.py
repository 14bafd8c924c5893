"""TCL302: a compiled region calls a function decorated `@torch.compiler.disable` (an intended break)."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.index import FunctionInfo
from compile_lint.analysis.walker import RuleContext
from compile_lint.rules.base import Example, Rule

SKIP_CALLING = "GB0098"  # Skip calling `torch.compiler.disable()`d function
SKIP_INLINING = "GB0099"  # Skip inlining `torch.compiler.disable()`d function


def predicted_code(node: cst.Call, callee: FunctionInfo) -> str:
    """Measured with torch 2.13: a disabled method called as `self.m(x)` logs GB0099 even with the
    default recursive=True; a plain function logs GB0098, or GB0099 with recursive=False."""
    func = node.func
    through_self = isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self"
    if through_self or callee.disabled == "non-recursive":
        return SKIP_INLINING
    return SKIP_CALLING


class DisabledCall(Rule):
    code = "TCL302"
    name = "disabled-call"
    summary = "A compiled region calls a `@torch.compiler.disable` function: an intended graph break"
    gb_codes = (SKIP_CALLING, SKIP_INLINING)
    fix = (
        "Nothing to do if the break is wanted. Otherwise make the callee traceable and drop the "
        "decorator, or move the call out of the compiled code."
    )
    severity = "info"
    what = (
        "Reports each call, from a compiled region or a helper it reaches, to a function or method "
        "decorated `@torch.compiler.disable` or `@torch.compiler.disable(recursive=False)` (also "
        "`torch._dynamo.disable`), at the call site. The disabled function's own body is not linted: "
        "it never runs under Dynamo."
    )
    why = (
        "Dynamo does not trace into a disabled function: it ends the graph before the call, runs the "
        "function eagerly and resumes in a new graph (GB0098; GB0099 with `recursive=False`, and for "
        "a disabled method called through `self`). This is usually deliberate, so it is reported at "
        "info severity: a reminder of where the graph is cut, not a mistake."
    )
    example = (
        "@torch.compiler.disable\ndef log_stats(t):\n    print(t.mean())\n\n"
        "@torch.compile\ndef step(x):\n    y = x.relu()\n    log_stats(y)\n    return y * 2\n"
    )
    fixed_example = (
        "@torch.compiler.disable\ndef log_stats(t):\n    print(t.mean())\n\n"
        "@torch.compile\ndef step(x):\n    return x.relu() * 2\n\n"
        "def train_step(x):\n    y = step(x)\n    log_stats(y)\n    return y\n"
    )
    invalid = (
        Example("@torch.compiler.disable\ndef helper(t):\n    return t + 1\n\n@torch.compile\ndef f(x):\n    return helper(x)\n"),
        Example("@torch.compiler.disable(recursive=False)\ndef helper(t):\n    return t + 1\n\n"
                "@torch.compile\ndef f(x):\n    return helper(x)\n"),
        Example("class M(nn.Module):\n    @torch.compiler.disable\n    def stats(self, t):\n        return t.mean()\n\n"
                "    def forward(self, x):\n        return x * self.stats(x)\n"),
    )  # fmt: skip
    valid = (
        Example("@torch.compiler.disable\ndef helper(t):\n    return t + 1\n\ndef eager(x):\n    return helper(x)\n"),
        Example("def helper(t):\n    return t + 1\n\n@torch.compile\ndef f(x):\n    return helper(x)\n"),
        Example("@torch.compiler.disable\ndef helper(t):\n    return t + 1\n\n@torch.compile\ndef f(x):\n"
                "    if not torch.compiler.is_compiling():\n        helper(x)\n    return x\n"),
    )  # fmt: skip

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        for target in ctx.call_targets(node):
            if target.how == "callback":
                continue  # handed to a library (`inspect.signature(fn)`), not called here
            callee = ctx.program.function(target.key) if ctx.program else None
            if callee is None or callee.disabled is None:
                continue
            recursive = "" if callee.disabled == "recursive" else "(recursive=False)"
            shown = f"`{target.text}()`"
            if target.text != callee.qualname:
                shown += f" (`{callee.qualname}`)"
            ctx.report(
                self,
                node,
                f"{shown} is decorated `@torch.compiler.disable{recursive}`: Dynamo ends the graph "
                "at this call and runs it eagerly",
                gb_codes=(predicted_code(node, callee),),
            )
            return


RULE = DisabledCall()
