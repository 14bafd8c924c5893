"""TCL703: a `raise` in a compiled region that no `try` around it catches."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.tensors import short_code
from compile_lint.analysis.walker import RuleContext, iter_nodes
from compile_lint.rules.base import Example, Rule

ABSTRACT = frozenset({"NotImplementedError", "NotImplemented"})


class RaiseInRegion(Rule):
    code = "TCL703"
    name = "raise-in-region"
    summary = "A `raise` outside any `try` in a compiled region: if taken, Dynamo drops the whole frame"
    gb_codes = ("GB0088",)  # Observed exception (only when the raise is taken: the finding predicts no break)
    frame_skip = True
    severity = "info"
    fix = (
        "Check inputs before calling the compiled function, or use `torch._check(cond, lambda: msg)`, "
        "which Dynamo traces."
    )
    what = (
        "Reports `raise` statements in compiled regions that are not inside the body of a `try` in the same "
        "function. `raise NotImplementedError` (abstract methods) is not reported. Opt-in: select it with "
        '`--extend-select TCL703` (or `extend-select = ["TCL703"]`); flake8 ignores it unless selected.'
    )
    why = (
        "Measured with torch 2.13 and 2.14: a raise that is never taken costs nothing, and one caught by a "
        "`try` in the region traces. One that escapes makes Dynamo abandon the frame (GB0088, observed "
        "exception) and rerun it eagerly, which raises the same error. It is information, not a predicted "
        "break: it matters when the raise is a control-flow path taken in normal runs. Most raises in real "
        "models check inputs and never fire on the default path, which is why the rule is off by default."
    )
    example = (
        "@torch.compile\ndef f(x):\n    if x.dim() != 2:\n        raise ValueError('expected a matrix')\n"
        "    return x @ x.T\n"
    )
    fixed_example = (
        "@torch.compile\ndef f(x):\n    torch._check(x.dim() == 2, lambda: 'expected a matrix')\n    return x @ x.T\n"
    )
    invalid = (
        Example("class M(nn.Module):\n    def forward(self, x):\n        if x.shape[0] == 0:\n            raise RuntimeError('empty batch')\n        return x\n"),
    )  # fmt: skip
    valid = (
        Example("@torch.compile\ndef f(x):\n    try:\n        raise KeyError('k')\n    except KeyError:\n        return x\n"),
        Example("class Base(nn.Module):\n    def forward(self, x):\n        raise NotImplementedError\n"),
        Example("def eager(x):\n    raise ValueError('x')\n"),
    )  # fmt: skip

    def visit_Try(self, node: cst.Try, ctx: RuleContext) -> None:
        ctx.reported.update(id(n) for n in iter_nodes(node.body) if isinstance(n, cst.Raise))

    def visit_Raise(self, node: cst.Raise, ctx: RuleContext) -> None:
        if id(node) in ctx.reported:
            return
        raised = node.exc.func if isinstance(node.exc, cst.Call) else node.exc
        if isinstance(raised, cst.Name) and raised.value in ABSTRACT:
            return
        shown = f"raise {short_code(node.exc)}" if node.exc else "raise"
        ctx.report(
            self,
            node,
            f"`{shown}` is not caught in the region: when it is taken, Dynamo abandons the whole frame "
            "(GB0088) and reruns it eagerly",
            gb_codes=(),
        )


RULE = RaiseInRegion()
