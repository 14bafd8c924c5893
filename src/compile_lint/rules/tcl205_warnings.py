"""TCL205: `warnings.warn(...)` inside a compiled region."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.walker import RuleContext
from compile_lint.rules.base import Example, Rule


class WarningsWarn(Rule):
    code = "TCL205"
    name = "warnings-in-region"
    summary = "`warnings.warn()` in a compiled region breaks the graph"
    gb_codes = ("GB0007",)
    fix = (
        "Write `if not torch.compiler.is_compiling(): warnings.warn(...)`, or check the condition and warn "
        "once outside the compiled region (e.g. in `__init__`)."
    )
    what = "Flags `warnings.warn(...)` calls (however `warn` is imported) inside compiled regions."
    why = (
        "Dynamo treats `warnings.warn` as a function it must skip: it ends the graph at the call, runs it "
        "eagerly and starts a new graph after it (GB0007, attempted to call function marked as skipped). "
        "Adding `warnings.warn` to `torch._dynamo.config.reorderable_logging_functions` removes the break "
        "only for a plain message: with a category argument torch 2.13 breaks again (GB0296)."
    )
    example = (
        "@torch.compile\ndef attend(q, k, causal=None):\n    if causal is None:\n"
        '        warnings.warn("causal not set, assuming True")\n    return q @ k.T\n'
    )
    fixed_example = (
        "@torch.compile\ndef attend(q, k, causal=None):\n    if causal is None and not torch.compiler.is_compiling():\n"
        '        warnings.warn("causal not set, assuming True")\n    return q @ k.T\n'
    )
    invalid = (
        Example("import warnings\n\n@torch.compile\ndef f(x):\n    warnings.warn('slow path')\n    return x\n"),
        Example(
            "from warnings import warn\n\nclass M(nn.Module):\n    def forward(self, x):\n"
            "        warn('deprecated', DeprecationWarning)\n        return x\n"
        ),
    )
    valid = (
        Example(
            "import warnings\n\n@torch.compile\ndef f(x):\n    if not torch.compiler.is_compiling():\n"
            "        warnings.warn('slow path')\n    return x\n"
        ),
        Example("import warnings\n\ndef eager(x):\n    warnings.warn('slow path')\n"),
        Example("@torch.compile\ndef f(x, checker):\n    checker.warn('x')\n    return x\n"),
    )

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        if ctx.resolve(node.func) == "warnings.warn":
            ctx.report(self, node, "`warnings.warn(...)` is skipped by Dynamo: graph break (GB0007)")


RULE = WarningsWarn()
