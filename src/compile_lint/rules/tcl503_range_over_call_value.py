"""TCL503: `range()` over an int parameter or a tensor size in a compiled region (one graph per value)."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.tensors import param_names, short_code
from compile_lint.analysis.values import BOTTOM, INT, SIZE
from compile_lint.analysis.walker import RuleContext, iter_nodes
from compile_lint.rules.base import Example, Rule

RANK = frozenset({"ndim", "dim"})


def _fixed_length(node: cst.BaseExpression) -> bool:
    """`len(features)`, `self.num_layers`, `x.ndim`: a container's length, an attribute or a rank, fixed by the
    architecture rather than by the input's sizes."""
    for inner in iter_nodes(node):
        if isinstance(inner, cst.Call) and isinstance(inner.func, cst.Name) and inner.func.value == "len":
            return True
        if isinstance(inner, cst.Attribute) and isinstance(inner.value, cst.Name) and inner.value.value == "self":
            return True
        if isinstance(inner, cst.Attribute) and inner.attr.value in RANK:
            return True  # `x.ndim`, `x.dim()`: the rank, not a size that varies between calls
    return False


class RangeOverCallValue(Rule):
    code = "TCL503"
    name = "range-over-call-value"
    summary = "`range()` over an int parameter or a tensor size: each distinct value compiles a new graph"
    gb_codes = ()
    fix = (
        "Loop a fixed number of times and mask, pass the count as a tensor and use `torch.cond`/vectorized ops, "
        "or compile one function per count you use."
    )
    what = (
        "Flags `range(...)` calls in a compiled region whose bound reads an `int` parameter of the region's "
        "entry (annotated `int` or with an int default) or a tensor size (`x.shape[0]`, `x.size(1)`); a bound "
        "that reads `len(...)`, a `self.` attribute or a rank (`x.ndim`) is not counted (a container's length is fixed by the "
        "architecture). "
        "Slicing, sizes of new tensors, reshapes, branches and arithmetic on the same int are not flagged: "
        "measured, they recompile once and then the int is dynamic (bench/recompile_patterns.py)."
    )
    why = (
        "Dynamo unrolls a Python loop, so the number of iterations is baked into the graph: it guards on the "
        "exact value (`n_steps == 2`), even after automatic dynamic shapes made the int symbolic. Every new "
        "value compiles another graph, until `recompile_limit` (8) is hit and the function runs eagerly from "
        "then on. Measured on torch 2.13 and 2.14, 10 distinct values: `range(n)` 8 recompiles and the limit; "
        "`range(x.shape[0])` the same with default and `dynamic=True` compiles, and `mark_dynamic` raises a "
        "ConstraintViolationError; `x[:n]`, `torch.zeros(n)`, `x * n`, `if n > 100`: one recompile."
    )
    example = (
        "class Denoiser(nn.Module):\n    def forward(self, x, n_steps: int):\n        for _ in range(n_steps):\n"
        "            x = self.step(x)\n        return x\n"
    )
    fixed_example = (
        "class Denoiser(nn.Module):\n    def forward(self, x):\n        return self.step(x)\n\n\n"
        "# the loop outside the compiled step: one graph for every n_steps\n"
        "step = torch.compile(Denoiser())\nfor _ in range(n_steps):\n    x = step(x)\n"
    )
    invalid = (
        Example(
            "class M(nn.Module):\n    def forward(self, x, n_steps: int):\n        for _ in range(n_steps):\n"
            "            x = x * 2\n        return x\n"
        ),
        Example("@torch.compile\ndef f(x, n=4):\n    for i in range(1, n + 1):\n        x = x + i\n    return x\n"),
        Example(
            "@torch.compile\ndef f(x: torch.Tensor):\n    for t in range(x.shape[0]):\n        x[t] = x[t] * 2\n"
            "    return x\n"
        ),
    )
    valid = (
        Example("@torch.compile\ndef f(x, n: int):\n    return x[:n] * n\n"),
        Example("@torch.compile\ndef f(x, n: int):\n    if n > 100:\n        return x\n    return x + 1\n"),
        Example("@torch.compile\ndef f(x):\n    for i in range(4):\n        x = x + i\n    return x\n"),
        Example(
            "class M(nn.Module):\n    def forward(self, x):\n        for layer in self.layers:\n"
            "            x = layer(x)\n        return x\n"
        ),
        Example("def eager(x, n: int):\n    for _ in range(n):\n        x = x * 2\n    return x\n"),
        Example(
            "class M(nn.Module):\n    def forward(self, feats: list[torch.Tensor]):\n"
            "        for i in range(len(feats)):\n            feats[i] = feats[i] * 2\n        return feats\n"
        ),
        Example(
            "class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.convs = nn.ModuleList([nn.Linear(4, 4), nn.Linear(4, 4)])\n\n"
            "    def forward(self, x: torch.Tensor):\n        n = len(self.convs) - 1\n"
            "        for i in range(n, -1, -1):\n            x = self.convs[i](x)\n        return x\n"
        ),
    )

    def _int_params(self, ctx: RuleContext) -> set[str]:
        """Parameters of a region entry that hold an int (annotated `int` or an int default)."""
        if ctx.function is None or not ctx.is_entry or ctx.reach is None:
            return set()
        names = {p.name.value for p in param_names(ctx.function.node.params)}
        return {name for name in names if ctx.reach.params.get(name, BOTTOM).only((INT,))}

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        if not (isinstance(node.func, cst.Name) and node.func.value == "range" and node.args):
            return
        if ctx.resolve(node.func) not in (None, "range", "builtins.range"):
            return  # a `range` the module defines or imports
        params = self._int_params(ctx)
        for arg in node.args:
            for name in (n.value for n in iter_nodes(arg.value) if isinstance(n, cst.Name)):
                if name in params and ctx.facts.name_value(name).only((INT,)):
                    self._report(node, ctx, f"the int parameter `{name}`", f"`{name} == <value>`", name)
                    return
            if SIZE in ctx.facts.value(arg.value) and not _fixed_length(arg.value):
                size = short_code(arg.value)
                self._report(node, ctx, f"the tensor size `{size}`", "the size's exact value", None)
                return

    def _report(self, node: cst.Call, ctx: RuleContext, what: str, guard: str, name: str | None) -> None:
        call = short_code(node)
        hoist = (
            f"pass `{name}` from outside and loop there around a compiled step, or loop a fixed maximum and mask"
            if name
            else "vectorize over that dimension, or loop outside the compiled function around a compiled step"
        )
        ctx.report(
            self,
            node,
            f"`{call}` loops over {what}: Dynamo unrolls the loop and guards on {guard}, so each distinct "
            f"value compiles a new graph (eager after recompile_limit, 8)",
            fix=f"{hoist[0].upper()}{hoist[1:]}.",
        )


RULE = RangeOverCallValue()
