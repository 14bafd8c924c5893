"""TCL203: `str(t)` / `repr(t)` of a tensor inside a compiled region."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.tensors import Kind, dotted_code
from compile_lint.analysis.walker import RuleContext
from compile_lint.rules.base import Example, Rule
from compile_lint.versions import TorchVersion

FAILED_BUILTIN = "GB0059"  # Failed to trace builtin operator
REPR_ON_TENSOR = "GB0569"  # repr() on tensor


def gb_code(builtin: str, version: TorchVersion) -> str:
    """Measured: `str(t)` fails as a builtin in torch 2.13 and goes through repr from 2.14 on."""
    return FAILED_BUILTIN if builtin == "str" and version < (2, 14) else REPR_ON_TENSOR


MAX_ARGUMENT = 30


def argument_text(node: cst.BaseExpression) -> str:
    text = dotted_code(node)
    return text if len(text) <= MAX_ARGUMENT else "..."


class TensorToString(Rule):
    code = "TCL203"
    name = "tensor-to-string"
    summary = "`str(t)` or `repr(t)` of a tensor in a compiled region breaks the graph"
    gb_codes = (FAILED_BUILTIN, REPR_ON_TENSOR)
    gb_codes_by_version = {(2, 13): (FAILED_BUILTIN, REPR_ON_TENSOR), (2, 14): (REPR_ON_TENSOR,)}
    fix = (
        "Format only Python metadata (`str(t.shape)`, `t.dtype`), or guard the formatting with "
        "`if not torch.compiler.is_compiling():`."
    )
    what = (
        "Flags `str(t)` and `repr(t)` where `t` is a tensor, inside compiled regions. Strings of Python "
        "values (`str(t.shape)`, `str(n)`) and f-strings are not flagged: f-strings with tensors do not "
        "break (torch 2.13 and 2.14)."
    )
    why = (
        "Turning a tensor into text needs its values, which do not exist while Dynamo traces. `repr(t)` "
        "ends the graph with GB0569 (repr() on tensor), and so does `str(t)` from torch 2.14 on (torch 2.13: "
        "GB0059, failed to trace builtin operator); the call runs eagerly and a new graph starts after it."
    )
    example = "@torch.compile\ndef f(x):\n    y = x.softmax(-1)\n    label = str(y)\n    return y, label\n"
    fixed_example = "@torch.compile\ndef f(x):\n    y = x.softmax(-1)\n    label = str(y.shape)\n    return y, label\n"
    invalid = (
        Example("@torch.compile\ndef f(x):\n    s = str(x)\n    return x\n"),
        Example("class M(nn.Module):\n    def forward(self, x):\n        s = repr(x.sum())\n        return x\n"),
    )
    valid = (
        Example("@torch.compile\ndef f(x):\n    s = str(x.shape) + repr(x.dtype)\n    return x\n"),
        Example("@torch.compile\ndef f(x):\n    s = f'value={x}'\n    return x\n"),
        Example("def describe(x):\n    return str(x)\n"),
        Example(
            "class M(nn.Module):\n    def forward(self, x, device=None):\n        key = str(device)\n        return x\n"
        ),
    )

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        func = node.func
        if not isinstance(func, cst.Name) or func.value not in ("str", "repr") or func.value in ctx.imports.aliases:
            return
        if len(node.args) != 1 or node.args[0].keyword is not None or node.args[0].star:
            return
        argument = node.args[0].value
        if ctx.facts.kind(argument) is not Kind.TENSOR:
            return
        builtin = func.value
        call = f"{builtin}({argument_text(argument)})"
        code = gb_code(builtin, ctx.torch_version)
        ctx.report(
            self,
            node,
            f"`{call}` formats a tensor's values, which Dynamo cannot trace: graph break ({code})",
            gb_codes=(code,),
            fix=(
                f"Format only metadata (`{builtin}(t.shape)`, `t.dtype`), or move `{call}` under "
                "`if not torch.compiler.is_compiling():` so it only runs eagerly."
            ),
        )


RULE = TensorToString()
