"""TCL102: `int(t)`, `float(t)`, `bool(t)` read a tensor value into Python, like `.item()`."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import libcst as cst

from compile_lint.analysis.tensors import Kind, receiver_code, short_code
from compile_lint.analysis.values import NUMPY
from compile_lint.analysis.walker import RuleContext, iter_nodes
from compile_lint.rules.base import CAPTURE_SCALAR, Example, Rule

ITEM = "GB0124"  # Unsupported Tensor.item() call with capture_scalar_outputs=False
DATA_DEPENDENT = "GB0033"  # Data dependent operator: `int()` of a numpy value, which Dynamo traces as a tensor
NON_TENSOR = "GB0208"  # torch.* op returned non-Tensor: the same of a numpy sum over one element (measured)
CONVERSIONS = {
    "int": "`{t}.long()`",
    "float": "`{t}.float()`",
    "bool": "select values with `torch.where({bare}, a, b)` instead of a Python `if`",
}


def converted_tensor(node: cst.Call, ctx: RuleContext) -> str | None:
    """`int`/`float`/`bool` when `node` converts a tensor with that builtin, else None."""
    func = node.func
    if not isinstance(func, cst.Name) or func.value not in CONVERSIONS or func.value in ctx.imports.aliases:
        return None
    if len(node.args) != 1 or node.args[0].keyword is not None:
        return None
    value = node.args[0].value
    return func.value if ctx.facts.kind(value) is Kind.TENSOR and ctx.facts.has_evidence(value) else None


def _calls_within(args: Sequence[cst.Arg]) -> Iterator[cst.Call]:
    for arg in args:
        yield from (node for node in iter_nodes(arg.value) if isinstance(node, cst.Call))


class ScalarConversion(Rule):
    code = "TCL102"
    name = "tensor-to-python-scalar"
    summary = "`int()`/`float()`/`bool()` of a tensor copies its value into Python and breaks the graph"
    gb_codes = (ITEM, DATA_DEPENDENT, NON_TENSOR)
    fix = (
        "Keep the value a tensor (`t.long()`, `t.float()`, `t.bool()`) and use tensor ops, or set "
        "`torch._dynamo.config.capture_scalar_outputs = True` if it only feeds arithmetic."
    )
    silenced_by = CAPTURE_SCALAR
    what = (
        "Flags `int(t)`, `float(t)` and `bool(t)` on tensors inside compiled regions, including a loop "
        "bound such as `range(int(t))`. Conversions of Python numbers (`int(x.shape[0])`, `float(n)`) "
        "are fine, and so is `int(width * ratio)` on bare un-annotated parameters, which are usually numbers."
    )
    why = (
        "Converting a tensor to a Python number calls `.item()` under the hood, so Dynamo ends the "
        "graph there, runs it eagerly and starts a new graph: GB0124. With "
        "`capture_scalar_outputs=True` the value is traced symbolically and there is no break, except "
        "for `range(int(t))`: a loop count cannot be a symbolic value, and Dynamo still breaks "
        '("Could not extract specialized integer from data-dependent expression"). numpy in a region is traced '
        "as tensor ops, on tensors and on lists of numbers alike, so `int(np.sum(counts))` breaks too: GB0033 "
        "(GB0208 when the sum is over one element)."
    )
    example = "@torch.compile\ndef scale(x):\n    peak = float(x.abs().max())\n    return x / peak\n"
    fixed_example = "@torch.compile\ndef scale(x):\n    peak = x.abs().max()\n    return x / peak\n"
    invalid = (
        Example("@torch.compile\ndef f(x):\n    n = int(x.sum())\n    return x * n\n"),
        Example("@torch.compile\ndef f(x):\n    b = bool(x.sum() > 0)\n    return x + b\n"),
        Example("import numpy as np\n\n@torch.compile\ndef f(x):\n    return x[: int(np.sum([1, 2]))]\n"),
        Example("@torch.compile\ndef f(x):\n    for _ in range(int(x.sum())):\n        x = x + 1\n    return x\n"),
        Example(
            "@torch.compile\ndef f(x):\n    for _ in range(int(x.sum()) + 1):\n        x = x + 1\n    return x\n",
            flags=(CAPTURE_SCALAR,),
        ),
    )
    valid = (
        Example("@torch.compile\ndef f(x):\n    return x * int(x.shape[0])\n"),
        Example("@torch.compile\ndef f(x, width, ratio):\n    return x.view(-1, int(width * ratio))\n"),
        Example("@torch.compile\ndef f(x, scale: float):\n    return x * float(scale)\n"),
        Example("import numpy as np\n\n@torch.compile\ndef f(x):\n    return x / float(np.sqrt(x.shape[-1]))\n"),
        Example("@torch.compile\ndef f(x):\n    return x * float(x.sum())\n", flags=(CAPTURE_SCALAR,)),
        Example("def eager_only(x):\n    return int(x.sum())\n"),
    )

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        if id(node) in ctx.reported:
            return
        if isinstance(node.func, cst.Name) and node.func.value == "range" and "range" not in ctx.imports.aliases:
            self._check_loop_bound(node, ctx)
            return
        builtin = converted_tensor(node, ctx)
        if builtin is not None:
            value = node.args[0].value
            bare = short_code(value)
            kept = CONVERSIONS[builtin].format(t=receiver_code(value), bare=bare)
            array = ctx.facts.value(value).only((NUMPY,))  # traced as a tensor: int() of it is data-dependent
            ctx.report(
                self,
                node,
                f"`{builtin}()` of a numpy value (traced as a tensor) reads it into Python and breaks the graph"
                if array
                else f"`{builtin}()` of a tensor copies its value into Python (an implicit `.item()`) and breaks the graph",
                gb_codes=(DATA_DEPENDENT, NON_TENSOR) if array else (ITEM,),
                fix=f"Keep it a tensor: {kept}; or set "
                "`torch._dynamo.config.capture_scalar_outputs = True` if it only feeds arithmetic.",
            )

    def _check_loop_bound(self, node: cst.Call, ctx: RuleContext) -> None:
        """`range(int(t))` (also `range(int(t) + 1)`) breaks even with capture_scalar_outputs: always report it."""
        for bound in _calls_within(node.args):
            if converted_tensor(bound, ctx) == "int":
                ctx.report(
                    self,
                    bound,
                    f"`range({short_code(bound)})`: a loop count read from a tensor breaks the graph, even "
                    f"with {CAPTURE_SCALAR}=True",
                    condition="always",
                    gb_codes=(ITEM,),
                    fix="Loop over a fixed bound and mask the extra steps with `torch.where`, or compute the "
                    "count before the compiled region and pass it in as an `int` argument.",
                )


RULE = ScalarConversion()
