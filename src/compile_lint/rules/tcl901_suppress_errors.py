"""TCL901: `torch._dynamo.config.suppress_errors = True` hides real compile failures."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.nodes import string_value
from compile_lint.analysis.walker import RuleContext
from compile_lint.rules.base import Example, Rule

FLAG = "torch._dynamo.config.suppress_errors"
# torch/_dynamo/config.py reads it as `bool(os.environ.get(...))`: any non-empty value, even "0", turns it on.
ENV_VAR = "TORCHDYNAMO_SUPPRESS_ERRORS"
ENV_MESSAGE = f'`{ENV_VAR}` turns on suppress_errors whatever its value (even "0"), hiding real compile failures'
ENV_FIX = f"Delete the line and leave `{ENV_VAR}` unset: setting it to 0 does not turn suppression off."


def _is_true(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"


def _is_env_var(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.SimpleString) and string_value(node) == ENV_VAR


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
    triggers = ("suppress_errors", "SUPPRESS_ERRORS")
    what = (
        "Flags `torch._dynamo.config.suppress_errors = True`, "
        "`torch._dynamo.config.patch(suppress_errors=True)` and setting the `TORCHDYNAMO_SUPPRESS_ERRORS` "
        "environment variable through `os.environ`, anywhere in a file, compiled region or not. Dynamo reads "
        "that variable as `bool(value)`, so even `TORCHDYNAMO_SUPPRESS_ERRORS=0` turns suppression on."
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
        Example('import os\n\nos.environ["TORCHDYNAMO_SUPPRESS_ERRORS"] = "0"\n'),
        Example('import os\n\nos.environ.setdefault("TORCHDYNAMO_SUPPRESS_ERRORS", "1")\n'),
    )
    valid = (
        Example("torch._dynamo.config.suppress_errors = False\n"),
        Example("torch._dynamo.config.capture_scalar_outputs = True\n"),
        Example("class Config:\n    suppress_errors = True\n"),
        Example('import os\n\nos.environ["TORCH_LOGS"] = "graph_breaks"\n'),
    )

    def visit_Assign(self, node: cst.Assign, ctx: RuleContext) -> None:
        for target in node.targets:
            if _is_true(node.value) and ctx.resolve(target.target) == FLAG:
                ctx.report(self, node, f"`{FLAG} = True` hides real compile failures")
            elif self._is_environ_item(target.target, ctx):
                ctx.report(self, node, ENV_MESSAGE, fix=ENV_FIX)

    @staticmethod
    def _is_environ_item(target: cst.BaseExpression, ctx: RuleContext) -> bool:
        """`os.environ["TORCHDYNAMO_SUPPRESS_ERRORS"]`."""
        if not isinstance(target, cst.Subscript) or ctx.resolve(target.value) != "os.environ":
            return False
        index = target.slice[0].slice
        return isinstance(index, cst.Index) and _is_env_var(index.value)

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        name = ctx.resolve(node.func)
        if name == "os.environ.setdefault" and node.args and _is_env_var(node.args[0].value):
            ctx.report(self, node, ENV_MESSAGE, fix=ENV_FIX)
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
