"""TCL402: reading `x[mask]` with a boolean tensor mask (the result's size depends on the data)."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.tensors import receiver_code, short_code
from compile_lint.analysis.walker import RuleContext
from compile_lint.rules.base import CAPTURE_DYNAMIC, Example, Rule


def _store_targets(target: cst.BaseExpression) -> list[cst.Subscript]:
    """The subscripts that `target = ...` writes to (`x[m] = v`, `x[m], y = ...`)."""
    if isinstance(target, cst.Subscript):
        return [target]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [s for element in target.elements for s in _store_targets(element.value)]
    return []


MASKED_REDUCTIONS = frozenset({"sum", "mean"})


class BooleanMaskIndex(Rule):
    code = "TCL402"
    name = "boolean-mask-index"
    summary = "Reading `x[mask]` with a boolean tensor mask breaks the graph"
    gb_codes = ("GB0036",)
    fix = (
        "Keep the shape static: `torch.where(mask, x, 0)` (or `x * mask`) and reduce over it, dividing a mean "
        "by the selected count: `torch.where(mask, x, 0).sum() / mask.sum()`; "
        f"or set `torch._dynamo.config.{CAPTURE_DYNAMIC} = True`."
    )
    silenced_by = CAPTURE_DYNAMIC
    what = (
        "Flags reads `x[mask]` (also `x[:, mask]` and `x[mask] += v`) where the mask is certainly a "
        "boolean tensor: a tensor comparison, `~m`, `m & n`, `m | n`, `t.bool()`, `torch.isnan(t)`, "
        "or a name bound to one. Assignments `x[mask] = v` do not break and are not flagged."
    )
    why = (
        "The number of selected elements depends on the mask's values, which Dynamo does not know "
        "while it traces, so by default it ends the graph at the read: GB0036 (dynamic shape operator). "
        f"Writing through a mask keeps `x`'s shape and traces fine; `{CAPTURE_DYNAMIC}=True` removes "
        "the break for reads too."
    )
    example = "@torch.compile\ndef positive_mean(x):\n    return x[x > 0].mean()\n"
    fixed_example = (
        "@torch.compile\ndef positive_mean(x):\n    mask = x > 0\n"
        "    return torch.where(mask, x, 0).sum() / mask.sum()\n"
    )
    invalid = (
        Example("@torch.compile\ndef f(x):\n    return x[x > 0]\n"),
        Example("@torch.compile\ndef f(x):\n    keep = ~torch.isnan(x)\n    return x[keep]\n"),
        Example("@torch.compile\ndef f(x, y):\n    return x[:, (y > 0) & (y < 1)]\n"),
        Example("@torch.compile\ndef f(x):\n    x[x > 0] += 1\n    return x\n"),
    )
    valid = (
        Example("@torch.compile\ndef f(x):\n    x[x > 0] = 0\n    return x\n"),
        Example("@torch.compile\ndef f(x, idx):\n    return x[idx]\n"),
        Example("@torch.compile\ndef f(x):\n    m = x > 0\n    m = m.float()\n    return x[m.long()]\n"),
        Example("@torch.compile\ndef f(x):\n    return x[x > 0]\n", flags=(CAPTURE_DYNAMIC,)),
    )

    def visit_Assign(self, node: cst.Assign, ctx: RuleContext) -> None:
        # A plain store through a mask keeps the shape (no break, measured): claim it so it stays silent.
        for target in node.targets:
            ctx.reported.update(id(s) for s in _store_targets(target.target))

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        """`x[mask].mean()` / `.sum()`: the fix keeps the reduction's numerics (a masked mean divides by the
        number of selected elements, not by all of them)."""
        func = node.func
        if node.args or not isinstance(func, cst.Attribute) or func.attr.value not in MASKED_REDUCTIONS:
            return
        read = func.value
        if not isinstance(read, cst.Subscript) or id(read) in ctx.reported or not ctx.facts.may_be_tensor(read.value):
            return
        index = read.slice[0].slice if len(read.slice) == 1 else None
        if not (isinstance(index, cst.Index) and ctx.facts.is_mask(index.value)):
            return
        ctx.reported.add(id(read))
        source, mask, factor = short_code(read.value), short_code(index.value), receiver_code(index.value)
        selected = f"torch.where({mask}, {source}, 0).sum()"
        if func.attr.value == "sum":
            fix = f"Keep the shape static: `{selected}` (the same sum, zeros where the mask is False)"
        else:
            fix = (
                f"Keep the shape static: `{selected} / {factor}.sum()` is the same masked mean (the mean over the "
                f"selected elements; `torch.where(...).mean()` would divide by every element), or "
                f"`({source} * {factor}).sum() / {factor}.sum()` when the values left out are finite"
            )
        ctx.report(
            self,
            read,
            f"`{short_code(read)}` selects with a boolean mask: its size depends on the data",
            fix=f"{fix}; or set `torch._dynamo.config.{CAPTURE_DYNAMIC} = True`.",
        )

    def visit_Subscript(self, node: cst.Subscript, ctx: RuleContext) -> None:
        if id(node) in ctx.reported or not ctx.facts.may_be_tensor(node.value):
            return
        for element in node.slice:
            index = element.slice
            if isinstance(index, cst.Index) and ctx.facts.is_mask(index.value):
                source, mask = short_code(node.value), short_code(index.value)
                factor = receiver_code(index.value)
                ctx.report(
                    self,
                    node,
                    f"`{short_code(node)}` selects with a boolean mask: its size depends on the data",
                    fix=f"Keep the shape static: `torch.where({mask}, {source}, 0)` "
                    f"(or `{source} * {factor}`) and reduce over it; or set "
                    f"`torch._dynamo.config.{CAPTURE_DYNAMIC} = True`.",
                )
                return


RULE = BooleanMaskIndex()
