"""TCL401: ops whose output size depends on tensor data (nonzero, unique, masked_select, ...)."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.tensors import Kind, short_code
from compile_lint.analysis.walker import RuleContext
from compile_lint.rules.base import CAPTURE_DYNAMIC, Example, Rule

CAPTURE_HINT = f"or set `torch._dynamo.config.{CAPTURE_DYNAMIC} = True`."
INDICES_FIX = (
    "Use `torch.nonzero_static({x}, size=N)` with a known upper bound N (no break), or keep the mask "
    "and compute with `torch.where(mask, a, b)`; " + CAPTURE_HINT
)
# Op name -> fix text ({x}: the input tensor, {mask}: the operand after it). Each measured to break with GB0036.
FIXES = {
    "nonzero": INDICES_FIX,
    "argwhere": INDICES_FIX,
    "unique": "No fixed-size variant exists: compute it before the compiled region and pass it in, " + CAPTURE_HINT,
    "unique_consecutive": "Compute it before the compiled region and pass it in, " + CAPTURE_HINT,
    "masked_select": "Keep the shape: `torch.where({mask}, {x}, 0)` and reduce over it; " + CAPTURE_HINT,
    "repeat_interleave": "Pass `output_size=<total length>` when the sum of the repeats is known (no break); "
    + CAPTURE_HINT,
    "bincount": "With a known number of bins N (`minlength` does not help): "
    "`torch.zeros(N, dtype=torch.long).scatter_add_(0, {x}, torch.ones_like({x}))`; " + CAPTURE_HINT,
    "where": "Give `torch.where(cond, a, b)` all three arguments (same shape as `cond`); " + CAPTURE_HINT,
}


ONE_HOT = "torch.nn.functional.one_hot"
ONE_HOT_CODE = "GB0246"  # one_hot with data-dependent output shape (no num_classes, or -1)
ONE_HOT_FIX = (
    "Pass the number of classes as a Python int: `F.one_hot({x}, num_classes)` (the class count is otherwise "
    "`{x}.max() + 1`, read from the data)."
)


def _keyword(node: cst.Call, name: str) -> cst.Arg | None:
    return next((arg for arg in node.args if arg.keyword and arg.keyword.value == name), None)


def _positional(node: cst.Call) -> list[cst.BaseExpression]:
    return [arg.value for arg in node.args if arg.keyword is None and not arg.star]


class DynamicShapeOp(Rule):
    code = "TCL401"
    name = "dynamic-shape-op"
    summary = "An op whose output size depends on tensor data breaks the graph"
    gb_codes = ("GB0036", ONE_HOT_CODE)
    fix = f"Use a fixed-size alternative (`torch.nonzero_static`, `torch.where(mask, a, b)`), {CAPTURE_HINT}"
    silenced_by = CAPTURE_DYNAMIC
    what = (
        "Flags `nonzero`, `argwhere`, `unique`, `unique_consecutive`, `masked_select`, `bincount`, one-argument "
        "`torch.where(cond)` and `repeat_interleave` with tensor repeats (as `torch.*` functions or "
        "tensor methods) inside compiled regions, and `F.one_hot(idx)` without `num_classes` (or with -1). "
        "`repeat_interleave` with an int repeat or with `output_size=` has a static shape and is not flagged."
    )
    why = (
        "The size of the result depends on the values in the tensor, which Dynamo does not know while "
        "it traces, so by default it ends the graph at the op: GB0036 (dynamic shape operator). "
        f"With `{CAPTURE_DYNAMIC}=True` Dynamo traces the size as a symbol and there is no break. "
        f"`F.one_hot` without a class count breaks even then ({ONE_HOT_CODE}, measured on 2.13 and 2.14)."
    )
    example = "@torch.compile\ndef positives(x):\n    idx = torch.nonzero(x > 0)\n    return x.flatten()[idx]\n"
    fixed_example = "@torch.compile\ndef positives(x):\n    return torch.where(x > 0, x, 0)\n"
    invalid = (
        Example("@torch.compile\ndef f(x):\n    return torch.nonzero(x, as_tuple=True)\n"),
        Example("@torch.compile\ndef f(x):\n    return x.unique()\n"),
        Example("@torch.compile\ndef f(x):\n    return torch.masked_select(x, x > 0)\n"),
        Example("@torch.compile\ndef f(x, reps):\n    return torch.repeat_interleave(x, reps, dim=0)\n"),
        Example("@torch.compile\ndef f(x):\n    return torch.where(x > 0)\n"),
        Example("@torch.compile\ndef f(x):\n    return torch.bincount(x.long(), minlength=8)\n"),
        Example("@torch.compile\ndef f(idx):\n    return torch.nn.functional.one_hot(idx)\n", flags=(CAPTURE_DYNAMIC,)),
    )
    valid = (
        Example("@torch.compile\ndef f(x):\n    return torch.repeat_interleave(x, 2, dim=0)\n"),
        Example("@torch.compile\ndef f(x, reps):\n    return torch.repeat_interleave(x, reps, dim=0, output_size=8)\n"),
        Example("@torch.compile\ndef f(x):\n    return torch.nonzero_static(x, size=4)\n"),
        Example("@torch.compile\ndef f(x):\n    return torch.where(x > 0, x, 0)\n"),
        Example("@torch.compile\ndef f(x):\n    return torch.nonzero(x)\n", flags=(CAPTURE_DYNAMIC,)),
        Example("@torch.compile\ndef f(idx):\n    return torch.nn.functional.one_hot(idx, num_classes=8)\n"),
    )

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        func = node.func
        full = ctx.resolve(func)
        args = _positional(node)
        if full == ONE_HOT:
            self._one_hot(node, args, ctx)
            return
        if full is not None and full.startswith("torch.") and full.count(".") == 1:
            op = full.removeprefix("torch.")
            if op == "repeat_interleave" and len(args) == 1:  # torch.repeat_interleave(repeats)
                args = [args[0], args[0]]
        elif isinstance(func, cst.Attribute) and ctx.facts.may_be_tensor(func.value):
            op = func.attr.value
            if op == "where":  # `t.where(cond, other)` always has the shape of `t`
                return
            args = [func.value, *args]
        else:
            return
        # args: the input tensor, then the operand after it (the repeats, or the mask)
        tensor = args[0] if args else None
        operand = args[1] if len(args) > 1 else None
        if op in FIXES and self._dynamic(op, node, operand, ctx):
            ctx.report(
                self,
                node,
                f"`{short_code(func)}(...)` returns a tensor whose size depends on the data and breaks the graph",
                fix=FIXES[op].format(
                    x=short_code(tensor) if tensor else "x", mask=short_code(operand) if operand else "mask"
                ),
            )

    def _one_hot(self, node: cst.Call, args: list[cst.BaseExpression], ctx: RuleContext) -> None:
        """`F.one_hot(idx)` or `num_classes=-1`: the class count is read from the data (GB0246, also with
        capture_dynamic_output_shape_ops). A tensor class count is TCL107's (GB0033)."""
        keyword = _keyword(node, "num_classes")
        classes = keyword.value if keyword is not None else (args[1] if len(args) > 1 else None)
        minus_one = (
            isinstance(classes, cst.UnaryOperation)
            and isinstance(classes.operator, cst.Minus)
            and isinstance(classes.expression, cst.Integer)
            and classes.expression.value == "1"
        )
        if classes is not None and not minus_one:
            return
        tensor = short_code(args[0]) if args else "idx"
        ctx.report(
            self,
            node,
            f"`{short_code(node.func)}({tensor})` without a class count takes it from the data "
            f"(`{tensor}.max() + 1`): the graph breaks here ({ONE_HOT_CODE})",
            condition="always",
            gb_codes=(ONE_HOT_CODE,),
            fix=ONE_HOT_FIX.format(x=tensor),
        )

    @staticmethod
    def _dynamic(op: str, node: cst.Call, repeats: cst.BaseExpression | None, ctx: RuleContext) -> bool:
        if op == "where":
            return len(node.args) == 1
        if op == "repeat_interleave":
            keyword = _keyword(node, "repeats")
            repeats = keyword.value if keyword else repeats
            has_size = _keyword(node, "output_size") is not None
            return repeats is not None and ctx.facts.kind(repeats) is Kind.TENSOR and not has_size
        return True


RULE = DynamicShapeOp()
