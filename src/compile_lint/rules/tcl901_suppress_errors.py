"""TCL901: `torch._dynamo.config.suppress_errors = True` hides real compile failures."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.walker import RuleContext
from compile_lint.rules.base import Example, Rule

FLAG = "torch._dynamo.config.suppress_errors"


def _is_true(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"


class SuppressErrors(Rule):
    code = "TCL901"
    name = "suppress-errors"
    summary = "`torch._dynamo.config.suppress_errors = True` hides real compile failures"
    gb_codes = ()
    fix = (
        "Delete the setting and fix or report the failure it hides; to allow graph breaks while "
        "debugging, leave `fullgraph=False` instead."
    )
    severity = "error"
    scope = "module"
    what = (
        "Flags `torch._dynamo.config.suppress_errors = True` and "
        "`torch._dynamo.config.patch(suppress_errors=True)` anywhere in a file, compiled region or not."
    )
    why = (
        "With `suppress_errors` on, an internal error while compiling a frame (a Dynamo bug, an "
        "unsupported op in the backend, a failing guard) is swallowed and the frame silently runs "
        "eagerly. The model still works but loses the speed-up, and nothing tells you it did; graph "
        "breaks are unaffected (they are not errors), so the setting only ever hides failures."
    )
    example = "import torch._dynamo\n\ntorch._dynamo.config.suppress_errors = True\n"
    fixed_example = "import torch._dynamo\n\ntorch._dynamo.config.verbose = True\n"
    invalid = (
        Example("torch._dynamo.config.suppress_errors = True\n"),
        Example("import torch._dynamo.config as dynamo_config\n\ndynamo_config.suppress_errors = True\n"),
        Example("@torch._dynamo.config.patch(suppress_errors=True)\ndef train(model):\n    return model\n"),
    )
    valid = (
        Example("torch._dynamo.config.suppress_errors = False\n"),
        Example("torch._dynamo.config.capture_scalar_outputs = True\n"),
        Example("class Config:\n    suppress_errors = True\n"),
    )

    def visit_Assign(self, node: cst.Assign, ctx: RuleContext) -> None:
        if not _is_true(node.value):
            return
        for target in node.targets:
            if ctx.resolve(target.target) == FLAG:
                ctx.report(self, node, f"`{FLAG} = True` hides real compile failures")

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        name = ctx.resolve(node.func)
        if name != "torch._dynamo.config.patch":
            return
        for arg in node.args:
            if arg.keyword and arg.keyword.value == "suppress_errors" and _is_true(arg.value):
                ctx.report(
                    self,
                    arg,
                    "`torch._dynamo.config.patch(suppress_errors=True)` hides real compile failures",
                )


RULE = SuppressErrors()
